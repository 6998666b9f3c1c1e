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

const { ChatClient } = await import('../lib/chatClient.js');

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
