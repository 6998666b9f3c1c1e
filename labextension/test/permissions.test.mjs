// Unit tests of standing permissions in the panel (issue 27): the card's "don't ask again"
// choice, the card of a step a permission allowed, and the numbered list with its Take back
// buttons (markup, words, where the focus goes after one is taken back).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

const { focusAfterRevoke, grantedWords, permissionListWords, readOffers, revokedWords, revokeLabel } =
  await import('../lib/permissions.js');
const { PermissionList, REVOKE_CLASS } = await import('../lib/components/PermissionList.js');
const { ConfirmationCard } = await import('../lib/components/ConfirmationCard.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};
const LABEL = "Approve, and don't ask again for unflagged code in this notebook";
const CHAT_LABEL = "Approve, and don't ask again for unflagged code in this chat";
const permissions = [
  {
    id: 'grt_0000000000000001',
    rule: 'run_cell:unflagged',
    scope: 'notebook',
    effect: 'allow',
    notebook_path: 'a.ipynb',
    chat_id: null,
    granted_at: '2026-11-28T18:00:00.000Z',
    granted_in: 'a.ipynb',
    sentence: 'Without asking: unflagged code in a.ipynb, given 2026-11-28 18:00 UTC in a.ipynb.'
  },
  {
    id: 'grt_0000000000000002',
    rule: 'edit_cell',
    scope: 'always',
    effect: 'deny',
    notebook_path: null,
    chat_id: null,
    granted_at: '2026-11-28T18:05:00.000Z',
    granted_in: null,
    sentence: 'Never without asking: editing cells in every notebook, given 2026-11-28 18:05 UTC.'
  }
];

function card(extra, state = 'pending') {
  const event = {
    type: 'aaep:agent.awaiting.confirmation',
    event_id: 'evt_1',
    session_id: 'sess_1',
    action: 'Run cell 1, 1 line of code, in the Python kernel.',
    consequence: 'It can change variables and files.',
    reply_token: 'rpl_1',
    risk_level: 'medium',
    irreversible: true,
    extra_context: extra
  };
  const item = { kind: 'confirmation', id: 'request:evt_1', event, deadline: null, state };
  const replies = [];
  const html = renderToStaticMarkup(
    React.createElement(ConfirmationCard, { item, trans, onReply: (...args) => replies.push(args) })
  );
  return { html, replies };
}

test('the card offers the grants, this chat then this notebook, with words that say exactly what each allows', () => {
  const offers = [
    { rule: 'run_cell:unflagged', scope: 'chat', label: CHAT_LABEL },
    { rule: 'run_cell:unflagged', scope: 'notebook', label: LABEL }
  ];
  const extra = { code: 'print(1)', permission_offers: offers };
  assert.deepEqual(readOffers(extra), offers);
  const { html } = card(extra);
  const buttons = [...html.matchAll(/<button[^>]*>(.*?)<\/button>/g)].map(m => m[1]);
  assert.deepEqual(
    buttons,
    ['Approve', 'Reject', CHAT_LABEL.replace("'", '&#x27;'), LABEL.replace("'", '&#x27;')],
    'the choices come after Reject, the narrower first'
  );
  assert.equal([...html.matchAll(/class="jp-Button jp-mod-styled jp-AAEPCard-approveAndGrant"/g)].length, 2);
  assert.deepEqual(
    [...html.matchAll(/data-scope="(\w+)"/g)].map(m => m[1]),
    ['chat', 'notebook']
  );
});

test('no offer, no third button: flagged code and malformed offers', () => {
  for (const offer of [
    undefined,
    null,
    { rule: 'run_cell:unflagged' },
    { rule: 1, scope: 'x', label: 'y' },
    { rule: 'a', scope: 'b', label: '' }
  ]) {
    assert.deepEqual(readOffers({ permission_offers: [offer] }), []);
  }
  assert.deepEqual(readOffers({ permission_offers: { rule: 'a', scope: 'chat', label: 'b' } }), [], 'not a list');
  assert.deepEqual(
    readOffers({ permission_offers: [null, { rule: 'a', scope: 'chat', label: 'b', extra: 1 }] }),
    [{ rule: 'a', scope: 'chat', label: 'b' }],
    'the malformed one is skipped, the good one kept'
  );
  const { html } = card({ code: 'import os\nos.system("ls")', risk_flags: ['runs shell commands'] });
  assert.equal([...html.matchAll(/<button/g)].length, 2);
});

test('a step a permission allowed is shown as such, not as a question', () => {
  const extra = {
    auto_approved: true,
    granted_by: { id: 'grt_1', words: 'your permission for unflagged code in this notebook' }
  };
  assert.equal(grantedWords(extra), 'your permission for unflagged code in this notebook');
  assert.equal(grantedWords({ auto_approved: true }), null);
  const { html } = card(extra, 'resolved');
  assert.match(html, /Allowed by your permission for unflagged code in this notebook: Run cell 1/);
  assert.match(html, /Allowed by your permission for unflagged code in this notebook\.<\/p>/);
  assert.doesNotMatch(html, /<button/);
});

test('the list is spoken numbered, with how to take one back', () => {
  assert.equal(
    permissionListWords(permissions, trans),
    'The agent may do 2 things without asking: 1. Without asking: unflagged code in a.ipynb, given 2026-11-28 18:00 UTC in a.ipynb. ' +
      '2. Never without asking: editing cells in every notebook, given 2026-11-28 18:05 UTC. To take one back, Tab to its Take back button.'
  );
  assert.match(permissionListWords([], trans), /^The agent may do nothing without asking/);
});

test('the list is an ordered list whose every item has its own named Take back button', () => {
  const html = renderToStaticMarkup(
    React.createElement(PermissionList, { trans, initial: permissions, revoke: async () => {}, announce: () => {} })
  );
  assert.match(html, /<h2 id="([^"]+)" tabindex="-1" class="jp-AAEPPermissions-heading">2 standing permissions<\/h2>/);
  assert.match(html, /<ol class="jp-AAEPPermissions-list" aria-labelledby="/);
  const items = [...html.matchAll(/<li[^>]*>(.*?)<\/li>/g)];
  assert.equal(items.length, 2);
  const names = [
    ...html.matchAll(new RegExp(`class="[^"]*${REVOKE_CLASS}" aria-label="([^"]+)">Take back</button>`, 'g'))
  ].map(m => m[1]);
  assert.deepEqual(names, [
    'Take back 1: Without asking: unflagged code in a.ipynb, given 2026-11-28 18:00 UTC in a.ipynb.',
    'Take back 2: Never without asking: editing cells in every notebook, given 2026-11-28 18:05 UTC.'
  ]);
  assert.equal(revokeLabel(permissions[0], 0, trans), names[0]);
  const empty = renderToStaticMarkup(
    React.createElement(PermissionList, { trans, initial: [], revoke: async () => {}, announce: () => {} })
  );
  assert.match(empty, /0 standing permissions/);
  assert.doesNotMatch(empty, /<button|<ol/);
});

test('a permission the administrator turned off says so', () => {
  const off = { ...permissions[0], applies: false };
  assert.match(permissionListWords([off], trans), /Turned off by the administrator: it does not apply\./);
  assert.match(revokeLabel(off, 0, trans), /^Take back 1: Without asking: .* Turned off by the administrator/);
});

test('after taking one back the focus goes to the next, the previous, or the heading', () => {
  assert.equal(focusAfterRevoke(3, 0), 0, 'the item that took its place');
  assert.equal(focusAfterRevoke(3, 2), 1, 'the last one: the one before');
  assert.equal(focusAfterRevoke(1, 0), null, 'none left: the heading');
  assert.equal(
    revokedWords(permissions[0], 1, trans),
    'Taken back: Without asking: unflagged code in a.ipynb, given 2026-11-28 18:00 UTC in a.ipynb. 1 permission is left.'
  );
  assert.match(revokedWords(permissions[0], 0, trans), /No standing permissions are left: the agent asks again\.$/);
});
