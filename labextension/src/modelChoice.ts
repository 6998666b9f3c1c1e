/**
 * The model picker's data: the models the server can use (`GET aaep/v1/models`:
 * the Models API's list where the endpoint offers it, else the configured
 * one) and the model of the chat shown. A choice is stored per chat by the
 * server and used from the chat's next request; that session then says
 * "Using Claude …" when it starts.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { ChatController } from './controller';
import { AAEPRequestError, getChat, listModels } from './chatClient';
import { ChatModel } from './model';

/** Milliseconds the picker must rest on a model before it is sent. */
const SETTLE_MS = 500;

/** One model on offer. */
export interface IModelOption {
  id: string;
  label: string;
}

/** Keeps the list of models and the current chat's choice. */
export class ModelChooser {
  constructor(options: ModelChooser.IOptions) {
    this._controller = options.controller;
    this._announcer = options.announcer;
    this._trans = options.trans;
    this._controller.modelChanged.connect(this._chatChanged, this);
    this._chatChanged(this._controller, this._controller.model);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The models on offer (empty until loaded). */
  get models(): ReadonlyArray<IModelOption> {
    return this._models;
  }

  /** The server's default model id. */
  get defaultModel(): string | null {
    return this._default;
  }

  /** Where the list comes from: `api` or `configured`. */
  get source(): string {
    return this._source;
  }

  /** Why the list is the configured one, when the endpoint did not list its models. */
  get note(): string | null {
    return this._note;
  }

  /** The model the chat shown uses (its choice, or the default). */
  get current(): string | null {
    return this._current;
  }

  /** A spoken name for a model id. */
  label(id: string | null): string {
    return this._models.find(m => m.id === id)?.label ?? id ?? '';
  }

  /** Whether a change is on its way to the server. */
  get busy(): boolean {
    return this._busy;
  }

  /** Load the list once (again after a failure). */
  async load(): Promise<void> {
    if (this._loaded || this._loading) {
      return;
    }
    this._loading = true;
    try {
      const answer = await listModels();
      this._models = (answer.models ?? []).filter(m => typeof m?.id === 'string');
      this._default = answer.default ?? null;
      this._source = answer.source ?? 'configured';
      this._note = answer.note ?? null;
      this._loaded = true;
      if (this._current === null) {
        this._current = this._default;
      }
    } catch {
      // The picker shows only the current model; the next chat switch tries again.
    } finally {
      this._loading = false;
      this._changed.emit();
    }
  }

  /**
   * Use `id` for the chat's next requests; says which model it will be.
   * Arrow keys on the picker change it one step at a time: only the model the
   * user stops on goes to the server (and is announced), a moment later.
   */
  choose(id: string): Promise<void> {
    const model = this._controller.model;
    if (!model || id === this._current) {
      return Promise.resolve();
    }
    if (this._confirmed === null) {
      this._confirmed = this._current;
    }
    this._current = id;
    this._changed.emit();
    window.clearTimeout(this._timer);
    return new Promise(resolve => {
      this._timer = window.setTimeout(() => void this._commit(model.chatId).then(resolve), SETTLE_MS);
    });
  }

  private async _commit(chatId: string): Promise<void> {
    const id = this._current;
    const previous = this._confirmed;
    if (id === null || this._controller.model?.chatId !== chatId) {
      return;
    }
    this._busy = true;
    this._changed.emit();
    try {
      const answer = await this._controller.request({ kind: 'model', model: id });
      this._confirmed = null;
      this._announcer.announce(this._trans.__('The next request uses %1.', answer?.label ?? this.label(id)));
    } catch (error) {
      this._current = previous;
      this._confirmed = null;
      const why = error instanceof AAEPRequestError ? error.message : String(error);
      this._announcer.announce(this._trans.__('The model was not changed: %1', why), 'assertive');
    } finally {
      this._busy = false;
      this._changed.emit();
    }
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _chatChanged(_: ChatController, model: ChatModel | null): void {
    void this.load();
    if (!model) {
      return;
    }
    const chatId = model.chatId;
    void getChat(chatId)
      .then(info => {
        if (this._controller.model?.chatId === chatId) {
          this._current = info?.model ?? this._default;
          this._changed.emit();
        }
      })
      .catch(() => undefined);
  }

  private _controller: ChatController;
  private _announcer: Announcer;
  private _trans: TranslationBundle;
  private _models: IModelOption[] = [];
  private _default: string | null = null;
  private _source = 'configured';
  private _note: string | null = null;
  private _current: string | null = null;
  private _loaded = false;
  private _loading = false;
  private _busy = false;
  /** The model the server has for the chat while a change waits to be sent. */
  private _confirmed: string | null = null;
  private _timer = 0;
  private _changed = new Signal<this, void>(this);
}

/** Options of {@link ModelChooser}. */
export namespace ModelChooser {
  export interface IOptions {
    controller: ChatController;
    announcer: Announcer;
    trans: TranslationBundle;
  }
}
