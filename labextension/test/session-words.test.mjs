// Unit tests of the pure words of the open chat (src/sessionWords.ts) at
// every verbosity, and of the handshake and stream-message reader
// (src/handshake.ts). No DOM, no server.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { readStreamMessage, subscriptionRequest, implicitSubscriptionId } from '../lib/handshake.js';
import { SESSION_SIGNAL_KINDS, describeError, sessionWords, whereYouAre } from '../lib/sessionWords.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};
const VERBOSITIES = ['terse', 'normal', 'detailed'];

// An example of every signal, with what a normal verbosity says and how urgently.
const EXAMPLES = [
  [{ kind: 'switched', title: 'Plot sales' }, 'Switched to the chat “Plot sales”.', 'polite'],
  [{ kind: 'switched', title: '' }, 'Switched to another chat.', 'polite'],
  [{ kind: 'new-chat' }, 'New chat started. The message box is ready.', 'polite'],
  [
    { kind: 'new-chat-failed', reason: 'The disk is full.' },
    'Could not start a new chat: The disk is full.',
    'assertive'
  ],
  [{ kind: 'load-failed', message: 'No such chat.' }, 'No such chat.', 'assertive'],
  [{ kind: 'failed', message: 'The agent is busy.' }, 'The agent is busy.', 'assertive'],
  [{ kind: 'guidance-sent', paused: false }, 'Guidance sent; it applies at the next step.', 'polite'],
  [{ kind: 'guidance-sent', paused: true }, 'Guidance sent; it applies when you resume.', 'polite'],
  [
    { kind: 'sent-as-guidance' },
    'The agent is already working: your message was sent as guidance; it applies at the next step.',
    'polite'
  ],
  [
    { kind: 'no-guidance' },
    'The agent cannot take guidance while it works. Wait until it finishes, or stop it.',
    'polite'
  ],
  [{ kind: 'nothing-to-control', action: 'stop' }, 'Nothing is running, so there is nothing to stop.', 'polite'],
  [{ kind: 'nothing-to-control', action: 'pause' }, 'Nothing is running, so there is nothing to pause.', 'polite'],
  [{ kind: 'nothing-to-control', action: 'resume' }, 'Nothing is paused, so there is nothing to resume.', 'polite'],
  [
    { kind: 'cannot-control', action: 'pause' },
    'This agent cannot pause. Stop it instead: changes made so far are kept.',
    'polite'
  ],
  [{ kind: 'pausing' }, 'Pausing the agent at the next safe point.', 'polite'],
  [{ kind: 'nothing-to-continue' }, 'There is no interrupted request to continue in this chat.', 'polite'],
  [{ kind: 'continuing' }, 'Continuing where the agent stopped.', 'polite'],
  [{ kind: 'cannot-revert', why: 'no-chat' }, 'No chat is open, so there are no agent changes to undo.', 'polite'],
  [
    { kind: 'cannot-revert', why: 'running' },
    'The agent is working; stop it or wait for it to finish before undoing its changes.',
    'polite'
  ],
  [{ kind: 'cannot-revert', why: 'reverting' }, 'The agent is already undoing its changes.', 'polite'],
  [{ kind: 'cannot-revert', why: 'unsupported' }, "This server cannot undo the agent's changes.", 'polite'],
  [{ kind: 'cannot-revert', why: 'nothing' }, 'There are no agent changes to undo in this chat.', 'polite'],
  [{ kind: 'reverted', summary: 'Removed cell 3.' }, 'Removed cell 3.', 'polite'],
  [{ kind: 'revert-failed', message: 'Cell 3 changed since.' }, 'Cell 3 changed since.', 'assertive'],
  [{ kind: 'mode-locked', policy: 'Your administrator fixed Ask.' }, 'Your administrator fixed Ask.', 'assertive'],
  [
    { kind: 'mode-locked', policy: null },
    'The administrator of this server does not allow this approval mode.',
    'assertive'
  ],
  [
    { kind: 'subscription-rejected', reason: 'Unknown version.' },
    'The agent refused the subscription: Unknown version.',
    'assertive'
  ],
  [{ kind: 'stream-error', message: null }, 'The agent could not handle a message.', 'assertive'],
  [{ kind: 'pending-on-open', count: 1 }, 'A request in this chat is waiting for your answer.', 'assertive'],
  [{ kind: 'pending-on-open', count: 2 }, '2 requests in this chat are waiting for your answer.', 'assertive'],
  [{ kind: 'missed', summary: 'Done.' }, 'While the connection was down: Done.', 'polite'],
  [{ kind: 'waiting-after-resync', count: 1 }, 'A request is waiting for your answer.', 'assertive'],
  [{ kind: 'steps-failed', count: 2 }, '2 steps of this request failed; the transcript says which.', 'polite'],
  [
    { kind: 'expiring', fallback: 'reject' },
    'The request expires in 15 seconds; then the answer will be: reject.',
    'polite'
  ],
  [{ kind: 'expiring', fallback: null }, 'The request expires in 15 seconds.', 'polite'],
  [{ kind: 'last-output', output: '42' }, '42\nEnd of output.', 'polite'],
  [
    { kind: 'last-output', output: null },
    'The agent has not run a cell in this chat yet, so there is no output to hear.',
    'polite'
  ],
  [{ kind: 'no-chat', topic: 'progress' }, 'No chat is open, so there is no running cell to tell about.', 'polite'],
  [{ kind: 'no-chat', topic: 'usage' }, 'No chat is open, so there is no token usage to tell.', 'polite'],
  [{ kind: 'progress', sentence: 'Cell 4 is at 40 %.' }, 'Cell 4 is at 40 %.', 'polite'],
  [{ kind: 'progress', sentence: null }, 'The server did not say how far the cells are.', 'polite'],
  [{ kind: 'progress-failed', reason: 'Gone.' }, 'Could not ask how far along the cells are: Gone.', 'assertive'],
  [{ kind: 'progress-failed', reason: null }, 'Could not ask how far along the cells are.', 'assertive'],
  [{ kind: 'usage', sentence: 'This chat used 1,200 tokens.' }, 'This chat used 1,200 tokens.', 'polite']
];

test('every kind of signal has an example', () => {
  assert.deepEqual([...new Set(EXAMPLES.map(([s]) => s.kind))].sort(), [...SESSION_SIGNAL_KINDS].sort());
});

test('at normal verbosity each signal says its sentence, as urgently as it must', () => {
  for (const [signal, text, politeness] of EXAMPLES) {
    assert.deepEqual(sessionWords(signal, trans, 'normal'), [{ text, politeness }], signal.kind);
  }
});

test('every verbosity says every signal: one sentence, filled in, no ids, never louder than normal', () => {
  for (const verbosity of VERBOSITIES) {
    for (const [signal, , politeness] of EXAMPLES) {
      const said = sessionWords(signal, trans, verbosity);
      assert.equal(said.length, 1, `${verbosity} ${signal.kind}`);
      const [{ text, politeness: how }] = said;
      assert.ok(text.trim().length > 0, `${verbosity} ${signal.kind} says nothing`);
      assert.doesNotMatch(text, /%\d|undefined|null|\b(evt|sub|sess|rpl|gd)_/, `${verbosity} ${signal.kind}: ${text}`);
      assert.equal(how, politeness, `${verbosity} ${signal.kind} changes its urgency`);
    }
  }
});

test('terse says less where there is an explanation to drop; detailed says what normal says', () => {
  let shorter = 0;
  for (const [signal, normal] of EXAMPLES) {
    const [terse] = sessionWords(signal, trans, 'terse');
    const [detailed] = sessionWords(signal, trans, 'detailed');
    assert.ok(terse.text.length <= normal.length, `terse ${signal.kind} is longer`);
    assert.equal(detailed.text, normal);
    shorter += terse.text.length < normal.length ? 1 : 0;
  }
  assert.ok(shorter >= 5, 'terse drops the explanations');
  assert.deepEqual(sessionWords({ kind: 'guidance-sent', paused: true }, trans, 'terse'), [
    { text: 'Guidance sent.', politeness: 'polite' }
  ]);
  // What the person needs to decide is never dropped.
  assert.match(sessionWords({ kind: 'expiring', fallback: 'reject' }, trans, 'terse')[0].text, /reject/);
});

test('where you are, when the panel opens', () => {
  const base = { path: 'work/demo.ipynb', error: null, requestKey: null };
  assert.equal(
    whereYouAre({ ...base, path: null, chat: null }, trans),
    'Agent panel. Open a notebook to chat with the agent about it.'
  );
  assert.equal(whereYouAre({ ...base, chat: null }, trans), 'Agent panel for demo.ipynb. Loading the chat.');
  assert.equal(
    whereYouAre({ ...base, chat: null, error: { message: 'No server.', serverMissing: true } }, trans),
    'Agent panel for demo.ipynb. No server.'
  );
  assert.equal(
    whereYouAre(
      { ...base, requestKey: 'Ctrl+Shift+A', chat: { messages: 4, pending: 1, running: true, guidance: true } },
      trans
    ),
    'Agent panel for demo.ipynb. 4 messages. A request waits for your answer: press Ctrl+Shift+A. The agent is working; type guidance for it.'
  );
  assert.equal(
    whereYouAre({ ...base, chat: { messages: 0, pending: 0, running: false, guidance: false } }, trans),
    'Agent panel for demo.ipynb. No messages yet. Type your request.'
  );
});

test('an error reads as the server said it, or says what to check when there is no server', () => {
  const missing = Object.assign(new Error('404'), { serverMissing: true });
  assert.equal(describeError(missing, trans).serverMissing, true);
  assert.match(describeError(missing, trans).message, /jupyter server extension list/);
  assert.deepEqual(describeError(new Error('The agent is busy.'), trans), {
    serverMissing: false,
    message: 'The agent is busy.'
  });
  assert.equal(describeError('plain', trans).message, 'plain');
});

test('the handshake carries the verbosity and valid, distinct languages', () => {
  const request = subscriptionRequest({ verbosity: 'terse', languages: ['de-CH', 'not a tag!', 'en-US'] });
  assert.equal(request.type, 'subscription.request');
  assert.equal(request.capabilities.preferred_verbosity, 'terse');
  assert.deepEqual(request.capabilities.languages, ['de-CH', 'en-US']);
  assert.equal(request.capabilities.supports_confirmation_reply, true);
  assert.equal(request.subscriber_id, 'jupyter-aaep-panel', 'the server knows the panel by this id');
  assert.deepEqual(request.extensions, { jupyter_aaep: { stream_key: true } }, 'it asks for its key');
  const id = implicitSubscriptionId(bytes => bytes.fill(171));
  assert.equal(id, 'sub_' + 'ab'.repeat(16));
});

test('each stream message is read into one typed value', () => {
  const event = {
    '@context': 'https://aaep-protocol.org/context/v1',
    event_id: 'evt_1',
    type: 'aaep:agent.session.started',
    timestamp: '2026-11-23T09:00:00.000Z',
    session_id: 's1',
    sequence_number: 1
  };
  assert.equal(readStreamMessage(event).kind, 'event');
  assert.deepEqual(readStreamMessage({ type: 'subscription.accepted', subscription_id: 'sub_1' }), {
    kind: 'accepted',
    subscriptionId: 'sub_1'
  });
  assert.deepEqual(readStreamMessage({ type: 'subscription.rejected', reason_code: 'VERSION' }), {
    kind: 'rejected',
    reason: 'VERSION'
  });
  assert.deepEqual(readStreamMessage({ type: 'subscription.close' }), { kind: 'closed', reason: null });
  assert.deepEqual(readStreamMessage({ kind: 'replay.unavailable' }), { kind: 'replay-unavailable' });
  assert.deepEqual(readStreamMessage({ kind: 'error', message: 'Bad frame.' }), {
    kind: 'error',
    message: 'Bad frame.'
  });
  assert.deepEqual(readStreamMessage({ type: 'error' }), { kind: 'error', message: null });
  assert.deepEqual(readStreamMessage({ kind: 'something.new' }), { kind: 'other' });
  assert.deepEqual(readStreamMessage({ kind: 'stream.key', subscription_id: 'sub_1', stream_key: 'key_ab' }), {
    kind: 'key',
    key: 'key_ab'
  });
  assert.deepEqual(readStreamMessage({ kind: 'stream.key' }), { kind: 'other' }, 'no key, nothing to keep');
});
