/**
 * The delivery: when and how the narrator's words reach the live regions.
 *
 * Timing rules (docs/NARRATION.md §1), tested with a fake clock and a fake
 * sink in `test/delivery.test.mjs`:
 *
 * - Polite speech is written at most `maxPerSecond` times a second; what
 *   arrives meanwhile is merged into the next write, in order.
 * - A polite piece waits {@link SETTLE_MS} after it arrives before it is
 *   written, so an alert that follows it in the same burst takes it along
 *   instead of cutting it off; and a polite write made less than
 *   {@link FOLD_BACK_MS} before an alert is said again inside the alert (a
 *   screen reader drops a polite utterance an alert interrupts).
 * - When something that needs an answer arrives (an approval, a question),
 *   what is still waiting is shortened: step starts, progress and state
 *   changes are dropped (they are in the transcript), and only the newest
 *   step results and sentences of the answer, at most {@link FOLD_WORDS}
 *   words, go in front of the question. An error or handoff takes
 *   everything still waiting along.
 * - A piece held back (a step's start) holds what follows it too: the order of
 *   speech never changes.
 * - Nothing twice in a row, unless the user asked for it; an alert takes
 *   nothing along that it says itself.
 */
import type { ISpeech, Politeness } from './speech';

/** Where the words go: two live regions, or a recorder in tests. */
export interface ISpeechSink {
  /** Write one announcement. */
  write(politeness: Politeness, text: string): void;
  /** Empty a region (the polite one when its text moved into an alert). */
  clear(politeness: Politeness): void;
}

/** The clock the delivery waits on (a fake one in tests). */
export interface IClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): number;
  clearTimeout(handle: number): void;
}

/** The browser's clock. */
export const windowClock: IClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => window.setTimeout(callback, ms),
  clearTimeout: handle => window.clearTimeout(handle)
};

/**
 * How long a step's result waits for an alert that may follow it (ms): a
 * request often comes a model round trip after a step, and a line the alert
 * takes along is heard once, where a line written just before it is lost or
 * said twice (see {@link FOLD_BACK_MS}).
 */
export const SETTLE_MS = 1000;

/**
 * How long any other polite piece waits (ms): the answer's sentences (the
 * question shortens what is still queued, so they are not held), a command's
 * answer (the person asked and waits for it).
 */
export const QUICK_SETTLE_MS = 120;

/**
 * A polite write made less than this before an alert is said again inside it
 * (ms): the alert would cut it off. Longer would say twice what was heard;
 * a step's result, the line a request follows, is held instead
 * ({@link SETTLE_MS}): under Orca a step's line written 200 ms before the
 * alert was lost, purged from Orca's queue by the alert (docs/NARRATION.md §11).
 */
export const FOLD_BACK_MS = 120;

/** Most words of earlier speech said in front of a question. */
export const FOLD_WORDS = 25;

/** Speech kinds dropped from the queue when a question arrives. */
const DROPPED_BEFORE_REQUEST = new Set(['start', 'progress', 'state', 'said']);

/** Whether *alert* contains *piece* as whole words (an "Error:" in front, say). */
function saysWhole(alert: string, piece: string): boolean {
  const at = alert.indexOf(piece);
  if (!piece || at < 0) {
    return false;
  }
  const end = at + piece.length;
  return (at === 0 || /\s/.test(alert[at - 1])) && (end === alert.length || /\s/.test(alert[end]));
}

/** One piece of polite speech waiting for its turn. */
interface IQueued {
  text: string;
  kind: ISpeech['kind'];
  key?: string;
  /** Clock ms from which it may be written. */
  readyAt: number;
  /** Clock ms until which this piece (and everything after it) waits. */
  holdUntil?: number;
  asked?: boolean;
}

/** Delivery settings. */
export interface IDeliveryConfig {
  /** Polite writes per second (≥ 0.1). */
  maxPerSecond: number;
}

/**
 * Queues polite speech, writes alerts at once, and keeps the timing rules.
 */
export class Delivery {
  constructor(
    private _sink: ISpeechSink,
    config: IDeliveryConfig,
    private _clock: IClock = windowClock
  ) {
    this._config = { ...config };
  }

  /** Apply new settings. */
  configure(config: Partial<IDeliveryConfig>): void {
    this._config = { ...this._config, ...config };
    this._schedule();
  }

  /** Deliver what the narrator said about one event, in order. */
  deliver(speech: ISpeech[]): void {
    for (const piece of speech) {
      this._one(piece);
    }
  }

  /** Stop the timers; nothing is written afterwards. */
  dispose(): void {
    this._disposed = true;
    this._queue = [];
    this._schedule();
  }

  private _one(piece: ISpeech): void {
    if (this._disposed) {
      return;
    }
    if (piece.cancelKey) {
      const start = this._queue.findIndex(q => q.key === piece.cancelKey);
      if (start >= 0) {
        this._queue.splice(start, 1); // not said yet: the result tells the whole step
      }
    }
    if (piece.amendKey) {
      const queued = this._queue.find(q => q.key === piece.amendKey);
      if (queued) {
        queued.text = piece.amendText ?? queued.text;
        this._schedule();
        return;
      }
    }
    const text = piece.text.trim();
    if (!text) {
      this._schedule();
      return;
    }
    if (piece.politeness === 'assertive') {
      this._alert(text, piece.kind === 'request');
      return;
    }
    const now = this._clock.now();
    const holdUntil = piece.holdMs !== undefined ? now + piece.holdMs : undefined;
    const existing = piece.key ? this._queue.find(q => q.key === piece.key) : undefined;
    if (existing) {
      Object.assign(existing, { text, kind: piece.kind, holdUntil, asked: piece.asked });
    } else {
      this._queue.push({
        text,
        kind: piece.kind,
        key: piece.key,
        readyAt: now + (piece.kind === 'step' && !piece.asked ? SETTLE_MS : QUICK_SETTLE_MS),
        holdUntil,
        asked: piece.asked
      });
    }
    this._schedule();
  }

  /**
   * Write an alert now, with what it must not cut off in front of it. A
   * question (`request`) takes only a short account of the latest steps.
   */
  private _alert(text: string, request: boolean): void {
    const now = this._clock.now();
    let before: IQueued[] = this._queue;
    this._queue = [];
    if (this._lastPolite && now - this._lastPolite.at < FOLD_BACK_MS) {
      // Written just now: the alert would cut it off, so it is said in the
      // alert (or, before a question, dropped if it is not a step's result).
      const recent = this._lastPolite.piece;
      if (!request || !DROPPED_BEFORE_REQUEST.has(recent.kind)) {
        before = [{ ...recent, asked: true }, ...before];
      }
      this._sink.clear('polite');
      this._lastPolite = null;
    }
    // What the alert says itself is not said in front of it too (a long cell's
    // story opened at its failure starts with the sentence it ends with).
    before = before.filter(q => !saysWhole(text, q.text));
    if (request) {
      before = shorten(before);
    }
    const said = this._compose([...before, { text, kind: 'request', readyAt: now, asked: true }]);
    if (said) {
      this._sink.write('assertive', said);
      this._remember(said);
    }
    this._schedule();
  }

  /**
   * Set the timer for the next polite write: the next free slot of the rate
   * limit, after the first piece settled, or later while it is held back.
   */
  private _schedule(): void {
    if (this._timer !== null) {
      this._clock.clearTimeout(this._timer);
      this._timer = null;
    }
    if (this._queue.length === 0 || this._disposed) {
      return;
    }
    const first = this._queue[0];
    const at = Math.max(
      this._lastWriteAt + 1000 / Math.max(0.1, this._config.maxPerSecond),
      first.readyAt,
      first.holdUntil ?? 0
    );
    this._timer = this._clock.setTimeout(
      () => {
        this._timer = null;
        this._flush();
      },
      Math.max(0, at - this._clock.now())
    );
  }

  /** Write everything up to the first piece still held back, in order, as one string. */
  private _flush(): void {
    if (this._disposed) {
      return;
    }
    const now = this._clock.now();
    const ready: IQueued[] = [];
    while (this._queue.length > 0) {
      const first = this._queue[0];
      if ((first.holdUntil !== undefined && first.holdUntil > now) || first.readyAt > now) {
        break;
      }
      ready.push(first);
      this._queue.shift();
    }
    const said = this._compose(ready);
    if (said) {
      this._lastWriteAt = now;
      this._sink.write('polite', said);
      this._lastPolite = { at: now, piece: { text: said, kind: lastKind(ready), readyAt: now } };
      this._remember(said);
    }
    this._schedule();
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
      previous = lastSentence(text);
    }
    return said.join(' ');
  }

  /** Remember the last sentence said, so the next write does not repeat it. */
  private _remember(text: string): void {
    this._lastSaid = lastSentence(text);
  }

  private _config: IDeliveryConfig;
  private _queue: IQueued[] = [];
  private _timer: number | null = null;
  private _lastWriteAt = -Infinity;
  private _lastPolite: { at: number; piece: IQueued } | null = null;
  private _lastSaid = '';
  private _disposed = false;
}

/**
 * What is said in front of a question: the user's own asks and the latest
 * step results and answer sentences, newest first, within {@link FOLD_WORDS} words.
 */
function shorten(pieces: IQueued[]): IQueued[] {
  const kept: IQueued[] = [];
  let words = 0;
  for (let i = pieces.length - 1; i >= 0; i--) {
    const piece = pieces[i];
    if (!piece.asked && DROPPED_BEFORE_REQUEST.has(piece.kind)) {
      continue;
    }
    const count = piece.text.split(/\s+/).length;
    if (!piece.asked && words + count > FOLD_WORDS) {
      if (kept.length > 0) {
        break; // older speech is in the transcript
      }
      // The newest step alone is too long: its first sentence.
      kept.unshift({ ...piece, text: piece.text.split(/(?<=[.!?…])\s+/)[0] });
      words += kept[0].text.split(/\s+/).length;
      continue;
    }
    kept.unshift(piece);
    words += count;
  }
  return kept;
}

function lastSentence(text: string): string {
  const sentences = text.split(/(?<=[.!?…])\s+/);
  return sentences[sentences.length - 1] ?? text;
}

function lastKind(pieces: IQueued[]): IQueued['kind'] {
  return pieces.some(p => p.asked) ? 'said' : (pieces[pieces.length - 1]?.kind ?? 'said');
}

/** Whether two spoken strings say the same words (case, spacing and final punctuation aside). */
export function sameWords(a: string, b: string): boolean {
  const norm = (t: string) =>
    t
      .toLowerCase()
      .replace(/[\s.!?…]+$/u, '')
      .replace(/\s+/g, ' ')
      .trim();
  return !!a && !!b && norm(a) === norm(b);
}
