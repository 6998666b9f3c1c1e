// Unit tests of the %aaep view's approval words (src/notebookApproval.ts):
// what the buttons say, from the server's event, and the reply a press sends.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  actionPhrase,
  approvalWords,
  notebookReply,
  outcomeWords,
  readRequestAnswer
} from '../lib/notebookApproval.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

const EVENT = {
  type: 'aaep:agent.awaiting.confirmation',
  event_id: 'evt_1',
  session_id: 'sess_1',
  timestamp: '2026-11-28T15:00:00.000Z',
  action: 'Run code cell 3 (id abc) in the Python 3 kernel.',
  consequence: 'The code runs in your kernel.',
  reply_token: 'rpl_secret',
  timeout_seconds: 90,
  default_decision: 'reject',
  risk_level: 'medium',
  irreversible: true,
  extra_context: { cell_number: 3, code: 'print(1)', risk_flags: ['deletes files'] }
};

test('the buttons say what they approve, in the words of the kernel view', () => {
  const words = approvalWords(EVENT, trans);
  assert.equal(words.approve, 'Approve running cell 3');
  assert.equal(words.reject, 'Reject running cell 3');
  assert.equal(words.title, 'Approval needed: Run code cell 3 (id abc) in the Python 3 kernel.');
  assert.equal(words.risk, 'Medium (cannot be undone)');
  assert.deepEqual(words.warnings, ['deletes files']);
  assert.deepEqual(words.code, [{ caption: 'Code of cell 3:', code: 'print(1)' }]);
  assert.match(words.deadline, /^If you do not answer by .+, it will be rejected\.$/);
});

test('a plan shows its numbered steps, the first choice and Reject, and where the others are', () => {
  const plan = {
    ...EVENT,
    action: 'Follow this plan: Clean and plot the temperatures.',
    irreversible: false,
    extra_context: {
      plan: {
        summary: 'Clean and plot the temperatures',
        steps: ['Run cell 2 (the cleaning)', 'Run cell 4 (the plot)']
      }
    }
  };
  const words = approvalWords(plan, trans);
  assert.equal(words.title, 'Plan for your approval, 2 steps: Clean and plot the temperatures');
  assert.deepEqual(words.steps, ['Run cell 2 (the cleaning)', 'Run cell 4 (the plot)']);
  assert.equal(words.approve, 'Run it, asking only for code the risk scan flags');
  assert.equal(words.reject, 'Reject the plan');
  assert.match(words.elsewhere, /^The other choices \(run it asking before each step, keep planning/);
  assert.match(words.elsewhere, /are in the side panel\.$/);
  // a plain accept is the plan's first choice: the reply is the same as any approval's
  assert.equal(notebookReply(plan, 'accept').decision, 'accept');
  const ordinary = approvalWords(EVENT, trans);
  assert.equal(ordinary.steps, null);
  assert.equal(ordinary.elsewhere, '');
});

test('every kind of step has a phrase, never an id or JSON', () => {
  const phrase = extra => actionPhrase({ extra_context: extra }, trans);
  assert.equal(phrase({ change: { kind: 'delete', cell_number: 4 } }), 'deleting cell 4');
  assert.equal(phrase({ change: { kind: 'clear_outputs' } }), 'clearing the outputs of a cell');
  assert.equal(phrase({ change: { kind: 'create', where: 'after cell 2' } }), 'adding a cell after cell 2');
  assert.equal(phrase({ cells: [{}, {}] }), 'running 2 cells');
  assert.equal(phrase({ tool: 'restart_kernel' }), 'restarting the kernel');
  assert.equal(phrase({ tool: 'load_sales' }), 'calling load sales');
  assert.equal(phrase({}), 'this action');
  assert.equal(actionPhrase({}, trans), 'this action');
});

test('a press sends a reply marked as coming from the notebook, with the server’s token', () => {
  const reply = notebookReply(EVENT, 'accept');
  assert.equal(reply.type, 'confirmation.reply');
  assert.equal(reply.reply_token, 'rpl_secret');
  assert.equal(reply.decision, 'accept');
  assert.equal(reply.via, 'notebook');
  assert.equal('subscription_id' in reply, false);
});

test('only a well-formed answer of the server is read', () => {
  assert.equal(readRequestAnswer(null), null);
  assert.equal(readRequestAnswer({ open: true }), null);
  const answer = readRequestAnswer({
    request_id: 'evt_1',
    kind: 'confirmation',
    open: false,
    outcome: '',
    event: EVENT
  });
  assert.equal(answer.outcome, null);
  assert.equal(outcomeWords(answer, trans), 'Answered.');
  assert.equal(outcomeWords({ ...answer, outcome: 'Approved in the panel.' }, trans), 'Approved in the panel.');
});
