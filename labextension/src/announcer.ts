/**
 * The announcer: what a screen reader hears about the agent.
 *
 * It joins the two halves of narration: the {@link Narrator} (pure words:
 * events → `{text, politeness}`) and the {@link Delivery} (timing: rate
 * limit, held starts, folding speech into alerts), and owns the two visually
 * hidden live regions (`jp-sr-only`) the delivery writes to:
 *
 * - polite (`role="status"`, `aria-live="polite"`, atomic): ordinary events
 *   and the streamed answer;
 * - assertive (`role="alert"`, `aria-live="assertive"`): only what needs the
 *   person now (approval and clarification requests, handoffs, errors).
 *
 * The rules are written down in docs/NARRATION.md. Tests observe the regions
 * (`[data-aaep-live="polite"|"assertive"]`) with a MutationObserver; when the
 * debug setting is on, every string written is also appended to
 * `window.__aaepAnnouncements` as `{time, politeness, text}`.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { Verbosity } from './aaep';
import { Delivery, ISpeechSink } from './delivery';
import { IProcessedEvent } from './model';
import { Narrator, Politeness, START_GRACE_MS } from './narrator';
import { spokenMedia } from './speech';

export { START_GRACE_MS };
export type { Politeness };

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
 * The panel's voice: narrates AAEP events and says what commands answer.
 */
export class Announcer implements IDisposable, ISpeechSink {
  /**
   * @param trans Translation bundle for the panel's own wording.
   * @param config Initial configuration.
   */
  constructor(trans: TranslationBundle, config: IAnnouncerConfig) {
    this._config = { ...config };
    this.node = document.createElement('div');
    this.node.className = 'jp-AAEPAnnouncer';
    this._polite = this._makeRegion('polite');
    this._assertive = this._makeRegion('assertive');
    this._narrator = new Narrator(trans, { verbosity: config.verbosity });
    this._delivery = new Delivery(this, { maxPerSecond: config.maxPerSecond });
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
    this._narrator.configure({ verbosity: this._config.verbosity });
    this._delivery.configure({ maxPerSecond: this._config.maxPerSecond });
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
    // A command's answer (the last output, for one) is spoken media-free too.
    this._delivery.deliver([{ text: spokenMedia(text), politeness, key, kind: 'said', asked: true }]);
  }

  /** Say what an AAEP event means at the current verbosity. */
  handleEvent(processed: IProcessedEvent): void {
    if (!this._isDisposed) {
      this._delivery.deliver(this._narrator.narrate(processed));
    }
  }

  /**
   * Tell the announcer the key that jumps to a pending request (e.g.
   * `Ctrl+Shift+A`), so requests can say it; `null` if there is none.
   */
  setRequestShortcut(label: string | null): void {
    this._narrator.setRequestShortcut(label);
  }

  /** Write one announcement to its live region (for the delivery). */
  write(politeness: Politeness, text: string): void {
    if (this._isDisposed) {
      return;
    }
    const p = document.createElement('p');
    p.textContent = text;
    if (politeness === 'polite') {
      // A new node each time, so that a repeated string is read again.
      this._polite.replaceChildren(p);
    } else {
      this._assertive.appendChild(p);
      if (this._pruneTimer !== null) {
        window.clearTimeout(this._pruneTimer);
      }
      // Old alerts are removed once quiet, so the region does not grow forever.
      this._pruneTimer = window.setTimeout(() => {
        this._pruneTimer = null;
        this._assertive.replaceChildren();
      }, ASSERTIVE_KEEP_MS);
    }
    this._record(politeness, text);
  }

  /** Empty a live region (for the delivery). */
  clear(politeness: Politeness): void {
    (politeness === 'polite' ? this._polite : this._assertive).replaceChildren();
  }

  /** Release timers and remove the regions. */
  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._delivery.dispose();
    if (this._pruneTimer !== null) {
      window.clearTimeout(this._pruneTimer);
    }
    this.node.remove();
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

  private _record(politeness: Politeness, text: string): void {
    if (!this._config.debugLog) {
      return;
    }
    const w = window as unknown as { __aaepAnnouncements?: IAnnouncement[] };
    (w.__aaepAnnouncements ??= []).push({ time: new Date().toISOString(), politeness, text });
  }

  private _config: IAnnouncerConfig;
  private _narrator: Narrator;
  private _delivery: Delivery;
  private _polite: HTMLElement;
  private _assertive: HTMLElement;
  private _pruneTimer: number | null = null;
  private _isDisposed = false;
}
