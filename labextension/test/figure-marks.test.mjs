// Unit tests of where the current value's outline goes (figureMarks.ts; no DOM, no server).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SPACE, layerMarks, outlineOf, outlineStyle, withMarks } from '../lib/figureMarks.js';

const bars = {
  id: 'b',
  type: 'bar',
  data: [
    { x: 'North', y: 12 },
    { x: 'South', y: 17 },
    { x: 'East', y: 9 }
  ]
};
const line = {
  id: 'l',
  type: 'line',
  data: [
    [
      { x: 1, y: 4 },
      { x: 2, y: 1 }
    ]
  ],
  selectors: ['g path']
};
const schema = {
  id: 'f',
  subplots: [
    [
      { id: 'p', layers: [bars] },
      { id: 'q', layers: [line] }
    ]
  ]
};
const marks = {
  b: [
    [0.1, 0.3, 0.3, 0.9],
    [0.4, 0.1, 0.6, 0.9],
    [0.7, 0.5, 0.9, 0.9]
  ],
  l: [
    [
      [0.125, 0.25, 0.125, 0.25],
      [0.5, 0.875, 0.5, 0.875]
    ]
  ]
};
const attrs = values => name => (name in values ? String(values[name]) : null);

test("the kernel's boxes become marks in the overlay's square space, and maidr is pointed at them", () => {
  const { schema: marked, layers } = withMarks(schema, marks, '7');
  assert.equal(layers.length, 2);
  assert.deepEqual(layers[0].rects[1], { x: 400, y: 100, width: 200, height: 800 });
  assert.deepEqual(layers[1].lines, ['125,250 500,875']);
  const [[barPanel, linePanel]] = marked.subplots;
  assert.equal(barPanel.layers[0].selectors, 'svg[data-aaep-marks="7"] g[data-aaep-layer="0"] > rect');
  assert.deepEqual(linePanel.layers[0].selectors, ['svg[data-aaep-marks="7"] g[data-aaep-layer="1"] > polyline']);
  assert.deepEqual(barPanel.layers[0].data, bars.data); // the values are untouched
  assert.deepEqual(line.selectors, ['g path']); // the notebook's copy is not changed
});

test('boxes that do not match the values one to one give no marks, never a wrong outline', () => {
  assert.equal(layerMarks(bars, marks.b.slice(1), '0'), null); // a bar missing
  assert.equal(layerMarks(bars, [[0, 0, 1], ...marks.b.slice(1)], '0'), null); // not a box
  assert.equal(layerMarks(bars, [[0, 0, 1, NaN], ...marks.b.slice(1)], '0'), null);
  assert.equal(layerMarks(line, [[marks.l[0][0]]], '0'), null); // a point missing
  assert.equal(layerMarks({ ...bars, type: 'heat' }, marks.b, '0'), null); // a kind without marks
  const { schema: kept, layers } = withMarks(schema, undefined, '1');
  assert.deepEqual(layers, []);
  assert.deepEqual(kept.subplots[0][1].layers[0].selectors, ['g path']);
  // Out of the image is drawn at its edge.
  assert.deepEqual(layerMarks(bars, [[-0.5, 0, 0.2, 1.5], ...marks.b.slice(1)], '0').rects[0], {
    x: 0,
    y: 0,
    width: 200,
    height: SPACE
  });
});

test("maidr's mark of the current value is read back as fractions of the image", () => {
  const bar = outlineOf('rect', attrs({ x: 400, y: 100, width: 200, height: 800 }));
  assert.deepEqual(bar, { left: 0.4, top: 0.1, width: 0.2, height: 0.8, point: false });
  assert.deepEqual(outlineStyle(bar), { left: '40%', top: '10%', width: '20%', height: '80%' });
  const point = outlineOf('circle', attrs({ cx: 500, cy: 875, r: 2 }));
  assert.deepEqual(point, { left: 0.5, top: 0.875, width: 0, height: 0, point: true });
  assert.equal(outlineOf('rect', attrs({ x: 1, y: 2 })), null);
  assert.equal(outlineOf('path', attrs({ d: 'M0 0' })), null);
  // Fractions of a third stay readable as CSS.
  assert.equal(outlineStyle(outlineOf('rect', attrs({ x: 1000 / 3, y: 0, width: 10, height: 10 }))).left, '33.333%');
});
