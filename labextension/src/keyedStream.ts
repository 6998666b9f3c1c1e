/**
 * A stream of this page for a chat the side panel does not show (it was never
 * opened, or it shows another notebook's chat), held while a notebook view
 * waits for an answer. The server gives each stream a key; a reply sent with
 * it is heard as this page's ("Approved from the notebook."), not as some
 * other program's using the same login. The panel's own stream, when it has
 * one for the chat, is used instead.
 */
import { IDisposable } from '@lumino/disposable';

import { JSONRecord } from './aaep';
import { forgetStreamKey, hasStreamKey, setStreamKey } from './chatClient';
import { EventStream } from './eventStream';
import { readStreamMessage, subscriptionRequest } from './handshake';

/** How long a press waits for the key before it is sent without one (ms). */
const KEY_WAIT_MS = 4000;

export class KeyedStream implements IDisposable {
  constructor(chatId: string) {
    this._chatId = chatId;
    this._stream = new EventStream({
      chatId,
      handshake: () => subscriptionRequest({ verbosity: 'terse', languages: [navigator.language || 'en-US'] })
    });
    this._stream.message.connect(this._onMessage, this);
    this._stream.connect();
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Resolves once the chat has a key in this page (ours or the panel's), or after a wait. */
  ready(): Promise<void> {
    if (hasStreamKey(this._chatId)) {
      return Promise.resolve();
    }
    return new Promise(resolve => {
      const timer = window.setTimeout(resolve, KEY_WAIT_MS);
      this._waiting.push(() => {
        window.clearTimeout(timer);
        resolve();
      });
    });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._stream.dispose();
    forgetStreamKey(this._chatId, this._key);
    this._waiting.splice(0).forEach(done => done());
  }

  private _onMessage(_: EventStream, message: JSONRecord): void {
    const read = readStreamMessage(message);
    if (read.kind === 'key') {
      this._key = read.key;
      setStreamKey(this._chatId, read.key);
      this._waiting.splice(0).forEach(done => done());
    }
  }

  private _chatId: string;
  private _stream: EventStream;
  private _key: string | null = null;
  private _waiting: (() => void)[] = [];
  private _isDisposed = false;
}
