// Unit tests of an explorable figure's words and data (no DOM, no server).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { altText, chartTitle, notExplorableText, steadyInstructions, withPageIds } from '../lib/figureData.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = { __: (text, ...args) => fill(text, args) };
const schema = {
  id: 'f',
  subplots: [
    [{ id: 'p', layers: [{ id: 'l', type: 'bar', title: 'Sales', data: [{ x: 'North', y: 12, id: 'keep' }] }] }]
  ]
};

test('the alt text is the stored description, else says there is none yet', () => {
  assert.equal(altText('  South is highest at 17. ', schema, trans), 'South is highest at 17.');
  assert.equal(altText(undefined, schema, trans), 'Chart: Sales (no description yet)');
  assert.equal(altText('   ', { subplots: [] }, trans), 'Chart (no description yet)');
  assert.equal(chartTitle(undefined), '');
});

test('each figure gets ids of its own in the page, and its values are left alone', () => {
  const one = withPageIds(schema);
  const two = withPageIds(schema);
  assert.notEqual(one.id, two.id);
  assert.ok(one.id.startsWith('f-') && one.subplots[0][0].id.startsWith('p-'));
  assert.ok(one.subplots[0][0].layers[0].id.startsWith('l-'));
  assert.deepEqual(one.subplots[0][0].layers[0].data, schema.subplots[0][0].layers[0].data);
  assert.equal(schema.id, 'f'); // the notebook's copy is not changed
});

test('a figure that cannot be explored says why, in a sentence', () => {
  for (const reason of ['unsupported', 'too_large', 'script', 'failed', undefined]) {
    const text = notExplorableText(reason, trans);
    assert.match(text, /cannot be explored|too much data to explore/);
    assert.doesNotMatch(text, /maidr\+json|_/);
  }
});

test("the chart's description is maidr's instructions as they hold once it has the focus", () => {
  // maidr drops "Click to activate." as the chart takes the focus; a description that changed
  // then was read twice by Orca (the focused chart, then the change).
  const unfocused = 'This is a maidr plot of type: single line. Click to activate. Use Arrows to navigate data points.';
  const focused = 'This is a maidr plot of type: single line.  Use Arrows to navigate data points.';
  assert.equal(steadyInstructions(unfocused), steadyInstructions(focused));
  assert.equal(
    steadyInstructions(unfocused),
    'This is a maidr plot of type: single line. Use Arrows to navigate data points.'
  );
  assert.equal(steadyInstructions('  \n '), '');
});
