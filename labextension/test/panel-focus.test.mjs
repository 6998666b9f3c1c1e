// Unit tests of where the panel's commands put the focus (src/panelFocus.ts), with a fake
// page: elements that take the focus, a panel that contains some of them, a clock that moves
// only when told to. Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { PanelFocus, FOCUS_STEP_MS, FOCUS_TRIES, FOCUS_GUARD_TRIES } = await import('../lib/panelFocus.js');

/** A page with one focus, a panel and timers run in order by `tick`. */
function page() {
  let t = 0;
  const timers = [];
  const state = { active: null };
  const inside = new Set();
  const element = (tagName, { inPanel = true, parent = null } = {}) => {
    const el = {
      tagName,
      parent,
      focus: () => (state.active = el)
    };
    if (inPanel) {
      inside.add(el);
    }
    return el;
  };
  const host = {
    inPanel: el => inside.has(el),
    within: (inner, outer) => {
      for (let node = inner; node; node = node.parent) {
        if (node === outer) {
          return true;
        }
      }
      return false;
    },
    active: () => state.active,
    later: (callback, ms) => timers.push({ at: t + ms, callback })
  };
  const tick = ms => {
    const end = t + ms;
    for (;;) {
      timers.sort((a, b) => a.at - b.at);
      if (!timers.length || timers[0].at > end) {
        break;
      }
      const next = timers.shift();
      t = next.at;
      next.callback();
    }
    t = end;
  };
  return { focus: new PanelFocus(host), element, state, tick };
}

test('a target drawn a moment later gets the focus once it is there', async () => {
  const { focus, element, state, tick } = page();
  const card = element('DIV');
  let drawn = false;
  const placed = focus.place(() => (drawn ? card : null));
  tick(5 * FOCUS_STEP_MS);
  assert.equal(state.active, null);
  drawn = true;
  tick(FOCUS_STEP_MS);
  assert.equal(state.active, card);
  assert.equal(await placed, 'placed');
});

test('Ctrl+Shift+Y then Ctrl+Shift+A at once: the request keeps the focus', async () => {
  // Opening the panel guards the message box for a moment; going to the request right
  // after must not be undone by that guard (the card is a div, which the guard used to
  // take for "activation moved the focus to nowhere").
  const { focus, element, state, tick } = page();
  const composer = element('TEXTAREA');
  const card = element('DIV');
  const opened = focus.place(() => composer);
  assert.equal(await opened, 'placed');
  tick(FOCUS_STEP_MS);
  const jumped = focus.place(() => card);
  assert.equal(await jumped, 'placed');
  tick((FOCUS_GUARD_TRIES + 2) * FOCUS_STEP_MS);
  assert.equal(state.active, card);
});

test('a later request ends an earlier one still looking for its target', async () => {
  const { focus, element, state, tick } = page();
  const card = element('DIV');
  const early = focus.place(() => null);
  const late = focus.place(() => card);
  tick(FOCUS_TRIES * FOCUS_STEP_MS);
  assert.equal(await early, 'superseded');
  assert.equal(await late, 'placed');
  assert.equal(state.active, card);
});

test('activation taking the focus to the panel itself or the page puts it back', async () => {
  const { focus, element, state, tick } = page();
  const panelNode = element('DIV');
  const card = element('DIV');
  assert.equal(await focus.place(() => card), 'placed');
  state.active = panelNode;
  tick(FOCUS_STEP_MS);
  assert.equal(state.active, card);
  state.active = null; // the page's body
  tick(FOCUS_STEP_MS);
  assert.equal(state.active, card);
});

test('the person moving on (a control of the panel, or outside it) keeps their place', async () => {
  const { focus, element, state, tick } = page();
  const card = element('DIV');
  const approve = element('BUTTON');
  const palette = element('INPUT', { inPanel: false });
  const cell = element('DIV', { inPanel: false });
  for (const moved of [approve, palette, cell]) {
    assert.equal(await focus.place(() => card), 'placed');
    state.active = moved;
    tick((FOCUS_GUARD_TRIES + 2) * FOCUS_STEP_MS);
    assert.equal(state.active, moved);
  }
});

test('a target that never shows is reported missing after its tries, and the guard stops', async () => {
  const { focus, element, state, tick } = page();
  const missing = focus.place(() => null, { tries: 10 });
  tick(11 * FOCUS_STEP_MS);
  assert.equal(await missing, 'missing');
  const other = element('BUTTON');
  other.focus();
  tick(FOCUS_TRIES * FOCUS_STEP_MS);
  assert.equal(state.active, other);
});

test('a focus moved within the target (the outcome of an answered card) is not taken back', async () => {
  // Approve pressed at once after Ctrl+Shift+A: the buttons go and the card puts the
  // focus on its outcome line; the guard must leave it there.
  const { focus, element, state, tick } = page();
  const card = element('DIV');
  const outcome = element('P', { parent: card });
  assert.equal(await focus.place(() => card), 'placed');
  outcome.focus();
  tick((FOCUS_GUARD_TRIES + 2) * FOCUS_STEP_MS);
  assert.equal(state.active, outcome);
});

test('Alt+R then the arrows: the next line of the code keeps the focus', async () => {
  // The first line is the target; the card is the area the person moves in.
  const { focus, element, state, tick } = page();
  const card = element('DIV');
  const [first, second] = [element('DIV', { parent: card }), element('DIV', { parent: card })];
  assert.equal(await focus.place(() => first, { area: () => card }), 'placed');
  second.focus(); // ArrowDown
  tick((FOCUS_GUARD_TRIES + 2) * FOCUS_STEP_MS);
  assert.equal(state.active, second);
});

test('Ctrl+Shift+O then Ctrl+Shift+A at once: the message box focused after the render does not take the request back', async () => {
  // Ctrl+Shift+O looks for the message box only after the next render; Ctrl+Shift+A, run
  // meanwhile, places the focus on the card at once. The earlier command's late first look
  // must find its turn taken, or the person lands in the message box (a control, which the
  // card's guard then leaves alone).
  const { focus, element, state, tick } = page();
  const composer = element('TEXTAREA');
  const card = element('DIV');
  let render = null;
  const typed = focus.place(() => composer, { start: look => (render = look) });
  const jumped = focus.place(() => card);
  assert.equal(await jumped, 'placed');
  render();
  assert.equal(await typed, 'superseded');
  tick((FOCUS_GUARD_TRIES + 2) * FOCUS_STEP_MS);
  assert.equal(state.active, card);
});
