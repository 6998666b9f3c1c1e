/**
 * What the approval mode select shows, and what each mode does (its
 * description): pure words, unit-tested in `test/review.test.mjs`.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { ApprovalMode } from '../model';

/** What the approval mode select shows for `mode`. */
export function approvalModeLabel(mode: ApprovalMode, trans: TranslationBundle): string {
  switch (mode) {
    case 'ask_all':
      return trans.__('Ask before every change');
    case 'auto':
      return trans.__('Auto');
    case 'plan':
      return trans.__('Plan first');
    default:
      return trans.__('Ask before running code');
  }
}

/**
 * What `mode` does, in a few sentences: the select's description. Every mode
 * also says what auto does not protect against, so the choice is informed.
 */
export function approvalModeDescription(mode: ApprovalMode, trans: TranslationBundle): string {
  const caveat = trans.__(
    'Auto runs code without asking unless a quick check flags it as risky. The check is not a sandbox: it cannot catch everything harmful.'
  );
  switch (mode) {
    case 'ask_all':
      return `${trans.__(
        'The agent asks before every change: creating, editing, moving or deleting a cell, clearing outputs, and running code. An edit shows what changes, line by line.'
      )} ${caveat}`;
    case 'plan':
      return `${trans.__(
        'The agent first reads and proposes a plan; nothing is changed or run until you approve it. You approve the plan once and choose how it runs: asking only for code the check flags, or asking before each step.'
      )} ${caveat}`;
    case 'auto':
      return trans.__(
        'Auto is on for this chat: code runs without asking unless a quick check flags it as risky. The check is not a sandbox: it cannot catch everything harmful.'
      );
    default:
      return `${trans.__(
        'The agent asks before running code. It creates, edits, moves and deletes cells without asking; Undo agent changes puts them back.'
      )} ${caveat}`;
  }
}
