/**
 * Which chat the panel shows: it follows the active notebook, opens its
 * newest chat (or the one chosen in the chat list) as a {@link ChatSession},
 * and delivers what the session signals to the announcer, in the words of
 * `sessionWords.ts`. The chat's AAEP events go from its model to the
 * announcer directly. Components and commands call the open session
 * ({@link ChatController.session}) for the person's actions; the controller
 * answers only the commands that must say something when no chat is open.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { Announcer } from './announcer';
import { AAEPRequestError, ChatMessage, IAnswers, IChatInfo, createChat, getProgress } from './chatClient';
import { IChatPage, INewChat, chatDetails, chatPage, findOrCreateChat } from './chatList';
import { ChatSession } from './chatSession';
import { ChatModel, lastRunOutput } from './model';
import { IPanelError, SessionSignal, describeError, newChatFailed, sessionWords, whereYouAre } from './sessionWords';
import { IAAEPSettings } from './tokens';
import { usageSentence } from './usage';

export type { IChatPage, IChatSummary } from './chatList';
export type { IPanelError } from './sessionWords';

/**
 * Controller of the chat shown in the panel.
 */
export class ChatController {
  /**
   * @param options.announcer The panel's announcer.
   * @param options.trans Translation bundle.
   * @param options.settings Returns the current settings.
   */
  constructor(options: ChatController.IOptions) {
    this._announcer = options.announcer;
    this._trans = options.trans;
    this._settings = options.settings;
  }

  /** Emitted when the model, the notebook or the error changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted with the new model when the chat changes. */
  get modelChanged(): ISignal<this, ChatModel | null> {
    return this._modelChanged;
  }

  /** Emitted when something (a command) asks the panel to show the chat list. */
  get chatListRequested(): ISignal<this, void> {
    return this._chatListRequested;
  }

  /** Ask the panel to open the chat list (see {@link takeChatListRequest}). */
  requestChatList(): void {
    this._chatListWanted = true;
    this._chatListRequested.emit();
  }

  /** Whether the chat list was asked for since the last call (and forget it). */
  takeChatListRequest(): boolean {
    const wanted = this._chatListWanted;
    this._chatListWanted = false;
    return wanted;
  }

  /** The panel's voice (for what components say themselves, e.g. the chat list). */
  get announcer(): Announcer {
    return this._announcer;
  }

  /** The open chat's session (the person's actions go to it), or `null`. */
  get session(): ChatSession | null {
    return this._session;
  }

  /** The chat shown, or `null`. */
  get model(): ChatModel | null {
    return this._session?.model ?? null;
  }

  /** The notebook followed, or `null` when no notebook is active. */
  get notebookPath(): string | null {
    return this._path;
  }

  /** Whether the chat is being loaded. */
  get loading(): boolean {
    return this._loading;
  }

  /** The error that keeps the chat from loading, if any. */
  get error(): IPanelError | null {
    return this._error;
  }

  /**
   * Follow a notebook: load (or create) its chat and subscribe to it.
   *
   * @param path Notebook path, or `null` when no notebook is active.
   * @param force Reload even if it is the same notebook (retry).
   */
  async openNotebook(path: string | null, force = false): Promise<void> {
    if (path === this._path && !force) {
      return;
    }
    await this._load(path, null);
  }

  /** Show another chat of the current notebook (from the chat list), and say so. */
  async switchChat(chatId: string): Promise<void> {
    if (this._path === null || this.model?.chatId === chatId) {
      return;
    }
    await this._load(this._path, chatId);
    const model = this.model;
    if (model && model.chatId === chatId) {
      this._deliver({ kind: 'switched', title: model.title });
    }
  }

  /** Start a new, empty chat for the current notebook and show it. */
  async newChat(): Promise<void> {
    const path = this._path;
    if (path === null) {
      return;
    }
    let info: IChatInfo;
    try {
      info = await createChat(this._newChat(path));
    } catch (error) {
      const reason = describeError(error, this._trans).message;
      this.model?.addNotice('error', newChatFailed(reason, this._trans));
      this._deliver({ kind: 'new-chat-failed', reason });
      return;
    }
    if (!info?.chat_id || this._path !== path) {
      return;
    }
    await this._load(path, info.chat_id);
    if (this.model?.chatId === info.chat_id) {
      this._deliver({ kind: 'new-chat' });
    }
  }

  /**
   * One page of the notebook's chats, newest first (`before` is the cursor
   * of the previous page).
   *
   * @throws AAEPRequestError when the server cannot list them.
   */
  async listChats(before: string | null = null): Promise<IChatPage> {
    return this._path === null ? { chats: [], next: null } : chatPage(this._path, before);
  }

  /**
   * Where the person is, for the moment the panel opens.
   *
   * @param requestKey The key that jumps to a pending request, if bound.
   */
  whereYouAre(requestKey: string | null): string {
    const model = this.model;
    const chat = model && {
      messages: model.items.filter(i => i.kind === 'user' || i.kind === 'answer').length,
      pending: model.pending.length,
      running: model.isRunning,
      guidance: model.supports.guidance
    };
    return whereYouAre({ path: this._path, error: this._error, chat, requestKey }, this._trans);
  }

  /** Say the whole output of the last cell the agent ran in this chat, or that there is none. */
  speakLastOutput(): void {
    this._deliver({ kind: 'last-output', output: this.model ? lastRunOutput(this.model.items) : null });
  }

  /** *How far along?*: the running cells' progress, elapsed time and time left, asked now. */
  async speakProgress(): Promise<void> {
    const model = this.model;
    if (!model) {
      this._deliver({ kind: 'no-chat', topic: 'progress' });
      return;
    }
    try {
      const answer = await getProgress(model.chatId);
      const sentence = typeof answer?.sentence === 'string' && answer.sentence.trim() ? answer.sentence : null;
      this._deliver({ kind: 'progress', sentence });
    } catch (error) {
      this._deliver({ kind: 'progress-failed', reason: error instanceof AAEPRequestError ? error.message : null });
    }
  }

  /** Say the chat's token usage and estimated cost (on request only). */
  async speakUsage(): Promise<void> {
    const session = this._session;
    if (!session) {
      this._deliver({ kind: 'no-chat', topic: 'usage' });
      return;
    }
    await session.refresh();
    this._deliver({ kind: 'usage', sentence: usageSentence(session.model.usage, this._trans) });
  }

  /** Stop, pause or resume the running session (the Stop command: says so when no chat is open). */
  async control(action: 'stop' | 'pause' | 'resume'): Promise<void> {
    if (this._session) {
      await this._session.control(action);
    } else {
      this._deliver({ kind: 'nothing-to-control', action });
    }
  }

  /** Undo the agent's changes of its latest request in this chat (says so when no chat is open). */
  async revert(): Promise<void> {
    if (this._session) {
      await this._session.revert();
    } else {
      this._deliver({ kind: 'cannot-revert', why: 'no-chat' });
    }
  }

  /**
   * Send any message of the open chat (the figure describer, the model
   * picker): resolves with its answer, throws the server's sentence.
   */
  request<K extends keyof IAnswers>(message: ChatMessage<K>): Promise<IAnswers[K]> {
    if (!this._session) {
      return Promise.reject(new AAEPRequestError(0, this._trans.__('No chat is open.'), false));
    }
    return this._session.client.request(message);
  }

  /** Close the current chat and forget everything. */
  dispose(): void {
    this._generation++;
    this._closeChat();
    Signal.clearData(this);
  }

  /** Say what a signal means, at the person's verbosity. */
  private _deliver(signal: SessionSignal): void {
    for (const said of sessionWords(signal, this._trans, this._settings().verbosity)) {
      this._announcer.announce(said.text, said.politeness);
    }
  }

  /** Load the chat `chatId` of `path`, or (`null`) its newest one. */
  private async _load(path: string | null, chatId: string | null): Promise<void> {
    const generation = ++this._generation;
    this._closeChat();
    this._path = path;
    this._error = null;
    this._loading = path !== null;
    this._changed.emit();
    if (path === null) {
      return;
    }
    try {
      const info = chatId
        ? await chatDetails(chatId, this._trans)
        : await findOrCreateChat(this._newChat(path), this._trans);
      if (generation !== this._generation) {
        return;
      }
      this._openChat(info, path);
    } catch (error) {
      if (generation !== this._generation) {
        return;
      }
      this._error = describeError(error, this._trans);
      this._deliver({ kind: 'load-failed', message: this._error.message });
    } finally {
      if (generation === this._generation) {
        this._loading = false;
        this._changed.emit();
      }
    }
  }

  /** A new chat starts in the approval mode of the settings (then keeps its own). */
  private _newChat(path: string): INewChat {
    return { notebook_path: path, approval_mode: this._settings().approvalMode };
  }

  private _openChat(info: IChatInfo, path: string): void {
    const session = new ChatSession({ info, path, trans: this._trans, settings: this._settings });
    // The events go straight from the model to the announcer, which hears each one before
    // the session reacts to it (the session connects its own listener in start()).
    session.model.eventProcessed.connect(this._announcer.handleEvent, this._announcer);
    session.said.connect((_, signal) => this._deliver(signal), this);
    this._session = session;
    this._modelChanged.emit(session.model);
    session.start();
  }

  private _closeChat(): void {
    const session = this._session;
    if (session) {
      this._session = null;
      session.dispose();
      this._modelChanged.emit(null);
    }
  }

  private _announcer: Announcer;
  private _trans: TranslationBundle;
  private _settings: () => IAAEPSettings;
  private _session: ChatSession | null = null;
  private _path: string | null = null;
  private _loading = false;
  private _error: IPanelError | null = null;
  private _generation = 0;
  private _changed = new Signal<this, void>(this);
  private _modelChanged = new Signal<this, ChatModel | null>(this);
  private _chatListRequested = new Signal<this, void>(this);
  private _chatListWanted = false;
}

/** Options of {@link ChatController}. */
export namespace ChatController {
  export interface IOptions {
    announcer: Announcer;
    trans: TranslationBundle;
    settings: () => IAAEPSettings;
  }
}
