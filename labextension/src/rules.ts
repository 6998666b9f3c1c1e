/**
 * "Which rules apply here?": the rules files the agent follows in this
 * notebook, in one announcement (pure words; the command is in commands.ts).
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
    const report = await requestAPI<IRulesReport>(['rules'], {}, { notebook_path: notebookPath });
    return rulesWords(report, trans);
  } catch (error) {
    return trans.__('Could not read the rules: %1', error instanceof Error ? error.message : String(error));
  }
}
