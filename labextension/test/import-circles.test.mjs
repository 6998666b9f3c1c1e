// No two panel modules import each other, however indirectly, counting `import type` too:
// a circle is one concept split by size, or a shared piece that belongs below both (the speech
// types live in speech.ts, below narrator.ts and answerNarrator.ts, which once imported each
// other). The Python side has the same check in tests/test_layers.py.
// Run: node --import ./test/loader.mjs --test test/ (reads src/, needs no build).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\s*\(\s*['"](\.[^'"]+)['"]\s*\)|^\s*import\s*['"](\.[^'"]+)['"]/gm;

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      return sources(path);
    }
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function target(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const found = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find(existsSync);
  return found ?? null;
}

/** The panel's module graph: file -> the files it imports. */
export function graphOf(dir) {
  const graph = new Map();
  for (const file of sources(dir)) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set();
    for (const match of text.matchAll(IMPORT)) {
      const found = target(file, match[1] ?? match[2] ?? match[3]);
      if (found) {
        targets.add(found);
      }
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Groups of more than one module that reach each other (Tarjan's strongly connected parts). */
export function circles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const found = [];
  const visit = node => {
    index.set(node, index.size);
    low.set(node, index.get(node));
    stack.push(node);
    for (const other of graph.get(node) ?? []) {
      if (!index.has(other)) {
        visit(other);
        low.set(node, Math.min(low.get(node), low.get(other)));
      } else if (stack.includes(other)) {
        low.set(node, Math.min(low.get(node), index.get(other)));
      }
    }
    if (low.get(node) === index.get(node)) {
      const group = [];
      let member;
      do {
        member = stack.pop();
        group.push(member);
      } while (member !== node);
      if (group.length > 1) {
        found.push(group.sort());
      }
    }
  };
  for (const node of [...graph.keys()].sort()) {
    if (!index.has(node)) {
      visit(node);
    }
  }
  return found;
}

test('no panel module imports itself back, type imports included', () => {
  const graph = graphOf(SRC);
  assert.ok(graph.size > 20, `read ${graph.size} modules from ${SRC}`);
  const named = circles(graph).map(group => group.map(file => relative(SRC, file)).join(' ↔ '));
  assert.deepEqual(named, []);
});

test('the circle search finds a circle and ignores a tail', () => {
  const graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a'])],
    ['d', new Set(['a'])]
  ]);
  assert.deepEqual(circles(graph), [['a', 'b', 'c']]);
});
