/**
 * The announcer: what a screen reader hears about the agent.
 *
 * It joins the two halves of narration: the {@link Narrator} (pure words:
 * events → `{text, politeness}`) and the {@link Delivery} (timing: rate
 * limit, held starts, folding speech into alerts), and owns the two visually
 * hidden live regions (`jp-sr-only`) the delivery writes to:
 *
 * - polite (`role="status"`, `aria-live="polite"`): ordinary events and the
 *   streamed answer;
 * - assertive (`role="alert"`, `aria-live="assertive"`): only what needs the
 *   person now (approval and clarification requests, handoffs, errors).
 *
 * Both regions grow by appending (`aria-atomic="false"`, additions only), so
 * only the new line is read, and a line stays in the region for
 * {@link KEEP_MS} after it was written: a screen reader that falls behind
 * (Orca reads the node when it gets to its event) finds it still there, where
 * a replaced node is skipped. The rules are written down in docs/NARRATION.md. Tests observe the regions
 * (`[data-aaep-live="polite"|"assertive"]`) with a MutationObserver; when the
 * debug setting is on, every string written is also appended to
 * `window.__aaepAnnouncements` as `{time, politeness, text}`.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { Verbosity } from './aaep';
import { Delivery, ISpeechSink } from './delivery';
import { IProcessedEvent } from './model';
import { Narrator, START_GRACE_MS } from './narrator';
import type { Politeness } from './speech';
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

/**
 * How long a written line stays in its live region before it is pruned (ms):
 * long past the time a screen reader takes to get to its event, short enough
 * that browsing the page meets few old lines.
 */
export const KEEP_MS = 30000;

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

  /**
   * Say what an AAEP event means at the current verbosity: a slot of the
   * chat model's `eventProcessed` signal, connected by the controller.
   */
  handleEvent(_model: unknown, processed: IProcessedEvent): void {
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
    const region = this._region(politeness);
    const p = document.createElement('p');
    p.textContent = text;
    // A new node each time, added after the others: only it is read.
    region.appendChild(p);
    this._written.set(p, Date.now());
    this._prune();
    this._record(politeness, text);
  }

  /** Empty a live region (for the delivery). */
  clear(politeness: Politeness): void {
    this._region(politeness).replaceChildren();
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
    region.setAttribute('role', politeness === 'polite' ? 'status' : 'alert');
    region.setAttribute('aria-live', politeness);
    // Lines are appended (both roles are atomic by default): only additions are read.
    region.setAttribute('aria-atomic', 'false');
    region.setAttribute('aria-relevant', 'additions text');
    this.node.appendChild(region);
    return region;
  }

  private _region(politeness: Politeness): HTMLElement {
    return politeness === 'polite' ? this._polite : this._assertive;
  }

  /**
   * Remove the lines written more than {@link KEEP_MS} ago, and come back
   * when the oldest line left is that old.
   */
  private _prune(): void {
    const now = Date.now();
    let next = Infinity;
    for (const region of [this._polite, this._assertive]) {
      for (const line of Array.from(region.children)) {
        const at = this._written.get(line) ?? 0;
        if (now - at >= KEEP_MS) {
          line.remove();
        } else {
          next = Math.min(next, at + KEEP_MS);
        }
      }
    }
    if (this._pruneTimer !== null) {
      window.clearTimeout(this._pruneTimer);
      this._pruneTimer = null;
    }
    if (next !== Infinity) {
      this._pruneTimer = window.setTimeout(() => {
        this._pruneTimer = null;
        this._prune();
      }, next - now);
    }
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
  /** When each line was written (clock ms). */
  private _written = new WeakMap<Element, number>();
  private _pruneTimer: number | null = null;
  private _isDisposed = false;
}
