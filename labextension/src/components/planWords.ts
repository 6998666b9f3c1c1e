/**
 * Plan mode's card, as data and words: reading the plan from a confirmation's
 * `extra_context.plan`, the four choices, and the AAEP reply each one is. Pure
 * (no DOM), unit-tested in `test/plan-card.test.mjs`.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { isRecord } from '../aaep';

/** The person's four choices on a plan, in the order of the card. */
export type PlanChoice = 'run' | 'ask_each_step' | 'keep_planning' | 'reject';

/** The choices, in order; the first is what a plain Approve (one key) means. */
export const PLAN_CHOICES: readonly PlanChoice[] = ['run', 'ask_each_step', 'keep_planning', 'reject'];

/** A plan as the card shows it. */
export interface IPlan {
  summary: string;
  steps: string[];
  /** The Markdown file (relative to the server root) a person may edit, if any. */
  file: string | null;
}

/** What a reply carries beside its decision (AAEP `confirmation.reply` fields). */
export interface IReplyDetails {
  modified_action?: { plan_choice: 'ask_each_step' };
  decision_rationale?: string;
  /** The standing permission an approval card offered, given with the approval. */
  grant?: { rule: string; scope: string };
}

/** The plan of a confirmation's `extra_context`, or `null` when it is not a plan. */
export function readPlan(extra: unknown): IPlan | null {
  const plan = isRecord(extra) ? extra.plan : undefined;
  if (!isRecord(plan) || typeof plan.summary !== 'string' || !Array.isArray(plan.steps)) {
    return null;
  }
  const steps = plan.steps.filter((s): s is string => typeof s === 'string' && s.trim().length > 0);
  return { summary: plan.summary, steps, file: typeof plan.file === 'string' && plan.file ? plan.file : null };
}

/**
 * The reply that makes `choice`: run is a plain accept, asking before each
 * step an accept with a modified action, keep planning a reject with the
 * comment as its rationale, reject a plain reject.
 */
export function planReply(
  choice: PlanChoice,
  comment = ''
): { decision: 'accept' | 'reject'; details?: IReplyDetails } {
  switch (choice) {
    case 'run':
      return { decision: 'accept' };
    case 'ask_each_step':
      return { decision: 'accept', details: { modified_action: { plan_choice: 'ask_each_step' } } };
    case 'keep_planning': {
      const text = comment.trim() || 'Please keep planning.';
      return { decision: 'reject', details: { decision_rationale: text.slice(0, 4096) } };
    }
    default:
      return { decision: 'reject' };
  }
}

/** What each choice's button says. */
export function planChoiceLabel(choice: PlanChoice, trans: TranslationBundle): string {
  switch (choice) {
    case 'run':
      return trans.__('Run it, asking only for code the risk scan flags');
    case 'ask_each_step':
      return trans.__('Run it, asking before each step');
    case 'keep_planning':
      return trans.__('Keep planning, with a comment');
    default:
      return trans.__('Reject the plan');
  }
}

/** The card's title: the plan's summary and how many steps it has. */
export function planTitle(plan: IPlan, trans: TranslationBundle): string {
  return trans._n(
    'Plan for your approval, %1 step: %2',
    'Plan for your approval, %1 steps: %2',
    plan.steps.length,
    plan.summary
  );
}

/** What the card says once answered, by the choice made. */
export function planOutcome(choice: PlanChoice, trans: TranslationBundle): string {
  switch (choice) {
    case 'run':
      return trans.__('You approved the plan; it runs asking only for code the risk scan flags.');
    case 'ask_each_step':
      return trans.__('You approved the plan; it asks you before each step.');
    case 'keep_planning':
      return trans.__('You asked the agent to keep planning.');
    default:
      return trans.__('You rejected the plan.');
  }
}
