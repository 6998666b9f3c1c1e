/**
 * What the panel says and shows about a chat's token usage (pure: unit-tested).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { IUsage, compactCount, dollars, totalTokens } from './model';

/** The usage in one sentence, for people; the cost only when the model has a known price. */
export function usageSentence(usage: IUsage | null, trans: TranslationBundle): string {
  if (!usage) {
    return trans.__('The server does not report token usage for this chat.');
  }
  if (usage.requests === 0 && totalTokens(usage) === 0) {
    return trans.__('This chat has used no tokens yet.');
  }
  const n = (v: number) => v.toLocaleString();
  let text = trans.__(
    'This chat used %1 tokens: %2 input, %3 read from the cache, %4 written to the cache and %5 output, in %6 model requests.',
    n(totalTokens(usage)),
    n(usage.inputTokens),
    n(usage.cacheReadTokens),
    n(usage.cacheWriteTokens),
    n(usage.outputTokens),
    n(usage.requests)
  );
  if (usage.costUsd !== null) {
    text += ' ' + trans.__('Estimated cost: about %1.', dollars(usage.costUsd));
  }
  if (usage.budgetUsd !== null) {
    text += ' ' + trans.__('The budget is %1.', dollars(usage.budgetUsd));
  }
  if (usage.compactions > 0) {
    text +=
      ' ' +
      trans._n('Earlier context was summarised once.', 'Earlier context was summarised %1 times.', usage.compactions);
  }
  return text;
}

/** The compact meter ("12.3k tokens · ≈ $0.04"; tokens only without a price), or '' without figures. */
export function usageMeterText(usage: IUsage | null, trans: TranslationBundle): string {
  if (!usage) {
    return '';
  }
  if (usage.costUsd === null) {
    return trans.__('%1 tokens', compactCount(totalTokens(usage)));
  }
  return trans.__('%1 tokens · ≈ %2', compactCount(totalTokens(usage)), dollars(usage.costUsd));
}
