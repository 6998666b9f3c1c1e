/**
 * One chat setting chosen in a picker (the model, the agent): arrow keys move
 * the picker one step at a time, so only the value it rests on is sent to the
 * server, a moment later, and announced; a refusal puts the server's value
 * back and says why, assertively. The value follows the chat shown: at each
 * switch the picker's list is loaded again and the chat's stored value read.
 */
import { Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { AAEPRequestError, IChatInfo, getChat } from './chatClient';
import { ChatController } from './controller';
import { ChatModel } from './model';

/** Milliseconds the picker must rest on a value before it is sent. */
const SETTLE_MS = 500;

export class SettledChoice {
  constructor(options: SettledChoice.IOptions) {
    this._options = options;
  }

  /** The value the chat shown uses (or the one on its way to the server). */
  current: string | null = null;

  /** Whether a change is on its way to the server. */
  get busy(): boolean {
    return this._busy;
  }

  /** Use `value` for the chat's next requests, once the picker rests on it. */
  choose(value: string): Promise<void> {
    const model = this._options.controller.model;
    if (!model || value === this.current) {
      return Promise.resolve();
    }
    if (this._confirmed === null) {
      this._confirmed = this.current;
    }
    this.current = value;
    this._options.changed();
    window.clearTimeout(this._timer);
    return new Promise(resolve => {
      this._timer = window.setTimeout(() => void this._commit(model.chatId).then(resolve), SETTLE_MS);
    });
  }

  /** Follow the chat shown from now on (called once the picker's data can load). */
  followChats(): void {
    this._options.controller.modelChanged.connect(this._chatChanged, this);
    this._chatChanged(this._options.controller, this._options.controller.model);
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    Signal.clearData(this);
  }

  private _chatChanged(controller: ChatController, model: ChatModel | null): void {
    const { reload, stored, changed } = this._options;
    reload();
    if (!model) {
      return;
    }
    const chatId = model.chatId;
    void getChat(chatId)
      .then(info => {
        if (controller.model?.chatId === chatId) {
          this.current = stored(info);
          changed();
        }
      })
      .catch(() => undefined);
  }

  private async _commit(chatId: string): Promise<void> {
    const { controller, announcer, send, notChanged, changed } = this._options;
    const value = this.current;
    const previous = this._confirmed;
    if (value === null || controller.model?.chatId !== chatId) {
      return;
    }
    this._busy = true;
    changed();
    try {
      const sentence = await send(value);
      this._confirmed = null;
      announcer.announce(sentence);
    } catch (error) {
      this.current = previous;
      this._confirmed = null;
      announcer.announce(notChanged(error instanceof AAEPRequestError ? error.message : String(error)), 'assertive');
    } finally {
      this._busy = false;
      changed();
    }
  }

  private _options: SettledChoice.IOptions;
  private _busy = false;
  /** What the server has for the chat while a change waits to be sent. */
  private _confirmed: string | null = null;
  private _timer = 0;
}

export namespace SettledChoice {
  export interface IOptions {
    controller: ChatController;
    announcer: Announcer;
    /** Sends the value; resolves with the sentence to announce. */
    send: (value: string) => Promise<string>;
    /** The assertive sentence when the server refused, with its reason. */
    notChanged: (why: string) => string;
    /** The picker's data changed. */
    changed: () => void;
    /** Loads the picker's list again (the chat shown changed). */
    reload: () => void;
    /** The value a chat has stored (or the one it uses by default). */
    stored: (info: IChatInfo | null) => string | null;
  }
}
