// Unit tests of the narrator (src/narrator.ts): pure words, no DOM, no timers.
// Every event type at every verbosity gives the speech docs/NARRATION.md
// describes; the speech budget (one-sentence approval alert, one closing line
// per turn, no MIME types, named progress) is checked on its own.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { Narrator, START_GRACE_MS, duration } = await import('../lib/narrator.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

let n = 0;
function event(type, fields = {}, session = 's1') {
  n += 1;
  return {
    event_id: `evt_${n}`,
    type: `aaep:agent.${type}`,
    timestamp: '2026-11-23T09:00:00.000Z',
    session_id: session,
    sequence_number: n,
    ...fields
  };
}

function narrator(verbosity) {
  const it = new Narrator(trans, { verbosity });
  it.setRequestShortcut('Ctrl+Shift+A');
  return it;
}

/** What one event makes the narrator say: `polite: …` / `ALERT: …` (and `cancel …`). */
function say(it, e) {
  return it
    .narrate({ event: e, replay: false })
    .map(s =>
      s.cancelKey && !s.text
        ? `cancel ${s.cancelKey}`
        : `${s.politeness === 'assertive' ? 'ALERT' : 'polite'}: ${s.text}`
    );
}

const ACTION = 'Run cell 4, 18 lines of code, in the Python kernel.';
const EVENTS = {
  'session.started': () =>
    event('session.started', { summary_normal: 'Started working on your request.', summary_terse: 'Started.' }),
  'session.started (a long cell)': () =>
    event('session.started', { requested_by: 'kernel:person', summary_normal: 'Cell 7 is still running.' }),
  'output.streaming': () =>
    event('output.streaming', { output_id: 'o', chunk: 'Half of 1 is 0.5. And more', complete: false }),
  'tool.invoked': () =>
    event('tool.invoked', { tool_call_id: 'c1', summary_normal: 'Running cell 4.', summary_terse: 'Run cell 4.' }),
  'tool.completed': () =>
    event('tool.completed', {
      tool_call_id: 'c1',
      status: 'success',
      summary_normal: 'Cell 4 ran: 0.5.',
      summary_terse: 'Cell 4: 0.5.',
      summary_detailed: 'Cell 4 ran in 0.1 seconds. Output:\n0.5'
    }),
  'tool.completed (failed)': () =>
    event('tool.completed', {
      tool_call_id: 'c2',
      status: 'error',
      error_message: "NameError: name 'df' is not defined",
      summary_normal: 'Cell 5 failed.',
      summary_terse: 'Failed.'
    }),
  'awaiting.confirmation': () =>
    event('awaiting.confirmation', {
      action: ACTION,
      consequence: 'The code runs in your kernel.',
      risk_level: 'medium',
      timeout_seconds: 90,
      default_decision: 'reject',
      extra_context: { code: Array.from({ length: 18 }, (_, i) => `x${i} = ${i}`).join('\n') },
      summary_normal: `Approval needed, medium risk: ${ACTION} The code runs in your kernel. If you do not answer within 90 seconds, it will be rejected.`
    }),
  'awaiting.confirmation (automatic)': () =>
    event('awaiting.confirmation', {
      action: ACTION,
      risk_level: 'medium',
      extra_context: { auto_approved: true },
      summary_normal: `Approved automatically by this chat's setting: ${ACTION}`
    }),
  'awaiting.clarification': () => event('awaiting.clarification', { question: 'Which column holds the dates?' }),
  'handoff.requested': () =>
    event('handoff.requested', {
      reason: 'The kernel needs a restart.',
      summary_normal: 'Restart the kernel, then ask again.'
    }),
  'progress.updated': () =>
    event('progress.updated', {
      urgency: 'background',
      progress: { percent: 60 },
      summary_normal: 'Cell 7: 60 percent.'
    }),
  'progress.updated (milestone)': () =>
    event('progress.updated', { urgency: 'normal', progress: { percent: 50 }, summary_normal: 'Cell 7 is half done.' }),
  'state.changed (approved)': () =>
    event('state.changed', {
      from_state: 'awaiting_input',
      to_state: 'executing',
      summary_normal: 'Approved in the panel.'
    }),
  'state.changed (paused)': () =>
    event('state.changed', { from_state: 'executing', to_state: 'paused', summary_normal: 'Paused.' }),
  'state.changed (thinking)': () =>
    event('state.changed', { from_state: 'executing', to_state: 'thinking', summary_normal: 'Thinking.' }),
  'session.completed': () => event('session.completed', { summary_normal: 'Done.' }),
  'session.cancelled': () => event('session.cancelled', { summary_normal: 'You stopped the agent.' }),
  'session.errored': () =>
    event('session.errored', {
      summary_normal: 'The model is overloaded.',
      remediation_hint: 'Try again in a minute.'
    }),
  'an unknown critical event': () => event('future.thing', { urgency: 'critical' })
};

const ALERT_18 = `ALERT: Approval needed, medium risk: Run cell 4, 18 lines of code, in the Python kernel; Ctrl+Shift+A to review.`;
const EXPECTED = {
  terse: {
    'session.started': ['polite: Started.'],
    'session.started (a long cell)': [],
    'output.streaming': ['polite: Half of 1 is 0.5.'],
    'tool.invoked': [],
    'tool.completed': ['polite: Cell 4: 0.5.'],
    'tool.completed (failed)': ['polite: Cell 5 failed.'],
    'awaiting.confirmation': ['ALERT: Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.'],
    'awaiting.confirmation (automatic)': [`polite: Approved automatically by this chat's setting: ${ACTION}`],
    'awaiting.clarification': ['ALERT: The agent asks: Which column holds the dates? Press Ctrl+Shift+A to go to it.'],
    'handoff.requested': ['ALERT: The agent hands control back to you: Restart the kernel, then ask again.'],
    'progress.updated': [],
    'progress.updated (milestone)': [],
    'state.changed (approved)': [],
    'state.changed (paused)': ['polite: Paused.'],
    'state.changed (thinking)': [],
    'session.completed': ['polite: Done.'],
    'session.cancelled': ['polite: You stopped the agent.'],
    'session.errored': ['ALERT: Error: The model is overloaded. Try again in a minute.'],
    'an unknown critical event': ['ALERT: The agent needs your attention.']
  },
  normal: {
    'session.started': ['polite: Started working on your request.'],
    'session.started (a long cell)': ['polite: Cell 7 is still running.'],
    'output.streaming': ['polite: Half of 1 is 0.5.'],
    'tool.invoked': ['polite: Running cell 4.'],
    'tool.completed': ['cancel tool:c1', 'polite: Cell 4 ran: 0.5.'],
    'tool.completed (failed)': ['cancel tool:c2', "polite: Cell 5 failed. NameError: name 'df' is not defined"],
    'awaiting.confirmation': [ALERT_18],
    'awaiting.confirmation (automatic)': [`polite: Approved automatically by this chat's setting: ${ACTION}`],
    'awaiting.clarification': ['ALERT: The agent asks: Which column holds the dates? Press Ctrl+Shift+A to go to it.'],
    'handoff.requested': ['ALERT: The agent hands control back to you: Restart the kernel, then ask again.'],
    'progress.updated': [],
    'progress.updated (milestone)': ['polite: Cell 7 is half done.'],
    'state.changed (approved)': ['polite: Approved in the panel.'],
    'state.changed (paused)': ['polite: Paused.'],
    'state.changed (thinking)': [],
    'session.completed': ['polite: Done.'],
    'session.cancelled': ['polite: You stopped the agent.'],
    'session.errored': ['ALERT: Error: The model is overloaded. Try again in a minute.'],
    'an unknown critical event': ['ALERT: The agent needs your attention.']
  },
  detailed: {
    'session.started': ['polite: Started working on your request.'],
    'session.started (a long cell)': ['polite: Cell 7 is still running.'],
    'output.streaming': ['polite: Half of 1 is 0.5.'],
    'tool.invoked': ['polite: Running cell 4.'],
    'tool.completed': ['polite: Cell 4 ran in 0.1 seconds. Output: 0.5'],
    'tool.completed (failed)': ["polite: Cell 5 failed. NameError: name 'df' is not defined"],
    'awaiting.confirmation': [`${ALERT_18} Without an answer within 1 minute 30 seconds, it will be rejected.`],
    'awaiting.confirmation (automatic)': [`polite: Approved automatically by this chat's setting: ${ACTION}`],
    'awaiting.clarification': ['ALERT: The agent asks: Which column holds the dates? Press Ctrl+Shift+A to go to it.'],
    'handoff.requested': ['ALERT: The agent hands control back to you: Restart the kernel, then ask again.'],
    'progress.updated': ['polite: Cell 7: 60 percent.'],
    'progress.updated (milestone)': ['polite: Cell 7 is half done.'],
    'state.changed (approved)': ['polite: Approved in the panel.'],
    'state.changed (paused)': ['polite: Paused.'],
    'state.changed (thinking)': ['polite: Thinking.'],
    'session.completed': ['polite: Done.'],
    'session.cancelled': ['polite: You stopped the agent.'],
    'session.errored': ['ALERT: Error: The model is overloaded. Try again in a minute.'],
    'an unknown critical event': ['ALERT: The agent needs your attention.']
  }
};

for (const verbosity of ['terse', 'normal', 'detailed']) {
  test(`${verbosity}: every event type says what docs/NARRATION.md §9 lists`, () => {
    for (const [name, make] of Object.entries(EVENTS)) {
      // A fresh narrator per event: each is said as the first of its turn.
      assert.deepEqual(say(narrator(verbosity), make()), EXPECTED[verbosity][name], `${verbosity}, ${name}`);
    }
    assert.deepEqual(Object.keys(EXPECTED[verbosity]).sort(), Object.keys(EVENTS).sort());
  });
}

test('a step start is held back at normal verbosity only, keyed to its result', () => {
  for (const [verbosity, hold] of [
    ['normal', START_GRACE_MS],
    ['detailed', undefined]
  ]) {
    const [start] = narrator(verbosity).narrate({ event: EVENTS['tool.invoked'](), replay: false });
    assert.equal(start.holdMs, hold, verbosity);
    assert.equal(start.key, 'tool:c1');
    assert.equal(start.kind, 'start');
  }
});

test('the approval alert is one short sentence: what, how risky, the key', () => {
  for (const verbosity of ['terse', 'normal']) {
    const [alert] = narrator(verbosity).narrate({ event: EVENTS['awaiting.confirmation'](), replay: false });
    assert.equal(alert.kind, 'request');
    const sentences = alert.text.split(/(?<=[.!?])\s+/);
    assert.equal(sentences.length, 1, alert.text);
    assert.ok(alert.text.split(/\s+/).length <= 20, alert.text);
    assert.match(alert.text, /medium risk/);
    assert.match(alert.text, /Ctrl\+Shift\+A/);
    assert.ok(!alert.text.includes('x0 = 0'), 'no code in the alert');
  }
  const none = new Narrator(trans, { verbosity: 'normal' });
  const [alert] = none.narrate({ event: EVENTS['awaiting.confirmation'](), replay: false });
  assert.match(alert.text, /answer in the agent panel\.$/);
});

test('one closing line per turn: "Done." opening the answer is left to the closing line', () => {
  const it = narrator('normal');
  const said = [
    event('session.started', { summary_normal: 'Started working on your request.' }),
    event('output.streaming', { output_id: 'o', chunk: 'Done. All code cells ran without errors.', complete: true }),
    event('session.completed', { summary_normal: 'Done, but 1 step failed: run a cell.' }),
    event('session.errored', { summary_normal: 'The connection was lost.' })
  ].flatMap(e => say(it, e));
  assert.deepEqual(said, [
    'polite: Started working on your request.',
    'polite: All code cells ran without errors.',
    'polite: Done, but 1 step failed: run a cell.'
  ]);
  // The next turn has its own closing line.
  assert.deepEqual(say(it, event('session.started', {})), ['polite: The agent started working.']);
  assert.deepEqual(say(it, event('session.completed', { summary_normal: 'Done.' })), ['polite: Done.']);
});

test('no MIME types or sizes: a figure is "a figure"', () => {
  const it = narrator('normal');
  const said = say(
    it,
    event('tool.completed', {
      tool_call_id: 'c9',
      status: 'success',
      summary_normal: 'Cell 6 ran and showed [image/png 576×454, 27 KB] and image/svg+xml, 3 KB.'
    })
  );
  assert.deepEqual(said, ['cancel tool:c9', 'polite: Cell 6 ran and showed a figure and a figure.']);
  const prose = say(
    it,
    event('output.streaming', {
      output_id: 'p',
      chunk: 'It reads a text/plain file and returns application/json.',
      complete: true
    })
  );
  assert.deepEqual(prose, ['polite: It reads a text file and returns data.']);
  assert.deepEqual(
    say(it, event('output.streaming', { output_id: 'q', chunk: 'Input/output is fine.', complete: true })),
    ['polite: Input/output is fine.']
  );
});

test('a bare percentage is never said: progress is named', () => {
  const it = narrator('detailed');
  assert.deepEqual(say(it, event('progress.updated', { progress: { percent: 0 } })), [
    'polite: Progress of the current step: 0 percent.'
  ]);
});

test('normal verbosity says progress at 25 % steps it was not told already', () => {
  const it = narrator('normal');
  const at = p =>
    say(it, event('progress.updated', { progress: { percent: p }, summary_normal: `Cell 7: ${p} percent.` }));
  assert.deepEqual([10, 30, 40, 55, 80].map(at), [
    [],
    ['polite: Cell 7: 30 percent.'],
    [],
    ['polite: Cell 7: 55 percent.'],
    ['polite: Cell 7: 80 percent.']
  ]);
});

test('a Stop in the middle of a sentence amends the queued piece, or says it was cut', () => {
  const it = narrator('normal');
  say(it, event('output.streaming', { output_id: 'o', chunk: 'One whole sentence. And a half', complete: false }));
  const speech = it.narrate({
    event: event('session.cancelled', { summary_normal: 'You stopped the agent.' }),
    replay: false
  });
  const amend = speech.find(s => s.amendKey);
  assert.equal(amend.amendText, 'And a half… (cut off)');
  assert.equal(amend.text, 'The answer was cut off there.');
  assert.equal(speech.at(-1).text, 'You stopped the agent.');
});

test('an automatic approval is not told again by its state change; replay says nothing', () => {
  const it = narrator('normal');
  say(it, EVENTS['awaiting.confirmation (automatic)']());
  assert.deepEqual(say(it, EVENTS['state.changed (approved)']()), []);
  assert.deepEqual(it.narrate({ event: EVENTS['session.started'](), replay: true }), []);
});

test('durations are said in words', () => {
  assert.equal(duration(trans, 90), '1 minute 30 seconds');
  assert.equal(duration(trans, 120), '2 minutes');
  assert.equal(duration(trans, 1), '1 second');
});
