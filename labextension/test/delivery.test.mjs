// Unit tests of the delivery (src/delivery.ts): the timing rules of speech,
// with a fake clock and a sink that records writes (no DOM, no real timers).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { Delivery, SETTLE_MS, QUICK_SETTLE_MS, FOLD_BACK_MS, FOLD_WORDS } = await import('../lib/delivery.js');

/** A clock that moves only when told to, running due timers in order. */
class FakeClock {
  constructor() {
    this.t = 0;
    this.timers = new Map();
    this.next = 1;
  }
  now() {
    return this.t;
  }
  setTimeout(callback, ms) {
    const id = this.next++;
    this.timers.set(id, { at: this.t + ms, callback });
    return id;
  }
  clearTimeout(id) {
    this.timers.delete(id);
  }
  tick(ms) {
    const end = this.t + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, v]) => v.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) {
        break;
      }
      this.timers.delete(due[0]);
      this.t = Math.max(this.t, due[1].at);
      due[1].callback();
    }
    this.t = end;
  }
}

function setup(maxPerSecond = 1) {
  const clock = new FakeClock();
  const writes = [];
  const sink = {
    write: (politeness, text) => writes.push({ at: clock.now(), politeness, text }),
    clear: politeness => writes.push({ at: clock.now(), politeness, cleared: true })
  };
  const delivery = new Delivery(sink, { maxPerSecond }, clock);
  const said = () =>
    writes.filter(w => !w.cleared).map(w => `${w.politeness === 'assertive' ? 'ALERT' : 'polite'}: ${w.text}`);
  const polite = (text, kind = 'step', extra = {}) =>
    delivery.deliver([{ text, politeness: 'polite', kind, ...extra }]);
  const alert = (text, kind = 'request') => delivery.deliver([{ text, politeness: 'assertive', kind }]);
  return { clock, writes, said, polite, alert, delivery };
}

test('a polite piece waits to settle before it is written', () => {
  const { clock, writes, polite } = setup();
  polite('Created code cell 4, after cell 3.');
  clock.tick(SETTLE_MS - 1);
  assert.equal(writes.length, 0);
  clock.tick(1);
  assert.deepEqual(writes, [{ at: SETTLE_MS, politeness: 'polite', text: 'Created code cell 4, after cell 3.' }]);
});

test('a request a model round trip after a step takes the step along: heard once, in the alert', () => {
  // Under Orca, a line written 200-300 ms before the alert was lost (purged from its queue)
  // or, folded into the alert as well, said twice: held, it is said once.
  const { clock, said, polite, alert } = setup();
  polite('Created code cell 4, after cell 3.');
  clock.tick(300);
  alert('Approval needed: Run cell 4; Ctrl+Shift+A to review.');
  clock.tick(SETTLE_MS * 2);
  assert.deepEqual(said(), [
    'ALERT: Created code cell 4, after cell 3. Approval needed: Run cell 4; Ctrl+Shift+A to review.'
  ]);
});

test("a command's answer waits only a moment: the person asked and waits for it", () => {
  const { clock, said, delivery } = setup();
  delivery.deliver([{ text: 'Cell 4: 40 percent done.', politeness: 'polite', kind: 'said', asked: true }]);
  clock.tick(QUICK_SETTLE_MS);
  assert.deepEqual(said(), ['polite: Cell 4: 40 percent done.']);
});

test('polite speech is rate limited and merged, never dropped', () => {
  const { clock, said, polite } = setup(1);
  polite('One.');
  clock.tick(SETTLE_MS);
  polite('Two.');
  polite('Three.');
  clock.tick(500);
  assert.deepEqual(said(), ['polite: One.']);
  clock.tick(1000);
  assert.deepEqual(said(), ['polite: One.', 'polite: Two. Three.']);
});

test('nothing polite is written just before an alert: it is folded into it', () => {
  const { clock, writes, said, polite, alert } = setup();
  polite('Created code cell 4, after cell 3.');
  clock.tick(80); // the alert follows in the same burst
  alert('Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.');
  clock.tick(3000);
  assert.deepEqual(said(), [
    'ALERT: Created code cell 4, after cell 3. Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.'
  ]);
  assert.ok(writes.every(w => w.politeness === 'assertive'));
});

test('a polite write made just before an alert is said again inside it', () => {
  const { clock, writes, said, polite, alert } = setup();
  polite('Created code cell 4, after cell 3.');
  clock.tick(SETTLE_MS + 50); // written 50 ms ago: the alert would cut it off
  alert('Approval needed: Run cell 4; Ctrl+Shift+A to review.');
  assert.deepEqual(said(), [
    'polite: Created code cell 4, after cell 3.',
    'ALERT: Created code cell 4, after cell 3. Approval needed: Run cell 4; Ctrl+Shift+A to review.'
  ]);
  assert.ok(
    writes.some(w => w.cleared && w.politeness === 'polite'),
    'the polite region is emptied'
  );
  // Long enough before: heard, not repeated.
  const late = setup();
  late.polite('Created code cell 4, after cell 3.');
  late.clock.tick(SETTLE_MS + FOLD_BACK_MS);
  late.alert('Approval needed: Run cell 4; Ctrl+Shift+A to review.');
  assert.deepEqual(late.said(), [
    'polite: Created code cell 4, after cell 3.',
    'ALERT: Approval needed: Run cell 4; Ctrl+Shift+A to review.'
  ]);
});

test('an approval shortens what waits: prose, starts, progress dropped, steps within the word budget', () => {
  const { clock, said, polite, alert } = setup(1);
  polite('Started working on your request.', 'said');
  clock.tick(SETTLE_MS); // written
  clock.tick(1000);
  polite('I will add a cell that converts the temperatures and then run it for you, as asked.', 'prose', {
    key: 'prose:1'
  });
  polite('Running cell 3.', 'start', { key: 'tool:a' });
  polite('Cell 7: 40 percent.', 'progress', { key: 'progress:s' });
  polite(
    'Read the notebook: 3 cells, the last one loads the data from a file called temperatures.csv and plots them by month with a title.',
    'step'
  );
  polite('Created code cell 4, after cell 3.', 'step');
  alert('Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.');
  clock.tick(5000);
  const [, folded] = said();
  assert.equal(
    folded,
    'ALERT: Created code cell 4, after cell 3. Approval needed, medium risk: Run cell 4; Ctrl+Shift+A to review.'
  );
  assert.equal(said().length, 2, 'nothing is left to be said after the question');
  const before = folded.slice('ALERT: '.length, folded.indexOf('Approval needed'));
  assert.ok(before.split(/\s+/).length <= FOLD_WORDS);
});

test("an answer to the user's command survives the shortening", () => {
  const { said, delivery, alert } = setup();
  delivery.deliver([
    { text: 'Pausing the agent at the next safe point.', politeness: 'polite', kind: 'said', asked: true }
  ]);
  alert('Approval needed: Run cell 4; Ctrl+Shift+A to review.');
  assert.deepEqual(said(), [
    'ALERT: Pausing the agent at the next safe point. Approval needed: Run cell 4; Ctrl+Shift+A to review.'
  ]);
});

test('an error takes everything still waiting along, in order', () => {
  const { said, polite, alert } = setup();
  polite('The data has 3 columns.', 'prose');
  polite('Cell 4 failed: NameError.', 'step');
  alert('Error: the model is overloaded.', 'alert');
  assert.deepEqual(said(), [
    'ALERT: The data has 3 columns. Cell 4 failed: NameError. Error: the model is overloaded.'
  ]);
});

test('an alert takes nothing along that it says itself: a failure told at its end is heard once', () => {
  // A long cell's story opened at its failure: its start says the sentence its end says.
  const sentence = 'Cell 5 failed after 11 s: ValueError: bad shape.';
  const burst = setup();
  burst.polite('The data has 3 columns.', 'prose');
  burst.polite(sentence, 'said');
  burst.alert(`Error: ${sentence}`, 'alert');
  assert.deepEqual(burst.said(), [`ALERT: The data has 3 columns. Error: ${sentence}`]);
  // Written just before the alert: not said again inside it (the alert says it).
  const written = setup();
  written.polite(sentence, 'said');
  written.clock.tick(QUICK_SETTLE_MS + 50); // written at 120 ms, the alert 50 ms later
  written.alert(`Error: ${sentence}`, 'alert');
  assert.deepEqual(written.said(), [`polite: ${sentence}`, `ALERT: Error: ${sentence}`]);
  assert.ok(written.writes.some(w => w.cleared && w.politeness === 'polite'));
  // Only whole words count: a piece that is part of a word of the alert is taken along.
  const part = setup();
  part.polite('Cell 5', 'said');
  part.alert('Error: Cell 50 failed.', 'alert');
  assert.deepEqual(part.said(), ['ALERT: Cell 5. Error: Cell 50 failed.']);
});

test('a held start holds what follows; a quick result cancels it; a late one follows it', () => {
  const quick = setup(10);
  quick.polite('Running cell 4.', 'start', { key: 'tool:a', holdMs: 1500 });
  quick.clock.tick(400);
  quick.delivery.deliver([
    { text: '', politeness: 'polite', kind: 'start', cancelKey: 'tool:a' },
    { text: 'Cell 4 ran: 0.5.', politeness: 'polite', kind: 'step' }
  ]);
  quick.clock.tick(3000);
  assert.deepEqual(quick.said(), ['polite: Cell 4 ran: 0.5.']);

  const slow = setup(10);
  slow.polite('Running cell 4.', 'start', { key: 'tool:a', holdMs: 1500 });
  slow.polite('Cell 4 still running after 12 seconds.', 'progress');
  slow.clock.tick(1499);
  assert.deepEqual(slow.said(), [], 'the start and what follows it wait');
  slow.clock.tick(1);
  assert.deepEqual(slow.said(), ['polite: Running cell 4. Cell 4 still running after 12 seconds.']);
});

test('pieces with the same key replace each other while they wait', () => {
  const { clock, said, polite } = setup(1);
  polite('Cell 7: 25 percent.', 'progress', { key: 'p' });
  polite('Cell 7: 50 percent.', 'progress', { key: 'p' });
  clock.tick(2000);
  assert.deepEqual(said(), ['polite: Cell 7: 50 percent.']);
});

test('a cut-off mark amends the queued piece; if it was said, a sentence says so', () => {
  const queued = setup(1);
  queued.polite('And a half', 'prose', { key: 'prose:1' });
  queued.delivery.deliver([
    {
      text: 'The answer was cut off there.',
      politeness: 'polite',
      kind: 'prose',
      amendKey: 'prose:1',
      amendText: 'And a half… (cut off)'
    }
  ]);
  queued.clock.tick(2000);
  assert.deepEqual(queued.said(), ['polite: And a half… (cut off)']);

  const said = setup(1);
  said.polite('And a half', 'prose', { key: 'prose:1' });
  said.clock.tick(2000);
  said.delivery.deliver([
    { text: 'The answer was cut off there.', politeness: 'polite', kind: 'prose', amendKey: 'prose:1', amendText: 'x' }
  ]);
  said.clock.tick(2000);
  assert.deepEqual(said.said(), ['polite: And a half.', 'polite: The answer was cut off there.']);
});

test('the same words are not said twice in a row, unless the user asked', () => {
  const { clock, said, polite, delivery } = setup(10);
  polite('Done.', 'prose');
  clock.tick(500);
  polite('Done.', 'closing');
  clock.tick(500);
  assert.deepEqual(said(), ['polite: Done.']);
  const ask = () =>
    delivery.deliver([{ text: 'Nothing is waiting for you.', politeness: 'polite', kind: 'said', asked: true }]);
  ask();
  clock.tick(500);
  ask();
  clock.tick(500);
  assert.deepEqual(said().slice(1), ['polite: Nothing is waiting for you.', 'polite: Nothing is waiting for you.']);
});

test('after dispose nothing is written', () => {
  const { clock, said, polite, delivery } = setup();
  polite('One.');
  delivery.dispose();
  clock.tick(5000);
  polite('Two.');
  clock.tick(5000);
  assert.deepEqual(said(), []);
});
