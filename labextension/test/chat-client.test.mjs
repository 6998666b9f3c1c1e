// Unit tests of the chat client's one road (chatClient.ts): a request sent on the socket
// resolves with the frame that echoes its request_id, a refusal rejects with the server's
// sentence, and a lost connection fails what was waiting instead of leaving it hanging.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

globalThis.window ??= globalThis;
// @jupyterlab/services reads these browser globals when it loads; the client never uses them here.
globalThis.WebSocket ??= class {};
globalThis.fetch ??= async () => {
  throw new Error('no network in unit tests');
};

const { ChatClient, setStreamKey, withStreamKey } = await import('../lib/chatClient.js');

function socket() {
  const sent = [];
  return { sent, sendFrame: frame => (sent.push(frame), true) };
}

test('each request resolves with its own answer, whatever the order the answers come in', async () => {
  const frames = socket();
  const client = new ChatClient('chat_1', frames);
  const first = client.request({ kind: 'control', action: 'pause' });
  const second = client.request({ kind: 'approval_mode', mode: 'auto' });
  const [a, b] = frames.sent;
  assert.equal(a.kind, 'control');
  assert.notEqual(a.request_id, b.request_id);
  assert.equal(
    client.settle({ kind: 'approval_mode.accepted', status: 200, approval_mode: 'auto', request_id: b.request_id }),
    true
  );
  assert.equal(
    client.settle({ kind: 'control.accepted', status: 200, action: 'pause', paused: true, request_id: a.request_id }),
    true
  );
  assert.deepEqual(await first, { kind: 'control.accepted', action: 'pause', paused: true });
  assert.deepEqual(await second, { kind: 'approval_mode.accepted', approval_mode: 'auto' });
  assert.equal(client.settle({ kind: 'control.accepted', request_id: 'someone-else' }), false);
  client.dispose();
});

test('a refusal rejects with the server sentence; a reply answered 204 resolves null', async () => {
  const frames = socket();
  const client = new ChatClient('chat_1', frames);
  const refused = client.request({ kind: 'user_input', text: '' });
  client.settle({
    kind: 'error',
    status: 400,
    message: 'user_input needs text.',
    request_id: frames.sent[0].request_id
  });
  await assert.rejects(refused, error => error.message === 'user_input needs text.' && error.status === 400);
  const reply = client.request({ type: 'confirmation.reply', reply_token: 'rpl_1', decision: 'accept' });
  client.settle({ kind: 'confirmation.reply.accepted', status: 204, request_id: frames.sent[1].request_id });
  assert.equal(await reply, null);
  client.dispose();
});

test('a lost connection fails the requests still waiting, with a sentence', async () => {
  const frames = socket();
  const client = new ChatClient('chat_1', frames);
  const waiting = client.request({ kind: 'control', action: 'stop' });
  client.connectionLost();
  await assert.rejects(waiting, /connection was lost/);
  client.dispose();
  await assert.rejects(client.request({ kind: 'control', action: 'stop' }), /closed/);
});

test("every message to a chat carries the key of that chat's stream, once the server gave one", async () => {
  const frames = socket();
  const client = new ChatClient('chat_k', frames);
  const pending = [];
  pending.push(client.request({ type: 'confirmation.reply', reply_token: 'rpl_1', decision: 'accept' }));
  assert.equal(frames.sent[0].stream_key, undefined, 'no key yet: nothing to send');
  setStreamKey('chat_k', 'key_1');
  pending.push(
    client.request({ type: 'confirmation.reply', reply_token: 'rpl_2', decision: 'accept', via: 'notebook' })
  );
  pending.push(client.request({ kind: 'approval_mode', mode: 'auto' }));
  assert.equal(frames.sent[1].stream_key, 'key_1');
  assert.equal(frames.sent[1].via, 'notebook', 'the notebook view keeps its marker');
  assert.equal(frames.sent[2].stream_key, 'key_1', "a mode change is the panel's too");
  assert.equal(withStreamKey('chat_other', { kind: 'x' }).stream_key, undefined, "never another chat's key");
  setStreamKey('chat_k', null);
  assert.equal(withStreamKey('chat_k', { kind: 'x' }).stream_key, undefined, 'forgotten when the stream goes');
  client.dispose();
  await Promise.allSettled(pending); // the socket's answers never come here
});
