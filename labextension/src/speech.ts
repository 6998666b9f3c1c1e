/**
 * Turning streamed Markdown into sentences fit for a screen reader.
 *
 * Pure string functions, no DOM: the announcer feeds chunks in and gets whole
 * sentences (never partial words) and short code-block notices out. Also what
 * one piece of speech is ({@link ISpeech}), which both narrators make and the
 * delivery says: here, below them, so they need not import each other.
 */

/** Politeness of an announcement. */
export type Politeness = 'polite' | 'assertive';

/**
 * What a piece of speech is, so the delivery knows what may be shortened when
 * something that needs an answer arrives.
 */
export type SpeechKind =
  | 'prose' // the agent's streamed answer (also in the transcript)
  | 'start' // the start of a step
  | 'step' // the result of a step
  | 'progress'
  | 'state'
  | 'closing' // the one closing line of a turn
  | 'request' // needs an answer (approval, question)
  | 'alert' // an error or handoff
  | 'said'; // anything else

/** One thing to say, for the delivery. */
export interface ISpeech {
  text: string;
  politeness: Politeness;
  kind: SpeechKind;
  /** Queued pieces with the same key replace each other (progress, a step's start). */
  key?: string;
  /** Hold this piece (and what follows) back this long before writing it (ms). */
  holdMs?: number;
  /**
   * Instead of saying `text`, drop the queued piece with this key if it is
   * still waiting (a quick step's start); `text` is then empty.
   */
  cancelKey?: string;
  /**
   * If the queued piece with this key is still waiting, replace its text with
   * `amendText` and say nothing else; otherwise say `text`.
   */
  amendKey?: string;
  amendText?: string;
  /**
   * Said even if it repeats what was just said, and never dropped: the user
   * asked for it (a command's answer). Event speech is not.
   */
  asked?: boolean;
}

/** What one {@link SentenceBuffer.push} produced. */
export interface ISpeechPiece {
  /** `text` is prose to read; `code` is a finished code block of `lines` lines. */
  kind: 'text' | 'code';
  text: string;
  lines?: number;
}

/** A sentence ends at `.`, `!`, `?`, `…` (plus closing quotes/brackets) before whitespace. */
const SENTENCE_END = /[.!?…。！？]+["'”’)\]]*(?=\s)/g;

/**
 * Collects streamed chunks of one output and releases complete sentences.
 *
 * Fenced code blocks are never read out character by character: they become
 * one "code block, N lines" piece when the fence closes.
 */
export class SentenceBuffer {
  /**
   * Add a chunk and return the pieces that became complete.
   *
   * @param chunk The new text.
   * @param final Whether this is the last chunk (`complete: true`): then
   *   everything left is released.
   */
  push(chunk: string, final = false): ISpeechPiece[] {
    this._buffer += chunk;
    const pieces: ISpeechPiece[] = [];
    for (;;) {
      if (this._inFence) {
        const close = /(^|\n)[ \t]*(```|~~~)[ \t]*(\n|$)/.exec(this._buffer);
        if (close && (close[3] === '\n' || final)) {
          this._codeLines += countLines(this._buffer.slice(0, close.index));
          pieces.push({ kind: 'code', text: '', lines: this._codeLines });
          this._buffer = this._buffer.slice(close.index + close[0].length);
          this._inFence = false;
          this._codeLines = 0;
          continue;
        }
        if (final) {
          this._codeLines += countLines(this._buffer);
          pieces.push({ kind: 'code', text: '', lines: this._codeLines });
          this._buffer = '';
        }
        break;
      }
      const open = /(^|\n)[ \t]*(```|~~~)[^\n]*(\n|$)/.exec(this._buffer);
      if (open && (open[3] === '\n' || final)) {
        // Text before a code block is complete ("Here is the code:").
        this._releaseSentences(this._buffer.slice(0, open.index), true, pieces);
        this._buffer = this._buffer.slice(open.index + open[0].length);
        this._inFence = true;
        continue;
      }
      if (open) {
        // The opening fence line is still arriving (it may name a language).
        this._releaseSentences(this._buffer.slice(0, open.index), true, pieces);
        this._buffer = this._buffer.slice(open.index);
        break;
      }
      // Hold back trailing backticks: they may become a fence.
      const tail = final ? null : /`{1,2}$/.exec(this._buffer);
      const text = tail ? this._buffer.slice(0, tail.index) : this._buffer;
      const consumed = this._releaseSentences(text, final, pieces);
      this._buffer = this._buffer.slice(consumed);
      break;
    }
    return pieces;
  }

  /**
   * Release the complete sentences of `text` (all of it when `all`), and
   * return how many characters were consumed.
   */
  private _releaseSentences(text: string, all: boolean, pieces: ISpeechPiece[]): number {
    let end = 0;
    if (all) {
      end = text.length;
    } else {
      // Paragraph breaks end a sentence too (lists, headings without stops).
      SENTENCE_END.lastIndex = 0;
      let match: RegExpExecArray | null;
      while ((match = SENTENCE_END.exec(text)) !== null) {
        end = match.index + match[0].length;
      }
      const para = text.lastIndexOf('\n\n');
      if (para >= 0 && para + 2 > end) {
        end = para + 2;
      }
    }
    if (end > 0) {
      const spoken = markdownToSpeech(text.slice(0, end));
      if (spoken) {
        pieces.push({ kind: 'text', text: spoken });
      }
    }
    return end;
  }

  private _buffer = '';
  private _inFence = false;
  private _codeLines = 0;
}

/**
 * Whether spoken text ends a sentence (so it is not a half sentence cut off
 * by a Stop): a stop, question or exclamation mark, an ellipsis or a colon,
 * possibly followed by closing quotes or brackets.
 */
export function endsSentence(text: string): boolean {
  return /[.!?…:。！？]["'”’)\]]*\s*$/.test(text);
}

/**
 * Whether a summary already says a failure's reason, so it is not said (or
 * shown) twice: the reason itself, or the reason without a short leading
 * label ("Cell 4: NameError: …" is said by "Cell 4 failed: NameError: …").
 */
export function saysReason(summary: string, reason: string): boolean {
  const core = reason.trim().replace(/\.$/, '');
  const unlabelled = core.replace(/^[^:]{1,20}:\s*/, '');
  return summary.includes(core) || (unlabelled.length >= 8 && summary.includes(unlabelled));
}

/**
 * Mark text as cut off (it ended mid-sentence because the run stopped), so
 * it is never heard as if complete.
 */
export function markCutOff(text: string, label: string): string {
  return `${text.replace(/[\s,;–—-]+$/, '')}… (${label})`;
}

function countLines(code: string): number {
  const trimmed = code.replace(/^\n+|\n+$/g, '');
  return trimmed ? trimmed.split('\n').length : 0;
}

/**
 * Reduce Markdown to text a screen reader reads well: links keep their text,
 * emphasis and heading marks go, table pipes become commas.
 */
export function markdownToSpeech(markdown: string): string {
  return markdown
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[\s(])[*_]([^*_\n]+)[*_](?=[\s).,!?:;]|$)/g, '$1$2')
    .replace(/^[ \t]*#{1,6}[ \t]+/gm, '')
    .replace(/^[ \t]*>[ \t]?/gm, '')
    .replace(/^[ \t]*([-*+]|\d+[.)])[ \t]+/gm, '')
    .replace(/^[ \t]*\|?[ \t:-]+\|[ \t|:-]*$/gm, '')
    .replace(/[ \t]*\|[ \t]*/g, ', ')
    .replace(/\s+/g, ' ')
    .replace(/^[ ,]+|[ ,]+$/g, '')
    .trim();
}

/** What a kind of media is called when spoken. */
const MEDIA_WORDS: Record<string, string> = {
  image: 'a figure',
  audio: 'a sound',
  video: 'a video',
  application: 'data',
  text: 'text'
};

/** A MIME type the panel may meet in a summary, with optional pixel size and byte size. */
const MEDIA =
  /\[?\b(image|audio|video|application|text)\/(?:[a-z0-9.+-]*[a-z0-9+])(?:[ ,]+\d+\s*[×x]\s*\d+)?(?:[ ,]+\d+(?:[.,]\d+)?\s*[KMG]?i?B)?\]?/gi;

/**
 * Speak media as what it is: "[image/png 576×454, 27 KB]" becomes "a figure".
 * A listener needs neither the MIME type nor the size (they are on screen).
 */
export function spokenMedia(text: string): string {
  if (!/\/[a-z]/i.test(text)) {
    return text;
  }
  return text.replace(MEDIA, (whole, type: string) => {
    const sub = whole.split('/')[1] ?? '';
    if (type.toLowerCase() === 'text' && !/^(plain|html|markdown|latex|csv)\b/i.test(sub)) {
      return whole; // "text/…" in prose that is not a MIME type
    }
    return MEDIA_WORDS[type.toLowerCase()] ?? whole;
  });
}
