/**
 * What the `%aaep` view's Approve and Reject show, from the server's own
 * description of the request (`GET aaep/v1/chats/{chat}/requests/{id}`),
 * never from text the kernel supplied: pure words and the reply, no DOM,
 * unit-tested in `test/notebook-approval.test.mjs`.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { JSONRecord, isRecord, nowTimestamp, num, str } from './aaep';
import { planChoiceLabel, planTitle, readPlan } from './components/planWords';

/** What `GET aaep/v1/chats/{chat}/requests/{id}` answers. */
export interface IRequestAnswer {
  request_id: string;
  kind: 'confirmation' | 'clarification';
  /** Whether it still waits for an answer. */
  open: boolean;
  /** Once answered: the producer's sentence about it (null until it is out). */
  outcome: string | null;
  /** The `awaiting.*` event, as listeners got it. */
  event: JSONRecord;
}

/** Read the server's answer; `null` when it is not one. */
export function readRequestAnswer(value: unknown): IRequestAnswer | null {
  if (!isRecord(value) || !isRecord(value.event) || typeof value.open !== 'boolean') {
    return null;
  }
  const kind = value.kind === 'clarification' ? 'clarification' : 'confirmation';
  return {
    request_id: typeof value.request_id === 'string' ? value.request_id : '',
    kind,
    open: value.open,
    outcome: typeof value.outcome === 'string' && value.outcome ? value.outcome : null,
    event: value.event
  };
}

/** One block of code the person approves, with its caption. */
export interface ICodeBlock {
  caption: string;
  code: string;
}

/** Everything the view shows about a confirmation, in the person's words. */
export interface IApprovalWords {
  title: string;
  risk: string;
  consequence: string;
  warnings: string[];
  code: ICodeBlock[];
  /** "If you do not answer by 15:42, it will be rejected." or `''`. */
  deadline: string;
  /** "Approve running cell 3": the button's text, which is its accessible name. */
  approve: string;
  reject: string;
  /** A plan's numbered steps (plan mode), or `null` for any other confirmation. */
  steps: string[] | null;
  /** For a plan: where its other choices are ("…are in the side panel."), else `''`. */
  elsewhere: string;
}

const CHANGE_VERBS: Record<string, string> = {
  edit: 'editing',
  create: 'adding',
  delete: 'deleting',
  move: 'moving',
  clear_outputs: 'clearing the outputs of'
};

function integer(record: JSONRecord, key: string): number | undefined {
  const value = num(record, key);
  return value !== undefined && Number.isInteger(value) ? value : undefined;
}

/**
 * What a confirmation would do, as the end of a button name ("running cell
 * 3"): cells by number, never ids; the same words as the kernel's view.
 */
export function actionPhrase(event: JSONRecord, trans: TranslationBundle): string {
  const extra = isRecord(event.extra_context) ? event.extra_context : {};
  const change = extra.change;
  if (isRecord(change) && typeof change.kind === 'string') {
    const number = integer(change, 'cell_number');
    if (change.kind === 'create') {
      const where = str(change, 'where');
      return where ? trans.__('adding a cell %1', where) : trans.__('adding a cell');
    }
    const verb = CHANGE_VERBS[change.kind] ?? 'changing';
    return number !== undefined ? trans.__('%1 cell %2', verb, number) : trans.__('%1 a cell', verb);
  }
  const number = integer(extra, 'cell_number');
  if (number !== undefined) {
    return trans.__('running cell %1', number);
  }
  if (Array.isArray(extra.cells) && extra.cells.length > 0) {
    return trans._n('running %1 cell', 'running %1 cells', extra.cells.length);
  }
  const tool = str(extra, 'tool');
  if (tool === 'restart_kernel') {
    return trans.__('restarting the kernel');
  }
  if (tool === 'run_cell') {
    return trans.__('running a cell');
  }
  return tool ? trans.__('calling %1', tool.replace(/_/g, ' ')) : trans.__('this action');
}

const RISKS: Record<string, string> = { low: 'Low', medium: 'Medium', high: 'High' };

/** The clock time of `ms` as the person reads it ("15:42:10"). */
function clockTime(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** The words of a confirmation card, from the server's event. */
export function approvalWords(event: JSONRecord, trans: TranslationBundle): IApprovalWords {
  const extra = isRecord(event.extra_context) ? event.extra_context : {};
  const risk = str(event, 'risk_level') ?? 'low';
  const irreversible = event.irreversible === true || event.reversibility === 'irreversible';
  const warnings = Array.isArray(extra.risk_flags)
    ? extra.risk_flags.filter((flag): flag is string => typeof flag === 'string' && flag.length > 0)
    : [];
  const code: ICodeBlock[] = [];
  const number = integer(extra, 'cell_number');
  if (typeof extra.code === 'string') {
    code.push({
      caption: number !== undefined ? trans.__('Code of cell %1:', number) : trans.__('Code to run:'),
      code: extra.code
    });
  }
  if (Array.isArray(extra.cells)) {
    extra.cells.forEach((cell, index) => {
      if (isRecord(cell) && typeof cell.code === 'string') {
        const n = integer(cell, 'cell_number') ?? index + 1;
        code.push({ caption: trans.__('Code of cell %1:', n), code: cell.code });
      }
    });
  }
  const start = Date.parse(str(event, 'timestamp') ?? '');
  const timeout = num(event, 'timeout_seconds');
  const fallback = str(event, 'default_decision') === 'accept' ? trans.__('approved') : trans.__('rejected');
  const deadline =
    Number.isNaN(start) || timeout === undefined
      ? ''
      : trans.__('If you do not answer by %1, it will be %2.', clockTime(start + timeout * 1000), fallback);
  const plan = readPlan(extra);
  if (plan !== null) {
    // Approve is the plan's first choice (a plain accept means it); the others need the panel.
    return {
      title: planTitle(plan, trans),
      risk: `${trans.__(RISKS[risk] ?? risk)}${irreversible ? ` ${trans.__('(cannot be undone)')}` : ''}`,
      consequence: str(event, 'consequence') ?? trans.__('Not described.'),
      warnings,
      code,
      deadline,
      approve: planChoiceLabel('run', trans),
      reject: planChoiceLabel('reject', trans),
      steps: plan.steps,
      elsewhere: trans.__(
        'The other choices (run it asking before each step, keep planning with a comment, edit the plan) are in the side panel.'
      )
    };
  }
  const phrase = actionPhrase(event, trans);
  return {
    title: trans.__('Approval needed: %1', str(event, 'action') ?? trans.__('an action')),
    risk: `${trans.__(RISKS[risk] ?? risk)}${irreversible ? ` ${trans.__('(cannot be undone)')}` : ''}`,
    consequence: str(event, 'consequence') ?? trans.__('Not described.'),
    warnings,
    code,
    deadline,
    approve: trans.__('Approve %1', phrase),
    reject: trans.__('Reject %1', phrase),
    steps: null,
    elsewhere: ''
  };
}

/**
 * The reply a press sends, from the browser with the person's login. It is
 * marked `via: notebook` so listeners hear "Approved from the notebook."
 * `subscription_id` is left out: the chat's endpoint attributes it to the
 * chat's subscriber that received the request.
 */
export function notebookReply(event: JSONRecord, decision: 'accept' | 'reject'): JSONRecord {
  return {
    type: 'confirmation.reply',
    reply_token: str(event, 'reply_token') ?? '',
    decision,
    timestamp: nowTimestamp(),
    decided_by: 'user:jupyterlab-notebook',
    via: 'notebook'
  };
}

/** What the outcome line says once the request is no longer open. */
export function outcomeWords(answer: IRequestAnswer, trans: TranslationBundle): string {
  return answer.outcome ?? trans.__('Answered.');
}
