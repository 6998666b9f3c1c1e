/**
 * A polite warning shortly before a waiting request falls back to its
 * default answer. The clock keeps one timer per request and deadline, reads
 * the request again when the timer fires (an answer, a pause or the end of
 * the session replaces it), and warns only if it still waits with that
 * deadline.
 */
import { IDisposable } from '@lumino/disposable';

import { str } from './aaep';
import type { ChatModel } from './model';
import { TranscriptItem } from './transcript';

/** The warning comes this long before a request expires (ms). */
export const EXPIRY_WARNING_MS = 15000;

/** Timers of a chat's waiting requests. */
export class ExpiryClock implements IDisposable {
  /**
   * @param model The chat whose requests are timed.
   * @param warn Called with the request's default answer (or `null`) when it is about to expire.
   */
  constructor(
    private readonly _model: ChatModel,
    private readonly _warn: (fallback: string | null) => void
  ) {}

  /** Whether {@link dispose} was called. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Warn before this request expires (nothing for a request without a running clock). */
  schedule(item: TranscriptItem): void {
    if (this._disposed || (item.kind !== 'confirmation' && item.kind !== 'clarification') || item.deadline === null) {
      return;
    }
    const delay = item.deadline - EXPIRY_WARNING_MS - Date.now();
    const key = `${item.id}@${item.deadline}`;
    if (delay <= 0 || this._timers.has(key)) {
      return;
    }
    const deadline = item.deadline;
    const timer = window.setTimeout(() => {
      this._timers.delete(key);
      const now = this._model.item(item.id);
      if (now && (now.kind === 'confirmation' || now.kind === 'clarification')) {
        if (now.state === 'pending' && now.deadline === deadline) {
          this._warn(str(now.event, 'default_decision') ?? str(now.event, 'default_response') ?? null);
        }
      }
    }, delay);
    this._timers.set(key, timer);
  }

  /** Stop every timer. */
  dispose(): void {
    this._disposed = true;
    for (const timer of this._timers.values()) {
      window.clearTimeout(timer);
    }
    this._timers.clear();
  }

  private _timers = new Map<string, number>();
  private _disposed = false;
}
