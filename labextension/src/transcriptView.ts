/**
 * View helpers: what the components and commands show or say, derived from
 * the transcript and the usage without touching either.
 */
import { IUsage, TranscriptItem } from './transcript';

/** Every token of a usage: prompt tokens however served, and output. */
export function totalTokens(usage: IUsage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}

/** A token count in few characters: 950, 12.3k, 4.5M. */
export function compactCount(n: number): string {
  if (n < 1000) {
    return String(Math.round(n));
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`;
  }
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Dollars as the meter shows them: two decimals, four below a cent. */
export function dollars(amount: number): string {
  return amount >= 0.01 || amount === 0 ? `$${amount.toFixed(2)}` : `$${amount.toFixed(4)}`;
}

/**
 * Remove a remediation hint the summary repeats at its end, so it is shown
 * and said once.
 */
export function withoutHint(summary: string, hint: string | undefined): string {
  if (!hint) {
    return summary;
  }
  const trimmed = summary.trim();
  return trimmed.endsWith(hint.trim()) ? trimmed.slice(0, trimmed.length - hint.trim().length).trim() : trimmed;
}

/** Turns (a request and everything after it) shown before older ones are collapsed. */
export const VISIBLE_TURNS = 20;

/**
 * Where the shown part of the transcript starts: the first item of the
 * `VISIBLE_TURNS`-th newest turn (a turn starts at a request, not at
 * guidance). Returns the index and how many turns lie before it.
 */
export function collapsePoint(
  items: ReadonlyArray<TranscriptItem>,
  visibleTurns: number = VISIBLE_TURNS
): { start: number; hiddenTurns: number } {
  const starts: number[] = [];
  items.forEach((item, index) => {
    if (item.kind === 'user' && !item.steering) {
      starts.push(index);
    }
  });
  if (starts.length <= visibleTurns) {
    return { start: 0, hiddenTurns: 0 };
  }
  const first = starts.length - visibleTurns;
  return { start: starts[first], hiddenTurns: first + (starts[0] > 0 ? 1 : 0) };
}

/**
 * The detailed result of the newest cell run in the transcript (the agent's
 * `run_cell`, `run_all_cells` or `wait_for_cell` steps), for "Hear the last output": its
 * detailed summary when the producer sent one, else its one-sentence result;
 * `null` when the agent ran no cell in this chat.
 */
export function lastRunOutput(items: ReadonlyArray<TranscriptItem>): string | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'tool' && RUN_TOOLS.has(item.tool) && item.status !== 'running') {
      return item.detail ?? item.summary;
    }
  }
  return null;
}

/** The tools whose results are cell outputs. */
const RUN_TOOLS: ReadonlySet<string> = new Set(['run_cell', 'run_all_cells', 'wait_for_cell']);
