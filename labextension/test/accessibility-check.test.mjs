// Unit tests of "Check this notebook's accessibility" in the panel: what is said, the checker's
// states, and the list's markup (a labelled region, one list item per problem by cell number,
// a "Go to cell" button for each cell, never an id).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

const { AccessibilityChecker, spokenReport, goToLabel } = await import('../lib/accessibilityCheck.js');
const { AccessibilityReportView } = await import('../lib/components/AccessibilityReport.js');
const { AAEPRequestError } = await import('../lib/handler.js');

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};

/** The server's answer for the acceptance notebook of issue 28. */
const REPORT = {
  notebook_path: 'trouble.ipynb',
  summary: 'Found 5 accessibility problems in 4 cells.',
  problems: [
    { rule: 'title-missing', cell_number: null, cell_id: null, text: 'The notebook has no title (a level-1 heading).' },
    { rule: 'image-alt', cell_number: 1, cell_id: 'img-id', text: 'Cell 1: The image rainfall.png has no alt text.' },
    {
      rule: 'heading-order',
      cell_number: 2,
      cell_id: 'head-id',
      text: "Cell 2: The heading “Results” is level 3 as the notebook's first heading, skipping levels 1 and 2."
    },
    {
      rule: 'link-text',
      cell_number: 3,
      cell_id: 'link-id',
      text: 'Cell 3: The link “click here” says nothing about where it leads.'
    },
    {
      rule: 'table-headers',
      cell_number: 4,
      cell_id: 'table-id',
      text: 'Cell 4: A table has no column headers, so a screen reader cannot name its columns.'
    }
  ],
  not_checked: "Not checked: whether colour alone tells a figure's series apart."
};

const announcer = () => {
  const said = [];
  return { said, announce: (text, politeness = 'polite') => said.push([text, politeness]) };
};

test('the check says the count, then each problem by cell number, then where the list is', () => {
  assert.equal(
    spokenReport(REPORT, trans),
    [
      'Found 5 accessibility problems in 4 cells.',
      'The notebook has no title (a level-1 heading).',
      'Cell 1: The image rainfall.png has no alt text.',
      "Cell 2: The heading “Results” is level 3 as the notebook's first heading, skipping levels 1 and 2.",
      'Cell 3: The link “click here” says nothing about where it leads.',
      'Cell 4: A table has no column headers, so a screen reader cannot name its columns.',
      'The list is in the agent panel.'
    ].join(' ')
  );
  const many = spokenReport(REPORT, trans, 2);
  assert.ok(
    many.endsWith('Cell 1: The image rainfall.png has no alt text. 3 more are listed in the agent panel.'),
    many
  );
  assert.equal(
    spokenReport({ ...REPORT, problems: [], summary: 'No accessibility problems found.' }, trans),
    'No accessibility problems found.'
  );
  assert.ok(!spokenReport(REPORT, trans).includes('-id'), 'no ids are said');
});

test('the checker asks the server for the chat, keeps the report and says it', async () => {
  const voice = announcer();
  const asked = [];
  const checker = new AccessibilityChecker({
    announcer: voice,
    trans,
    fetch: async chatId => {
      asked.push(chatId);
      assert.equal(checker.current.status, 'checking');
      return REPORT;
    }
  });
  let changes = 0;
  checker.changed.connect(() => changes++);
  await checker.check('chat_1', 'trouble.ipynb');
  assert.deepEqual(asked, ['chat_1']);
  assert.equal(checker.current.status, 'ready');
  assert.equal(checker.current.report, REPORT);
  assert.equal(changes, 2);
  assert.deepEqual(voice.said[0], ['Checking the accessibility of trouble.ipynb…', 'polite']);
  assert.ok(voice.said[1][0].startsWith('Found 5 accessibility problems in 4 cells. The notebook has no title'));
  checker.dismiss();
  assert.equal(checker.current, null);
});

test('without a notebook the command says what to do; a failure is said assertively', async () => {
  const voice = announcer();
  const checker = new AccessibilityChecker({
    announcer: voice,
    trans,
    fetch: async () => {
      throw new AAEPRequestError(409, 'This chat has no notebook to check.');
    }
  });
  await checker.check(null, null);
  assert.equal(checker.current, null);
  assert.match(voice.said[0][0], /Open a notebook first/);
  await checker.check('chat_1', 'trouble.ipynb');
  assert.equal(checker.current.status, 'failed');
  assert.deepEqual(voice.said.at(-1), [
    'The accessibility check failed: This chat has no notebook to check.',
    'assertive'
  ]);
});

test('the list: a labelled region, one item per problem, a Go to cell button for each cell', () => {
  const html = renderToStaticMarkup(
    React.createElement(AccessibilityReportView, {
      view: { status: 'ready', notebookPath: 'trouble.ipynb', report: REPORT, message: '' },
      trans,
      onGoTo: () => undefined,
      onClose: () => undefined
    })
  );
  const heading = html.match(/<h3 id="([^"]+)"[^>]*>Accessibility of trouble.ipynb<\/h3>/);
  assert.ok(heading, html);
  assert.ok(html.startsWith(`<section class="jp-AAEPAccessibility jp-mod-ready" aria-labelledby="${heading[1]}"`));
  const items = [...html.matchAll(/<li[^>]*>(.*?)<\/li>/g)].map(m => m[1]);
  assert.equal(items.length, 5);
  assert.ok(items[1].includes('Cell 1: The image rainfall.png has no alt text.'));
  const buttons = [...html.matchAll(/<button type="button"[^>]*>([^<]*)<\/button>/g)].map(m => m[1]);
  assert.deepEqual(buttons, ['Go to cell 1', 'Go to cell 2', 'Go to cell 3', 'Go to cell 4', 'Close']);
  assert.ok(!items[0].includes('<button'), 'the whole-notebook problem has no cell to go to');
  assert.ok(!html.includes('-id'), 'no cell ids in what people read');
  assert.ok(html.includes(REPORT.not_checked.replace("'", '&#x27;')), html);
  assert.equal(goToLabel(7, trans), 'Go to cell 7');
});

test('while checking and after a failure the region says so, with no list', () => {
  const render = view =>
    renderToStaticMarkup(React.createElement(AccessibilityReportView, { view, trans, onGoTo() {}, onClose() {} }));
  const checking = render({ status: 'checking', notebookPath: 'a.ipynb', report: null, message: '' });
  assert.ok(checking.includes('Checking…') && !checking.includes('<ul'));
  const failed = render({
    status: 'failed',
    notebookPath: 'a.ipynb',
    report: null,
    message: 'It failed: no notebook.'
  });
  assert.ok(failed.includes('jp-mod-error">It failed: no notebook.</p>') && !failed.includes('<ul'));
  const clean = render({
    status: 'ready',
    notebookPath: 'a.ipynb',
    report: { ...REPORT, problems: [], summary: 'No accessibility problems found.' },
    message: ''
  });
  assert.ok(clean.includes('No accessibility problems found.') && !clean.includes('<ul'));
});
