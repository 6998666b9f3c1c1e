// Unit tests of the Connect an outside agent snippets and words (no DOM, no server).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { claudeCommand, credentialDates, mcpServersSnippet, shellQuote } from '../lib/outsideAgents.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = { __: (text, ...args) => fill(text, args) };
const minted = {
  id: 'cred_1',
  name: 'Claude Code (laptop)',
  created: '2026-11-28T15:00:00Z',
  last_used: null,
  token: 'aaep_mcp_abc-DEF_123',
  mcp_url: 'http://127.0.0.1:8888/user/a%40b/aaep/v1/mcp'
};

test('the Claude Code command is ready to paste into a shell', () => {
  assert.equal(
    claudeCommand(minted),
    "claude mcp add --transport http jupyter-notebooks http://127.0.0.1:8888/user/a%40b/aaep/v1/mcp --header 'Authorization: Bearer aaep_mcp_abc-DEF_123'"
  );
});

test('a word with spaces or quotes stays one shell word', () => {
  assert.equal(shellQuote('plain-word'), 'plain-word');
  assert.equal(shellQuote("it's here"), `'it'\\''s here'`);
  assert.equal(shellQuote('a;rm -rf ~'), `'a;rm -rf ~'`);
});

test('the mcpServers snippet is JSON with the URL and the bearer header', () => {
  const parsed = JSON.parse(mcpServersSnippet(minted));
  assert.deepEqual(parsed, {
    mcpServers: {
      'jupyter-notebooks': {
        type: 'http',
        url: minted.mcp_url,
        headers: { Authorization: 'Bearer aaep_mcp_abc-DEF_123' }
      }
    }
  });
});

test('dates say whether the credential was ever used', () => {
  assert.match(credentialDates(minted, trans), /^made .+, never used$/);
  assert.match(credentialDates({ ...minted, last_used: '2026-11-28T16:00:00Z' }, trans), /^made .+, last used .+$/);
});
