// Unit tests of the cell citations (src/citations.ts) and of how the reducer
// keeps them with the answer (src/applyEvent.ts). No DOM, no server.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { applyEvent } from '../lib/applyEvent.js';
import * as chat from '../lib/chatState.js';
import { citationIndex, citationOfLink, citationWords, citationsOf, withCitationLinks } from '../lib/citations.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = { __: (text, ...args) => fill(text, args) };
const CONTEXT = 'https://aaep-protocol.org/context/v1';

function chunk(chunkText, position, citations, complete = false) {
  return {
    '@context': citations ? [CONTEXT, 'https://example.org/citations'] : CONTEXT,
    type: 'aaep:agent.output.streaming',
    event_id: `evt_${position}`,
    session_id: 's1',
    timestamp: '2026-11-28T10:00:00.000Z',
    chunk: chunkText,
    position,
    complete,
    output_id: 'out1',
    ...(citations ? { extensions: { jaaep: { citations } } } : {})
  };
}

test('the words of every shape, and a gone cell', () => {
  assert.equal(citationWords(trans, { cellId: 'a' }, 4), 'cell 4');
  assert.equal(citationWords(trans, { cellId: 'a', firstLine: 3 }, 4), 'cell 4, line 3');
  assert.equal(citationWords(trans, { cellId: 'a', firstLine: 3, lastLine: 5 }, 4), 'cell 4, lines 3 to 5');
  assert.equal(citationWords(trans, { cellId: 'a', firstLine: 3 }, null), 'a cell that no longer exists');
});

test('the reducer keeps citations at their place in the whole answer', () => {
  let state = applyEvent(chat.EMPTY_CHAT, {
    '@context': CONTEXT,
    type: 'aaep:agent.session.started',
    event_id: 'e0',
    session_id: 's1',
    timestamp: '2026-11-28T10:00:00.000Z',
    request_text: 'hi'
  });
  state = applyEvent(state, chunk('See cell 2. ', 0, [{ start: 4, end: 10, cell_id: 'c2' }]));
  state = applyEvent(state, chunk('And no link here. ', 12));
  state = applyEvent(
    state,
    chunk(
      'Lines of cell 5, lines 1 to 2.',
      30,
      [{ start: 9, end: 29, cell_id: 'c5', first_line: 1, last_line: 2 }],
      true
    )
  );
  const answer = state.items.find(i => i.kind === 'answer');
  assert.equal(answer.text, 'See cell 2. And no link here. Lines of cell 5, lines 1 to 2.');
  assert.deepEqual(
    answer.citations.map(c => answer.text.slice(c.start, c.end)),
    ['cell 2', 'cell 5, lines 1 to 2']
  );
  assert.equal(answer.citations[1].firstLine, 1);
});

test('malformed citation data is ignored, never thrown on', () => {
  const bad = chunk('x', 0, null);
  bad.extensions = { jaaep: { citations: [null, { start: -1, end: 2, cell_id: 'a' }, { start: 0 }, 'x'] } };
  assert.deepEqual(citationsOf(bad, 0), []);
  assert.deepEqual(citationsOf({ ...bad, extensions: [] }, 0), []);
});

test('links are named by the number now; a gone cell is words; an unopened notebook keeps the text', () => {
  const text = 'See cell 2 and cell 5, lines 1 to 2 and cell 7.';
  const citations = [
    { start: 4, end: 10, cellId: 'c2' },
    { start: 15, end: 35, cellId: 'c5', firstLine: 1, lastLine: 2 },
    { start: 40, end: 46, cellId: 'c7' }
  ];
  const numbers = { c2: 3, c5: 6 }; // a cell was added above both since
  const md = withCitationLinks(text, citations, id => numbers[id] ?? null, trans);
  assert.equal(
    md,
    'See [cell 3](#aaep-cell-citation-0) and [cell 6, lines 1 to 2](#aaep-cell-citation-1) and a cell that no longer exists.'
  );
  assert.equal(
    withCitationLinks(text, citations, () => undefined, trans),
    text
  );
  assert.equal(citationIndex('http://x/lab#aaep-cell-citation-1'), 1);
  assert.equal(citationIndex('#elsewhere'), null);
});

test('which rules apply, in one announcement', async () => {
  const { rulesWords } = await import('../lib/rules.js');
  const said = rulesWords(
    {
      sentence: '1 rule applies: AGENTS.md.',
      applies: [{ label: 'AGENTS.md', path: '/srv/AGENTS.md', active: true, scope: null, cut: false }],
      skipped: [
        { label: '.aaep/rules/r.md', path: '/srv/.aaep/rules/r.md', active: true, scope: 'languages r', cut: false },
        { label: '.aaep/rules/off.md', path: '/srv/.aaep/rules/off.md', active: false, scope: null, cut: false }
      ],
      problems: []
    },
    trans
  );
  assert.equal(
    said,
    '1 rule applies: AGENTS.md. AGENTS.md is at /srv/AGENTS.md and applies everywhere. ' +
      '.aaep/rules/r.md does not apply here: it is for languages r. .aaep/rules/off.md is switched off (active: false).'
  );
});

test("a %aaep view's link names its cell by data attributes; anything else names none", () => {
  assert.deepEqual(citationOfLink({ aaepCellId: 'abc-1' }), {
    start: 0,
    end: 0,
    cellId: 'abc-1',
    firstLine: undefined,
    lastLine: undefined
  });
  assert.deepEqual(citationOfLink({ aaepCellId: 'def_2', aaepFirstLine: '3', aaepLastLine: '5' }), {
    start: 0,
    end: 0,
    cellId: 'def_2',
    firstLine: 3,
    lastLine: 5
  });
  assert.equal(citationOfLink({ aaepCellId: 'x', aaepFirstLine: '2' }).lastLine, 2);
  assert.equal(citationOfLink({ aaepCellId: 'x', aaepFirstLine: '-1', aaepLastLine: '4' }).firstLine, undefined);
  for (const aaepCellId of [undefined, '', 'a b', '"><img>', 'x'.repeat(65)]) {
    assert.equal(citationOfLink({ aaepCellId }), null, String(aaepCellId));
  }
});
