/**
 * Wires one chat together: finds or creates the chat of the active notebook
 * (through `chatClient`'s endpoints), replays its transcript into a
 * {@link ChatModel}, opens its {@link EventStream} and turns user actions
 * into messages sent with {@link ChatClient.request}, each awaiting its own
 * answer.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import {
  AAEP_VERSION,
  IAAEPEvent,
  JSONRecord,
  TERMINAL_EVENTS,
  coreName,
  isAAEPEvent,
  isRecord,
  nowTimestamp,
  readResponseKinds,
  str
} from './aaep';
import { Announcer } from './announcer';
import {
  AAEPRequestError,
  ChatClient,
  ChatMessage,
  IAnswers,
  IChatInfo,
  createChat,
  getChat,
  getProgress,
  listChats
} from './chatClient';
import {
  ApprovalMode,
  ChatModel,
  IProcessedEvent,
  IUsage,
  TranscriptItem,
  isApprovalMode,
  lastRunOutput,
  readGuidance,
  readPolicy,
  readSupports,
  readUsage
} from './model';
import { PERSON_RUN } from './model';
import { usageSentence } from './usage';
import { IAAEPSettings } from './tokens';
import { EventStream } from './eventStream';

/** A problem that keeps the panel from showing a chat. */
export interface IPanelError {
  message: string;
  /** The server extension does not answer at all (not installed/enabled). */
  serverMissing: boolean;
}

/** Polite warning this long before a request expires (ms). */
const EXPIRY_WARNING_MS = 15000;

/** One of the notebook's chats, as the chat list shows it. */
export interface IChatSummary {
  chatId: string;
  title: string;
  /** Epoch ms of the last change (or creation), NaN when unknown. */
  updated: number;
  status: 'idle' | 'running' | 'paused';
  canContinue: boolean;
}

/** A page of the notebook's chats, newest first. */
export interface IChatPage {
  chats: IChatSummary[];
  /** Cursor of the next (older) page, or `null` at the end. */
  next: string | null;
}

/** How many chats one page of the list asks for. */
const CHAT_PAGE_SIZE = 20;

function summarise(info: IChatInfo): IChatSummary | null {
  if (!info.chat_id) {
    return null;
  }
  const when = Date.parse(info.updated ?? info.created ?? '');
  return {
    chatId: info.chat_id,
    title: typeof info.title === 'string' ? info.title : '',
    updated: when,
    status: info.paused ? 'paused' : info.status === 'running' ? 'running' : 'idle',
    canContinue: info.can_continue === true
  };
}

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

  /** Say something through the panel's announcer (polite). */
  announce(text: string): void {
    this._announcer.announce(text);
  }

  /** The chat shown, or `null`. */
  get model(): ChatModel | null {
    return this._model;
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

  /**
   * Show another chat of the current notebook (from the chat list).
   * Announced, so a screen reader user knows the transcript changed.
   */
  async switchChat(chatId: string): Promise<void> {
    if (this._path === null || this._model?.chatId === chatId) {
      return;
    }
    await this._load(this._path, chatId);
    const model = this._model;
    if (model && model.chatId === chatId) {
      this._announcer.announce(
        model.title
          ? this._trans.__('Switched to the chat “%1”.', model.title)
          : this._trans.__('Switched to another chat.')
      );
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
      info = await createChat(this._newChatBody(path));
    } catch (error) {
      const text = this._trans.__('Could not start a new chat: %1', this._describe(error).message);
      this._model?.addNotice('error', text);
      this._announcer.announce(text, 'assertive');
      return;
    }
    if (!info?.chat_id || this._path !== path) {
      return;
    }
    await this._load(path, info.chat_id);
    if (this._model?.chatId === info.chat_id) {
      this._announcer.announce(this._trans.__('New chat started. The message box is ready.'));
    }
  }

  /**
   * One page of the notebook's chats, newest first (`before` is the cursor
   * of the previous page). A server without pages answers all at once.
   *
   * @throws AAEPRequestError when the server cannot list them.
   */
  async listChats(before: string | null = null): Promise<IChatPage> {
    const path = this._path;
    if (path === null) {
      return { chats: [], next: null };
    }
    const query: Record<string, string> = { notebook_path: path, limit: String(CHAT_PAGE_SIZE) };
    if (before) {
      query.before = before;
    }
    const answer = await listChats(query);
    const chats = (answer?.chats ?? [])
      .filter(c => !c.notebook_path || c.notebook_path === path)
      .map(summarise)
      .filter((c): c is IChatSummary => c !== null);
    return { chats, next: typeof answer?.next === 'string' && answer.next ? answer.next : null };
  }

  /**
   * Where the user is, for the moment the panel opens: "Agent panel for
   * demo.ipynb. 4 messages. Type your request." (plus a request waiting).
   *
   * @param requestKey The key that jumps to a pending request, if bound.
   */
  whereYouAre(requestKey: string | null): string {
    const trans = this._trans;
    const path = this._path;
    if (path === null) {
      return trans.__('Agent panel. Open a notebook to chat with the agent about it.');
    }
    const name = path.split('/').pop() || path;
    const model = this._model;
    if (!model) {
      return this._error
        ? trans.__('Agent panel for %1. %2', name, this._error.message)
        : trans.__('Agent panel for %1. Loading the chat.', name);
    }
    const messages = model.items.filter(i => i.kind === 'user' || i.kind === 'answer').length;
    const parts = [
      trans.__('Agent panel for %1.', name),
      messages === 0 ? trans.__('No messages yet.') : trans._n('%1 message.', '%1 messages.', messages)
    ];
    const pending = model.pending.length;
    if (pending > 0) {
      parts.push(
        requestKey
          ? trans._n(
              'A request waits for your answer: press %2.',
              '%1 requests wait for your answer: press %2.',
              pending,
              requestKey
            )
          : trans._n('A request waits for your answer.', '%1 requests wait for your answer.', pending)
      );
    }
    parts.push(
      model.isRunning && model.supports.guidance
        ? trans.__('The agent is working; type guidance for it.')
        : model.isRunning
          ? trans.__('The agent is working.')
          : trans.__('Type your request.')
    );
    return parts.join(' ');
  }

  /**
   * Say the whole output of the last cell the agent ran in this chat (as the
   * server told it, bounded), or that there is none.
   */
  speakLastOutput(): void {
    const output = this._model ? lastRunOutput(this._model.items) : null;
    this._announcer.announce(
      output
        ? // The output may end anywhere: its end is said, so it is never heard as cut.
          `${output}\n${this._trans.__('End of output.')}`
        : this._trans.__('The agent has not run a cell in this chat yet, so there is no output to hear.')
    );
  }

  /** *How far along?*: the running cells' progress, elapsed time and time left, asked now. */
  async speakProgress(): Promise<void> {
    const model = this._model;
    if (!model) {
      this._announcer.announce(this._trans.__('No chat is open, so there is no running cell to tell about.'));
      return;
    }
    try {
      const answer = await getProgress(model.chatId);
      this._announcer.announce(
        typeof answer?.sentence === 'string' && answer.sentence.trim()
          ? answer.sentence
          : this._trans.__('The server did not say how far the cells are.')
      );
    } catch (error) {
      this._announcer.announce(
        error instanceof AAEPRequestError
          ? this._trans.__('Could not ask how far along the cells are: %1', error.message)
          : this._trans.__('Could not ask how far along the cells are.'),
        'assertive'
      );
    }
  }

  /** Say the chat's token usage and estimated cost (on request only). */
  async speakUsage(): Promise<void> {
    const model = this._model;
    if (!model) {
      this._announcer.announce(this._trans.__('No chat is open, so there is no token usage to tell.'));
      return;
    }
    await this._refreshChat(model);
    this._announcer.announce(this.usageSentence(model.usage));
  }

  /** The usage in one sentence, for people. */
  usageSentence(usage: IUsage | null): string {
    return usageSentence(usage, this._trans);
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
      const info = chatId ? await this._chatDetails(chatId) : await this._findOrCreateChat(path);
      if (generation !== this._generation) {
        return;
      }
      this._openChat(info, path);
    } catch (error) {
      if (generation !== this._generation) {
        return;
      }
      this._error = this._describe(error);
      this._announcer.announce(this._error.message, 'assertive');
    } finally {
      if (generation === this._generation) {
        this._loading = false;
        this._changed.emit();
      }
    }
  }

  /**
   * Send what the user typed: a new request, or guidance while running (only
   * when the server accepts guidance; the composer says so otherwise).
   */
  async sendText(text: string, context?: JSONRecord[]): Promise<void> {
    const model = this._model;
    const trimmed = text.trim();
    if (!model || !this._client || !trimmed) {
      return;
    }
    // While the agent waits for the person, a message is not guidance (which would only be
    // read after the answer): it answers a waiting question, or replaces a waiting approval
    // with a new request, as over the API. The composer says which (`waitingFor`).
    const waiting = this.waitingFor();
    if (waiting?.answersIt) {
      await this.answer(waiting.item, trimmed);
      return;
    }
    const steering = model.isRunning && waiting === null;
    if (steering && !model.supports.guidance) {
      this._announcer.announce(
        this._trans.__('The agent cannot take guidance while it works. Wait until it finishes, or stop it.')
      );
      return;
    }
    const itemId = model.addUserMessage(trimmed, steering);
    // Context picked with @ goes on user_input (the server makes it guidance while the agent works).
    const paused = model.status === 'paused';
    if (steering && !context?.length) {
      const answer = await this._request({ kind: 'guidance', text: trimmed });
      if (answer) {
        model.attachGuidance(itemId, answer.guidance_id, answer.session_id ?? undefined);
        this._announcer.announce(
          paused
            ? this._trans.__('Guidance sent; it applies when you resume.')
            : this._trans.__('Guidance sent; it applies at the next step.')
        );
      } else if (this._model === model) {
        model.markUnsent(itemId);
      }
      return;
    }
    let answer: IAnswers['user_input'] | null = null;
    try {
      answer = await this._client!.request({
        kind: 'user_input',
        text: trimmed,
        ...(context?.length ? { context } : {})
      });
    } catch (error) {
      const mine = model.items.find(i => i.id === itemId);
      if (this._model === model && !(mine?.kind === 'user' && mine.sessionId)) {
        // Refused (e.g. the agent is still busy): it never started. (An answer lost on the
        // way while its session started, seen by session.started, is no failure.)
        model.markUnsent(itemId);
        this._failed(model, error);
      }
      return;
    }
    if (answer.as_guidance) {
      // The agent was already working: the server took the message as guidance.
      model.attachGuidance(itemId, answer.guidance_id, answer.session_id);
      this._announcer.announce(
        this._trans.__('The agent is already working: your message was sent as guidance; it applies at the next step.')
      );
    } else {
      model.attachSession(itemId, answer.session_id);
    }
  }

  /**
   * The newest request waiting for the person, if any: what a typed message
   * then does (answer a question, or replace an approval).
   */
  waitingFor(): { item: TranscriptItem; answersIt: boolean } | null {
    const pending = this._model?.pending ?? [];
    const item = pending[pending.length - 1];
    if (!item) {
      return null;
    }
    // A question that takes free text is answered by the message; anything else is replaced.
    return { item, answersIt: item.kind === 'clarification' && readResponseKinds(item.event).includes('freetext') };
  }

  /**
   * Change the terms of the live subscription (AAEP §5.7), e.g. the verbosity
   * of summaries after the user changed it. Without a subscription yet there
   * is nothing to do: the next handshake carries the current settings.
   *
   * @param capabilities The changed capabilities only.
   */
  async renegotiate(capabilities: JSONRecord): Promise<void> {
    const model = this._model;
    if (!model || !this._subscriptionGranted || !model.subscriptionId) {
      return;
    }
    try {
      await this._stream?.sendSubscription({
        type: 'subscription.renegotiate',
        subscription_id: model.subscriptionId,
        capabilities
      });
    } catch (error) {
      this._failed(model, error);
    }
  }

  /** Answer a confirmation card. */
  async reply(item: TranscriptItem, decision: 'accept' | 'reject'): Promise<void> {
    const model = this._model;
    if (!model || item.kind !== 'confirmation' || item.state !== 'pending') {
      return;
    }
    const decidedAt = nowTimestamp();
    model.setRequestState(item.id, 'sending');
    const ok = await this._replied({
      type: 'confirmation.reply',
      reply_token: item.event.reply_token,
      decision,
      subscription_id: this._subscriptionId(),
      timestamp: decidedAt,
      decided_by: 'user:jupyterlab'
    });
    // Nothing is said here: the producer confirms the outcome to every
    // subscriber (a state change out of awaiting_input), and that is announced.
    model.setRequestState(item.id, ok ? (decision === 'accept' ? 'accepted' : 'rejected') : 'pending');
  }

  /** Answer a clarification card. */
  async answer(item: TranscriptItem, response: string | boolean | number): Promise<void> {
    const model = this._model;
    if (!model || item.kind !== 'clarification' || item.state !== 'pending') {
      return;
    }
    const decidedAt = nowTimestamp();
    model.setRequestState(item.id, 'sending');
    const ok = await this._replied({
      type: 'clarification.reply',
      reply_token: item.event.reply_token,
      response,
      subscription_id: this._subscriptionId(),
      timestamp: decidedAt,
      decided_by: 'user:jupyterlab'
    });
    // As for confirmations, the producer's follow-up state change is announced.
    model.setRequestState(item.id, ok ? 'answered' : 'pending', ok ? String(response) : undefined);
  }

  /** Stop, pause or resume the running session. */
  async control(action: 'stop' | 'pause' | 'resume'): Promise<void> {
    const model = this._model;
    if (!model || !model.isRunning) {
      this._announcer.announce(
        action === 'resume'
          ? this._trans.__('Nothing is paused, so there is nothing to resume.')
          : action === 'pause'
            ? this._trans.__('Nothing is running, so there is nothing to pause.')
            : this._trans.__('Nothing is running, so there is nothing to stop.')
      );
      return;
    }
    const supported = {
      stop: model.supports.stop,
      pause: model.supports.pause,
      resume: model.supports.resume
    }[action];
    if (!supported) {
      this._announcer.announce(this._trans.__('This server cannot %1 the agent.', action));
      return;
    }
    const answer = await this._request({ kind: 'control', action });
    if (answer && (answer.stopped === false || answer.paused === false || answer.resumed === false)) {
      // Nothing was running (or paused) any more: it changed while the request travelled.
      void this._resync(model);
    }
    if (answer && action === 'pause') {
      // What the agent did is said when its state changes ("Paused…",
      // "Resumed.", "You stopped the agent."), right away for a stop or a
      // resume; a pause waits for a safe point, so it is confirmed now.
      this._announcer.announce(this._trans.__('Pausing the agent at the next safe point.'));
    }
  }

  /** Pause a running session, or resume a paused one. */
  async togglePause(): Promise<void> {
    const model = this._model;
    if (!model) {
      return;
    }
    if (!model.supports.pause) {
      this._announcer.announce(this._trans.__('This server cannot pause the agent.'));
    } else if (!model.isRunning) {
      this._announcer.announce(this._trans.__('Nothing is running, so there is nothing to pause.'));
    } else {
      await this.control(model.status === 'paused' ? 'resume' : 'pause');
    }
  }

  /**
   * Continue the chat's interrupted request (after a server restart or a
   * recoverable error): the server starts a new session from the history.
   */
  async continueChat(): Promise<void> {
    const model = this._model;
    if (!model) {
      return;
    }
    if (!model.canContinue) {
      this._announcer.announce(this._trans.__('There is no interrupted request to continue in this chat.'));
      return;
    }
    model.clearContinue();
    const answer = await this._request({ kind: 'control', action: 'continue' });
    if (answer) {
      this._announcer.announce(this._trans.__('Continuing where the agent stopped.'));
    } else if (this._model === model) {
      // Refused (409 with its reason, already shown): the server says whether it still can.
      void this._refreshChat(model);
    }
  }

  /**
   * Undo the agent's own changes of its latest request in this chat (cells
   * someone else changed since are kept as they are). Its answer says what was
   * undone and what was kept; a refusal is shown next to the Undo button and
   * said at once.
   */
  async revert(): Promise<void> {
    const model = this._model;
    const client = this._client;
    if (!model || !client || !model.canRevert) {
      const trans = this._trans;
      this._announcer.announce(
        !model
          ? trans.__('No chat is open, so there are no agent changes to undo.')
          : model.isRunning
            ? trans.__('The agent is working; stop it or wait for it to finish before undoing its changes.')
            : model.reverting
              ? trans.__('The agent is already undoing its changes.')
              : !model.supports.revert
                ? trans.__("This server cannot undo the agent's changes.")
                : trans.__('There are no agent changes to undo in this chat.')
      );
      return;
    }
    model.revertError = null;
    model.reverting = true;
    try {
      const answer = await client.request({ kind: 'control', action: 'revert' });
      if (this._model === model && answer.summary && answer.session_id) {
        if (model.applyRevert({ sessionId: answer.session_id, summary: answer.summary })) {
          this._announcer.announce(answer.summary);
        }
      }
    } catch (error) {
      if (this._model === model) {
        this._revertFailed(model, this._describe(error).message);
      }
    } finally {
      model.reverting = false;
    }
  }

  /** Change the approval mode of this chat. */
  async setApprovalMode(mode: ApprovalMode): Promise<void> {
    const model = this._model;
    if (!model) {
      return;
    }
    if (!model.supports.approval_mode) {
      return;
    }
    if (!model.policy.approvalModes.includes(mode)) {
      // Locked by the administrator: say what is allowed instead of asking the server.
      this._announcer.announce(
        model.policy.message ?? this._trans.__('The administrator of this server does not allow this approval mode.'),
        'assertive'
      );
      return;
    }
    const previous = model.approvalMode;
    model.approvalMode = mode;
    const answer = await this._request({ kind: 'approval_mode', mode });
    if (!answer) {
      model.approvalMode = previous;
    }
  }

  /** Close the current chat and forget everything. */
  dispose(): void {
    this._generation++;
    this._closeChat();
    Signal.clearData(this);
  }

  private async _findOrCreateChat(path: string): Promise<IChatInfo> {
    const list = await listChats({ notebook_path: path });
    let chat = (list?.chats ?? []).find(c => c.notebook_path === path && c.chat_id);
    if (!chat) {
      chat = await createChat(this._newChatBody(path));
    }
    if (!chat?.chat_id) {
      throw new AAEPRequestError(500, this._trans.__('The server did not return a chat id.'), false);
    }
    const details = await getChat(chat.chat_id);
    return { ...chat, ...(isRecord(details) ? details : {}) };
  }

  /** A new chat starts in the approval mode of the settings. */
  private _newChatBody(path: string): { notebook_path: string; approval_mode: string } {
    return { notebook_path: path, approval_mode: this._settings().approvalMode };
  }

  private async _chatDetails(chatId: string): Promise<IChatInfo> {
    const details = await getChat(chatId);
    if (!isRecord(details)) {
      throw new AAEPRequestError(500, this._trans.__('The server did not describe the chat.'), false);
    }
    return { chat_id: chatId, ...details };
  }

  /** Take what a chat description says beside its events: title, usage, Continue, guidance. */
  private _applyInfo(model: ChatModel, info: IChatInfo): void {
    if (typeof info.title === 'string') {
      model.title = info.title;
    }
    if (info.usage !== undefined) {
      model.usage = readUsage(info.usage);
    }
    model.setCanContinue(info.can_continue);
    model.setUndoable(info.undoable_sessions);
    if (info.policy !== undefined) {
      model.policy = readPolicy(info.policy);
    }
    model.addGuidance(readGuidance(info.guidance));
  }

  /** Read the chat again for what changes at a session's end (usage, Continue). */
  private async _refreshChat(model: ChatModel): Promise<void> {
    try {
      const info = await getChat(model.chatId);
      if (this._model === model && isRecord(info)) {
        this._applyInfo(model, info);
      }
    } catch {
      // The meter keeps its last figures; the next session end tries again.
    }
  }

  private _openChat(info: IChatInfo, path: string): void {
    const model = new ChatModel(info.chat_id!, path);
    model.supports = readSupports(info.supports);
    model.hidesRequester = by => by === PERSON_RUN && !this._settings().announcePersonRuns;
    if (isApprovalMode(info.approval_mode)) {
      model.approvalMode = info.approval_mode;
    }
    // Replay history silently (the pending requests are part of it; the list
    // of pending ones is read too, in case the history was trimmed).
    model.ingestAll(this._historyEvents(info));
    model.setStatus(info.paused ? 'paused' : info.status);
    this._applyInfo(model, info);
    model.eventProcessed.connect(this._onEvent, this);
    this._model = model;
    this._subscriptionGranted = false;
    const stream = new EventStream({
      chatId: model.chatId,
      handshake: () => this._handshake()
    });
    const client = new ChatClient(model.chatId, stream);
    stream.message.connect(this._onMessage, this);
    stream.answer.connect((_, frame) => client.settle(frame), this);
    stream.stateChanged.connect((_, state) => {
      model.connection = state;
      if (state !== 'open') {
        this._subscriptionGranted = false;
        // Answers on the lost socket will not come: their requests fail, the user may try again.
        client.connectionLost();
      }
    }, this);
    stream.reconnected.connect(() => void this._resync(model), this);
    this._stream = stream;
    this._client = client;
    stream.connect();
    // A chat keeps its own approval mode: the settings' one when it was created
    // (`_newChatBody`), or what the user chose for it since.
    this._modelChanged.emit(model);
    const pending = model.pending.length;
    if (pending > 0) {
      this._announcer.announce(
        this._trans._n(
          'A request in this chat is waiting for your answer.',
          '%1 requests in this chat are waiting for your answer.',
          pending
        ),
        'assertive'
      );
    }
    for (const item of model.pending) {
      this._scheduleExpiryWarning(item);
    }
  }

  /** The AAEP events of a chat description: its transcript, then its pending requests. */
  private _historyEvents(info: IChatInfo): IAAEPEvent[] {
    const events: IAAEPEvent[] = [];
    for (const entry of [...(info.transcript ?? []), ...(info.pending_requests ?? [])]) {
      if (isAAEPEvent(entry)) {
        events.push(entry);
      } else if (isRecord(entry) && isAAEPEvent(entry.event)) {
        events.push(entry.event);
      }
    }
    return events;
  }

  /**
   * After a reconnection: fetch the chat again and apply what was missed
   * while disconnected (a WebSocket does not resume). A session that ended
   * meanwhile is announced, and so are requests that now wait for an answer.
   */
  private async _resync(model: ChatModel): Promise<void> {
    let info: IChatInfo;
    try {
      info = await getChat(model.chatId);
    } catch {
      return; // The connection is back, the next resync will try again.
    }
    if (this._model !== model) {
      return;
    }
    model.supports = readSupports(info.supports);
    const missed = model.ingestAll(this._historyEvents(info));
    this._applyInfo(model, info);
    // The socket may have delivered the end of the session while this answer
    // travelled: an older "running" must not bring the run back.
    const current = info.session_id;
    if (!(info.status === 'running' && current && model.hasEnded(current))) {
      model.setStatus(info.paused ? 'paused' : info.status);
    }
    const ended = missed.filter(e => TERMINAL_EVENTS.has(coreName(e.type) ?? ''));
    const last = ended[ended.length - 1];
    if (last) {
      const said = str(last, 'summary_normal') ?? str(last, 'summary_terse');
      if (said) {
        this._announcer.announce(this._trans.__('While the connection was down: %1', said));
      }
    }
    const waiting = model.pending.filter(item => missed.some(e => `request:${e.event_id}` === item.id));
    if (waiting.length > 0) {
      this._announcer.announce(
        this._trans._n(
          'A request is waiting for your answer.',
          '%1 requests are waiting for your answer.',
          waiting.length
        ),
        'assertive'
      );
      waiting.forEach(item => this._scheduleExpiryWarning(item));
    }
  }

  private _handshake(): JSONRecord {
    const settings = this._settings();
    return {
      type: 'subscription.request',
      aaep_version: AAEP_VERSION,
      subscriber_id: 'jupyter-aaep-panel',
      subscriber_name: 'JupyterLab AAEP panel',
      capabilities: {
        preferred_verbosity: settings.verbosity,
        // The panel merges announcements itself; the event budget only needs
        // to keep the transcript smooth, so it is higher than the speech rate.
        max_events_per_second: 20,
        coalesce_boundaries: ['sentence', 'completion'],
        supports_confirmation_reply: true,
        supports_clarification_reply: true,
        supported_conformance_levels: [1, 2, 3],
        languages: [navigator.language || 'en-US', 'en-US'].filter(
          (lang, i, all) => /^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$/.test(lang) && all.indexOf(lang) === i
        )
      }
    };
  }

  /**
   * What the stream carries besides answers to requests: AAEP events,
   * subscription messages, stream notes and errors of frames sent without a
   * `request_id` (the handshake).
   */
  private _onMessage(_: EventStream, message: JSONRecord): void {
    const model = this._model;
    if (!model) {
      return;
    }
    if (isAAEPEvent(message)) {
      model.ingest(message);
      return;
    }
    const type = str(message, 'type');
    const kind = str(message, 'kind');
    if (type === 'subscription.accepted') {
      model.subscriptionId = str(message, 'subscription_id') ?? null;
      this._subscriptionGranted = model.subscriptionId !== null;
      this._stream?.setSubscriptionId(model.subscriptionId);
    } else if (type === 'subscription.rejected') {
      this._subscriptionGranted = false;
      const text = this._trans.__(
        'The agent refused the subscription: %1',
        str(message, 'reason_message') ?? str(message, 'reason_code') ?? ''
      );
      model.addNotice('error', text);
      this._announcer.announce(text, 'assertive');
    } else if (type === 'subscription.close') {
      // The producer ends the subscription (e.g. the server shuts down); the
      // stream reconnects when it comes back.
      this._subscriptionGranted = false;
      const reason = str(message, 'reason_message');
      if (reason) {
        model.addNotice('info', this._trans.__('The agent closed the connection: %1', reason));
      }
    } else if (kind === 'replay.unavailable') {
      void this._resync(model);
    } else if (kind === 'error' || type === 'error') {
      const text = str(message, 'message') ?? this._trans.__('The agent could not handle a message.');
      model.addNotice('error', text);
      this._announcer.announce(text, 'assertive');
    }
  }

  private _onEvent(model: ChatModel, processed: IProcessedEvent): void {
    this._announcer.handleEvent(processed);
    if (!processed.replay && coreName(processed.event.type) === 'session.completed') {
      const end = model.items.find(i => i.id === `end:${processed.event.event_id}`);
      const failed = end?.kind === 'notice' ? (end.failedSteps ?? 0) : 0;
      if (failed > 0) {
        this._announcer.announce(
          this._trans._n(
            'One step of this request failed; the transcript says which.',
            '%1 steps of this request failed; the transcript says which.',
            failed
          )
        );
      }
    }
    if (!processed.replay && TERMINAL_EVENTS.has(coreName(processed.event.type) ?? '')) {
      // The usage meter and Continue change at a session's end, not with every event.
      void this._refreshChat(model);
    }
    if (coreName(processed.event.type) === 'state.changed' && str(processed.event, 'from_state') === 'paused') {
      model.pending.forEach(item => this._scheduleExpiryWarning(item)); // their clocks run again
    }
    if (
      coreName(processed.event.type) === 'awaiting.confirmation' ||
      coreName(processed.event.type) === 'awaiting.clarification'
    ) {
      const item = model.items.find(i => i.id === `request:${processed.event.event_id}`);
      if (item) {
        this._scheduleExpiryWarning(item);
      }
    }
  }

  /** Warn politely shortly before a pending request falls back to its default. */
  private _scheduleExpiryWarning(item: TranscriptItem): void {
    if ((item.kind !== 'confirmation' && item.kind !== 'clarification') || item.deadline === null) {
      return;
    }
    const delay = item.deadline - EXPIRY_WARNING_MS - Date.now();
    if (delay <= 0) {
      return;
    }
    const event: IAAEPEvent = item.event;
    const deadline = item.deadline;
    const timer = window.setTimeout(() => {
      this._timers.delete(timer);
      if (item.state === 'pending' && item.deadline === deadline) {
        const fallback = str(event, 'default_decision') ?? str(event, 'default_response');
        this._announcer.announce(
          fallback
            ? this._trans.__('The request expires in 15 seconds; then the answer will be: %1.', fallback)
            : this._trans.__('The request expires in 15 seconds.')
        );
      }
    }, delay);
    this._timers.add(timer);
  }

  private _subscriptionId(): string {
    const model = this._model!;
    if (!model.subscriptionId) {
      // No handshake answer yet: the server issues ids for implicit
      // subscriptions and must not reject unknown ones (DIGEST §11.2).
      const bytes = new Uint8Array(16);
      crypto.getRandomValues(bytes);
      model.subscriptionId = 'sub_' + Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
    }
    return model.subscriptionId;
  }

  /**
   * Send a message to the open chat and return its answer; a refusal is
   * shown and said, and gives `null`.
   */
  private async _request<K extends keyof IAnswers>(message: ChatMessage<K>): Promise<IAnswers[K] | null> {
    const model = this._model;
    const client = this._client;
    if (!model || !client) {
      return null;
    }
    try {
      return await client.request(message);
    } catch (error) {
      this._failed(model, error);
      return null;
    }
  }

  /** Send a reply; whether it was delivered (the protocol says nothing more). */
  private async _replied(
    message: ChatMessage<'confirmation.reply'> | ChatMessage<'clarification.reply'>
  ): Promise<boolean> {
    const model = this._model;
    const client = this._client;
    if (!model || !client) {
      return false;
    }
    try {
      await client.request(message);
      return true;
    } catch (error) {
      this._failed(model, error);
      return false;
    }
  }

  /** Show and say why a message failed. */
  private _failed(model: ChatModel, error: unknown): void {
    if (this._model === model) {
      const { message: text } = this._describe(error);
      model.addNotice('error', text);
      this._announcer.announce(text, 'assertive');
    }
  }

  /**
   * Send any message of the open chat (the figure describer, the model
   * picker): resolves with its answer, throws the server's sentence.
   */
  request<K extends keyof IAnswers>(message: ChatMessage<K>): Promise<IAnswers[K]> {
    if (!this._client) {
      return Promise.reject(new AAEPRequestError(0, this._trans.__('No chat is open.'), false));
    }
    return this._client.request(message);
  }

  /** Show why an undo failed next to its button, and say it at once. */
  private _revertFailed(model: ChatModel, text: string): void {
    model.reverting = false;
    model.revertError = text;
    this._announcer.announce(text, 'assertive');
  }

  private _describe(error: unknown): IPanelError {
    if (error instanceof AAEPRequestError) {
      if (error.serverMissing) {
        return {
          serverMissing: true,
          message: this._trans.__(
            'The jupyter-aaep server extension is not running, so the agent is unavailable. Check that it is installed and enabled (jupyter server extension list), then restart JupyterLab.'
          )
        };
      }
      return { serverMissing: false, message: error.message };
    }
    return { serverMissing: false, message: String((error as Error)?.message ?? error) };
  }

  private _closeChat(): void {
    for (const timer of this._timers) {
      window.clearTimeout(timer);
    }
    this._timers.clear();
    this._client?.dispose();
    this._client = null;
    this._stream?.dispose();
    this._stream = null;
    if (this._model) {
      this._model.dispose();
      this._model = null;
      this._modelChanged.emit(null);
    }
  }

  private _announcer: Announcer;
  private _trans: TranslationBundle;
  private _settings: () => IAAEPSettings;
  private _model: ChatModel | null = null;
  private _stream: EventStream | null = null;
  private _client: ChatClient | null = null;
  private _path: string | null = null;
  private _loading = false;
  private _error: IPanelError | null = null;
  private _generation = 0;
  /** Whether the producer accepted our handshake on the current connection. */
  private _subscriptionGranted = false;
  private _timers = new Set<number>();
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
