// Unit tests of what the chat model keeps for the narration (docs/NARRATION.md):
// a step shown by its result, the last cell output for "Hear the last output",
// answers cut off by a Stop, and automatically approved requests.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ChatModel, lastRunOutput } from '../lib/model.js';

let n = 0;
function event(type, session, fields = {}) {
  n += 1;
  return {
    '@context': 'https://aaep-protocol.org/context/v1',
    event_id: `evt_${String(n).padStart(8, '0')}`,
    type: `aaep:agent.${type}`,
    timestamp: '2026-11-23T09:00:00.000Z',
    session_id: session,
    sequence_number: n,
    ...fields
  };
}

test('a finished step shows its result, not "start + result"; the detail is kept', () => {
  const model = new ChatModel('c', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'go' }));
  assert.equal(lastRunOutput(model.items), null, 'no cell ran yet');
  model.ingest(
    event('tool.invoked', 's1', {
      tool: 'create_cell',
      tool_call_id: 'call_1',
      summary_normal: 'Starting: create a cell.'
    })
  );
  model.ingest(
    event('tool.completed', 's1', {
      tool: 'create_cell',
      tool_call_id: 'call_1',
      status: 'success',
      summary_normal: 'Created code cell 4, after cell 3.'
    })
  );
  const step = model.items.find(i => i.kind === 'tool');
  assert.equal(step.summary, 'Created code cell 4, after cell 3.');
  assert.equal(lastRunOutput(model.items), null, 'creating a cell is not a run');

  model.ingest(
    event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 'call_2', summary_normal: 'Running cell 4.' })
  );
  assert.equal(lastRunOutput(model.items), null, 'a run still going has no output yet');
  model.ingest(
    event('tool.completed', 's1', {
      tool: 'run_cell',
      tool_call_id: 'call_2',
      status: 'success',
      summary_normal: 'Cell 4 ran: a. Plus 2 more lines.',
      summary_detailed: 'Cell 4 ran in 0.1 seconds. Output:\na\nb\nc'
    })
  );
  assert.equal(lastRunOutput(model.items), 'Cell 4 ran in 0.1 seconds. Output:\na\nb\nc');
  // Without a detailed summary (a terse subscription), the one-sentence result.
  model.ingest(
    event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 'call_3', summary_normal: 'Running cell 5.' })
  );
  model.ingest(
    event('tool.completed', 's1', {
      tool: 'run_cell',
      tool_call_id: 'call_3',
      status: 'error',
      summary_normal: 'Cell 5 failed: ZeroDivisionError: division by zero.'
    })
  );
  assert.equal(lastRunOutput(model.items), 'Cell 5 failed: ZeroDivisionError: division by zero.');
});

test('an answer a Stop cut mid-sentence is marked; a finished one is not', () => {
  const model = new ChatModel('c', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'talk' }));
  model.ingest(
    event('output.streaming', 's1', { output_id: 'o1', chunk: 'A whole sentence. And half', complete: true })
  );
  model.ingest(event('session.cancelled', 's1', { summary_normal: 'You stopped the agent.' }));
  assert.equal(model.items.find(i => i.kind === 'answer').cutOff, true);

  model.ingest(event('session.started', 's2', { request_text: 'again' }));
  model.ingest(event('output.streaming', 's2', { output_id: 'o2', chunk: 'All said.', complete: true }));
  model.ingest(event('session.cancelled', 's2', { summary_normal: 'You stopped the agent.' }));
  assert.notEqual(model.items.filter(i => i.kind === 'answer')[1].cutOff, true);

  model.ingest(event('session.started', 's3', { request_text: 'done' }));
  model.ingest(
    event('output.streaming', 's3', { output_id: 'o3', chunk: 'A list item without a stop', complete: true })
  );
  model.ingest(event('session.completed', 's3', { summary_normal: 'Done.' }));
  assert.notEqual(model.items.filter(i => i.kind === 'answer')[2].cutOff, true, 'only a Stop or an error cuts');
});

test('an automatically approved request is never pending', () => {
  const model = new ChatModel('c', 'a.ipynb');
  model.ingest(event('session.started', 's1', { request_text: 'run' }));
  model.ingest(
    event('awaiting.confirmation', 's1', {
      action: 'Run cell 1.',
      reply_token: 'rt_1',
      timeout_seconds: 90,
      extra_context: { code: 'x = 1', auto_approved: true }
    })
  );
  const card = model.items.find(i => i.kind === 'confirmation');
  assert.equal(card.state, 'resolved');
  assert.equal(card.deadline, null);
  assert.deepEqual(model.pending, []);
  model.ingest(
    event('awaiting.confirmation', 's1', {
      action: 'Run cell 2.',
      reply_token: 'rt_2',
      timeout_seconds: 90,
      extra_context: { code: 'y = 2' }
    })
  );
  assert.equal(model.pending.length, 1, 'one the user must answer is pending');
});

test('a pause while a request waits keeps it open, its clock held; leaving for work resolves it', () => {
  const model = new ChatModel('c', 'a.ipynb');
  model.ingest(event('session.started', 's9', { request_text: 'go' }));
  model.ingest(
    event('awaiting.confirmation', 's9', {
      reply_token: 'rpl_x',
      action_summary: 'Run cell 2',
      risk_level: 'medium',
      timeout_seconds: 120,
      timestamp: new Date().toISOString(),
      default_decision: 'reject',
      summary_normal: 'Approve running cell 2?'
    })
  );
  model.ingest(event('state.changed', 's9', { from_state: 'thinking', to_state: 'awaiting_input' }));
  const [request] = model.pending;
  assert.ok(request && request.deadline !== null);
  model.ingest(event('state.changed', 's9', { from_state: 'awaiting_input', to_state: 'paused' }));
  assert.equal(model.pending.length, 1, 'still answerable while paused');
  assert.equal(model.status, 'paused');
  // Entries are values: a change replaces the entry, so it is read again by its id.
  assert.equal(model.item(request.id).deadline, null, 'no countdown while paused');
  assert.ok(model.item(request.id).pausedRemaining > 100000);
  model.ingest(event('state.changed', 's9', { from_state: 'paused', to_state: 'awaiting_input' }));
  assert.equal(model.pending.length, 1);
  assert.ok(model.item(request.id).deadline > Date.now() + 100000, 'the clock runs again with what it had left');
  model.ingest(event('state.changed', 's9', { from_state: 'awaiting_input', to_state: 'calling_tool' }));
  assert.equal(model.pending.length, 0);
});
