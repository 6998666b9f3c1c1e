// Unit tests of the panel's chat model (no DOM, no server): usage, guidance,
// Continue, per-item versions and the collapsing of old turns.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ChatModel,
  collapsePoint,
  compactCount,
  dollars,
  lastRunOutput,
  readGuidance,
  readSupports,
  readUsage,
  totalTokens
} from '../lib/model.js';

let n = 0;
function event(type, session, fields = {}, at = '2026-11-23T06:00:00.000Z') {
  n += 1;
  return {
    '@context': 'https://aaep.dev/context/v1',
    event_id: `evt_${String(n).padStart(8, '0')}`,
    type: `aaep:agent.${type}`,
    timestamp: at,
    session_id: session,
    sequence_number: n,
    summary_normal: fields.summary_normal ?? `${type} ${n}`,
    ...fields
  };
}

test('usage is read from the chat description and summed', () => {
  const usage = readUsage({
    requests: 3,
    input_tokens: 1200,
    output_tokens: 800,
    cache_read_input_tokens: 10000,
    cache_creation_input_tokens: 300,
    estimated_cost_usd: 0.0412,
    budget_usd: null,
    context_compactions: 1,
    sessions: []
  });
  assert.equal(totalTokens(usage), 12300);
  assert.equal(compactCount(totalTokens(usage)), '12.3k');
  assert.equal(dollars(usage.costUsd), '$0.04');
  assert.equal(usage.budgetUsd, null);
  assert.equal(usage.compactions, 1);
  assert.equal(readUsage(undefined), null);
  // Missing or bad figures count as zero, never NaN.
  assert.equal(totalTokens(readUsage({ input_tokens: 'many' })), 0);
});

test('compact counts and dollars', () => {
  assert.equal(compactCount(950), '950');
  assert.equal(compactCount(123456), '123k');
  assert.equal(compactCount(4_500_000), '4.5M');
  assert.equal(dollars(0), '$0.00');
  assert.equal(dollars(0.0042), '$0.0042');
  assert.equal(dollars(1.5), '$1.50');
});

test('supports: pause implies resume, absent flags are off', () => {
  assert.deepEqual(
    { pause: readSupports({}).pause, resume: readSupports({}).resume, cont: readSupports({}).continue },
    { pause: false, resume: false, cont: false }
  );
  const s = readSupports({ pause: true, guidance: true, continue: true });
  assert.equal(s.resume, true);
  assert.equal(s.continue, true);
  assert.equal(readSupports({ pause: true, resume: false }).resume, false);
});

test('a recoverable error offers Continue; a new session takes it away', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  model.supports = readSupports({ continue: true });
  model.ingest(event('session.started', 's1', { request_text: 'work' }));
  assert.equal(model.canContinue, false, 'nothing to continue while running');
  model.ingest(
    event('session.errored', 's1', {
      error_category: 'transient',
      error_code: 'SERVER_RESTARTED',
      recoverable: true,
      remediation_hint: 'Choose Continue to pick up where the agent stopped.'
    })
  );
  assert.equal(model.canContinue, true);
  // A description read while the session winds down does not take it away...
  model.setCanContinue(false);
  assert.equal(model.canContinue, true);
  // ...choosing Continue does.
  model.clearContinue();
  assert.equal(model.canContinue, false);
  model.setCanContinue(true);
  assert.equal(model.canContinue, true, 'the server can offer it (after a restart)');
  model.ingest(event('session.started', 's2', { request_text: 'again' }));
  assert.equal(model.canContinue, false);
  model.ingest(event('session.errored', 's2', { error_category: 'fatal', error_code: 'X', recoverable: false }));
  assert.equal(model.canContinue, false, 'an unrecoverable error offers no Continue');
  // Without server support there is never a Continue button.
  const old = new ChatModel('c2', 'a.ipynb');
  old.setCanContinue(true);
  assert.equal(old.canContinue, false);
});

test('pause and resume follow state changes', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'work' }));
  model.ingest(event('state.changed', 's1', { from_state: 'idle', to_state: 'thinking' }));
  model.ingest(event('state.changed', 's1', { from_state: 'thinking', to_state: 'paused' }));
  assert.equal(model.status, 'paused');
  assert.equal(model.isRunning, true);
  model.ingest(event('state.changed', 's1', { from_state: 'paused', to_state: 'thinking' }));
  assert.equal(model.status, 'running');
  assert.equal(model.agentState, 'thinking');
});

test('guidance from history is placed in time order, once', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'work' }, '2026-11-23T06:00:00.000Z'));
  model.ingest(event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }, '2026-11-23T06:00:05.000Z'));
  model.ingest(event('session.completed', 's1', {}, '2026-11-23T06:00:20.000Z'));
  const entries = readGuidance([
    { guidance_id: 'gd_1', session_id: 's1', text: 'use seaborn', created: '2026-11-23T06:00:10.000Z', applied: true },
    { text: 'no id: skipped' }
  ]);
  assert.equal(entries.length, 1);
  assert.equal(model.addGuidance(entries), 1);
  assert.deepEqual(
    model.items.map(i => i.kind + (i.steering ? ':steering' : '')),
    ['user', 'tool', 'user:steering', 'notice']
  );
  assert.equal(model.addGuidance(entries), 0, 'the same guidance is not shown twice');
  // Guidance the user sent here is matched by its id once the server answered.
  const mine = model.addUserMessage('live guidance', true);
  model.attachGuidance(mine, 'gd_2', 's1');
  assert.equal(model.addGuidance(readGuidance([{ guidance_id: 'gd_2', text: 'live guidance' }])), 0);
  // ... and before it answered (the chat was read again first): adopted, not shown twice.
  const early = model.addUserMessage('early guidance', true);
  assert.equal(model.addGuidance(readGuidance([{ guidance_id: 'gd_3', session_id: 's1', text: 'early guidance' }])), 0);
  model.attachGuidance(early, 'gd_3', 's1');
  assert.equal(model.items.filter(i => i.kind === 'user' && i.text === 'early guidance').length, 1);
  assert.equal(model.items.find(i => i.id === early).guidanceId, 'gd_3');
});

test('only the items an event changes get a new version', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'work' }));
  model.ingest(event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }));
  const [user, tool] = model.items;
  const before = { user: model.version(user.id), tool: model.version(tool.id) };
  model.ingest(
    event('output.streaming', 's1', { output_id: 'o1', chunk: 'Hel', complete: false, content_type: 'text/markdown' })
  );
  const answer = model.items[2];
  const v1 = model.version(answer.id);
  model.ingest(
    event('output.streaming', 's1', { output_id: 'o1', chunk: 'lo', complete: false, content_type: 'text/markdown' })
  );
  assert.equal(model.items[2].text, 'Hello');
  assert.ok(model.version(answer.id) > v1, 'a streamed chunk bumps its answer');
  assert.equal(model.version(user.id), before.user, 'and nothing else');
  assert.equal(model.version(tool.id), before.tool);
  model.ingest(event('tool.completed', 's1', { tool: 'run_cell', tool_call_id: 't1', status: 'success' }));
  assert.ok(model.version(tool.id) > before.tool);
});

test('old turns collapse; guidance does not start a turn', () => {
  const items = [];
  for (let t = 0; t < 25; t++) {
    items.push({ kind: 'user', id: `u${t}`, text: `request ${t}` });
    items.push({ kind: 'user', id: `g${t}`, text: 'steer', steering: true });
    items.push({ kind: 'notice', id: `n${t}`, variant: 'completed', text: 'Done.' });
  }
  assert.deepEqual(collapsePoint(items, 20), { start: 15, hiddenTurns: 5 });
  assert.deepEqual(collapsePoint(items.slice(0, 30), 20), { start: 0, hiddenTurns: 0 });
  // Entries before the first request (e.g. a notice) count as one more hidden turn.
  const leading = [{ kind: 'notice', id: 'x', variant: 'info', text: 'hi' }, ...items];
  assert.deepEqual(collapsePoint(leading, 20), { start: 16, hiddenTurns: 6 });
});

test('a finished session says how many of its steps failed', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'run all' }));
  model.ingest(event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }));
  model.ingest(
    event('tool.completed', 's1', { tool: 'run_cell', tool_call_id: 't1', status: 'error', error_message: 'NameError' })
  );
  model.ingest(event('tool.invoked', 's1', { tool: 'get_notebook_state', tool_call_id: 't2' }));
  model.ingest(event('tool.completed', 's1', { tool: 'get_notebook_state', tool_call_id: 't2', status: 'success' }));
  model.ingest(
    event('session.completed', 's1', { summary_normal: 'Done. Used 2 tools: run a cell, read the notebook.' })
  );
  const end = model.items[model.items.length - 1];
  assert.equal(end.kind, 'notice');
  assert.equal(end.failedSteps, 1);
});

// -- long-running cells and chat notices (issue 19) ---------------------------
test('a cell left running shows a progress bar item of its own; its end removes it and leaves the agent idle', () => {
  const model = new ChatModel('chat_1', 'a.ipynb');
  model.ingest(event('session.started', 'run1', { requested_by: 'kernel:agent-run' }));
  assert.equal(model.status, 'idle', 'a cell run is not the agent working');
  model.ingest(
    event('progress.updated', 'run1', {
      urgency: 'background',
      progress: { percent: 40, step: 40, total_steps: 100, description: '40 of 100, about 3 minutes left.' }
    })
  );
  const bar = model.items.find(i => i.kind === 'progress');
  assert.equal(bar.cellRun, true);
  assert.equal(bar.percent, 40);
  assert.equal(bar.description, '40 of 100, about 3 minutes left.');
  model.ingest(event('session.completed', 'run1', { summary_normal: 'Cell 7 finished after 3 min.' }));
  assert.equal(model.items.find(i => i.kind === 'progress').done, true);
  assert.equal(model.status, 'idle');
  assert.ok(model.items.some(i => i.kind === 'notice' && i.text === 'Cell 7 finished after 3 min.'));
});

test('a notice about saving gets its own entry and leaves an approval countdown in place', () => {
  const model = new ChatModel('chat_1', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'Train it' }));
  model.ingest(
    event('progress.updated', 's1', { progress: { percent: 50, description: '45 seconds left to approve or reject.' } })
  );
  model.ingest(
    event('progress.updated', 's1', {
      urgency: 'normal',
      progress: { description: 'Not being saved for now.' },
      summary_normal: 'This chat is not being saved for now: the disk is full.'
    })
  );
  const countdown = model.items.find(i => i.id === 'progress:s1');
  assert.equal(countdown.description, '45 seconds left to approve or reject.');
  assert.ok(
    model.items.some(i => i.kind === 'notice' && i.text === 'This chat is not being saved for now: the disk is full.')
  );
});

test('the person-run sessions are left out when the setting says so; wait_for_cell output is heard on request', () => {
  const model = new ChatModel('chat_1', 'a.ipynb');
  model.hidesRequester = by => by === 'kernel:person-run';
  model.ingest(event('session.started', 'run2', { requested_by: 'kernel:person-run' }));
  model.ingest(event('progress.updated', 'run2', { urgency: 'normal', progress: { percent: 50 } }));
  model.ingest(event('session.completed', 'run2'));
  assert.equal(model.items.length, 0);

  model.ingest(event('session.started', 's3', { request_text: 'Wait for it' }));
  model.ingest(event('tool.invoked', 's3', { tool: 'wait_for_cell', tool_call_id: 'c1' }));
  model.ingest(
    event('tool.completed', 's3', {
      tool: 'wait_for_cell',
      tool_call_id: 'c1',
      status: 'success',
      summary_normal: 'Cell 7 finished: accuracy 0.91.'
    })
  );
  assert.match(lastRunOutput(model.items) ?? '', /accuracy 0\.91/);
});

test('without a price the cost stays unknown: the meter shows tokens only, the sentence leaves the cost out', async () => {
  const { usageMeterText, usageSentence } = await import('../lib/usage.js');
  const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
  const trans = { __: (t, ...a) => fill(t, a), _n: (one, many, k, ...a) => fill(k === 1 ? one : many, [k, ...a]) };
  const demo = readUsage({
    requests: 2,
    input_tokens: 1000,
    output_tokens: 234,
    estimated_cost_usd: null,
    budget_usd: null
  });
  assert.equal(demo.costUsd, null);
  assert.equal(usageMeterText(demo, trans), '1.2k tokens');
  const said = usageSentence(demo, trans);
  assert.match(said, /^This chat used 1,234 tokens: 1,000 input, .* in 2 model requests\.$/);
  assert.ok(!/cost|\$/.test(said), said);
  const priced = readUsage({ requests: 1, input_tokens: 10, estimated_cost_usd: 0.0412 });
  assert.equal(usageMeterText(priced, trans), '10 tokens · ≈ $0.04');
  assert.match(usageSentence(priced, trans), /Estimated cost: about \$0\.04\.$/);
});

test('Undo is offered only for the sessions the server can still undo', () => {
  const model = new ChatModel('chat_1', 'a.ipynb');
  model.supports = readSupports({ revert: true });
  model.ingest(event('session.started', 's1', { request_text: 'Explain the data' }));
  model.ingest(event('session.completed', 's1'));
  assert.equal(model.canRevert, true, 'an older server: every session may have changes');
  model.setUndoable([]);
  assert.equal(model.canRevert, false, 'the request changed nothing');
  model.setUndoable(['s1']);
  assert.equal(model.canRevert, true);
  model.setUndoable(undefined);
  assert.equal(model.canRevert, true, 'a missing list leaves things as they were');
});

test('the admin policy: only the allowed approval modes, with the sentence to say; none means open', async () => {
  const { readPolicy } = await import('../lib/model.js');
  const policy = readPolicy({
    locked: ['approval_mode', 'budget'],
    approval_modes: ['ask', 'ask_all', 'bogus'],
    message:
      'Set by the administrator of this server: approval modes: Ask before running code or Ask before every change.'
  });
  assert.deepEqual(policy.approvalModes, ['ask_all', 'ask']);
  assert.deepEqual(policy.locked, ['approval_mode', 'budget']);
  assert.match(policy.message, /^Set by the administrator/);
  const open = readPolicy(undefined);
  assert.deepEqual(open.approvalModes, ['plan', 'ask_all', 'ask', 'auto']);
  assert.deepEqual(open.locked, []);
  assert.equal(open.message, null);
  // A list that allows nothing the panel knows must not leave the select empty.
  assert.deepEqual(readPolicy({ approval_modes: [] }).approvalModes, ['plan', 'ask_all', 'ask', 'auto']);
});
