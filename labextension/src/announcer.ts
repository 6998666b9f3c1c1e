/**
 * The announcer: what a screen reader hears about the agent.
 *
 * It owns two visually hidden live regions (`jp-sr-only`):
 *
 * - polite (`role="status"`, `aria-live="polite"`, atomic): summaries of
 *   ordinary events and the streamed answer, one sentence or more at a time;
 * - assertive (`role="alert"`, `aria-live="assertive"`): only critical events
 *   (approval and clarification requests, handoffs, errors).
 *
 * The rules it follows are written down in docs/NARRATION.md:
 *
 * - Order of speech = order of events. Polite speech still queued when an
 *   alert arrives is folded into the alert, in front of it, never dropped and
 *   never said after it.
 * - One sentence per step at normal verbosity: a step that finishes quickly
 *   is told by its result only; its start is said only when it takes longer
 *   than {@link START_GRACE_MS}.
 * - Nothing twice: a piece equal to the one just said is not said again.
 * - Streamed text is buffered to sentence boundaries (never per token, never a
 *   partial word); code blocks are summarised as "code block, N lines"; text
 *   a Stop cut in the middle of a sentence is marked as cut off.
 * - Polite announcements are rate limited to `maxPerSecond`: whatever arrives
 *   while the budget is spent is merged into the next write, never dropped.
 * - Verbosity: terse = the answer, results worth hearing (a cell's output),
 *   failures, critical events, start and end; normal = plus one sentence per
 *   step, the outcome of a request, progress at 25 % steps; detailed = plus
 *   step starts, every state change and progress update.
 *
 * Tests can observe the regions (`[data-aaep-live="polite"|"assertive"]`)
 * with a MutationObserver. When the debug setting is on, every string written
 * is also appended to `window.__aaepAnnouncements` as
 * `{time, politeness, text}`.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { IAAEPEvent, Verbosity, bool, coreName, isCritical, isRecord, num, pickSummary, str } from './aaep';
import { IProcessedEvent, withoutHint } from './model';
import { SentenceBuffer, endsSentence, markCutOff, saysReason } from './speech';

/** Politeness of an announcement. */
export type Politeness = 'polite' | 'assertive';

/** One string written to a live region. */
export interface IAnnouncement {
  /** ISO time of the write. */
  time: string;
  politeness: Politeness;
  text: string;
}

/** Announcer configuration (from the settings). */
export interface IAnnouncerConfig {
  verbosity: Verbosity;
  /** Polite writes per second (≥ 0.1). */
  maxPerSecond: number;
  /** Mirror every write into `window.__aaepAnnouncements`. */
  debugLog: boolean;
}

/** How long assertive messages stay in the region before being pruned (ms). */
const ASSERTIVE_KEEP_MS = 10000;

/**
 * How long the start of a step is held back at normal verbosity (ms): a step
 * that finishes within it is told by its result alone ("Created cell 4"), not
 * "Starting… Created…".
 */
export const START_GRACE_MS = 1500;

/** Step results that only acknowledge ("Done.") and are not worth a terse announcement. */
const BARE_ACK = /^(done|ok|finished|tool failed|failed)\.?$/i;

/** Longest detailed step result spoken on its own; longer ones are heard on request. */
const DETAILED_SPOKEN_CHARS = 400;

/** One piece of polite speech waiting for its turn. */
interface IQueued {
  text: string;
  /** Queued pieces with the same key replace each other (progress). */
  key?: string;
  /** Epoch ms until which this piece (and everything after it) waits. */
  holdUntil?: number;
  /**
   * Said even if it repeats what was just said: the user asked for it (a
   * command's answer must never be swallowed). Event speech is not.
   */
  asked?: boolean;
}

/**
 * Owns the live regions and decides what to say for each AAEP event.
 */
export class Announcer implements IDisposable {
  /**
   * @param trans Translation bundle for the panel's own wording.
   * @param config Initial configuration.
   */
  constructor(
    private _trans: TranslationBundle,
    config: IAnnouncerConfig
  ) {
    this._config = { ...config };
    this.node = document.createElement('div');
    this.node.className = 'jp-AAEPAnnouncer';
    this._polite = this._makeRegion('polite');
    this._assertive = this._makeRegion('assertive');
  }

  /** The element holding both live regions; attach it once, keep it attached. */
  readonly node: HTMLElement;

  /** Whether {@link dispose} was called. */
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Apply new settings (verbosity, rate, debug log). */
  configure(config: Partial<IAnnouncerConfig>): void {
    this._config = { ...this._config, ...config };
  }

  /** The current configuration. */
  get config(): Readonly<IAnnouncerConfig> {
    return this._config;
  }

  /**
   * Announce a string the user asked for (a command's answer): it is always
   * said, even when it repeats what was just said.
   *
   * @param text What to say.
   * @param politeness `assertive` for critical information only.
   * @param key Queued polite messages with the same key replace each other
   *   (e.g. progress), so stale values are not read out.
   */
  announce(text: string, politeness: Politeness = 'polite', key?: string): void {
    this._announce(text, politeness, key, undefined, true);
  }

  /** Speech an event causes: not said again if it repeats what was just said. */
  private _say(text: string, politeness: Politeness = 'polite', key?: string): void {
    this._announce(text, politeness, key);
  }

  private _announce(
    text: string,
    politeness: Politeness,
    key?: string,
    holdUntil?: number,
    asked = false
  ): IQueued | null {
    const clean = text.trim();
    if (!clean || this._isDisposed) {
      return null;
    }
    if (politeness === 'assertive') {
      // Never a question before the story that led to it: what is still
      // queued is said first, in the same alert (an alert would cut it off).
      const before = this._takeQueue();
      if (this._timer !== null) {
        window.clearTimeout(this._timer);
        this._timer = null;
      }
      this._writeAssertive(this._compose([...before, { text: clean, asked: true }]));
      return null;
    }
    const existing = key ? this._queue.find(q => q.key === key) : undefined;
    if (existing) {
      existing.text = clean;
      existing.holdUntil = holdUntil;
      existing.asked = asked;
      this._schedule();
      return existing;
    }
    const entry: IQueued = { text: clean, key, holdUntil, asked };
    this._queue.push(entry);
    this._schedule();
    return entry;
  }

  /** Say what an AAEP event means at the current verbosity. */
  handleEvent({ event, replay }: IProcessedEvent): void {
    if (replay) {
      return;
    }
    const name = coreName(event.type);
    const verbosity = this._config.verbosity;
    const summary = pickSummary(event, verbosity);
    const trans = this._trans;
    const sid = event.session_id;
    switch (name) {
      case 'output.streaming':
        this._stream(event);
        return;
      case 'session.started': {
        const by = str(event, 'requested_by') ?? '';
        if (by.startsWith('kernel:')) {
          // A long cell's story: terse hears only how it ended.
          if (verbosity !== 'terse' && summary) {
            this._say(summary);
          }
          return;
        }
        this._say(summary ?? trans.__('The agent started working.'));
        return;
      }
      case 'session.completed':
        this._flushStreams(sid, false);
        // The answer was just heard: the end is one short sentence, never the answer again.
        this._say(summary ?? trans.__('The agent finished.'));
        this._forget(sid);
        return;
      case 'session.cancelled':
        this._flushStreams(sid, true);
        this._say(summary ?? trans.__('The agent run was stopped.'));
        this._forget(sid);
        return;
      case 'session.errored': {
        this._flushStreams(sid, true);
        const hint = str(event, 'remediation_hint');
        const said = withoutHint(summary ?? '', hint) || trans.__('the agent stopped.');
        this._say(
          [/^error\b/i.test(said) ? '' : trans.__('Error:'), said, hint].filter(Boolean).join(' '),
          'assertive'
        );
        this._forget(sid);
        return;
      }
      case 'awaiting.confirmation': {
        const extra = isRecord(event.extra_context) ? event.extra_context : {};
        if (extra.auto_approved === true) {
          // Approved by the chat's setting: told as what it is, politely; the
          // state change that follows ("Approved automatically.") is not repeated.
          this._autoApproved.add(sid);
          this._say(summary ?? trans.__('Approved automatically: %1', str(event, 'action') ?? ''));
          return;
        }
        // Producers usually say it all in the summary; add only what is missing.
        const said =
          summary ??
          [str(event, 'action'), verbosity !== 'terse' ? str(event, 'consequence') : ''].filter(Boolean).join(' ');
        const risk = str(event, 'risk_level');
        const parts = [
          /^(approval needed|approve\b)/i.test(said) ? '' : trans.__('Approval needed:'),
          said,
          risk && !/\brisk\b/i.test(said) ? trans.__('Risk: %1.', risk) : '',
          this._whereToAnswer()
        ];
        this._say(parts.filter(Boolean).join(' '), 'assertive');
        return;
      }
      case 'awaiting.clarification':
        this._say(
          [trans.__('The agent asks:'), str(event, 'question') ?? summary ?? '', this._whereToAnswer()]
            .filter(Boolean)
            .join(' '),
          'assertive'
        );
        return;
      case 'handoff.requested':
        this._say(
          `${trans.__('The agent hands control back to you:')} ${summary ?? str(event, 'reason') ?? ''}`,
          'assertive'
        );
        return;
      case 'tool.invoked': {
        if (verbosity === 'terse') {
          return;
        }
        const text = summary ?? trans.__('Working on the next step.');
        const key = `tool:${str(event, 'tool_call_id') ?? str(event, 'tool') ?? ''}`;
        // Normal: held back, so a quick step is told by its result alone.
        this._announce(text, 'polite', key, verbosity === 'normal' ? Date.now() + START_GRACE_MS : undefined);
        return;
      }
      case 'tool.completed':
        this._toolCompleted(event);
        return;
      case 'progress.updated':
        this._progress(event, summary);
        return;
      case 'state.changed': {
        const from = str(event, 'from_state');
        const to = str(event, 'to_state');
        if (to === 'paused' || from === 'paused') {
          // Said at every verbosity: the user asked for it and waits for it.
          this._say(
            summary ?? (to === 'paused' ? trans.__('Paused.') : trans.__('Resumed.')),
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
          this._say(summary, 'polite', `state:${sid}`);
        }
        return;
      }
      default:
        // Unknown types are announced generically, by their summary.
        if (summary) {
          this._say(summary, isCritical(event) ? 'assertive' : 'polite');
        } else if (isCritical(event)) {
          this._say(trans.__('The agent needs your attention.'), 'assertive');
        }
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
    const key = `tool:${str(event, 'tool_call_id') ?? str(event, 'tool') ?? ''}`;
    const start = this._queue.find(q => q.key === key);
    const failed = status === 'error' || status === 'timeout';
    if (start && verbosity === 'normal') {
      // Not said yet: the result tells the whole step.
      this._queue.splice(this._queue.indexOf(start), 1);
    } else if (start) {
      start.key = undefined; // said in order, before its result
    }
    if (failed) {
      const summary = pickSummary(event, verbosity === 'terse' ? 'normal' : verbosity);
      const message = str(event, 'error_message');
      const said = summary ?? (status === 'timeout' ? trans.__('A step timed out.') : trans.__('A step failed.'));
      // The reason is added unless the summary already says it.
      const reason = message && !saysReason(said, message) ? message : '';
      this._say([said, verbosity !== 'terse' ? reason : ''].filter(Boolean).join(' '));
      this._schedule();
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
    if (said) {
      this._say(said);
    }
    this._schedule();
  }

  /**
   * Tell the announcer the key that jumps to a pending request (e.g.
   * `Ctrl+Shift+A`), so requests can say it; `null` if there is none.
   */
  setRequestShortcut(label: string | null): void {
    this._requestShortcut = label;
  }

  /** Where a pending request can be answered, said after the request. */
  private _whereToAnswer(): string {
    return this._requestShortcut
      ? this._trans.__('Press %1 to go to it.', this._requestShortcut)
      : this._trans.__('Answer it in the agent panel.');
  }

  /** Release timers and remove the regions. */
  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
    }
    if (this._pruneTimer !== null) {
      window.clearTimeout(this._pruneTimer);
    }
    this.node.remove();
  }

  private _stream(event: IAAEPEvent): void {
    const sid = event.session_id;
    const key = `${sid}/${str(event, 'output_id') ?? ''}`;
    let buffer = this._streams.get(key);
    if (!buffer) {
      buffer = new SentenceBuffer();
      this._streams.set(key, buffer);
    }
    const final = bool(event, 'complete') === true;
    const chunk = typeof event.chunk === 'string' ? event.chunk : '';
    this._sayPieces(sid, buffer.push(chunk, final));
    if (final) {
      this._streams.delete(key);
    }
  }

  /** Say released pieces; remember the last prose piece of the session (it may be cut off). */
  private _sayPieces(sid: string, pieces: ReturnType<SentenceBuffer['push']>): void {
    for (const piece of pieces) {
      if (piece.kind === 'code') {
        this._say(this._trans._n('Code block, %1 line.', 'Code block, %1 lines.', piece.lines ?? 0));
        this._lastProse.delete(sid);
        continue;
      }
      const entry = this._announce(piece.text, 'polite');
      if (entry) {
        this._lastProse.set(sid, { entry, text: piece.text });
      }
    }
  }

  /**
   * Release what is left of a session's streams at its end. When the run was
   * stopped or failed and the last sentence is unfinished, it is marked as cut
   * off: in place if it is still queued, else by a sentence of its own.
   */
  private _flushStreams(sid: string, interrupted: boolean): void {
    for (const [key, buffer] of [...this._streams]) {
      if (key.startsWith(`${sid}/`)) {
        this._sayPieces(sid, buffer.push('', true));
        this._streams.delete(key);
      }
    }
    const last = this._lastProse.get(sid);
    if (!interrupted || !last || endsSentence(last.text)) {
      return;
    }
    const label = this._trans.__('cut off');
    if (this._queue.includes(last.entry)) {
      last.entry.text = markCutOff(last.entry.text, label);
    } else {
      this._say(this._trans.__('The answer was cut off there.'));
    }
  }

  /** Forget what was kept about a session that ended. */
  private _forget(sid: string): void {
    this._lastProse.delete(sid);
    this._autoApproved.delete(sid);
    this._progressBuckets.delete(sid);
  }

  private _progress(event: IAAEPEvent, summary: string | undefined): void {
    const progress = (event.progress ?? {}) as Record<string, unknown>;
    const percent = num(progress, 'percent');
    const verbosity = this._config.verbosity;
    const urgency = str(event, 'urgency');
    const key = `progress:${event.session_id}`;
    const text =
      summary ??
      str(progress, 'description') ??
      (percent !== undefined ? this._trans.__('%1 percent done.', Math.round(percent)) : '');
    if (verbosity === 'detailed') {
      this._say(text, 'polite', key);
      return;
    }
    if (urgency === 'background') {
      return; // For the progress bar only: the producer paced what is worth hearing.
    }
    if (verbosity === 'normal' && (urgency === 'normal' || urgency === 'critical')) {
      // The producer chose this one to be heard (a milestone, a paced update, a notice).
      if (percent !== undefined) {
        this._progressBuckets.set(
          event.session_id,
          Math.max(Math.floor(percent / 25), this._progressBuckets.get(event.session_id) ?? 0)
        );
      }
      this._say(text, urgency === 'critical' ? 'assertive' : 'polite', key);
      return;
    }
    if (verbosity === 'normal' && percent !== undefined) {
      const bucket = Math.floor(percent / 25);
      if (bucket > (this._progressBuckets.get(event.session_id) ?? 0)) {
        this._progressBuckets.set(event.session_id, bucket);
        this._say(text, 'polite', key);
      }
    }
  }

  private _makeRegion(politeness: Politeness): HTMLElement {
    const region = document.createElement('div');
    region.className = `jp-sr-only jp-AAEPAnnouncer-${politeness}`;
    region.dataset.aaepLive = politeness;
    if (politeness === 'polite') {
      region.setAttribute('role', 'status');
      region.setAttribute('aria-live', 'polite');
      region.setAttribute('aria-atomic', 'true');
    } else {
      region.setAttribute('role', 'alert');
      region.setAttribute('aria-live', 'assertive');
      // New alerts are appended, so only the additions are read.
      region.setAttribute('aria-atomic', 'false');
      region.setAttribute('aria-relevant', 'additions text');
    }
    this.node.appendChild(region);
    return region;
  }

  /**
   * Set the timer for the next polite write: the next free slot of the rate
   * limit, or later while the first queued piece is held back.
   */
  private _schedule(): void {
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    if (this._queue.length === 0 || this._isDisposed) {
      return;
    }
    let at = this._lastPolite + this._interval();
    const held = this._queue[0].holdUntil;
    if (held !== undefined && held > at) {
      at = held;
    }
    this._timer = window.setTimeout(
      () => {
        this._timer = null;
        this._flushPolite();
      },
      Math.max(0, at - Date.now())
    );
  }

  /** Milliseconds between two polite writes. */
  private _interval(): number {
    return 1000 / Math.max(0.1, this._config.maxPerSecond);
  }

  /** Take every queued piece (held ones too), in order, and empty the queue. */
  private _takeQueue(): IQueued[] {
    const taken = this._queue;
    this._queue = [];
    return taken;
  }

  /**
   * Join pieces into what is said at once: each ends with punctuation, and a
   * piece equal to the one before it (or to the last thing said) is dropped.
   */
  private _compose(pieces: IQueued[]): string {
    const said: string[] = [];
    let previous = this._lastSaid;
    for (const piece of pieces) {
      const text = /[\p{L}\p{N}]$/u.test(piece.text) ? `${piece.text}.` : piece.text;
      if (!piece.asked && sameWords(text, previous)) {
        continue;
      }
      said.push(text);
      previous = text;
    }
    return said.join(' ');
  }

  private _flushPolite(): void {
    if (this._isDisposed) {
      return;
    }
    // Everything up to the first piece still held back, in order.
    const now = Date.now();
    const ready: IQueued[] = [];
    while (this._queue.length > 0) {
      const first = this._queue[0];
      if (first.holdUntil !== undefined && first.holdUntil > now) {
        break;
      }
      ready.push(first);
      this._queue.shift();
    }
    const text = this._compose(ready);
    if (text) {
      this._lastPolite = now;
      // Replace the content with a new node so that a repeated string is read again.
      const p = document.createElement('p');
      p.textContent = text;
      this._polite.replaceChildren(p);
      this._said(text);
      this._record('polite', text);
    }
    this._schedule();
  }

  /** Remember the last sentence said, so the next write does not repeat it. */
  private _said(text: string): void {
    const sentences = text.split(/(?<=[.!?…])\s+/);
    this._lastSaid = sentences[sentences.length - 1] ?? text;
  }

  private _writeAssertive(text: string): void {
    if (!text) {
      return;
    }
    this._said(text);
    const p = document.createElement('p');
    p.textContent = text;
    this._assertive.appendChild(p);
    this._record('assertive', text);
    if (this._pruneTimer !== null) {
      window.clearTimeout(this._pruneTimer);
    }
    // Old alerts are removed once quiet, so the region does not grow forever.
    this._pruneTimer = window.setTimeout(() => {
      this._pruneTimer = null;
      this._assertive.replaceChildren();
    }, ASSERTIVE_KEEP_MS);
  }

  private _record(politeness: Politeness, text: string): void {
    if (!this._config.debugLog) {
      return;
    }
    const w = window as unknown as { __aaepAnnouncements?: IAnnouncement[] };
    (w.__aaepAnnouncements ??= []).push({
      time: new Date().toISOString(),
      politeness,
      text
    });
  }

  private _config: IAnnouncerConfig;
  private _polite: HTMLElement;
  private _assertive: HTMLElement;
  private _queue: IQueued[] = [];
  private _lastSaid = '';
  /** The last prose piece of each session's answer, to mark it if a Stop cuts it. */
  private _lastProse = new Map<string, { entry: IQueued; text: string }>();
  /** Sessions whose latest confirmation the chat's setting approved. */
  private _autoApproved = new Set<string>();
  private _timer: number | null = null;
  private _pruneTimer: number | null = null;
  private _lastPolite = 0;
  private _streams = new Map<string, SentenceBuffer>();
  private _progressBuckets = new Map<string, number>();
  private _requestShortcut: string | null = null;
  private _isDisposed = false;
}

/** Whether two spoken strings say the same words (case, spacing and final punctuation aside). */
function sameWords(a: string, b: string): boolean {
  const norm = (t: string) =>
    t
      .toLowerCase()
      .replace(/[\s.!?…]+$/u, '')
      .replace(/\s+/g, ' ')
      .trim();
  return !!a && !!b && norm(a) === norm(b);
}
