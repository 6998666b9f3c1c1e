// Unit tests of the code waiting for approval, one line at a time (components/CodeLines.tsx):
// its lines, the keys that move between them, and its markup (a <pre> whose every line takes
// the focus but is no Tab stop).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

const { CODE_LINE_CLASS, CodeLines, codeLines, indentColumns, lineAfterKey, wrappable } =
  await import('../lib/components/CodeLines.js');

test('the lines of the code, without the newlines that end it, blank lines kept', () => {
  assert.deepEqual(codeLines('a = 1\n\nprint(a)\n\n'), ['a = 1', '', 'print(a)']);
  assert.deepEqual(codeLines('x'), ['x']);
  assert.deepEqual(codeLines(''), ['']);
});

test('the arrows go to the next and previous line, Home and End to the first and last', () => {
  assert.equal(lineAfterKey('ArrowDown', 0, 18), 1);
  assert.equal(lineAfterKey('ArrowDown', 17, 18), 17, 'the last line stays');
  assert.equal(lineAfterKey('ArrowUp', 5, 18), 4);
  assert.equal(lineAfterKey('ArrowUp', 0, 18), 0, 'the first line stays');
  assert.equal(lineAfterKey('Home', 9, 18), 0);
  assert.equal(lineAfterKey('End', 2, 18), 17);
  assert.equal(lineAfterKey('Tab', 2, 18), null, 'Tab goes on to Approve');
  assert.equal(lineAfterKey('Enter', 2, 18), null);
});

test('each line is its own focusable element inside one <pre>, and none is a Tab stop', () => {
  const html = renderToStaticMarkup(React.createElement(CodeLines, { code: 'a = 1\n\nprint(a)\n' }));
  assert.ok(
    html.startsWith('<pre style="--jp-private-aaep-gutter:2ch"><code>') && html.endsWith('</code></pre>'),
    html
  );
  const lines = [
    ...html.matchAll(new RegExp(`<span class="${CODE_LINE_CLASS}" tabindex="(-?\\d+)" style="[^"]*">(.*?)</span>`, 'g'))
  ];
  assert.deepEqual(
    lines.map(m => m[2].replaceAll('<wbr/>', '')),
    ['a = 1', '', 'print(a)']
  );
  assert.ok(
    lines.every(m => m[1] === '-1'),
    html
  );
  // Read as text, the block is the code itself (a newline between lines, none after the last):
  // the line numbers are drawn by CSS, not written in the markup.
  assert.equal(html.replace(/<[^>]+>/g, ''), 'a = 1\n\nprint(a)');
});

test('each line carries its indentation, for the hanging indent of its wrapped rest', () => {
  assert.equal(indentColumns('plt.show()'), 0);
  assert.equal(indentColumns('        plt.title("Revenue")'), 8);
  assert.equal(indentColumns('\tx = 1'), 4);
  assert.equal(indentColumns('  \tx = 1'), 4, 'a tab goes to the next multiple of 4');
  assert.equal(indentColumns('    '), 4);
  const code = 'if ok:\n    plt.title("Monthly revenue")\n';
  const html = renderToStaticMarkup(React.createElement(CodeLines, { code }));
  const indents = [...html.matchAll(/--jp-private-aaep-indent:(\d+)/g)].map(m => Number(m[1]));
  assert.deepEqual(indents, [0, 4]);
  assert.ok(
    html.includes('>    plt.<wbr/>title(<wbr/>&quot;Monthly revenue&quot;)</span>'),
    'the spaces stay in the text; it may wrap between tokens'
  );
  const tall = renderToStaticMarkup(React.createElement(CodeLines, { code: 'x\n'.repeat(12) }));
  assert.ok(tall.startsWith('<pre style="--jp-private-aaep-gutter:3ch">'), 'two digits and a space');
});

test('a line may wrap between tokens, never inside a name or a number', () => {
  const text = nodes => nodes.map(n => (typeof n === 'string' ? n : '|')).join('');
  assert.equal(text(wrappable('plt.bar(city, mean, color=color)')), 'plt.|bar(|city, mean, color=|color)');
  assert.equal(text(wrappable('x = df["a"][0] + 1.5')), 'x = df[|"a"][|0] + 1.5');
  assert.equal(text(wrappable('    if a == b:')), '    if a == b:');
  assert.equal(text(wrappable('f()')), 'f()');
});
