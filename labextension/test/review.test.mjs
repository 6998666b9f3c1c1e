// Unit tests of edits under review in the panel (no DOM, no server): the
// approval modes, and reading a change from a confirmation's extra_context.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { changeCaption, diffDescriptionIds, readChange } from '../lib/components/DiffView.js';
import { approvalModeDescription, approvalModeLabel } from '../lib/components/approvalWords.js';
import { APPROVAL_MODES, isApprovalMode } from '../lib/model.js';
import { readSettings } from '../lib/settings.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

test('the four approval modes, plan first, then strictest first, with honest labels', () => {
  assert.deepEqual(APPROVAL_MODES, ['plan', 'ask_all', 'ask', 'auto']);
  assert.deepEqual(
    APPROVAL_MODES.map(m => approvalModeLabel(m, trans)),
    ['Plan first', 'Ask before every change', 'Ask before running code', 'Auto']
  );
  assert.ok(isApprovalMode('ask_all') && !isApprovalMode('review') && !isApprovalMode(undefined));
  for (const mode of APPROVAL_MODES) {
    assert.match(approvalModeDescription(mode, trans), /not a sandbox: it cannot catch everything harmful\./);
  }
  assert.match(approvalModeDescription('ask', trans), /without asking; Undo agent changes puts them back/);
  assert.match(approvalModeDescription('ask_all', trans), /asks before every change: creating, editing/);
  assert.equal(readSettings({ approvalMode: 'ask_all' }).approvalMode, 'ask_all');
  assert.equal(readSettings({ approvalMode: 'sometimes' }).approvalMode, 'ask');
});

const EDIT = {
  tool_call_id: 'call_1',
  change: {
    kind: 'edit',
    cell_number: 2,
    cell_type: 'code',
    old_source: 'x = 1\nprint(x)',
    new_source: 'x = 2\nprint(x)\nprint(y)',
    diff: {
      summary: '1 line changed, 1 added',
      lines: [
        { kind: 'removed', text: 'x = 1', old_line: 1, new_line: null },
        { kind: 'added', text: 'x = 2', old_line: null, new_line: 1 },
        { kind: 'context', text: 'print(x)', old_line: 2, new_line: 2 },
        { kind: 'added', text: 'print(y)', old_line: null, new_line: 3 },
        { kind: 'bogus', text: 'dropped' },
        'not a line'
      ],
      sentences: ["Line 1 changed from 'x = 1' to 'x = 2'.", "Line 3 added: 'print(y)'.", 7],
      text: 'ignored when there are sentences',
      truncated: false
    }
  }
};

test('an edit is read with its marked lines and its words', () => {
  const change = readChange(EDIT);
  assert.equal(change.kind, 'edit');
  assert.equal(change.lines.length, 4, 'lines of unknown kinds are left out');
  assert.deepEqual(change.lines[1], { kind: 'added', text: 'x = 2', oldLine: null, newLine: 1 });
  assert.deepEqual(change.sentences, ["Line 1 changed from 'x = 1' to 'x = 2'.", "Line 3 added: 'print(y)'."]);
  assert.equal(changeCaption(change, trans), 'Changes to cell 2: 1 line changed, 1 added');
  assert.deepEqual(diffDescriptionIds('d1', change), ['d1-caption', 'd1-wordsCaption', 'd1-words']);
  assert.deepEqual(diffDescriptionIds('d2', readChange({ change: { kind: 'move' } })), ['d2-caption']);
});

test('creating, deleting, moving and clearing have their own captions', () => {
  const create = readChange({
    change: {
      kind: 'create',
      cell_number: 3,
      where: "after cell 2 ('Load')",
      diff: { summary: '2 lines added', text: "Lines 1 to 2 added: 'a'; 'b'." }
    }
  });
  assert.equal(changeCaption(create, trans), "The new cell, after cell 2 ('Load'): 2 lines added");
  assert.deepEqual(create.sentences, ["Lines 1 to 2 added: 'a'; 'b'."], 'the text stands in for sentences');
  const del = readChange({ change: { kind: 'delete', cell_number: 4, diff: { summary: '3 lines removed' } } });
  assert.equal(changeCaption(del, trans), 'Cell 4 to delete: 3 lines removed');
  const move = readChange({
    change: { kind: 'move', from_position: 1, to_position: 3, where: "after cell 3 ('plot')" }
  });
  assert.equal(changeCaption(move, trans), "Moves cell 1 to position 3, after cell 3 ('plot').");
  assert.deepEqual(move.lines, []);
  const clear = readChange({ change: { kind: 'clear_outputs', outputs: 1, cells_with_outputs: [2, 'x'] } });
  assert.equal(changeCaption(clear, trans), 'Clears 1 output.');
  assert.deepEqual(clear.cellsWithOutputs, [2]);
});

test('no change to show: running code, or something unreadable', () => {
  assert.equal(readChange({ code: 'print(1)' }), null);
  assert.equal(readChange({ change: 'edit' }), null);
  assert.equal(readChange({ change: { kind: 5 } }), null);
});
