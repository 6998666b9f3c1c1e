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
import { listModels } from './chatClient';
import { SettledChoice } from './settledChoice';

/** One model on offer. */
export interface IModelOption {
  id: string;
  label: string;
}

/** Keeps the list of models and the current chat's choice. */
export class ModelChooser {
  constructor(options: ModelChooser.IOptions) {
    this._controller = options.controller;
    this._trans = options.trans;
    this._choice = new SettledChoice({
      controller: this._controller,
      announcer: options.announcer,
      send: async id => {
        const answer = await this._controller.request({ kind: 'model', model: id });
        return this._trans.__('The next request uses %1.', answer?.label ?? this.label(id));
      },
      notChanged: why => this._trans.__('The model was not changed: %1', why),
      changed: () => this._changed.emit(),
      reload: () => void this.load(),
      stored: info => info?.model ?? this._default
    });
    this._choice.followChats();
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
    return this._choice.current;
  }

  /** A spoken name for a model id. */
  label(id: string | null): string {
    return this._models.find(m => m.id === id)?.label ?? id ?? '';
  }

  /** Whether a change is on its way to the server. */
  get busy(): boolean {
    return this._choice.busy;
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
      if (this._choice.current === null) {
        this._choice.current = this._default;
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
    return this._choice.choose(id);
  }

  dispose(): void {
    this._choice.dispose();
    Signal.clearData(this);
  }

  private _controller: ChatController;
  private _trans: TranslationBundle;
  private _models: IModelOption[] = [];
  private _default: string | null = null;
  private _source = 'configured';
  private _note: string | null = null;
  private _loaded = false;
  private _loading = false;
  private _choice: SettledChoice;
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
