// Unit tests of plan mode's card (components/PlanCard.tsx, components/planWords.ts): the plan read
// from a confirmation, the reply each choice is, and the markup (a numbered list of the steps,
// the four choices as buttons reached by Tab and chosen with Enter or Space, the Approve key on
// the first choice). Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

const { PlanCard } = await import('../lib/components/PlanCard.js');
const { PLAN_CHOICES, planReply, readPlan } = await import('../lib/components/planWords.js');
const { approvalModeDescription, approvalModeLabel } = await import('../lib/components/approvalWords.js');
const { APPROVAL_MODES } = await import('../lib/model.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

const PLAN = {
  summary: 'Train and plot',
  steps: ['Run cell 4 (the training loop)', 'Add a cell after cell 4 that plots the losses'],
  file: '.aaep/plans/plan-0123456789ab.md',
  choices: []
};

function item(state = 'pending') {
  return {
    kind: 'confirmation',
    id: 'rpl_1',
    state,
    deadline: null,
    event: {
      type: 'aaep:agent.awaiting.confirmation',
      reply_token: 'rpl_1',
      action: 'Follow this plan',
      consequence: 'Nothing has changed yet.',
      extra_context: { plan: PLAN }
    }
  };
}

test('plan first is a mode of the select, first, with its own words', () => {
  assert.equal(APPROVAL_MODES[0], 'plan');
  assert.equal(approvalModeLabel('plan', trans), 'Plan first');
  assert.match(approvalModeDescription('plan', trans), /nothing is changed or run until you approve it/);
});

test('a plan is read from extra_context; anything else is no plan', () => {
  assert.deepEqual(readPlan({ plan: PLAN }), { summary: PLAN.summary, steps: PLAN.steps, file: PLAN.file });
  assert.equal(readPlan({ code: 'print(1)' }), null);
  assert.equal(readPlan({ plan: { summary: 'x' } }), null);
  assert.deepEqual(readPlan({ plan: { summary: 'x', steps: ['a', 3, ' '], file: '' } }).steps, ['a']);
});

test('each choice is the AAEP reply the server reads', () => {
  assert.deepEqual(PLAN_CHOICES, ['run', 'ask_each_step', 'keep_planning', 'reject']);
  assert.deepEqual(planReply('run'), { decision: 'accept' });
  assert.deepEqual(planReply('ask_each_step'), {
    decision: 'accept',
    details: { modified_action: { plan_choice: 'ask_each_step' } }
  });
  assert.deepEqual(planReply('keep_planning', ' Only cell 4. '), {
    decision: 'reject',
    details: { decision_rationale: 'Only cell 4.' }
  });
  assert.equal(planReply('keep_planning', '').details.decision_rationale, 'Please keep planning.');
  assert.deepEqual(planReply('reject'), { decision: 'reject' });
});

test('the card is a numbered list of the steps and four buttons, Approve on the first', () => {
  const shortcuts = {
    approve: 'Ctrl+Shift+Y',
    reject: 'Ctrl+Shift+N',
    approveAria: 'Control+Shift+Y',
    rejectAria: 'Control+Shift+N'
  };
  const html = renderToStaticMarkup(
    React.createElement(PlanCard, { item: item(), trans, shortcuts, onReply: () => {}, onOpenPlan: () => {} })
  );
  assert.match(html, /<h4 id="[^"]+" class="jp-AAEPCard-title">Plan for your approval, 2 steps: Train and plot<\/h4>/);
  const list = html.match(/<ol [^>]*aria-label="Steps of the plan"[^>]*>(.*?)<\/ol>/);
  assert.ok(list, html);
  assert.deepEqual(
    [...list[1].matchAll(/<li>(.*?)<\/li>/g)].map(m => m[1]),
    PLAN.steps
  );
  const buttons = [...html.matchAll(/<button type="button" class="([^"]*)"[^>]*>(.*?)<\/button>/g)];
  assert.deepEqual(
    buttons.map(b => b[2]),
    [
      'Edit the plan',
      'Run it, asking only for code the risk scan flags',
      'Run it, asking before each step',
      'Keep planning, with a comment',
      'Reject the plan'
    ]
  );
  // Native buttons: Tab reaches each, Enter and Space choose; none is taken out of the Tab order.
  assert.ok(!/<button[^>]*tabindex="-1"/.test(html));
  assert.match(html, /<button[^>]*aria-keyshortcuts="Control\+Shift\+Y"[^>]*>Run it, asking only for code/);
  assert.match(html, /<button[^>]*aria-keyshortcuts="Control\+Shift\+N"[^>]*>Reject the plan/);
  assert.match(html, /aria-expanded="false"[^>]*>Keep planning/);
  assert.match(html, /Keys: Ctrl\+Shift\+Y runs the plan, asking only for flagged code; Ctrl\+Shift\+N rejects it\./);
  assert.ok(!html.includes('rpl_1') || html.includes('data-request-id="rpl_1"'), 'no token in the words');
});

test('without a file there is no Edit button; once answered the choices are gone', () => {
  const noFile = { ...item(), event: { ...item().event, extra_context: { plan: { ...PLAN, file: null } } } };
  const html = renderToStaticMarkup(React.createElement(PlanCard, { item: noFile, trans, onReply: () => {} }));
  assert.ok(!html.includes('Edit the plan'));
  const done = renderToStaticMarkup(
    React.createElement(PlanCard, { item: item('rejected'), trans, onReply: () => {} })
  );
  assert.ok(!done.includes('<button'), done);
  assert.match(done, /You rejected this\./);
});

test('the plan is one alert: its title and numbered steps, the steps left out at terse', async () => {
  const { Narrator } = await import('../lib/narrator.js');
  const confirmation = {
    event_id: 'evt_1',
    type: 'aaep:agent.awaiting.confirmation',
    timestamp: '2026-11-23T09:00:00.000Z',
    session_id: 's1',
    action: 'Follow this plan',
    risk_level: 'medium',
    extra_context: { plan: PLAN }
  };
  const said = verbosity => {
    const it = new Narrator(trans, { verbosity });
    it.setRequestShortcut('Ctrl+Shift+A');
    return it.narrate({ event: confirmation, replay: false }).map(s => `${s.politeness}: ${s.text}`);
  };
  assert.deepEqual(said('normal'), [
    'assertive: Plan for your approval, 2 steps: Train and plot. 1. Run cell 4 (the training loop). ' +
      '2. Add a cell after cell 4 that plots the losses. Ctrl+Shift+A to review and choose.'
  ]);
  assert.deepEqual(said('terse'), [
    'assertive: Plan for your approval, 2 steps: Train and plot; Ctrl+Shift+A to review and choose.'
  ]);
});

test('each step of a running plan is heard, none replaced by the next', async () => {
  const { Narrator } = await import('../lib/narrator.js');
  const it = new Narrator(trans, { verbosity: 'normal' });
  const step = (n, percent) => ({
    event_id: `evt_s${n}`,
    type: 'aaep:agent.progress.updated',
    timestamp: '2026-11-23T09:00:00.000Z',
    session_id: 's1',
    urgency: 'normal',
    progress: { step: n, total_steps: 2, percent },
    summary_normal: `Step ${n} of 2 done: step ${n}.`
  });
  const said = [step(1, 50), step(2, 100)].flatMap(e => it.narrate({ event: e, replay: false }));
  assert.deepEqual(
    said.map(s => s.text),
    ['Step 1 of 2 done: step 1.', 'Step 2 of 2 done: step 2.']
  );
  assert.notEqual(said[0].key, said[1].key);
});
