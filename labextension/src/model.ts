/**
 * The chat the panel shows, as an object the views can listen to: it holds
 * the current {@link IChatState} and replaces it through the pure changes of
 * `chatState.ts` and `applyEvent.ts`, then tells the views
 * ({@link ChatModel.changed}) and the narration ({@link ChatModel.eventProcessed}).
 *
 * The types, readers and view helpers live in their own modules and are
 * re-exported here, so a component imports what a chat is from one place.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { IAAEPEvent, coreName, str } from './aaep';
import { applyEvent, orderBatch } from './applyEvent';
import * as state from './chatState';
import { IChatState } from './chatState';
import { ConnectionState } from './eventStream';
import {
  ApprovalMode,
  ChatStatus,
  IGuidance,
  IPolicy,
  IProcessedEvent,
  IRevertNotice,
  ISupports,
  IUsage,
  OPEN_POLICY,
  RequestState,
  TranscriptItem
} from './transcript';

export * from './transcript';
export * from './readers';
export * from './transcriptView';

/**
 * The state of one chat, observable.
 */
export class ChatModel {
  /**
   * @param chatId The server's chat id.
   * @param notebookPath The notebook this chat belongs to.
   */
  constructor(
    readonly chatId: string,
    readonly notebookPath: string
  ) {}

  /** Emitted after any change that views should render. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted once per new AAEP event, in processing order. */
  get eventProcessed(): ISignal<this, IProcessedEvent> {
    return this._eventProcessed;
  }

  /** The chat as a plain value (never changed in place: each change makes a new one). */
  get state(): IChatState {
    return this._state;
  }

  /** Transcript entries, oldest first. */
  get items(): ReadonlyArray<TranscriptItem> {
    return this._state.items;
  }

  /**
   * How often the item with this id changed in place since it was added.
   * Views re-render an entry only when its version changes, so a streamed
   * chunk renders one entry, not the whole transcript.
   */
  version(id: string): number {
    return this._versions.get(id) ?? 0;
  }

  /** The entry with this id as it is now (an answer may have replaced the one a view holds). */
  item(id: string): TranscriptItem | undefined {
    return this._state.items.find(i => i.id === id);
  }

  /** The chat's title (its first request, as the server clipped it), or ''. */
  get title(): string {
    return this._title;
  }
  set title(value: string) {
    if (value !== this._title) {
      this._title = value;
      this._changed.emit();
    }
  }

  /** The chat's token usage as last read from the server, or `null`. */
  get usage(): IUsage | null {
    return this._usage;
  }
  set usage(value: IUsage | null) {
    this._usage = value;
    this._changed.emit();
  }

  /** Whether Continue can be offered (see {@link state.canContinue}). */
  get canContinue(): boolean {
    return state.canContinue(this._state);
  }

  /**
   * Set what the server says (`can_continue` in the chat description). A
   * recoverable error seen on the stream still counts: a description read
   * while the session winds down may not say so yet.
   */
  setCanContinue(value: unknown): void {
    this._commit(state.setCanContinue(this._state, value));
  }

  /** Forget every reason to offer Continue (the user chose it, or it was refused). */
  clearContinue(): void {
    this._commit(state.clearContinue(this._state), true);
  }

  /** Run status. */
  get status(): ChatStatus {
    return this._state.status;
  }

  /** Connection state of the transport. */
  get connection(): ConnectionState {
    return this._connection;
  }
  set connection(value: ConnectionState) {
    if (value !== this._connection) {
      this._connection = value;
      this._everConnected = this._everConnected || value === 'open';
      this._changed.emit();
    }
  }

  /** Whether the first connection is still to be made (not yet open, not given up). */
  get firstConnecting(): boolean {
    return !this._everConnected && this._connection !== 'failed';
  }

  /** The subscription id granted by the producer, if any. */
  subscriptionId: string | null = null;

  /** What the administrator fixed for this server. */
  get policy(): IPolicy {
    return this._policy;
  }
  set policy(policy: IPolicy) {
    this._policy = policy;
    this._changed.emit();
  }

  /** Approval mode of this chat (never persisted by the panel). */
  get approvalMode(): ApprovalMode {
    return this._approvalMode;
  }
  set approvalMode(mode: ApprovalMode) {
    if (mode !== this._approvalMode) {
      this._approvalMode = mode;
      this._changed.emit();
    }
  }

  /** Pending confirmations and clarifications, oldest first. */
  get pending(): TranscriptItem[] {
    return state.pendingRequests(this._state);
  }

  /** Whether a session is in progress. */
  get isRunning(): boolean {
    return state.isRunning(this._state);
  }

  /** The agent's current state (`thinking`, `awaiting_input`, …; `idle` between sessions). */
  get agentState(): string {
    return this._state.agentState;
  }

  /** Who is doing what while a step runs ("Claude Code is reading the notebook."), or ''. */
  get activity(): string {
    return this._state.activity;
  }

  /** What the server accepts for this chat. */
  get supports(): ISupports {
    return this._state.supports;
  }
  set supports(value: ISupports) {
    this._commit(state.withField(this._state, 'supports', value), true);
  }

  /** Whether the user can ask to undo the agent's changes now (see {@link state.canRevert}). */
  get canRevert(): boolean {
    return state.canRevert(this._state);
  }

  /** The sessions whose changes can be undone, as the server keeps them (`undoable_sessions`). */
  setUndoable(value: unknown): void {
    this._commit(state.setUndoable(this._state, value));
  }

  /** Whether an undo request is on its way to the server. */
  get reverting(): boolean {
    return this._state.reverting;
  }
  set reverting(value: boolean) {
    this._commit(state.withField(this._state, 'reverting', value));
  }

  /** Why the last undo failed (shown next to the Undo button), or `null`. */
  get revertError(): string | null {
    return this._state.revertError;
  }
  set revertError(value: string | null) {
    this._commit(state.withField(this._state, 'revertError', value));
  }

  /**
   * Take the answer to an undo; the same notice may come twice.
   *
   * @returns whether the notice was new (and so should be announced).
   */
  applyRevert(notice: IRevertNotice): boolean {
    const fresh = !this._state.reverted.has(notice.sessionId);
    this._commit(state.applyRevert(this._state, notice), true);
    return fresh;
  }

  /** Set the status reported by the server (`GET chats/{id}`). */
  setStatus(status: unknown): void {
    this._commit(state.setStatus(this._state, status));
  }

  /**
   * Add a message typed by the user before the server has answered.
   *
   * @returns the item id, to attach the session id later.
   */
  addUserMessage(text: string, steering = false): string {
    const [next, id] = state.addUserMessage(this._state, text, steering);
    this._commit(next);
    return id;
  }

  /** Attach the session the server started for a user message (once). */
  attachSession(itemId: string, sessionId: string): void {
    this._commit(state.attachSession(this._state, itemId, sessionId));
  }

  /** Whether the session has ended (its terminal event was applied). */
  hasEnded(sessionId: string): boolean {
    return this._state.ended.has(sessionId);
  }

  /** Mark a user message the server refused: it started nothing. */
  markUnsent(itemId: string): void {
    this._commit(state.markUnsent(this._state, itemId));
  }

  /** Add a local notice (info or error) to the transcript. */
  addNotice(variant: 'info' | 'error', text: string): void {
    this._commit(state.addNotice(this._state, variant, text));
  }

  /** Mark a request as being answered, or as answered with an outcome. */
  setRequestState(id: string, requestState: RequestState, outcome?: string): void {
    this._commit(state.setRequestState(this._state, id, requestState, outcome));
  }

  /**
   * Whether sessions requested by this `requested_by` are left out (neither
   * shown nor spoken); the session sets it from the settings.
   */
  hidesRequester: (requestedBy: string) => boolean = () => false;

  /**
   * Take one AAEP event: skip it if already seen, else apply it.
   *
   * @param replay Whether the event comes from history (no announcements).
   * @returns whether the event was new (and shown).
   */
  ingest(event: IAAEPEvent, replay = false): boolean {
    let current = this._state;
    if (current.seen.has(event.event_id)) {
      return false;
    }
    if (coreName(event.type) === 'session.started') {
      const by = str(event, 'requested_by');
      if (by && this.hidesRequester(by)) {
        current = state.hideSession(current, event.session_id);
      }
    }
    const next = applyEvent(current, event, Date.now());
    if (next.hidden.has(event.session_id)) {
      this._state = next; // seen, and nothing else
      return false;
    }
    this._commit(next, true);
    this._eventProcessed.emit({ event, replay });
    return true;
  }

  /**
   * Show guidance the server recorded that this view does not show yet.
   *
   * @returns how many entries were added.
   */
  addGuidance(entries: ReadonlyArray<IGuidance>): number {
    const before = this._state.items.length;
    this._commit(state.addGuidance(this._state, entries));
    return this._state.items.length - before;
  }

  /** Record the server's id (and session) of guidance the user just sent. */
  attachGuidance(itemId: string, guidanceId: string | undefined, sessionId: string | undefined): void {
    this._commit(state.attachGuidance(this._state, itemId, guidanceId, sessionId));
  }

  /**
   * Take a batch of events (history or a resync): in `sequence_number` order
   * within each session, sessions in the order they first appear.
   *
   * @returns the events that were new, in the order applied.
   */
  ingestAll(events: IAAEPEvent[], replay = true): IAAEPEvent[] {
    return orderBatch(events).filter(event => this.ingest(event, replay));
  }

  /** Release resources (signal connections). */
  dispose(): void {
    Signal.clearData(this);
  }

  /**
   * Take a new state: entries that are new objects under an old id count as
   * changed in place (their version goes up); views are told when anything
   * changed (or always, with `force`, for the setters that always told).
   */
  private _commit(next: IChatState, force = false): void {
    const previous = this._state;
    if (next === previous) {
      if (force) {
        this._changed.emit();
      }
      return;
    }
    if (next.items !== previous.items) {
      const old = new Map(previous.items.map(item => [item.id, item]));
      for (const item of next.items) {
        const before = old.get(item.id);
        if (before !== undefined && before !== item) {
          this._versions.set(item.id, (this._versions.get(item.id) ?? 0) + 1);
        }
      }
    }
    this._state = next;
    this._changed.emit();
  }

  private _state: IChatState = state.EMPTY_CHAT;
  private _versions = new Map<string, number>();
  private _title = '';
  private _usage: IUsage | null = null;
  private _policy: IPolicy = OPEN_POLICY;
  private _connection: ConnectionState = 'closed';
  private _everConnected = false;
  private _approvalMode: ApprovalMode = 'ask';
  private _changed = new Signal<this, void>(this);
  private _eventProcessed = new Signal<this, IProcessedEvent>(this);
}
