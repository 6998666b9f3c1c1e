/**
 * The agent's streamed answer, narrated: whole sentences (never tokens or
 * parts of words), code blocks as "Code block, N lines", and a sentence a Stop
 * cut in the middle marked as cut off. Pure: no DOM, no timers.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { IAAEPEvent, bool, str } from './aaep';
import type { ISpeech } from './speech';
import { ISpeechPiece, SentenceBuffer, endsSentence, markCutOff } from './speech';

/** An answer that opens with a closing word ("Done. …"): the turn's closing line says it. */
const OPENING_DONE = /^(all )?done[.!]\s*/i;

/** Buffers each output of each session and says what became whole. */
export class AnswerNarrator {
  constructor(private _trans: TranslationBundle) {}

  /** An `output.streaming` event: the sentences it completed. */
  push(event: IAAEPEvent): ISpeech[] {
    const sid = event.session_id;
    const key = `${sid}/${str(event, 'output_id') ?? ''}`;
    let buffer = this._streams.get(key);
    if (!buffer) {
      buffer = new SentenceBuffer();
      this._streams.set(key, buffer);
    }
    const final = bool(event, 'complete') === true;
    const chunk = typeof event.chunk === 'string' ? event.chunk : '';
    const out = this._pieces(sid, buffer.push(chunk, final));
    if (final) {
      this._streams.delete(key);
    }
    return out;
  }

  /**
   * A session ended: what is left of its streams. When the run was stopped or
   * failed and the last sentence is unfinished, it is marked as cut off: in
   * place if it is still waiting to be said, else by a sentence of its own.
   */
  end(sid: string, interrupted: boolean): ISpeech[] {
    const out: ISpeech[] = [];
    for (const [key, buffer] of [...this._streams]) {
      if (key.startsWith(`${sid}/`)) {
        out.push(...this._pieces(sid, buffer.push('', true)));
        this._streams.delete(key);
      }
    }
    const last = this._lastProse.get(sid);
    this._lastProse.delete(sid);
    if (interrupted && last && !endsSentence(last.text)) {
      out.push({
        text: this._trans.__('The answer was cut off there.'),
        politeness: 'polite',
        kind: 'prose',
        amendKey: last.key,
        amendText: markCutOff(last.text, this._trans.__('cut off'))
      });
    }
    return out;
  }

  /** Speech for released pieces; the last prose piece is remembered (a Stop may cut it). */
  private _pieces(sid: string, pieces: ISpeechPiece[]): ISpeech[] {
    const out: ISpeech[] = [];
    for (const piece of pieces) {
      if (piece.kind === 'code') {
        const text = this._trans._n('Code block, %1 line.', 'Code block, %1 lines.', piece.lines ?? 0);
        out.push({ text, politeness: 'polite', kind: 'prose' });
        this._lastProse.delete(sid);
        continue;
      }
      // "Done." opening the answer is the closing line's word: said once, by it.
      const text = piece.text.replace(OPENING_DONE, '');
      if (!text) {
        continue;
      }
      this._count += 1;
      const key = `prose:${this._count}`;
      out.push({ text, politeness: 'polite', kind: 'prose', key });
      this._lastProse.set(sid, { key, text });
    }
    return out;
  }

  private _streams = new Map<string, SentenceBuffer>();
  /** The last prose piece of each session's answer, to mark it if a Stop cuts it. */
  private _lastProse = new Map<string, { key: string; text: string }>();
  private _count = 0;
}
