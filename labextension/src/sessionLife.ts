/**
 * The open chat's life, the base of `ChatSession` (chatSession.ts, which
 * adds the person's actions): its history replayed into a
 * {@link ChatModel}, its event stream and {@link ChatClient}, the
 * resynchronisation after a lost connection and the timers of waiting
 * requests. It never speaks: what the person should hear leaves as a
 * {@link SessionSignal} on {@link SessionLife.said}, for the controller to
 * hand to the announcer; the announcer listens to the model's events itself.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import {
  IAAEPEvent,
  JSONRecord,
  TERMINAL_EVENTS,
  coreName,
  isAAEPEvent,
  isRecord,
  readResponseKinds,
  str
} from './aaep';
import { ChatClient, ChatMessage, IAnswers, IChatInfo, getChat, getUsage, setStreamKey } from './chatClient';
import { EventStream } from './eventStream';
import { ExpiryClock } from './expiryClock';
import { implicitSubscriptionId, readStreamMessage, subscriptionRequest } from './handshake';
import {
  ChatModel,
  IProcessedEvent,
  PERSON_RUN,
  TranscriptItem,
  isApprovalMode,
  readGuidance,
  readPolicy,
  readSupports,
  readUsage
} from './model';
import { SessionSignal, describeError, streamClosed, streamError, subscriptionRejected } from './sessionWords';
import { IAAEPSettings } from './tokens';

/**
 * One open chat, without the person's actions.
 */
export class SessionLife implements IDisposable {
  /**
   * Replay the chat's history silently (nothing listens yet). Call
   * {@link start} once the signals are connected.
   *
   * @param options.info The chat description (`GET chats/{id}`), with its id.
   * @param options.path The notebook it belongs to.
   */
  constructor(options: SessionLife.IOptions) {
    const { info } = options;
    this.trans = options.trans;
    this._settings = options.settings;
    const model = new ChatModel(info.chat_id!, options.path);
    model.supports = readSupports(info.supports);
    model.hidesRequester = by => by === PERSON_RUN && !this._settings().announcePersonRuns;
    if (isApprovalMode(info.approval_mode)) {
      model.approvalMode = info.approval_mode;
    }
    // The pending requests are part of the history; the list of pending ones
    // is read too, in case the history was trimmed.
    model.ingestAll(historyEvents(info));
    model.setStatus(info.paused ? 'paused' : info.status);
    applyInfo(model, info);
    this.model = model;
    this._expiry = new ExpiryClock(model, fallback => this.say({ kind: 'expiring', fallback }));
    this.stream = new EventStream({
      chatId: model.chatId,
      handshake: () =>
        subscriptionRequest({ verbosity: this._settings().verbosity, languages: [navigator.language || 'en-US'] })
    });
    this.client = new ChatClient(model.chatId, this.stream);
  }

  /** The chat's state, for the views. */
  readonly model: ChatModel;
  /** The chat's event stream. */
  readonly stream: EventStream;
  /** Sends the chat's messages, each resolved by its own answer. */
  readonly client: ChatClient;
  /** The translation of the words the session puts in the transcript. */
  readonly trans: TranslationBundle;

  /** What the person should hear about the session (never said here). */
  get said(): ISignal<this, SessionSignal> {
    return this._said;
  }

  /** The person's settings as they are now. */
  get settings(): IAAEPSettings {
    return this._settings();
  }

  /** Whether the producer accepted the handshake on the current connection. */
  get subscriptionGranted(): boolean {
    return this._subscriptionGranted;
  }

  /** Whether {@link dispose} was called. */
  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Connect the stream, say what waits for an answer and start its clocks.
   * The session hears each event after the listeners connected before this
   * (the announcer), so an event is said before what the session adds to it.
   */
  start(): void {
    const { model, stream, client } = this;
    model.eventProcessed.connect(this._onEvent, this);
    stream.message.connect((_, message) => this._onMessage(message), this);
    stream.answer.connect((_, frame) => client.settle(frame), this);
    stream.stateChanged.connect((_, state) => {
      model.connection = state;
      if (state !== 'open') {
        this._subscriptionGranted = false;
        // Answers on the lost socket will not come: their requests fail, the person may try again.
        client.connectionLost();
      }
    }, this);
    stream.reconnected.connect(() => void this.resync(), this);
    stream.connect();
    const pending = model.pending;
    if (pending.length > 0) {
      this.say({ kind: 'pending-on-open', count: pending.length });
    }
    pending.forEach(item => this._expiry.schedule(item));
  }

  /** Hand something the person should hear to the listeners of {@link said}. */
  say(signal: SessionSignal): void {
    if (!this._disposed) {
      this._said.emit(signal);
    }
  }

  /**
   * Send a message of this chat and return its answer; a refusal is shown
   * and said, and gives `null`.
   */
  async request<K extends keyof IAnswers>(message: ChatMessage<K>): Promise<IAnswers[K] | null> {
    try {
      return await this.client.request(message);
    } catch (error) {
      this.failed(error);
      return null;
    }
  }

  /** Show and say why a message failed. */
  failed(error: unknown): void {
    if (!this._disposed) {
      const { message } = describeError(error, this.trans);
      this.model.addNotice('error', message);
      this.say({ kind: 'failed', message });
    }
  }

  /** The subscription id replies carry: the granted one, or an implicit one until then. */
  subscriptionId(): string {
    if (!this.model.subscriptionId) {
      this.model.subscriptionId = implicitSubscriptionId(bytes => crypto.getRandomValues(bytes));
    }
    return this.model.subscriptionId;
  }

  /**
   * Read what changes at a session's end (usage, Continue, Undo, the title)
   * from `GET chats/{id}/usage`: a few fields, not the transcript.
   */
  async refresh(): Promise<void> {
    try {
      const info = await getUsage(this.model.chatId);
      if (!this._disposed && isRecord(info)) {
        applyInfo(this.model, info);
      }
    } catch {
      // The meter keeps its last figures; the next session end tries again.
    }
  }

  /**
   * After a reconnection: fetch the chat again and apply what was missed
   * while disconnected (a WebSocket does not resume). A session that ended
   * meanwhile is said, and so are requests that now wait for an answer.
   */
  async resync(): Promise<void> {
    const model = this.model;
    let info: IChatInfo;
    try {
      info = await getChat(model.chatId);
    } catch {
      return; // The connection is back, the next resync will try again.
    }
    if (this._disposed) {
      return;
    }
    model.supports = readSupports(info.supports);
    const missed = model.ingestAll(historyEvents(info));
    applyInfo(model, info);
    // The socket may have delivered the end of the session while this answer
    // travelled: an older "running" must not bring the run back.
    const current = info.session_id;
    if (!(info.status === 'running' && current && model.hasEnded(current))) {
      model.setStatus(info.paused ? 'paused' : info.status);
    }
    const ended = missed.filter(e => TERMINAL_EVENTS.has(coreName(e.type) ?? ''));
    const last = ended[ended.length - 1];
    const summary = last ? (str(last, 'summary_normal') ?? str(last, 'summary_terse')) : undefined;
    if (summary) {
      this.say({ kind: 'missed', summary });
    }
    const waiting = model.pending.filter(item => missed.some(e => `request:${e.event_id}` === item.id));
    if (waiting.length > 0) {
      this.say({ kind: 'waiting-after-resync', count: waiting.length });
      waiting.forEach(item => this._expiry.schedule(item));
    }
  }

  /** Close the stream and the client, stop the timers, release the model. */
  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._expiry.dispose();
    this.client.dispose();
    this.stream.dispose();
    setStreamKey(this.model.chatId, null);
    this.model.dispose();
    Signal.clearData(this);
  }

  /** What the stream carries besides answers: events, subscription messages, notes, errors. */
  private _onMessage(message: JSONRecord): void {
    const model = this.model;
    const read = readStreamMessage(message);
    switch (read.kind) {
      case 'event':
        model.ingest(read.event);
        return;
      case 'accepted':
        model.subscriptionId = read.subscriptionId;
        this._subscriptionGranted = read.subscriptionId !== null;
        this.stream.setSubscriptionId(read.subscriptionId);
        return;
      case 'rejected': {
        this._subscriptionGranted = false;
        model.addNotice('error', subscriptionRejected(read.reason, this.trans));
        this.say({ kind: 'subscription-rejected', reason: read.reason });
        return;
      }
      case 'closed':
        this._subscriptionGranted = false;
        if (read.reason) {
          model.addNotice('info', streamClosed(read.reason, this.trans));
        }
        return;
      case 'replay-unavailable':
        void this.resync();
        return;
      case 'key':
        setStreamKey(model.chatId, read.key);
        return;
      case 'error':
        model.addNotice('error', streamError(read.message, this.trans));
        this.say({ kind: 'stream-error', message: read.message });
        return;
    }
  }

  private _onEvent(model: ChatModel, processed: IProcessedEvent): void {
    const name = coreName(processed.event.type);
    if (!processed.replay && name === 'session.completed') {
      const end = model.item(`end:${processed.event.event_id}`);
      const failed = end?.kind === 'notice' ? (end.failedSteps ?? 0) : 0;
      if (failed > 0) {
        this.say({ kind: 'steps-failed', count: failed });
      }
    }
    if (!processed.replay && TERMINAL_EVENTS.has(name ?? '')) {
      // The usage meter and Continue change at a session's end, not with every event.
      void this.refresh();
    }
    if (name === 'state.changed' && str(processed.event, 'from_state') === 'paused') {
      model.pending.forEach(item => this._expiry.schedule(item)); // their clocks run again
    }
    if (name === 'awaiting.confirmation' || name === 'awaiting.clarification') {
      const item = model.item(`request:${processed.event.event_id}`);
      if (item) {
        this._expiry.schedule(item);
      }
    }
  }

  private _settings: () => IAAEPSettings;
  private _expiry: ExpiryClock;
  private _subscriptionGranted = false;
  private _disposed = false;
  private _said = new Signal<this, SessionSignal>(this);
}

/** Options of {@link SessionLife}. */
export namespace SessionLife {
  export interface IOptions {
    info: IChatInfo;
    path: string;
    trans: TranslationBundle;
    settings: () => IAAEPSettings;
  }
}

/** The AAEP events of a chat description: its transcript, then its pending requests. */
export function historyEvents(info: IChatInfo): IAAEPEvent[] {
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

/** Take what a chat description says beside its events: title, usage, Continue, guidance, policy. */
export function applyInfo(model: ChatModel, info: IChatInfo): void {
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

/** The newest request waiting for the person, and whether a typed message answers it. */
export function waitingFor(model: ChatModel | null): { item: TranscriptItem; answersIt: boolean } | null {
  const pending = model?.pending ?? [];
  const item = pending[pending.length - 1];
  if (!item || (item.kind !== 'confirmation' && item.kind !== 'clarification')) {
    return null;
  }
  // A question that takes free text is answered by the message; anything else is replaced.
  return { item, answersIt: item.kind === 'clarification' && readResponseKinds(item.event).includes('freetext') };
}
