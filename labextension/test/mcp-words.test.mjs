// Unit tests of the words the panel shows for the user's MCP servers (no DOM, no server).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { mcpProblemSentence, mcpStatusLabel, mcpToolTitle } from '../lib/components/mcpWords.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};
const server = (status, message) => ({ name: 'files', status, message, tools: [] });

test('every status the server reports has a few plain words', () => {
  const said = ['ready', 'starting', 'failed', 'stopped', 'refused', 'invalid'].map(s => mcpStatusLabel(s, trans));
  assert.deepEqual(said, [
    'ready',
    'starting…',
    'did not start',
    'stopped (starts again on next use)',
    'not allowed',
    'not usable'
  ]);
  assert.equal(mcpStatusLabel('something new', trans), 'something new');
});

test('a server that failed to start gets one sentence naming it', () => {
  assert.equal(
    mcpProblemSentence(server('failed', 'the command npx was not found.'), trans),
    'files did not start: the command npx was not found.'
  );
});

test('a refused or invalid server says its own whole sentence; a working one says nothing', () => {
  const refused = 'The administrator does not allow starting tool servers with npx.';
  assert.equal(mcpProblemSentence(server('refused', refused), trans), refused);
  assert.equal(mcpProblemSentence(server('invalid', 'Its "url" must be a text.'), trans), 'Its "url" must be a text.');
  assert.equal(mcpProblemSentence(server('ready', null), trans), '');
  assert.equal(mcpProblemSentence(server('failed', '  '), trans), '');
});

test('a tool is listed by its title, without the server name the list already gives', () => {
  assert.equal(mcpToolTitle({ name: 'read_note', title: 'Read Note, from the notes server' }, 'notes'), 'Read Note');
  assert.equal(mcpToolTitle({ name: 'read_note', title: 'Read Note' }, 'notes'), 'Read Note');
  assert.equal(mcpToolTitle({ name: 'read_note', title: '' }, 'notes'), 'read_note');
});
