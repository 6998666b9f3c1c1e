/**
 * The narrator: what a screen reader should hear about each AAEP event.
 *
 * Pure words: it turns events into a list of {@link ISpeech} (text and
 * politeness, plus hints for the delivery), with no DOM and no timers, so the
 * rules of docs/NARRATION.md are unit-tested directly. When and how the words
 * reach the live regions is the delivery's job (`delivery.ts`).
 *
 * The speech budget it keeps (docs/NARRATION.md §4, §9): an approval alert is
 * one short sentence (what, how risky, the key that reviews it); a step is one
 * sentence; one closing line per turn; no MIME types or byte sizes.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { IAAEPEvent, Verbosity, coreName, isCritical, isRecord, num, pickSummary, str } from './aaep';
import type { IProcessedEvent } from './model';
import { withoutHint } from './model';
import { AnswerNarrator } from './answerNarrator';
import type { ISpeech, Politeness, SpeechKind } from './speech';
import { saysReason, spokenMedia } from './speech';
import { planTitle, readPlan } from './components/planWords';

/** Narrator options (from the settings). */
export interface INarratorConfig {
  verbosity: Verbosity;
}

/**
 * How long the start of a step is held back at normal verbosity (ms): a step
 * that finishes within it is told by its result alone.
 */
export const START_GRACE_MS = 1500;

/** Step results that only acknowledge ("Done.") and are not worth a terse announcement. */
const BARE_ACK = /^(done|ok|finished|tool failed|failed)\.?$/i;

/** Longest detailed step result spoken on its own; longer ones are heard on request. */
const DETAILED_SPOKEN_CHARS = 400;

/**
 * Turns events into speech. Stateful only in what a listener has heard so far
 * (streams being buffered, a turn's closing line, progress steps), never in time.
 */
export class Narrator {
  constructor(
    private _trans: TranslationBundle,
    config: INarratorConfig
  ) {
    this._config = { ...config };
    this._answers = new AnswerNarrator(_trans);
  }

  /** Apply new settings. */
  configure(config: Partial<INarratorConfig>): void {
    this._config = { ...this._config, ...config };
  }

  /** The current configuration. */
  get config(): Readonly<INarratorConfig> {
    return this._config;
  }

  /** The key that jumps to a pending request (`Ctrl+Shift+A`), or `null` if there is none. */
  setRequestShortcut(label: string | null): void {
    this._requestShortcut = label;
  }

  /** What to say for one event at the current verbosity (nothing while replaying). */
  narrate({ event, replay }: IProcessedEvent): ISpeech[] {
    if (replay) {
      return [];
    }
    this._out = [];
    this._event(event);
    const out = this._out.map(s => ({ ...s, text: spokenMedia(s.text).trim() })).filter(s => s.text || s.cancelKey);
    this._out = [];
    return out;
  }

  private _say(text: string | undefined, kind: SpeechKind, politeness: Politeness = 'polite', key?: string): void {
    if (text && text.trim()) {
      this._out.push({ text: text.trim(), politeness, kind, key });
    }
  }

  private _event(event: IAAEPEvent): void {
    const name = coreName(event.type);
    const verbosity = this._config.verbosity;
    const summary = pickSummary(event, verbosity);
    const trans = this._trans;
    const sid = event.session_id;
    switch (name) {
      case 'output.streaming':
        this._out.push(...this._answers.push(event));
        return;
      case 'session.started': {
        this._closed.delete(sid);
        const by = str(event, 'requested_by') ?? '';
        if (by.startsWith('kernel:')) {
          // A long cell's story: terse hears only how it ended.
          if (verbosity !== 'terse') {
            this._say(summary, 'said');
          }
          return;
        }
        this._say(summary ?? trans.__('The agent started working.'), 'said');
        return;
      }
      case 'session.completed':
        this._out.push(...this._answers.end(sid, false));
        // The answer was just heard: the end is one short line, never the answer again.
        this._close(sid, summary ?? trans.__('The agent finished.'));
        return;
      case 'session.cancelled':
        this._out.push(...this._answers.end(sid, true));
        this._close(sid, summary ?? trans.__('The agent run was stopped.'));
        return;
      case 'session.errored': {
        this._out.push(...this._answers.end(sid, true));
        const hint = str(event, 'remediation_hint');
        const said = withoutHint(summary ?? '', hint) || trans.__('the agent stopped.');
        this._close(
          sid,
          [/^error\b/i.test(said) ? '' : trans.__('Error:'), said, hint].filter(Boolean).join(' '),
          'assertive'
        );
        return;
      }
      case 'awaiting.confirmation':
        this._confirmation(event, summary);
        return;
      case 'awaiting.clarification':
        this._say(
          [trans.__('The agent asks:'), str(event, 'question') ?? summary ?? '', this._whereToAnswer()]
            .filter(Boolean)
            .join(' '),
          'request',
          'assertive'
        );
        return;
      case 'handoff.requested':
        this._say(
          `${trans.__('The agent hands control back to you:')} ${summary ?? str(event, 'reason') ?? ''}`,
          'alert',
          'assertive'
        );
        return;
      case 'tool.invoked': {
        if (verbosity === 'terse') {
          return;
        }
        // Normal: held back, so a quick step is told by its result alone.
        this._out.push({
          text: summary ?? trans.__('Working on the next step.'),
          politeness: 'polite',
          kind: 'start',
          key: toolKey(event),
          holdMs: verbosity === 'normal' ? START_GRACE_MS : undefined
        });
        return;
      }
      case 'tool.completed':
        this._toolCompleted(event);
        return;
      case 'progress.updated':
        this._progress(event, summary);
        return;
      case 'state.changed':
        this._stateChanged(event, summary);
        return;
      default:
        // Unknown types are announced generically, by their summary.
        if (summary) {
          this._say(summary, 'said', isCritical(event) ? 'assertive' : 'polite');
        } else if (isCritical(event)) {
          this._say(trans.__('The agent needs your attention.'), 'alert', 'assertive');
        }
    }
  }

  /**
   * An approval request: one short sentence — what, how risky, the key that
   * reviews it. The card (focused by that key) holds the rest; the detailed
   * level adds what happens without an answer.
   */
  private _confirmation(event: IAAEPEvent, summary: string | undefined): void {
    const trans = this._trans;
    const sid = event.session_id;
    const extra = isRecord(event.extra_context) ? event.extra_context : {};
    if (extra.auto_approved === true) {
      // Approved by the chat's setting: told as what it is, politely; the
      // state change that follows ("Approved automatically.") is not repeated.
      this._autoApproved.add(sid);
      this._say(summary ?? trans.__('Approved automatically: %1', str(event, 'action') ?? ''), 'step');
      return;
    }
    const verbosity = this._config.verbosity;
    const plan = readPlan(extra);
    if (plan !== null) {
      // Plan mode's one decision: its title and, unless terse, its numbered steps.
      const steps = plan.steps.map((step, i) => `${i + 1}. ${step.replace(/[.;:,\s]+$/, '')}.`).join(' ');
      const key = this._requestShortcut
        ? trans.__('%1 to review and choose.', this._requestShortcut)
        : trans.__('choose in the agent panel.');
      const title = planTitle(plan, trans).replace(/[.;:,\s]+$/, '');
      this._say(verbosity === 'terse' ? `${title}; ${key}` : `${title}. ${steps} ${key}`, 'request', 'assertive');
      return;
    }
    let action = (str(event, 'action') ?? summary ?? trans.__('an action')).trim().replace(/[.;:,\s]+$/, '');
    if (verbosity === 'terse') {
      action = action.split(/,\s/)[0];
    }
    const risk = str(event, 'risk_level');
    const head = risk ? trans.__('Approval needed, %1 risk:', risk) : trans.__('Approval needed:');
    const key = this._requestShortcut
      ? trans.__('%1 to review.', this._requestShortcut)
      : trans.__('answer in the agent panel.');
    const parts = [`${head} ${action}; ${key}`];
    const timeout = num(event, 'timeout_seconds');
    if (verbosity === 'detailed' && timeout !== undefined) {
      const fallback = str(event, 'default_decision') === 'accept' ? trans.__('approved') : trans.__('rejected');
      parts.push(trans.__('Without an answer within %1, it will be %2.', duration(trans, timeout), fallback));
    }
    this._say(parts.join(' '), 'request', 'assertive');
  }

  private _stateChanged(event: IAAEPEvent, summary: string | undefined): void {
    const verbosity = this._config.verbosity;
    const trans = this._trans;
    const sid = event.session_id;
    const from = str(event, 'from_state');
    const to = str(event, 'to_state');
    if (to === 'paused' || from === 'paused') {
      // Said at every verbosity: the user asked for it and waits for it.
      this._say(
        summary ?? (to === 'paused' ? trans.__('Paused.') : trans.__('Resumed.')),
        'state',
        'polite',
        `state:${sid}`
      );
      return;
    }
    if (from === 'awaiting_input' && this._autoApproved.delete(sid)) {
      return; // "Approved automatically" was said with the request itself.
    }
    const meaningful = from === 'awaiting_input' || to === 'compacting_context';
    if (summary && (verbosity === 'detailed' || (meaningful && verbosity === 'normal'))) {
      this._say(summary, 'state', 'polite', `state:${sid}`);
    }
  }

  /**
   * A step finished: its result in one sentence (normal), only results worth
   * hearing and failures (terse), or the detailed result when it is short
   * (detailed). At normal, its start is dropped if it was not said yet.
   */
  private _toolCompleted(event: IAAEPEvent): void {
    const verbosity = this._config.verbosity;
    const trans = this._trans;
    const status = str(event, 'status');
    if (verbosity === 'normal') {
      this._out.push({ text: '', politeness: 'polite', kind: 'start', cancelKey: toolKey(event) });
    }
    if (status === 'error' || status === 'timeout') {
      const summary = pickSummary(event, verbosity === 'terse' ? 'normal' : verbosity);
      const message = str(event, 'error_message');
      const said = summary ?? (status === 'timeout' ? trans.__('A step timed out.') : trans.__('A step failed.'));
      // The reason is added unless the summary already says it.
      const reason = message && !saysReason(said, message) ? message : '';
      this._say([said, verbosity !== 'terse' ? reason : ''].filter(Boolean).join(' '), 'step');
      return;
    }
    let said: string | undefined;
    if (verbosity === 'terse') {
      const terse = str(event, 'summary_terse');
      said = terse && !BARE_ACK.test(terse.trim()) ? terse : undefined;
    } else if (verbosity === 'detailed') {
      const detailed = str(event, 'summary_detailed');
      said =
        detailed && detailed.length <= DETAILED_SPOKEN_CHARS
          ? detailed.replace(/\s*\n\s*/g, ' ')
          : pickSummary(event, 'normal');
    } else {
      said = pickSummary(event, 'normal');
    }
    this._say(said, 'step');
  }

  /** Where a pending question can be answered, said after it. */
  private _whereToAnswer(): string {
    return this._requestShortcut
      ? this._trans.__('Press %1 to go to it.', this._requestShortcut)
      : this._trans.__('Answer it in the agent panel.');
  }

  /** The one closing line of a turn: a second one (a late error, a repeat) is not said. */
  private _close(sid: string, text: string, politeness: Politeness = 'polite'): void {
    if (!this._closed.has(sid)) {
      this._closed.add(sid);
      this._say(text, politeness === 'assertive' ? 'alert' : 'closing', politeness);
    }
    this._autoApproved.delete(sid);
    this._progressBuckets.delete(sid);
  }

  private _progress(event: IAAEPEvent, summary: string | undefined): void {
    const progress = (event.progress ?? {}) as Record<string, unknown>;
    const percent = num(progress, 'percent');
    const verbosity = this._config.verbosity;
    const urgency = str(event, 'urgency');
    const sid = event.session_id;
    // A numbered step ("Step 2 of 4 done", plan mode) is its own milestone: never replaced
    // by the next one while it waits to be said.
    const step = num(progress, 'step');
    const key =
      step !== undefined && num(progress, 'total_steps') !== undefined
        ? `progress:${sid}:step${step}`
        : `progress:${sid}`;
    // Never a bare number: a percentage is said with what it measures.
    const text =
      summary ??
      str(progress, 'description') ??
      (percent !== undefined ? this._trans.__('Progress of the current step: %1 percent.', Math.round(percent)) : '');
    if (verbosity === 'detailed') {
      this._say(text, 'progress', 'polite', key);
      return;
    }
    if (urgency === 'background') {
      return; // For the progress bar only: the producer paced what is worth hearing.
    }
    if (verbosity === 'normal' && (urgency === 'normal' || urgency === 'critical')) {
      // The producer chose this one to be heard (a milestone, a paced update, a notice).
      if (percent !== undefined) {
        this._progressBuckets.set(sid, Math.max(Math.floor(percent / 25), this._progressBuckets.get(sid) ?? 0));
      }
      this._say(text, 'progress', urgency === 'critical' ? 'assertive' : 'polite', key);
      return;
    }
    if (verbosity === 'normal' && percent !== undefined) {
      const bucket = Math.floor(percent / 25);
      if (bucket > (this._progressBuckets.get(sid) ?? 0)) {
        this._progressBuckets.set(sid, bucket);
        this._say(text, 'progress', 'polite', key);
      }
    }
  }

  private _config: INarratorConfig;
  private _out: ISpeech[] = [];
  private _requestShortcut: string | null = null;
  private _answers: AnswerNarrator;
  /** Sessions whose latest confirmation the chat's setting approved. */
  private _autoApproved = new Set<string>();
  /** Sessions whose turn has had its closing line. */
  private _closed = new Set<string>();
  private _progressBuckets = new Map<string, number>();
}

/** The key shared by a step's start and its result. */
function toolKey(event: IAAEPEvent): string {
  return `tool:${str(event, 'tool_call_id') ?? str(event, 'tool') ?? ''}`;
}

/** "90 seconds", "2 minutes", "1 minute 30 seconds". */
export function duration(trans: TranslationBundle, seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const m = Math.floor(total / 60);
  const s = total % 60;
  const mins = m > 0 ? trans._n('%1 minute', '%1 minutes', m) : '';
  const secs = s > 0 || m === 0 ? trans._n('%1 second', '%1 seconds', s) : '';
  return [mins, secs].filter(Boolean).join(' ');
}
