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
 * Rules:
 *
 * - The summary matches the user's verbosity (`summary_terse|normal|detailed`,
 *   falling back to the nearest one present).
 * - Streamed text is buffered to sentence boundaries (never per token, never a
 *   partial word); code blocks are summarised as "code block, N lines".
 * - Polite announcements are rate limited to `maxPerSecond`: whatever arrives
 *   while the budget is spent is queued and merged into the next write, never
 *   dropped. Critical announcements bypass the limit.
 * - What each verbosity says: terse = session start/end, tool starts (terse
 *   summary), tool failures, the answer, critical events. normal = plus tool
 *   successes only when they carry a summary, progress at 25 % steps, state
 *   changes that resolve a request or pause. detailed = plus every state
 *   change and progress update with a summary.
 *
 * Tests can observe the regions (`[data-aaep-live="polite"|"assertive"]`)
 * with a MutationObserver. When the debug setting is on, every string written
 * is also appended to `window.__aaepAnnouncements` as
 * `{time, politeness, text}`.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import {
  IAAEPEvent,
  Verbosity,
  bool,
  coreName,
  isCritical,
  num,
  pickSummary,
  str
} from './aaep';
import { IProcessedEvent, withoutHint } from './model';
import { SentenceBuffer } from './speech';

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
   * Announce a string.
   *
   * @param text What to say.
   * @param politeness `assertive` for critical information only.
   * @param key Queued polite messages with the same key replace each other
   *   (e.g. progress), so stale values are not read out.
   */
  announce(text: string, politeness: Politeness = 'polite', key?: string): void {
    const clean = text.trim();
    if (!clean || this._isDisposed) {
      return;
    }
    if (politeness === 'assertive') {
      // Keep the order of events when the budget allows: earlier polite
      // messages first, then the alert. Critical text never waits.
      if (this._queue.length > 0 && Date.now() >= this._lastPolite + this._interval()) {
        if (this._timer !== null) {
          window.clearTimeout(this._timer);
          this._timer = null;
        }
        this._flushPolite();
      }
      this._writeAssertive(clean);
      return;
    }
    const existing = key ? this._queue.find(q => q.key === key) : undefined;
    if (existing) {
      existing.text = clean;
    } else {
      this._queue.push({ text: clean, key });
    }
    this._schedule();
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
    switch (name) {
      case 'output.streaming':
        this._stream(event);
        return;
      case 'session.started':
        this.announce(summary ?? trans.__('The agent started working.'));
        return;
      case 'session.completed':
      case 'session.cancelled':
        this._flushStreams(event.session_id);
        this.announce(
          summary ??
            (name === 'session.completed'
              ? trans.__('The agent finished.')
              : trans.__('The agent run was stopped.'))
        );
        if (verbosity === 'detailed' && str(event, 'output_summary')) {
          this.announce(str(event, 'output_summary')!);
        }
        return;
      case 'session.errored': {
        this._flushStreams(event.session_id);
        const hint = str(event, 'remediation_hint');
        const said = withoutHint(summary ?? '', hint) || trans.__('the agent stopped.');
        this.announce(
          [/^error\b/i.test(said) ? '' : trans.__('Error:'), said, hint]
            .filter(Boolean)
            .join(' '),
          'assertive'
        );
        return;
      }
      case 'awaiting.confirmation': {
        // Producers usually say it all in the summary; add only what is missing.
        const said =
          summary ??
          [str(event, 'action'), verbosity !== 'terse' ? str(event, 'consequence') : '']
            .filter(Boolean)
            .join(' ');
        const risk = str(event, 'risk_level');
        const parts = [
          /^(approval needed|approve\b)/i.test(said) ? '' : trans.__('Approval needed:'),
          said,
          risk && !/\brisk\b/i.test(said) ? trans.__('Risk: %1.', risk) : '',
          this._whereToAnswer()
        ];
        this.announce(parts.filter(Boolean).join(' '), 'assertive');
        return;
      }
      case 'awaiting.clarification':
        this.announce(
          [
            trans.__('The agent asks:'),
            str(event, 'question') ?? summary ?? '',
            this._whereToAnswer()
          ]
            .filter(Boolean)
            .join(' '),
          'assertive'
        );
        return;
      case 'handoff.requested':
        this.announce(
          `${trans.__('The agent hands control back to you:')} ${
            summary ?? str(event, 'reason') ?? ''
          }`,
          'assertive'
        );
        return;
      case 'tool.invoked':
        this.announce(summary ?? trans.__('Running %1.', str(event, 'tool') ?? ''));
        return;
      case 'tool.completed': {
        const status = str(event, 'status');
        if (status === 'error' || status === 'timeout') {
          const message = str(event, 'error_message');
          this.announce(
            [
              summary ??
                (status === 'timeout'
                  ? trans.__('%1 timed out.', str(event, 'tool') ?? '')
                  : trans.__('%1 failed.', str(event, 'tool') ?? '')),
              verbosity !== 'terse' ? message : undefined
            ]
              .filter(Boolean)
              .join(' ')
          );
        } else if (verbosity !== 'terse' && summary) {
          this.announce(summary);
        }
        return;
      }
      case 'progress.updated':
        this._progress(event, summary);
        return;
      case 'state.changed': {
        const from = str(event, 'from_state');
        const to = str(event, 'to_state');
        if (to === 'paused' || from === 'paused') {
          // Said at every verbosity: the user asked for it and waits for it.
          this.announce(
            summary ?? (to === 'paused' ? trans.__('Paused.') : trans.__('Resumed.')),
            'polite',
            `state:${event.session_id}`
          );
          return;
        }
        const meaningful = from === 'awaiting_input' || to === 'compacting_context';
        if (summary && (verbosity === 'detailed' || (meaningful && verbosity === 'normal'))) {
          this.announce(summary, 'polite', `state:${event.session_id}`);
        }
        return;
      }
      default:
        // Unknown types are announced generically, by their summary.
        if (summary) {
          this.announce(summary, isCritical(event) ? 'assertive' : 'polite');
        } else if (isCritical(event)) {
          this.announce(trans.__('The agent needs your attention.'), 'assertive');
        }
    }
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
    const key = `${event.session_id}/${str(event, 'output_id') ?? ''}`;
    let buffer = this._streams.get(key);
    if (!buffer) {
      buffer = new SentenceBuffer();
      this._streams.set(key, buffer);
    }
    const final = bool(event, 'complete') === true;
    const chunk = typeof event.chunk === 'string' ? event.chunk : '';
    for (const piece of buffer.push(chunk, final)) {
      this.announce(
        piece.kind === 'code'
          ? this._trans._n('Code block, %1 line.', 'Code block, %1 lines.', piece.lines ?? 0)
          : piece.text
      );
    }
    if (final) {
      this._streams.delete(key);
    }
  }

  private _flushStreams(sessionId: string): void {
    for (const [key, buffer] of [...this._streams]) {
      if (key.startsWith(`${sessionId}/`)) {
        for (const piece of buffer.push('', true)) {
          if (piece.kind === 'text') {
            this.announce(piece.text);
          }
        }
        this._streams.delete(key);
      }
    }
  }

  private _progress(event: IAAEPEvent, summary: string | undefined): void {
    const progress = (event.progress ?? {}) as Record<string, unknown>;
    const percent = num(progress, 'percent');
    const verbosity = this._config.verbosity;
    const key = `progress:${event.session_id}`;
    const text =
      summary ??
      str(progress, 'description') ??
      (percent !== undefined ? this._trans.__('%1 percent done.', Math.round(percent)) : '');
    if (verbosity === 'detailed') {
      this.announce(text, 'polite', key);
      return;
    }
    if (verbosity === 'normal' && percent !== undefined) {
      const bucket = Math.floor(percent / 25);
      if (bucket > (this._progressBuckets.get(event.session_id) ?? 0)) {
        this._progressBuckets.set(event.session_id, bucket);
        this.announce(text, 'polite', key);
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

  /** Write the queue now if the budget allows, else at the next slot. */
  private _schedule(): void {
    if (this._timer !== null) {
      return;
    }
    const wait = Math.max(0, this._lastPolite + this._interval() - Date.now());
    this._timer = window.setTimeout(() => {
      this._timer = null;
      this._flushPolite();
    }, wait);
  }

  /** Milliseconds between two polite writes. */
  private _interval(): number {
    return 1000 / Math.max(0.1, this._config.maxPerSecond);
  }

  private _flushPolite(): void {
    if (this._queue.length === 0 || this._isDisposed) {
      return;
    }
    // Each piece ends with punctuation so merged pieces are read as sentences.
    const text = this._queue
      .map(q => (/[\p{L}\p{N}]$/u.test(q.text) ? `${q.text}.` : q.text))
      .join(' ');
    this._queue = [];
    this._lastPolite = Date.now();
    // Replace the content with a new node so that a repeated string is read again.
    const p = document.createElement('p');
    p.textContent = text;
    this._polite.replaceChildren(p);
    this._record('polite', text);
  }

  private _writeAssertive(text: string): void {
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
  private _queue: { text: string; key?: string }[] = [];
  private _timer: number | null = null;
  private _pruneTimer: number | null = null;
  private _lastPolite = 0;
  private _streams = new Map<string, SentenceBuffer>();
  private _progressBuckets = new Map<string, number>();
  private _requestShortcut: string | null = null;
  private _isDisposed = false;
}
