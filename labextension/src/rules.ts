/**
 * The rules files the agent follows in a notebook: the server call, the one
 * announcement of *Which rules apply here?* (the command is in commands.ts)
 * and the lines the settings list (`components/RulesList.tsx`). Pure words,
 * unit-tested in `test/rules-words.test.mjs`.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { requestAPI } from './handler';

/** One rules file as `GET /aaep/v1/rules` describes it. */
export interface IRuleFile {
  label: string;
  path: string;
  active: boolean;
  /** Where it applies, in words, or null for everywhere. */
  scope: string | null;
  cut: boolean;
}

/** The server's answer for one notebook. */
export interface IRulesReport {
  applies: IRuleFile[];
  skipped: IRuleFile[];
  problems: string[];
  /** The server's own sentence ("2 rules apply: AGENTS.md, …"). */
  sentence: string;
}

/** `GET aaep/v1/rules?notebook_path=`: the rules of that notebook. */
export function readRules(notebookPath: string): Promise<IRulesReport> {
  return requestAPI<IRulesReport>(['rules'], {}, { notebook_path: notebookPath });
}

/** Where a rule that applies is, and where it applies, for the settings' list. */
export function ruleWhere(rule: IRuleFile, trans: TranslationBundle): string {
  const where = rule.scope
    ? trans.__('at %1; applies to %2', rule.path, rule.scope)
    : trans.__('at %1; applies everywhere', rule.path);
  return rule.cut ? trans.__('%1 (cut to fit: the agent reads only its beginning)', where) : where;
}

/** Why a rule was left out, for the settings' list. */
export function ruleLeftOut(rule: IRuleFile, trans: TranslationBundle): string {
  return rule.active
    ? trans.__('at %1; not for this notebook: it is for %2', rule.path, rule.scope ?? '')
    : trans.__('at %1; switched off (active: false)', rule.path);
}

/** Everything about the notebook's rules in one announcement: which apply, where each
 * file is, and which were left out and why. */
export function rulesWords(report: IRulesReport, trans: TranslationBundle): string {
  const parts = [report.sentence];
  for (const rule of report.applies) {
    parts.push(
      rule.scope
        ? trans.__('%1 is at %2 and applies to %3.', rule.label, rule.path, rule.scope)
        : trans.__('%1 is at %2 and applies everywhere.', rule.label, rule.path)
    );
  }
  for (const rule of report.skipped) {
    parts.push(
      rule.active
        ? trans.__('%1 does not apply here: it is for %2.', rule.label, rule.scope ?? '')
        : trans.__('%1 is switched off (active: false).', rule.label)
    );
  }
  return parts.join(' ');
}

/** Ask the server which rules apply to `notebookPath` and say it. */
export async function whichRules(notebookPath: string | null, trans: TranslationBundle): Promise<string> {
  if (!notebookPath) {
    return trans.__('Open a notebook first: rules are read for the notebook the agent works on.');
  }
  try {
    return rulesWords(await readRules(notebookPath), trans);
  } catch (error) {
    return trans.__('Could not read the rules: %1', error instanceof Error ? error.message : String(error));
  }
}
