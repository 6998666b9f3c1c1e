// Unit tests of the agent picker's entries and words (no DOM, no server).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { agentHint, agentOptions, modelNotApplicable, outsideAgent } from '../lib/agentWords.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = { __: (text, ...args) => fill(text, args) };
const listed = [
  { name: 'Jupyter agent', kind: 'built_in', available: true, problem: null },
  { name: 'Claude Code', kind: 'acp', available: true, problem: null },
  {
    name: 'Codex',
    kind: 'acp',
    available: false,
    problem:
      "Codex cannot start: the command 'codex-acp' was not found. Install it with: npm install -g @zed-industries/codex-acp."
  }
];

test('our agent comes first, and an agent that cannot start is marked and cannot be picked', () => {
  assert.deepEqual(agentOptions(listed, 'Jupyter agent', trans), [
    { value: 'Jupyter agent', label: 'Jupyter agent', disabled: false },
    { value: 'Claude Code', label: 'Claude Code', disabled: false },
    { value: 'Codex', label: 'Codex (not installed)', disabled: true }
  ]);
});

test("the chat's own agent stays selectable, even when it is gone or broken now", () => {
  const options = agentOptions(listed, 'Codex', trans);
  assert.equal(options.find(o => o.value === 'Codex').disabled, false);
  assert.equal(agentOptions(listed, 'Gemini CLI', trans)[0].value, 'Gemini CLI');
});

test('the description says what a choice does and what to install', () => {
  const hint = agentHint(listed, trans);
  assert.match(hint, /^The coding agent that answers your next messages in this chat\./);
  assert.match(hint, /Install it with: npm install -g @zed-industries\/codex-acp\.$/);
  assert.doesNotMatch(agentHint(listed.slice(0, 2), trans), /Install/);
});

test('the model picker applies to our agent only: with an ACP agent it says so instead', () => {
  assert.equal(outsideAgent(listed, 'Jupyter agent'), null);
  assert.equal(outsideAgent(listed, null), null, 'no choice yet: our agent answers');
  assert.equal(outsideAgent([], 'Claude Code'), null, 'no list: the picker is as before');
  assert.equal(outsideAgent(listed, 'Claude Code'), 'Claude Code');
  assert.equal(outsideAgent(listed, 'Gemini CLI'), 'Gemini CLI', 'an agent no longer listed is not ours');
  assert.equal(
    modelNotApplicable('Claude Code', trans),
    'Claude Code uses its own model: the model setting applies only to the built-in agent. Choose the built-in agent above to pick a model.'
  );
});
