/**
 * The agent picker's data: the coding agents a chat can use (`GET
 * aaep/v1/agents`: ours first, then ACP agents such as Claude Code) and the
 * agent of the chat shown. A choice applies to the chat's next messages; the
 * server's sentence is announced ("Your next messages in this chat go to
 * Claude Code.").
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { AAEPRequestError, IAgentInfo, getChat, listAgents } from './chatClient';
import { ChatController } from './controller';
import { ChatModel } from './model';
export { agentHint, agentOptions, modelNotApplicable, outsideAgent } from './agentWords';

/** Milliseconds the picker must rest on an agent before it is sent (arrow keys). */
const SETTLE_MS = 500;

/** Keeps the list of agents and the current chat's choice. */
export class AgentChooser {
  constructor(options: AgentChooser.IOptions) {
    this._controller = options.controller;
    this._announcer = options.announcer;
    this._trans = options.trans;
    this._controller.modelChanged.connect(this._chatChanged, this);
    this._chatChanged(this._controller, this._controller.model);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The agents on offer (empty until loaded, or when the server offers only its own). */
  get agents(): ReadonlyArray<IAgentInfo> {
    return this._agents;
  }

  /** The agent of the chat shown. */
  get current(): string | null {
    return this._current;
  }

  /** Load the list (again each time the chat changes: adapters get installed meanwhile). */
  async load(): Promise<void> {
    try {
      const answer = await listAgents();
      this._agents = (answer.agents ?? []).filter(a => typeof a?.name === 'string');
      if (this._current === null) {
        this._current = answer.default ?? null;
      }
    } catch {
      // No list: the picker stays hidden and the built-in agent answers.
    } finally {
      this._changed.emit();
    }
  }

  /** Use `name` for the chat's next messages (sent once the picker rests on it). */
  choose(name: string): Promise<void> {
    const model = this._controller.model;
    if (!model || name === this._current) {
      return Promise.resolve();
    }
    if (this._confirmed === null) {
      this._confirmed = this._current;
    }
    this._current = name;
    this._changed.emit();
    window.clearTimeout(this._timer);
    return new Promise(resolve => {
      this._timer = window.setTimeout(() => void this._commit(model.chatId).then(resolve), SETTLE_MS);
    });
  }

  private async _commit(chatId: string): Promise<void> {
    const name = this._current;
    const previous = this._confirmed;
    if (name === null || this._controller.model?.chatId !== chatId) {
      return;
    }
    try {
      const answer = await this._controller.request({ kind: 'agent', agent: name });
      this._confirmed = null;
      this._announcer.announce(answer?.message ?? this._trans.__('Your next messages in this chat go to %1.', name));
    } catch (error) {
      this._current = previous;
      this._confirmed = null;
      const why = error instanceof AAEPRequestError ? error.message : String(error);
      this._announcer.announce(this._trans.__('The agent was not changed: %1', why), 'assertive');
    } finally {
      this._changed.emit();
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
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
          this._current = info?.agent ?? null;
          this._changed.emit();
        }
      })
      .catch(() => undefined);
  }

  private _controller: ChatController;
  private _announcer: Announcer;
  private _trans: TranslationBundle;
  private _agents: IAgentInfo[] = [];
  private _current: string | null = null;
  private _confirmed: string | null = null;
  private _timer = 0;
  private _changed = new Signal<this, void>(this);
}

/** Options of {@link AgentChooser}. */
export namespace AgentChooser {
  export interface IOptions {
    controller: ChatController;
    announcer: Announcer;
    trans: TranslationBundle;
  }
}
