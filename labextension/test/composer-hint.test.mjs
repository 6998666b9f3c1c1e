// Unit tests of the message box's description while the panel connects (components/composerHint.ts,
// model.ts): under Orca, a panel opened with the focus in the box read "Not connected to the
// agent. You can send your message once the connection is back." before its first connection
// was made — wrong news, and 5 s of speech. Run: node --import ./test/loader.mjs --test test/.
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { composerHint } = await import('../lib/components/composerHint.js');
const { ChatModel } = await import('../lib/model.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

function description(state) {
  return composerHint(trans, {
    steering: false,
    paused: false,
    waiting: null,
    disabled: false,
    connecting: false,
    running: false,
    acceptsGuidance: true,
    ...state
  });
}

test('before the first connection the box says it is connecting, in few words', () => {
  assert.equal(description({ disabled: true, connecting: true }), 'Connecting to the agent.');
});

test('a lost connection is still said as lost, and a connected box gives its keys', () => {
  assert.match(description({ disabled: true, connecting: false }), /^Not connected to the agent\./);
  assert.equal(description({ disabled: false }), 'Enter to send, Shift+Enter for a new line.');
});

test('the model knows the first connection from a lost one', () => {
  const model = new ChatModel('c1', 'a.ipynb');
  assert.equal(model.firstConnecting, true);
  model.connection = 'connecting';
  assert.equal(model.firstConnecting, true);
  model.connection = 'open';
  assert.equal(model.firstConnecting, false);
  model.connection = 'reconnecting';
  assert.equal(model.firstConnecting, false);
  const failed = new ChatModel('c2', 'a.ipynb');
  failed.connection = 'failed';
  assert.equal(failed.firstConnecting, false);
});
