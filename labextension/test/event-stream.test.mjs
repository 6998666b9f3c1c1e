// Unit tests of the chat's event stream (eventStream.ts, wires.ts) with a fake WebSocket and
// EventSource, and of the session that reads it (sessionLife.ts): a socket that opens at once
// is used alone; one that waits (behind a starting kernel) lets SSE carry the chat after the
// head start; when it opens later the stream moves to it without a lost or repeated event and
// without a "reconnecting" state; disposing during the race closes both wires.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { beforeEach, mock, test } from 'node:test';

globalThis.window ??= globalThis;
globalThis.navigator ??= { language: 'en-US' };

class FakeSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  static all = [];
  constructor(url, protocols) {
    Object.assign(this, { url, protocols, readyState: 0, sent: [], closedWith: null });
    FakeSocket.all.push(this);
  }
  send(text) {
    this.sent.push(JSON.parse(text));
  }
  close(code, reason) {
    this.readyState = 3;
    this.closedWith = { code, reason };
  }
  // What the browser does:
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  receive(message) {
    this.onmessage?.({ data: JSON.stringify(message) });
  }
  drop() {
    this.readyState = 3;
    this.onclose?.({ code: 1006 });
  }
}

class FakeEventSource {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;
  static all = [];
  constructor(url, init) {
    Object.assign(this, { url, init, readyState: 0, listeners: new Map(), closed: false });
    FakeEventSource.all.push(this);
  }
  addEventListener(name, listener) {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), listener]);
  }
  close() {
    this.readyState = 2;
    this.closed = true;
  }
  // What the browser does:
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  emit(message, name = 'message') {
    for (const listener of this.listeners.get(name) ?? []) {
      listener({ data: JSON.stringify(message) });
    }
  }
  fail() {
    this.readyState = 2;
    this.onerror?.();
  }
}

// Read by @jupyterlab/services when it loads (the socket class) and by the first request.
globalThis.WebSocket = FakeSocket;
globalThis.EventSource = FakeEventSource;
const posts = [];
let answerPost = () => null;
let chatInfo = null;
globalThis.fetch = async request => {
  const url = new URL(request.url);
  if (request.method === 'POST') {
    const body = JSON.parse(await request.text());
    const answer = await new Promise(resolve => posts.push({ path: url.pathname, body, resolve }));
    return new Response(answer === null ? null : JSON.stringify(answer), { status: answer === null ? 204 : 200 });
  }
  return new Response(JSON.stringify(chatInfo), { status: 200 });
};

const { PageConfig } = await import('@jupyterlab/coreutils');
PageConfig.setOption('baseUrl', 'http://127.0.0.1:8888/');
PageConfig.setOption('wsUrl', 'ws://127.0.0.1:8888/');
const { EventStream, SOCKET_HEAD_START_MS } = await import('../lib/eventStream.js');
const { SessionLife } = await import('../lib/sessionLife.js');
const { AAEP_CONTEXT } = await import('../lib/aaep.js');

const settled = () => new Promise(resolve => setImmediate(resolve));
const HANDSHAKE = { type: 'subscription.request', aaep_version: '1.0.0', subscriber_id: 'test' };
const accepted = id => ({ type: 'subscription.accepted', subscription_id: id, aaep_version: '1.0.0' });

/** Answer every POST waiting (the SSE handshake) the way the server would. */
async function answerPosts() {
  await settled();
  for (const post of posts.splice(0)) {
    post.resolve(answerPost(post.body));
  }
  await settled();
}

function watch(stream) {
  const seen = { messages: [], states: [], reconnects: 0 };
  stream.message.connect((_, m) => seen.messages.push(m));
  stream.stateChanged.connect((_, s) => seen.states.push(s));
  stream.reconnected.connect(() => (seen.reconnects += 1));
  return seen;
}

beforeEach(() => {
  FakeSocket.all.length = 0;
  FakeEventSource.all.length = 0;
  posts.length = 0;
  answerPost = body => (body.type === 'subscription.request' ? accepted('sub_sse') : null);
  mock.timers.reset();
  mock.timers.enable({ apis: ['setTimeout'] });
});

test('a socket that opens within its head start is used alone: no SSE is ever opened', () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  const seen = watch(stream);
  stream.connect();
  const [socket] = FakeSocket.all;
  assert.match(socket.url, /\/aaep\/v1\/chats\/chat_1\/ws/);
  assert.deepEqual(socket.protocols, ['aaep.v1']);
  mock.timers.tick(SOCKET_HEAD_START_MS - 1);
  socket.open();
  mock.timers.tick(10 * SOCKET_HEAD_START_MS);
  assert.equal(FakeEventSource.all.length, 0, 'no SSE for a socket that opened in time');
  assert.deepEqual(socket.sent, [HANDSHAKE]);
  assert.equal(stream.kind, 'websocket');
  assert.deepEqual(seen.states, ['connecting', 'open']);
  assert.equal(stream.sendFrame({ kind: 'control', action: 'pause' }), true);
  socket.receive(accepted('sub_ws'));
  assert.deepEqual(seen.messages, [accepted('sub_ws')]);
  assert.equal(seen.reconnects, 0);
  stream.dispose();
});

test('a socket that waits (behind a starting kernel) lets SSE carry the chat after its head start', async () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  const seen = watch(stream);
  stream.connect();
  mock.timers.tick(SOCKET_HEAD_START_MS - 1);
  assert.equal(FakeEventSource.all.length, 0, 'the socket gets its head start');
  mock.timers.tick(1);
  const [source] = FakeEventSource.all;
  assert.match(source.url, /\/aaep\/v1\/chats\/chat_1\/events/);
  source.open();
  assert.equal(stream.state, 'open');
  assert.equal(stream.kind, 'sse');
  await answerPosts(); // the handshake went by POST; its answer is read like the stream's
  assert.deepEqual(seen.messages, [accepted('sub_sse')]);
  source.emit({ kind: 'stream.key', subscription_id: 'sub_sse', stream_key: 'key_1' });
  assert.equal(seen.messages.length, 2, 'SSE messages are heard');
  assert.equal(stream.sendFrame({ kind: 'control' }), false, 'no socket yet: requests go by POST');
  assert.equal(FakeSocket.all[0].closedWith, null, 'the socket still waits');
  assert.deepEqual(seen.states, ['connecting', 'open']);
  stream.dispose();
});

test('the socket opening later takes over at its first frame: nothing lost, nothing repeated, never "reconnecting"', async () => {
  let n = 0;
  const event = (session = 'ses_1') => {
    n += 1;
    return {
      '@context': AAEP_CONTEXT,
      event_id: `evt_${String(n).padStart(8, '0')}`,
      type: n === 1 ? 'aaep:agent.session.started' : 'aaep:agent.progress.updated',
      timestamp: '2026-11-29T08:00:00.000Z',
      session_id: session,
      sequence_number: n,
      summary_normal: `Step ${n}.`
    };
  };
  const [e1, e2, e3, e4, e5, e6] = [event(), event(), event(), event(), event(), event()];
  chatInfo = {
    chat_id: 'chat_s',
    notebook_path: 'a.ipynb',
    status: 'idle',
    transcript: [],
    pending_requests: []
  };
  const life = new SessionLife({
    info: chatInfo,
    path: 'a.ipynb',
    trans: { __: (text, ...args) => args.reduce((t, a, i) => t.replace(`%${i + 1}`, a), text), _n: (s, p) => p },
    settings: () => ({ verbosity: 'normal', announcePersonRuns: true })
  });
  const heard = [];
  const said = [];
  const connection = [];
  life.model.eventProcessed.connect((_, p) => heard.push([p.event.event_id, p.replay]));
  life.stream.stateChanged.connect((_, state) => connection.push(state));
  life.said.connect((_, s) => said.push(s.kind));
  life.start();
  mock.timers.tick(SOCKET_HEAD_START_MS);
  const [socket] = FakeSocket.all;
  const [source] = FakeEventSource.all;
  source.open();
  await answerPosts();
  assert.equal(life.model.subscriptionId, 'sub_sse');
  source.emit(e1, 'aaep.event');
  source.emit(e2, 'aaep.event');
  socket.open(); // the kernel answered: Chromium lets the chat's socket through
  assert.equal(socket.sent[0].type, 'subscription.request', 'the handshake goes first on the socket');
  assert.equal(source.closed, false, 'SSE carries the chat until the socket answers');
  source.emit(e3, 'aaep.event');
  // e4 was written to SSE but is still on its way when the socket answers: only the chat
  // fetched again (the resync) has it. e5 came after the socket's subscription began.
  chatInfo = { ...chatInfo, status: 'running', session_id: 'ses_1', transcript: [e1, e2, e3, e4, e5] };
  socket.receive(accepted('sub_ws'));
  assert.equal(source.closed, true, 'SSE closes at the socket first frame');
  source.emit(e4, 'aaep.event'); // too late: that wire is closed
  for (const e of [e1, e2, e3, e5]) {
    socket.receive(e); // the socket's replay: the running session from its start
  }
  await settled();
  await settled();
  socket.receive(e6);
  await settled();
  assert.equal(life.model.subscriptionId, 'sub_ws');
  assert.deepEqual(
    heard.map(([id]) => id),
    [e1, e2, e3, e5, e4, e6].map(e => e.event_id),
    'each event once; the one still on its way over SSE comes with the resync'
  );
  assert.deepEqual(new Set(heard.map(([id]) => id)).size, 6, 'none lost');
  assert.deepEqual(
    heard.filter(([, replay]) => !replay).map(([id]) => id),
    [e1, e2, e3, e5, e6].map(e => e.event_id),
    'every event that arrived live is heard once, in order'
  );
  assert.equal(life.stream.kind, 'websocket');
  assert.equal(life.stream.state, 'open');
  assert.ok(!connection.includes('reconnecting'), `connection went ${connection}`);
  assert.deepEqual(said, [], 'nothing to say: the person lost nothing');
  const pause = life.client.request({ kind: 'control', action: 'pause' });
  assert.equal(socket.sent.at(-1).kind, 'control', 'requests go on the socket now');
  life.dispose();
  await assert.rejects(pause, /connection was lost/);
});

test("the SSE handshake's answer that comes back after the move is not taken for the socket's", async () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  const seen = watch(stream);
  stream.connect();
  mock.timers.tick(SOCKET_HEAD_START_MS);
  const [socket] = FakeSocket.all;
  FakeEventSource.all[0].open(); // its handshake POST is now under way
  socket.open();
  socket.receive(accepted('sub_ws'));
  await answerPosts(); // the POST's answer, sub_sse, arrives last
  assert.deepEqual(
    seen.messages.map(m => m.subscription_id),
    ['sub_ws'],
    "only the socket's subscription is heard"
  );
  assert.equal(seen.reconnects, 1, 'one resynchronisation for the move');
  stream.dispose();
});

test('a socket that opens while SSE is still connecting is used alone', () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  const seen = watch(stream);
  stream.connect();
  mock.timers.tick(SOCKET_HEAD_START_MS);
  const [source] = FakeEventSource.all;
  FakeSocket.all[0].open();
  assert.equal(source.closed, true);
  assert.equal(stream.kind, 'websocket');
  assert.equal(seen.reconnects, 0, 'a first connection: nothing to resynchronise');
  assert.equal(posts.length, 0, 'no SSE handshake was sent');
  stream.dispose();
});

test('a socket that fails while SSE carries the chat leaves SSE in charge, state unchanged', () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  const seen = watch(stream);
  stream.connect();
  mock.timers.tick(SOCKET_HEAD_START_MS);
  const [source] = FakeEventSource.all;
  source.open();
  FakeSocket.all[0].drop(); // refused (a proxy) before it opened
  mock.timers.tick(60_000);
  assert.equal(stream.kind, 'sse');
  assert.equal(source.closed, false);
  assert.deepEqual(seen.states, ['connecting', 'open']);
  assert.equal(FakeSocket.all.length, 1, 'no new socket while SSE works');
  // SSE lost later: the stream reconnects over SSE (the socket proved unavailable).
  source.fail();
  assert.equal(stream.state, 'reconnecting');
  mock.timers.tick(1000);
  assert.equal(FakeSocket.all.length, 1);
  assert.equal(FakeEventSource.all.length, 2);
  stream.dispose();
});

test('disposing during the race closes both wires and starts nothing later', () => {
  const stream = new EventStream({ chatId: 'chat_1', handshake: () => HANDSHAKE });
  stream.connect();
  mock.timers.tick(SOCKET_HEAD_START_MS);
  const [socket] = FakeSocket.all;
  const [source] = FakeEventSource.all;
  source.open();
  stream.dispose();
  assert.equal(socket.closedWith?.code, 4000);
  assert.equal(source.closed, true);
  assert.equal(stream.state, 'closed');
  socket.open(); // the browser lets it through after all: nobody listens
  assert.equal(socket.sent.length, 0);
  mock.timers.tick(60_000);
  assert.equal(FakeSocket.all.length + FakeEventSource.all.length, 2, 'no reconnection');

  // Disposed before the head start ran out: no SSE at all.
  const early = new EventStream({ chatId: 'chat_2', handshake: () => HANDSHAKE });
  early.connect();
  early.dispose();
  mock.timers.tick(60_000);
  assert.equal(FakeEventSource.all.length, 1);
  assert.equal(FakeSocket.all[1].closedWith?.code, 4000);
});
