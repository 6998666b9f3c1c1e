// Unit tests of the words for the rules files the agent follows (no DOM, no server).
// Run: node --import ./test/loader.mjs --test test/ (after `jlpm build:lib`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ruleLeftOut, ruleWhere, rulesWords } from '../lib/rules.js';

const fill = (text, args) => text.replace(/%(\d)/g, (_, i) => String(args[Number(i) - 1]));
const trans = {
  __: (text, ...args) => fill(text, args),
  _n: (one, many, n, ...args) => fill(n === 1 ? one : many, [n, ...args])
};
const rule = (label, scope, extra = {}) => ({
  label,
  path: `/work/p/${label}`,
  active: true,
  scope,
  cut: false,
  ...extra
});

test('a rule that applies says where it is and where it applies, and when it was cut', () => {
  assert.equal(ruleWhere(rule('AGENTS.md', null), trans), 'at /work/p/AGENTS.md; applies everywhere');
  assert.equal(
    ruleWhere(rule('.aaep/rules/plots.md', 'languages python'), trans),
    'at /work/p/.aaep/rules/plots.md; applies to languages python'
  );
  assert.equal(
    ruleWhere(rule('CLAUDE.md', null, { cut: true }), trans),
    'at /work/p/CLAUDE.md; applies everywhere (cut to fit: the agent reads only its beginning)'
  );
});

test('a rule left out says why: scoped elsewhere, or switched off', () => {
  assert.equal(
    ruleLeftOut(rule('r.md', 'kernels ir'), trans),
    'at /work/p/r.md; not for this notebook: it is for kernels ir'
  );
  assert.equal(
    ruleLeftOut(rule('off.md', null, { active: false }), trans),
    'at /work/p/off.md; switched off (active: false)'
  );
});

test('the announcement starts with the server sentence, which names files that could not be read', () => {
  const report = {
    applies: [],
    skipped: [rule('r.md', 'kernels ir')],
    problems: ['bad.md could not be read: its front matter is not YAML.'],
    sentence: 'No rules apply. bad.md could not be read: its front matter is not YAML.'
  };
  assert.equal(
    rulesWords(report, trans),
    'No rules apply. bad.md could not be read: its front matter is not YAML. r.md does not apply here: it is for kernels ir.'
  );
});
