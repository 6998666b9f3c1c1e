// Unit tests of the announcer against the narration rules (docs/NARRATION.md):
// order of speech, one sentence per step, nothing twice, cut-off text marked,
// auto-approved steps told as such, and what each verbosity says.
// A minimal fake DOM and Node's mock timers stand in for the browser.
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';

// -- a minimal DOM: what the announcer touches ----------------------------------
class FakeElement {
  constructor(tag) {
    this.tagName = tag;
    this.children = [];
    this.dataset = {};
    this.attributes = {};
    this.className = '';
    this._text = '';
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  appendChild(child) {
    this.children.push(child);
    child.parent = this;
    return child;
  }
  replaceChildren(...nodes) {
    this.children = nodes;
  }
  remove() {
    if (this.parent) {
      this.parent.children = this.parent.children.filter(c => c !== this);
      this.parent = undefined;
    }
  }
  set textContent(value) {
    this._text = value;
  }
  get textContent() {
    return this._text + this.children.map(c => c.textContent).join('');
  }
}
globalThis.window = globalThis;
globalThis.document = { createElement: tag => new FakeElement(tag) };

const { Announcer, KEEP_MS, START_GRACE_MS } = await import('../lib/announcer.js');
const { FOLD_BACK_MS, SETTLE_MS } = await import('../lib/delivery.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

let n = 0;
function event(type, fields = {}, session = 's1') {
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

/** What was written, in order: `polite: …` / `ALERT: …`. */
function spoken() {
  return (globalThis.__aaepAnnouncements ?? []).map(
    a => `${a.politeness === 'assertive' ? 'ALERT' : 'polite'}: ${a.text}`
  );
}

function make(verbosity = 'normal', maxPerSecond = 1) {
  const announcer = new Announcer(trans, { verbosity, maxPerSecond, debugLog: true });
  announcer.setRequestShortcut('Ctrl+Shift+A');
  const feed = e => announcer.handleEvent(null, { event: e, replay: false });
  return { announcer, feed };
}

beforeEach(() => {
  globalThis.__aaepAnnouncements = [];
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
});
afterEach(() => mock.timers.reset());

// A short session: a cell is created, a run needs approval, the cell prints, an answer.
const created = () => [
  event('tool.invoked', {
    tool: 'create_cell',
    tool_call_id: 'call_1',
    summary_normal: 'Starting: create a cell.',
    summary_terse: 'Create a cell.'
  }),
  event('tool.completed', {
    tool: 'create_cell',
    tool_call_id: 'call_1',
    status: 'success',
    duration_ms: 3,
    summary_normal: 'Created code cell 4, after cell 3.',
    summary_terse: 'Done.'
  })
];
const confirmation = (extra = {}) =>
  event('awaiting.confirmation', {
    action: 'Run cell 4, 3 lines of code, in the Python kernel.',
    consequence: 'The code runs in your kernel.',
    risk_level: 'medium',
    reply_token: 'rt_1',
    extra_context: { code: 'x = 1\ny = 2\nprint(x / y)', ...extra },
    summary_normal: extra.auto_approved
      ? "Approved automatically by this chat's setting: Run cell 4, 3 lines of code, in the Python kernel."
      : 'Approval needed, medium risk: Run cell 4, 3 lines of code, in the Python kernel. The code runs in your kernel. If you do not answer within 90 seconds, it will be rejected.',
    summary_terse: 'Approve? Run cell 4.'
  });
const ran = () => [
  event('tool.invoked', {
    tool: 'run_cell',
    tool_call_id: 'call_2',
    summary_normal: 'Running cell 4.',
    summary_terse: 'Run cell 4.'
  }),
  event('tool.completed', {
    tool: 'run_cell',
    tool_call_id: 'call_2',
    status: 'success',
    summary_normal: 'Cell 4 ran: 0.5.',
    summary_terse: 'Cell 4: 0.5.',
    summary_detailed: 'Cell 4 ran in 0.1 seconds. Output:\n0.5'
  })
];

test('polite speech still queued when an alert comes is said first, in the alert', () => {
  const { feed } = make('normal', 1);
  feed(event('session.started', { summary_normal: 'Started working on your request.' }));
  mock.timers.tick(SETTLE_MS); // the first polite write goes once it settled
  created().forEach(feed);
  feed(
    event('output.streaming', {
      output_id: 'out_1',
      chunk: 'The cell is in place. Now I will run it. ',
      complete: false
    })
  );
  feed(confirmation());
  mock.timers.tick(5000);
  const said = spoken();
  assert.equal(said[0], 'polite: Started working on your request.');
  assert.equal(said.length, 2, said.join('\n'));
  const alert = said[1];
  assert.ok(
    alert.startsWith(
      'ALERT: Created code cell 4, after cell 3. The cell is in place. Now I will run it. Approval needed'
    ),
    alert
  );
  // The approval itself is one short sentence: what, how risky, the key.
  assert.ok(
    alert.endsWith(
      'Approval needed, medium risk: Run cell 4, 3 lines of code, in the Python kernel; Ctrl+Shift+A to review.'
    ),
    alert
  );
});

test('a quick step is told by its result alone; a slow one by its start, then its result', () => {
  const { feed } = make('normal', 10);
  created().forEach(feed);
  mock.timers.tick(START_GRACE_MS + 100);
  assert.deepEqual(spoken(), ['polite: Created code cell 4, after cell 3.']);

  globalThis.__aaepAnnouncements = [];
  const [start, end] = ran();
  feed(start);
  mock.timers.tick(START_GRACE_MS - 100);
  assert.deepEqual(spoken(), [], 'the start waits a moment');
  mock.timers.tick(200);
  assert.deepEqual(spoken(), ['polite: Running cell 4.']);
  feed(end);
  mock.timers.tick(1000);
  assert.deepEqual(spoken(), ['polite: Running cell 4.', 'polite: Cell 4 ran: 0.5.']);
});

test('later speech waits behind a held start, so the order of events is kept', () => {
  const { feed } = make('normal', 10);
  const [start] = ran();
  feed(start);
  feed(
    event('progress.updated', { progress: { percent: 50 }, summary_normal: 'Cell 4 still running after 12 seconds.' })
  );
  mock.timers.tick(START_GRACE_MS + 200);
  assert.deepEqual(spoken(), ['polite: Running cell 4. Cell 4 still running after 12 seconds.']);
});

test('the same words are never said twice in a row by events; a command always answers', () => {
  const { announcer, feed } = make('normal', 1);
  // The model's last sentence is "Done." and so is the end of the session.
  feed(event('output.streaming', { output_id: 'o', chunk: 'All converted. Done.', complete: true }));
  mock.timers.tick(SETTLE_MS);
  feed(event('session.completed', { summary_normal: 'Done.' }));
  feed(event('state.changed', { from_state: 'thinking', to_state: 'paused', summary_normal: 'Paused.' }, 's2'));
  feed(event('state.changed', { from_state: 'paused', to_state: 'paused', summary_normal: 'Paused' }, 's3'));
  mock.timers.tick(3000);
  assert.deepEqual(spoken(), ['polite: All converted. Done.', 'polite: Paused.']);
  // Asked twice, answered twice: a command's answer is never swallowed.
  announcer.announce('Nothing is waiting for you.');
  mock.timers.tick(1500);
  announcer.announce('Nothing is waiting for you.');
  mock.timers.tick(1500);
  assert.deepEqual(spoken().slice(2), ['polite: Nothing is waiting for you.', 'polite: Nothing is waiting for you.']);
});

test('text a Stop cut in the middle of a sentence is marked as cut off', () => {
  const { feed } = make('normal', 1);
  feed(event('output.streaming', { output_id: 'o', chunk: 'One whole sentence. And a half', complete: false }));
  feed(event('output.streaming', { output_id: 'o', chunk: ' sentence that', complete: true }));
  feed(
    event('session.cancelled', {
      cancelled_by: 'user',
      summary_normal: 'You stopped the agent. Nothing else will run.'
    })
  );
  mock.timers.tick(5000);
  const all = spoken().join(' ');
  assert.match(all, /One whole sentence\. And a half sentence that… \(cut off\)/);
  assert.ok(all.indexOf('(cut off)') < all.indexOf('You stopped the agent.'), all);

  // A finished answer is not marked.
  globalThis.__aaepAnnouncements = [];
  feed(event('output.streaming', { output_id: 'p', chunk: 'All done here.', complete: true }, 's2'));
  feed(event('session.cancelled', { summary_normal: 'Stopped.' }, 's2'));
  mock.timers.tick(5000);
  assert.ok(!spoken().join(' ').includes('cut off'), spoken());
});

test('an answer already said when the Stop comes gets a sentence saying it was cut', () => {
  const { feed } = make('normal', 10);
  feed(event('output.streaming', { output_id: 'o', chunk: 'Half of a thought', complete: true }));
  mock.timers.tick(SETTLE_MS + 100); // said by now
  feed(event('session.cancelled', { summary_normal: 'You stopped the agent.' }));
  mock.timers.tick(SETTLE_MS + 100);
  assert.deepEqual(spoken(), [
    'polite: Half of a thought.',
    'polite: The answer was cut off there. You stopped the agent.'
  ]);
});

test('an automatically approved step is told as such, politely, once', () => {
  const { feed } = make('normal', 1);
  feed(confirmation({ auto_approved: true }));
  feed(
    event('state.changed', {
      from_state: 'awaiting_input',
      to_state: 'calling_tool',
      summary_normal: 'Approved automatically.'
    })
  );
  mock.timers.tick(3000);
  const said = spoken();
  assert.deepEqual(said, [
    "polite: Approved automatically by this chat's setting: Run cell 4, 3 lines of code, in the Python kernel."
  ]);
  assert.ok(!said.some(s => /Approval needed|rejected/.test(s)));
});

// What each verbosity says for the same session.
function session(verbosity) {
  const { feed } = make(verbosity, 100);
  feed(event('session.started', { summary_normal: 'Started working on your request.', summary_terse: 'Started.' }));
  mock.timers.tick(SETTLE_MS);
  mock.timers.tick(200);
  created().forEach(feed);
  mock.timers.tick(SETTLE_MS);
  // Long enough for the step's line not to be folded into the alert (the delivery's rule).
  mock.timers.tick(FOLD_BACK_MS + 80);
  feed(confirmation());
  feed(
    event('state.changed', {
      from_state: 'awaiting_input',
      to_state: 'calling_tool',
      summary_normal: 'Approved.',
      summary_terse: 'Approved.'
    })
  );
  mock.timers.tick(SETTLE_MS);
  mock.timers.tick(200);
  ran().forEach(feed);
  feed(event('output.streaming', { output_id: 'a', chunk: 'Half of 1 is 0.5.', complete: true }));
  feed(
    event('session.completed', {
      summary_normal: 'Done.',
      summary_terse: 'Done.',
      summary_detailed: 'Done. Used 2 tools: create a cell, run a cell. Took 3.1 seconds.',
      output_summary: 'Half of 1 is 0.5.'
    })
  );
  mock.timers.tick(START_GRACE_MS * 3);
  return spoken();
}

test('terse: the start, the request, the cell result, the answer and the end', () => {
  const said = session('terse');
  assert.deepEqual(said, [
    'polite: Started.',
    'ALERT: Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.',
    'polite: Cell 4: 0.5. Half of 1 is 0.5. Done.'
  ]);
});

test('normal: one sentence per step, no starts of quick steps, the answer once', () => {
  const said = session('normal');
  assert.deepEqual(said, [
    'polite: Started working on your request.',
    'polite: Created code cell 4, after cell 3.',
    'ALERT: Approval needed, medium risk: Run cell 4, 3 lines of code, in the Python kernel; Ctrl+Shift+A to review.',
    'polite: Approved.',
    'polite: Cell 4 ran: 0.5. Half of 1 is 0.5. Done.'
  ]);
});

test('detailed: starts of steps too, detailed results when short, the answer never twice', () => {
  const said = session('detailed');
  assert.deepEqual(said, [
    'polite: Started working on your request.',
    'polite: Starting: create a cell. Created code cell 4, after cell 3.',
    'ALERT: Approval needed, medium risk: Run cell 4, 3 lines of code, in the Python kernel; Ctrl+Shift+A to review.',
    'polite: Approved.',
    'polite: Running cell 4. Cell 4 ran in 0.1 seconds. Output: 0.5. Half of 1 is 0.5. Done. Used 2 tools: create a cell, run a cell. Took 3.1 seconds.'
  ]);
  assert.equal(said.join(' ').split('Half of 1 is 0.5.').length, 2, 'the answer is said once');
});

test('a failed step is said with its reason at every verbosity', () => {
  for (const verbosity of ['terse', 'normal', 'detailed']) {
    globalThis.__aaepAnnouncements = [];
    const { feed } = make(verbosity, 100);
    feed(event('tool.invoked', { tool: 'run_cell', tool_call_id: 'call_9', summary_normal: 'Running cell 5.' }));
    feed(
      event('tool.completed', {
        tool: 'run_cell',
        tool_call_id: 'call_9',
        status: 'error',
        error_message: "NameError: name 'df' is not defined",
        summary_normal: "Cell 5 failed: NameError: name 'df' is not defined.",
        summary_terse: 'Cell 5 failed: NameError.'
      })
    );
    mock.timers.tick(START_GRACE_MS * 2);
    const all = spoken().join(' ');
    assert.match(all, /Cell 5 failed: NameError/, `${verbosity}: ${all}`);
    assert.equal(all.split("name 'df' is not defined").length - 1, 1, `${verbosity}: the reason once: ${all}`);
  }
});

test('a failure reason the summary already says is not said again', () => {
  const { feed } = make('normal', 100);
  feed(event('tool.invoked', { tool: 'run_all_cells', tool_call_id: 'call_7', summary_normal: 'Running 3 cells.' }));
  feed(
    event('tool.completed', {
      tool: 'run_all_cells',
      tool_call_id: 'call_7',
      status: 'error',
      error_message: "Cell 4: NameError: name 'df' is not defined",
      summary_normal: "Ran 3 cells, stopped at the error. Cell 4 failed: NameError: name 'df' is not defined."
    })
  );
  feed(event('tool.invoked', { tool: 'read_file', tool_call_id: 'call_8', summary_normal: 'Reading a file.' }));
  feed(
    event('tool.completed', {
      tool: 'read_file',
      tool_call_id: 'call_8',
      status: 'error',
      error_message: 'There is no file data.csv in the Jupyter root.',
      summary_normal: 'Read a file failed.'
    })
  );
  mock.timers.tick(START_GRACE_MS * 2);
  assert.deepEqual(spoken(), [
    "polite: Ran 3 cells, stopped at the error. Cell 4 failed: NameError: name 'df' is not defined. " +
      'Read a file failed. There is no file data.csv in the Jupyter root.'
  ]);
});

test('polite speech is rate limited and merged, never dropped', () => {
  const { announcer } = make('normal', 1);
  announcer.announce('One.');
  mock.timers.tick(SETTLE_MS);
  announcer.announce('Two.');
  announcer.announce('Three.');
  mock.timers.tick(500);
  assert.deepEqual(spoken(), ['polite: One.']);
  mock.timers.tick(600);
  assert.deepEqual(spoken(), ['polite: One.', 'polite: Two. Three.']);
});

// -- long-running cells (issue 19) ---------------------------------------------
const longCell = (by = 'kernel:agent-run') => [
  event(
    'session.started',
    { requested_by: by, summary_normal: 'Cell 7 is still running.', summary_terse: 'Cell 7 running.' },
    'run1'
  ),
  event('progress.updated', { urgency: 'background', progress: { percent: 10, description: '10 of 100.' } }, 'run1'),
  event(
    'progress.updated',
    {
      urgency: 'normal',
      progress: { description: 'Cell 7 still running after 1 min.' },
      summary_normal: 'Cell 7 still running after 1 min.'
    },
    'run1'
  ),
  event('progress.updated', { urgency: 'background', progress: { percent: 60, description: '60 of 100.' } }, 'run1'),
  event(
    'session.completed',
    { summary_normal: 'Cell 7 finished after 3 min: accuracy 0.91.', summary_terse: 'Cell 7 finished: accuracy 0.91.' },
    'run1'
  )
];

test('normal: a long cell is heard at its start, at the paced updates the producer marks normal, and at its end', () => {
  const { feed } = make('normal', 10);
  for (const e of longCell()) {
    feed(e);
    mock.timers.tick(2000);
  }
  assert.deepEqual(spoken(), [
    'polite: Cell 7 is still running.',
    'polite: Cell 7 still running after 1 min.',
    'polite: Cell 7 finished after 3 min: accuracy 0.91.'
  ]);
});

test('terse: a long cell is heard only when it ends', () => {
  const { feed } = make('terse', 10);
  for (const e of longCell('kernel:person-run')) {
    feed(e);
    mock.timers.tick(2000);
  }
  assert.deepEqual(spoken(), ['polite: Cell 7 finished: accuracy 0.91.']);
});

test('a long cell that fails before anything was said about it is heard once, assertively', () => {
  const { feed } = make('normal', 10);
  const sentence = 'Cell 5 failed after 11 s: ValueError: bad shape.';
  feed(event('session.started', { requested_by: 'kernel:person-run', summary_normal: sentence }, 'run2'));
  feed(event('session.errored', { summary_normal: sentence }, 'run2'));
  mock.timers.tick(2000);
  assert.deepEqual(spoken(), [`ALERT: Error: ${sentence}`]);
});

test('a notice without a percent is spoken at normal verbosity (the store stopped)', () => {
  const { feed } = make('normal', 10);
  feed(
    event('progress.updated', {
      urgency: 'normal',
      progress: { description: 'Saving this chat stopped: the disk is full.' }
    })
  );
  mock.timers.tick(2000);
  assert.deepEqual(spoken(), ['polite: Saving this chat stopped: the disk is full.']);
});

test("a command's answer says media as what it is, never a MIME type", () => {
  const { announcer } = make('normal', 1);
  announcer.announce('Cell 4 ran. Output: [image/png 576×454, 27 KB]');
  mock.timers.tick(2000);
  assert.deepEqual(spoken(), ['polite: Cell 4 ran. Output: a figure.']);
});

/** The live region of *politeness* and the lines in it. */
function region(announcer, politeness) {
  const found = announcer.node.children.find(r => r.dataset.aaepLive === politeness);
  return { attributes: found.attributes, lines: found.children.map(c => c.textContent) };
}

test('lines are appended to a live region and stay there until a screen reader surely read them', () => {
  // Orca reads a live line when it gets to its event; a node replaced by then is skipped.
  const { announcer } = make('normal', 10);
  for (const politeness of ['polite', 'assertive']) {
    const { attributes } = region(announcer, politeness);
    assert.equal(attributes['aria-atomic'], 'false', politeness);
    assert.equal(attributes['aria-relevant'], 'additions text', politeness);
  }
  announcer.write('polite', 'First.');
  mock.timers.tick(1000);
  announcer.write('polite', 'Second.');
  announcer.write('assertive', 'Approval needed.');
  assert.deepEqual(region(announcer, 'polite').lines, ['First.', 'Second.']);
  assert.deepEqual(region(announcer, 'assertive').lines, ['Approval needed.']);
  mock.timers.tick(KEEP_MS - 1000);
  // The first line is KEEP_MS old: pruned; the others are not yet.
  assert.deepEqual(region(announcer, 'polite').lines, ['Second.']);
  assert.deepEqual(region(announcer, 'assertive').lines, ['Approval needed.']);
  mock.timers.tick(1000);
  assert.deepEqual(region(announcer, 'polite').lines, []);
  assert.deepEqual(region(announcer, 'assertive').lines, []);
  announcer.dispose();
});

test('a line folded into an alert leaves the polite region at once', () => {
  const { announcer } = make('normal', 10);
  announcer.write('polite', 'Earlier.');
  announcer.write('polite', 'Created code cell 4.');
  announcer.clear('polite');
  assert.deepEqual(region(announcer, 'polite').lines, []);
  announcer.dispose();
});
