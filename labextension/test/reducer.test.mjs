// Unit tests of the pure transcript reducer (src/applyEvent.ts) and the pure
// changes of src/chatState.ts: what every AAEP event type does to a chat, and
// that no change touches its input. No DOM, no server, no clock.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';

import { applyEvent, applyEvents, orderBatch } from '../lib/applyEvent.js';
import * as chat from '../lib/chatState.js';

const { EMPTY_CHAT } = chat;
const T0 = Date.parse('2026-11-23T09:00:00.000Z');

let n = 0;
/** An event of `type` in session `session`, `seconds` after T0. */
function event(type, session, fields = {}, seconds = n) {
  n += 1;
  return {
    '@context': 'https://aaep-protocol.org/context/v1',
    event_id: `evt_${String(n).padStart(8, '0')}`,
    type: `aaep:agent.${type}`,
    timestamp: new Date(T0 + seconds * 1000).toISOString(),
    session_id: session,
    sequence_number: n,
    summary_normal: `${type} ${n}`,
    ...fields
  };
}

/** Apply events one by one, each to the state the previous one returned. */
function run(state, ...events) {
  return events.reduce((s, e) => applyEvent(s, e), state);
}

const started = (session = 's1', fields = {}) =>
  event('session.started', session, { request_text: 'Plot it', ...fields });
const last = state => state.items[state.items.length - 1];

/** Sets and arrays as plain data, to compare a state before and after a change. */
function snapshot(state) {
  return JSON.stringify(state, (_, value) => (value instanceof Set ? { set: [...value].sort() } : value));
}

/** Freeze the state and everything in it: a change that writes to its input then throws. */
function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    Object.values(value).forEach(deepFreeze);
  }
  return value;
}

// One case per core event type: what it does to a chat.
const CASES = {
  'session.started'() {
    const s = run(EMPTY_CHAT, started('s1'));
    assert.equal(s.status, 'running');
    assert.deepEqual(s.undoable, ['s1']);
    assert.deepEqual(
      s.items.map(i => [i.kind, i.text, i.sessionId]),
      [['user', 'Plot it', 's1']]
    );
    // The message this view typed is the same entry once its session starts.
    const [typed, id] = chat.addUserMessage(EMPTY_CHAT, 'Plot it');
    const adopted = applyEvent(typed, started('s2'));
    assert.equal(adopted.items.length, 1);
    assert.equal(adopted.items[0].id, id);
    assert.equal(adopted.items[0].sessionId, 's2');
    // A long cell's story is not a request: no status, no Undo, no message.
    const cell = applyEvent(EMPTY_CHAT, event('session.started', 'run1', { requested_by: 'kernel:agent-run' }));
    assert.equal(cell.status, 'idle');
    assert.ok(cell.cellRuns.has('run1'));
    assert.deepEqual(cell.items, []);
  },
  'output.streaming'() {
    let s = run(
      EMPTY_CHAT,
      started(),
      event('output.streaming', 's1', { output_id: 'o1', chunk: 'Hello ' }),
      event('output.streaming', 's1', { output_id: 'o1', chunk: 'world.', complete: true })
    );
    const answer = last(s);
    assert.equal(answer.kind, 'answer');
    assert.equal(answer.text, 'Hello world.');
    assert.equal(answer.complete, true);
    s = applyEvent(s, event('output.streaming', 's1', { output_id: 'o1', chunk: ' Late.' }));
    assert.equal(last(s).text, 'Hello world.', 'a finished answer takes no more chunks');
  },
  'tool.invoked'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('awaiting.confirmation', 's1', { reply_token: 'r', timeout_seconds: 60 }),
      event('tool.invoked', 's1', {
        tool: 'run_cell',
        tool_call_id: 't1',
        risk_level: 'medium',
        summary_normal: 'Running cell 2.'
      })
    );
    const tool = last(s);
    assert.deepEqual(
      [tool.kind, tool.id, tool.status, tool.summary, tool.riskLevel],
      ['tool', 'tool:t1', 'running', 'Running cell 2.', 'medium']
    );
    assert.equal(
      s.items.find(i => i.kind === 'confirmation').state,
      'resolved',
      'the step started, so the request was answered'
    );
  },
  'tool.completed'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }),
      event('progress.updated', 's1', { progress: { percent: 40 } }),
      event('tool.completed', 's1', {
        tool: 'run_cell',
        tool_call_id: 't1',
        status: 'error',
        duration_ms: 1200,
        error_message: 'NameError',
        summary_normal: 'Cell 2 failed.',
        summary_detailed: 'Cell 2 failed: NameError: x'
      })
    );
    const tool = s.items.find(i => i.kind === 'tool');
    assert.deepEqual(
      [tool.status, tool.summary, tool.detail, tool.durationMs, tool.errorMessage],
      ['error', 'Cell 2 failed.', 'Cell 2 failed: NameError: x', 1200, 'NameError']
    );
    assert.equal(s.items.find(i => i.kind === 'progress').done, true);
  },
  'progress.updated'() {
    let s = run(
      EMPTY_CHAT,
      started(),
      event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }),
      event('progress.updated', 's1', { progress: { percent: 10, description: 'Training' } })
    );
    s = applyEvent(s, event('progress.updated', 's1', { progress: { percent: 60 } }));
    const bars = s.items.filter(i => i.kind === 'progress');
    assert.equal(bars.length, 1, 'a step has one bar, updated');
    assert.equal(bars[0].percent, 60);
    // A chat notice (heard, no numbers, no step running) is its own entry.
    const notice = run(
      EMPTY_CHAT,
      started('s2'),
      event('progress.updated', 's2', {
        urgency: 'normal',
        progress: {},
        summary_normal: 'This chat is not being saved.'
      })
    );
    assert.deepEqual([last(notice).kind, last(notice).text], ['notice', 'This chat is not being saved.']);
  },
  'awaiting.confirmation'() {
    const ask = event('awaiting.confirmation', 's1', { reply_token: 'rpl_1', timeout_seconds: 120 }, 10);
    const s = run(EMPTY_CHAT, started(), ask);
    const card = last(s);
    assert.deepEqual([card.kind, card.state, card.id], ['confirmation', 'pending', `request:${ask.event_id}`]);
    assert.equal(card.deadline, T0 + 10_000 + 120_000);
    assert.equal(chat.pendingRequests(s).length, 1);
    const auto = applyEvent(
      s,
      event('awaiting.confirmation', 's1', { reply_token: 'r2', extra_context: { auto_approved: true } })
    );
    assert.deepEqual(
      [last(auto).state, last(auto).deadline],
      ['resolved', null],
      'approved by the mode: never waiting'
    );
  },
  'awaiting.clarification'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('awaiting.clarification', 's1', { reply_token: 'rpl_2', question: 'Which column?' })
    );
    assert.deepEqual([last(s).kind, last(s).state], ['clarification', 'pending']);
  },
  'state.changed'() {
    const ask = event('awaiting.confirmation', 's1', { reply_token: 'r', timeout_seconds: 100 }, 0);
    let s = run(
      EMPTY_CHAT,
      started(),
      ask,
      event('state.changed', 's1', { from_state: 'thinking', to_state: 'awaiting_input' })
    );
    // Paused 30 s after the request: 70 s left, held; resumed 500 s later: 70 s from then.
    s = applyEvent(s, event('state.changed', 's1', { from_state: 'awaiting_input', to_state: 'paused' }, 30));
    assert.equal(s.status, 'paused');
    assert.equal(s.agentState, 'paused');
    let card = s.items.find(i => i.kind === 'confirmation');
    assert.deepEqual([card.state, card.deadline, card.pausedRemaining], ['pending', null, 70_000]);
    s = applyEvent(s, event('state.changed', 's1', { from_state: 'paused', to_state: 'awaiting_input' }, 530));
    card = s.items.find(i => i.kind === 'confirmation');
    assert.equal(s.status, 'running');
    assert.deepEqual([card.state, card.deadline, card.pausedRemaining], ['pending', T0 + 600_000, undefined]);
    s = applyEvent(
      s,
      event('state.changed', 's1', {
        from_state: 'awaiting_input',
        to_state: 'calling_tool',
        summary_normal: 'Approved.'
      })
    );
    card = s.items.find(i => i.kind === 'confirmation');
    assert.deepEqual([card.state, card.outcome], ['resolved', 'Approved.']);
    // A running step keeps who is doing what for the status line; any other state drops it.
    s = applyEvent(
      s,
      event('state.changed', 's1', {
        from_state: 'thinking',
        to_state: 'calling_tool',
        summary_normal: 'Claude Code is reading the notebook.'
      })
    );
    assert.equal(s.activity, 'Claude Code is reading the notebook.');
    s = applyEvent(s, event('state.changed', 's1', { from_state: 'calling_tool', to_state: 'thinking' }));
    assert.equal(s.activity, '');
  },
  'handoff.requested'() {
    const s = run(EMPTY_CHAT, started(), event('handoff.requested', 's1', { reason: 'needs a human' }));
    assert.equal(last(s).kind, 'handoff');
  },
  'session.completed'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('output.streaming', 's1', { output_id: 'o1', chunk: 'Half' }),
      event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }),
      event('tool.completed', 's1', { tool: 'run_cell', tool_call_id: 't1', status: 'error' }),
      event('session.completed', 's1', { summary_normal: 'Done.' })
    );
    const end = last(s);
    assert.deepEqual([end.kind, end.variant, end.text, end.failedSteps], ['notice', 'completed', 'Done.', 1]);
    assert.equal(s.status, 'idle');
    assert.equal(s.agentState, 'idle');
    assert.ok(s.ended.has('s1'));
    assert.equal(s.items.find(i => i.kind === 'answer').complete, true);
    assert.equal(s.items.find(i => i.kind === 'answer').cutOff, undefined, 'a completed answer is not cut off');
  },
  'session.errored'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('output.streaming', 's1', { output_id: 'o1', chunk: 'I will now' }),
      event('session.errored', 's1', {
        recoverable: true,
        summary_normal: 'The model is overloaded. Try again in a minute.',
        remediation_hint: 'Try again in a minute.'
      })
    );
    const end = last(s);
    assert.deepEqual(
      [end.variant, end.text, end.hint],
      ['errored', 'The model is overloaded.', 'Try again in a minute.']
    );
    assert.equal(s.items.find(i => i.kind === 'answer').cutOff, true);
    assert.equal(s.recoverableEnd, true);
    assert.equal(chat.canContinue({ ...s, supports: { ...s.supports, continue: true } }), true);
  },
  'session.cancelled'() {
    const s = run(
      EMPTY_CHAT,
      started(),
      event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }),
      event('awaiting.clarification', 's1', { reply_token: 'r' }),
      event('session.cancelled', 's1', { summary_normal: 'You stopped the agent.' })
    );
    assert.equal(last(s).variant, 'cancelled');
    assert.equal(s.items.find(i => i.kind === 'tool').status, 'timeout');
    assert.equal(s.items.find(i => i.kind === 'clarification').state, 'cancelled');
  }
};

test('the reducer has a case for every event type of the AAEP schemas', () => {
  const schemas = new URL('../../jupyter_aaep/aaep/schemas/core/', import.meta.url);
  const types = readdirSync(schemas)
    .map(name => /^agent\.(.+)\.schema\.json$/.exec(name)?.[1])
    .filter(Boolean)
    .sort();
  assert.equal(types.length, 12);
  assert.deepEqual(Object.keys(CASES).sort(), types);
});

for (const [type, check] of Object.entries(CASES)) {
  test(`applyEvent: ${type}`, check);
}

test('an extension type shows its summary; an unknown core-looking field changes nothing else', () => {
  const s = run(EMPTY_CHAT, started(), {
    ...event('x', 's1'),
    type: 'https://example.org/types/custom.note',
    summary_normal: 'A note.'
  });
  assert.deepEqual([last(s).kind, last(s).text], ['notice', 'A note.']);
});

test('an event seen before returns the very same state', () => {
  const e = started();
  const once = applyEvent(EMPTY_CHAT, e);
  assert.equal(applyEvent(once, e), once);
});

test('an event of a hidden session is only marked seen', () => {
  const hidden = chat.hideSession(EMPTY_CHAT, 'run2');
  const e = event('progress.updated', 'run2', { progress: { percent: 50 } });
  const s = applyEvent(hidden, e);
  assert.deepEqual(s.items, []);
  assert.ok(s.seen.has(e.event_id));
});

test('no change touches its input: every event and every action on frozen states', () => {
  const events = [
    started('s1'),
    event('state.changed', 's1', { from_state: 'idle', to_state: 'thinking' }),
    event('output.streaming', 's1', { output_id: 'o1', chunk: 'Working' }),
    event('tool.invoked', 's1', { tool: 'run_cell', tool_call_id: 't1' }),
    event('progress.updated', 's1', { progress: { percent: 5 } }),
    event('tool.completed', 's1', { tool: 'run_cell', tool_call_id: 't1', status: 'success' }),
    event('awaiting.confirmation', 's1', { reply_token: 'r1', timeout_seconds: 60 }),
    event('state.changed', 's1', { from_state: 'thinking', to_state: 'paused' }),
    event('state.changed', 's1', { from_state: 'paused', to_state: 'awaiting_input' }),
    event('awaiting.clarification', 's1', { reply_token: 'r2' }),
    event('handoff.requested', 's1'),
    event('session.errored', 's1', { recoverable: true }),
    started('s2'),
    event('session.cancelled', 's2'),
    started('s3'),
    event('session.completed', 's3')
  ];
  let state = EMPTY_CHAT;
  for (const e of events) {
    deepFreeze(state);
    const before = snapshot(state);
    const next = applyEvent(state, e);
    assert.equal(snapshot(state), before, `${e.type} changed its input`);
    assert.notEqual(next, state);
    state = next;
  }
  deepFreeze(state);
  const before = snapshot(state);
  const card = state.items.find(i => i.kind === 'clarification');
  const [typed, id] = chat.addUserMessage(state, 'more');
  const actions = [
    chat.attachSession(typed, id, 's9'),
    chat.markUnsent(typed, id),
    chat.attachGuidance(typed, id, 'gd_1', 's3'),
    chat.setRequestState(state, card.id, 'sending'),
    chat.addNotice(state, 'error', 'Refused.'),
    chat.addGuidance(state, [{ guidanceId: 'gd_2', text: 'faster', created: T0 + 1000 }]),
    chat.applyRevert(state, { sessionId: 's3', summary: 'Undid it.' }),
    chat.setUndoable(state, ['s1']),
    chat.setStatus(state, 'running'),
    chat.setCanContinue(state, true),
    chat.clearContinue(state)
  ];
  assert.equal(snapshot(state), before, 'actions changed their input');
  assert.ok(actions.every(next => next !== state));
});

test('the actions of the person, as values', () => {
  const [typed, id] = chat.addUserMessage(EMPTY_CHAT, 'Plot it');
  assert.equal(typed.items[0].id, id);
  const refused = chat.markUnsent(typed, id);
  assert.equal(refused.items[0].unsent, true);
  assert.equal(typed.items[0].unsent, undefined);
  const attached = chat.attachSession(typed, id, 's1');
  assert.equal(chat.attachSession(attached, id, 's2').items[0].sessionId, 's1', 'a session is attached once');
  // Guidance read back before its answer gave it an id is the same entry.
  const [sent, gid] = chat.addUserMessage(EMPTY_CHAT, 'use seaborn', true);
  const read = chat.addGuidance(sent, [{ guidanceId: 'gd_7', text: 'use seaborn', created: NaN }]);
  assert.deepEqual(
    read.items.map(i => [i.id, i.guidanceId]),
    [[gid, 'gd_7']]
  );
  assert.equal(chat.addGuidance(read, [{ guidanceId: 'gd_7', text: 'use seaborn', created: NaN }]), read);
  // Undo: the notice once, and later sessions are no longer undoable.
  let s = run(
    EMPTY_CHAT,
    started('s1'),
    event('session.completed', 's1'),
    started('s2'),
    event('session.completed', 's2')
  );
  s = { ...s, supports: { ...s.supports, revert: true } };
  assert.equal(chat.canRevert(s), true);
  s = chat.applyRevert(s, { sessionId: 's1', summary: 'Removed cell 3.' });
  assert.deepEqual(s.undoable, []);
  assert.equal(chat.applyRevert(s, { sessionId: 's1', summary: 'Removed cell 3.' }).items.length, s.items.length);
});

test('a batch is applied in sequence order per session, sessions in order of appearance', () => {
  const a1 = { ...started('a'), sequence_number: 1 };
  const a2 = { ...event('output.streaming', 'a', { output_id: 'o', chunk: 'x' }), sequence_number: 2 };
  const b1 = { ...started('b'), sequence_number: 1 };
  assert.deepEqual(
    orderBatch([a2, b1, a1]).map(e => e.event_id),
    [a1, a2, b1].map(e => e.event_id)
  );
  const s = applyEvents(EMPTY_CHAT, [a2, b1, a1]);
  assert.deepEqual(
    s.items.map(i => i.kind),
    ['user', 'answer', 'user']
  );
});
