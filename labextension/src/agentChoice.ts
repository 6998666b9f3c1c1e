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
import { IAgentInfo, listAgents } from './chatClient';
import { ChatController } from './controller';
import { SettledChoice } from './settledChoice';
export { agentHint, agentOptions, modelNotApplicable, outsideAgent } from './agentWords';

/** Keeps the list of agents and the current chat's choice. */
export class AgentChooser {
  constructor(options: AgentChooser.IOptions) {
    this._controller = options.controller;
    this._trans = options.trans;
    this._choice = new SettledChoice({
      controller: this._controller,
      announcer: options.announcer,
      send: async name => {
        const answer = await this._controller.request({ kind: 'agent', agent: name });
        return answer?.message ?? this._trans.__('Your next messages in this chat go to %1.', name);
      },
      notChanged: why => this._trans.__('The agent was not changed: %1', why),
      changed: () => this._changed.emit(),
      reload: () => void this.load(),
      stored: info => info?.agent ?? null
    });
    this._choice.followChats();
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
    return this._choice.current;
  }

  /** Load the list (again each time the chat changes: adapters get installed meanwhile). */
  async load(): Promise<void> {
    try {
      const answer = await listAgents();
      this._agents = (answer.agents ?? []).filter(a => typeof a?.name === 'string');
      if (this._choice.current === null) {
        this._choice.current = answer.default ?? null;
      }
    } catch {
      // No list: the picker stays hidden and the built-in agent answers.
    } finally {
      this._changed.emit();
    }
  }

  /** Use `name` for the chat's next messages (sent once the picker rests on it). */
  choose(name: string): Promise<void> {
    return this._choice.choose(name);
  }

  dispose(): void {
    this._choice.dispose();
    Signal.clearData(this);
  }

  private _controller: ChatController;
  private _trans: TranslationBundle;
  private _agents: IAgentInfo[] = [];
  private _choice: SettledChoice;
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
