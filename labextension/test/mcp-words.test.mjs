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

test('a trusted server says what the trust means and since when; taking it back is said', async () => {
  const { mcpTrustLine, mcpTrustNotSetUp, mcpTrustRevoked } = await import('../lib/components/mcpWords.js');
  const trust = { server: 'cache', origin: 'python hostile.py', granted_at: '2026-11-28T18:02:00Z' };
  const since = new Date(trust.granted_at).toLocaleString();
  assert.equal(
    mcpTrustLine(trust, trans),
    `You trust its tools that say they change nothing to run without asking (since ${since}).`
  );
  for (const granted_at of ['', 'not a date']) {
    assert.equal(
      mcpTrustLine({ ...trust, granted_at }, trans),
      'You trust its tools that say they change nothing to run without asking.'
    );
  }
  // Trusted as started by one command; the server's entry now starts another: the trust does not hold.
  assert.equal(
    mcpTrustLine(trust, trans, false),
    'You trusted it when it was started by python hostile.py; it now starts something else, so its tools ask you again.'
  );
  assert.equal(
    mcpTrustLine({ ...trust, origin: '' }, trans, false),
    'You trusted an earlier setup of it; its tools ask you again.'
  );
  assert.equal(
    mcpTrustRevoked('cache', trans),
    'You no longer trust the cache server: its tools that say they change nothing will ask you first again.'
  );
  assert.equal(mcpTrustNotSetUp(trust, trans), 'cache is no longer set up (it was started by python hostile.py).');
  assert.equal(mcpTrustNotSetUp({ ...trust, origin: '' }, trans), 'cache is no longer set up.');
});
