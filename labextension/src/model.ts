/**
 * State of one chat as the panel shows it: transcript items, pending
 * requests, run status. No DOM here; views listen to {@link ChatModel.changed}
 * and the announcer listens to {@link ChatModel.eventProcessed}.
 *
 * Events are deduplicated by `event_id` (transports deliver at least once and
 * replay on reconnect). Live messages are applied in arrival order: both
 * transports keep a session's order, and gaps in `sequence_number` are normal
 * (the producer filters and merges per subscription, a merged message keeps
 * the number of its newest part), so waiting for a gap to fill would only
 * delay everything after it. Batches (history, a resync after a reconnect)
 * are put in `sequence_number` order per session before they are applied.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  IAAEPEvent,
  TERMINAL_EVENTS,
  bool,
  coreName,
  deadlineOf,
  num,
  pickSummary,
  str
} from './aaep';
import { ConnectionState } from './transport';

/** Run status of a chat. */
export type ChatStatus = 'idle' | 'running' | 'paused';

/** Approval mode of a chat. */
export type ApprovalMode = 'ask' | 'auto';

/** How a confirmation or clarification ended (or `pending`). */
export type RequestState =
  | 'pending'
  | 'sending'
  | 'accepted'
  | 'rejected'
  | 'answered'
  | 'resolved'
  | 'cancelled';

/** A confirmation or clarification request in the transcript. */
export interface IRequestItem {
  kind: 'confirmation' | 'clarification';
  id: string;
  /** The `awaiting.*` event, kept whole (its reply token is echoed exactly). */
  event: IAAEPEvent;
  /** Epoch ms when the request falls back to its default, if known. */
  deadline: number | null;
  state: RequestState;
  /** How it ended, in words, when known. */
  outcome?: string;
}

/** One entry of the transcript. */
export type TranscriptItem =
  | {
      kind: 'user';
      id: string;
      text: string;
      sessionId?: string;
      steering?: boolean;
      /** The server refused it (nothing started). */
      unsent?: boolean;
    }
  | {
      kind: 'answer';
      id: string;
      sessionId: string;
      text: string;
      complete: boolean;
      contentType: string;
    }
  | {
      kind: 'tool';
      id: string;
      sessionId: string;
      callId?: string;
      tool: string;
      summary: string;
      status: 'running' | 'success' | 'error' | 'timeout';
      durationMs?: number;
      errorMessage?: string;
      riskLevel?: string;
    }
  | {
      kind: 'progress';
      id: string;
      sessionId: string;
      percent?: number;
      step?: number;
      totalSteps?: number;
      description?: string;
      done: boolean;
    }
  | IRequestItem
  | { kind: 'handoff'; id: string; event: IAAEPEvent }
  | {
      kind: 'notice';
      id: string;
      variant: 'started' | 'completed' | 'errored' | 'cancelled' | 'reverted' | 'info' | 'error';
      text: string;
      hint?: string;
      sessionId?: string;
    };

/**
 * What the chat's server accepts (`supports` in the chat description).
 * Controls it does not accept are hidden or disabled with a reason.
 */
export interface ISupports {
  stop: boolean;
  pause: boolean;
  guidance: boolean;
  approval_mode: boolean;
  /** Undoing the agent's changes to the notebook (`control` `revert`). */
  revert: boolean;
}

/** Assumed when the server does not say: only what every server has. */
export const DEFAULT_SUPPORTS: ISupports = {
  stop: true,
  pause: false,
  guidance: false,
  approval_mode: true,
  revert: false
};

/** Read `supports` from a chat description, defaulting what is missing. */
export function readSupports(value: unknown): ISupports {
  const raw = (typeof value === 'object' && value !== null ? value : {}) as Record<
    string,
    unknown
  >;
  const flag = (key: keyof ISupports) =>
    typeof raw[key] === 'boolean' ? (raw[key] as boolean) : DEFAULT_SUPPORTS[key];
  return {
    stop: flag('stop'),
    pause: flag('pause'),
    guidance: flag('guidance'),
    approval_mode: flag('approval_mode'),
    revert: flag('revert')
  };
}

/** What the server says after undoing a session's changes (`notebook.reverted`). */
export interface IRevertNotice {
  /** The session whose changes (and every later one's) were undone. */
  sessionId: string;
  /** One sentence for the transcript and the screen reader. */
  summary: string;
}

/** Payload of {@link ChatModel.eventProcessed}. */
export interface IProcessedEvent {
  event: IAAEPEvent;
  /** True while replaying history: announce nothing but a summary. */
  replay: boolean;
}

let localCounter = 0;
function localId(prefix: string): string {
  localCounter += 1;
  return `${prefix}-${localCounter}`;
}

/**
 * The state of one chat.
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

  /** Transcript entries, oldest first. */
  get items(): ReadonlyArray<TranscriptItem> {
    return this._items;
  }

  /** Run status. */
  get status(): ChatStatus {
    return this._status;
  }

  /** Connection state of the transport. */
  get connection(): ConnectionState {
    return this._connection;
  }
  set connection(value: ConnectionState) {
    if (value !== this._connection) {
      this._connection = value;
      this._changed.emit();
    }
  }

  /** The subscription id granted by the producer, if any. */
  subscriptionId: string | null = null;

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
    return this._items.filter(
      item =>
        (item.kind === 'confirmation' || item.kind === 'clarification') &&
        item.state === 'pending'
    );
  }

  /** Whether a session is in progress. */
  get isRunning(): boolean {
    return this._status !== 'idle';
  }

  /** The agent's current state (`thinking`, `awaiting_input`, …; `idle` between sessions). */
  get agentState(): string {
    return this._agentState;
  }

  /** What the server accepts for this chat. */
  get supports(): ISupports {
    return this._supports;
  }
  set supports(value: ISupports) {
    this._supports = value;
    this._changed.emit();
  }

  /**
   * Whether the user can ask to undo the agent's changes now: the server
   * supports it, the agent is idle, nothing is being undone, and a session
   * ran in this chat whose changes were not undone yet.
   */
  get canRevert(): boolean {
    return this._supports.revert && !this.isRunning && !this._reverting && this._undoable.length > 0;
  }

  /** Whether an undo request is on its way to the server. */
  get reverting(): boolean {
    return this._reverting;
  }
  set reverting(value: boolean) {
    if (value !== this._reverting) {
      this._reverting = value;
      this._changed.emit();
    }
  }

  /** Why the last undo failed (shown next to the Undo button), or `null`. */
  get revertError(): string | null {
    return this._revertError;
  }
  set revertError(value: string | null) {
    if (value !== this._revertError) {
      this._revertError = value;
      this._changed.emit();
    }
  }

  /**
   * Take a `notebook.reverted` notice. The same notice arrives as the answer
   * to the request and on the chat's stream: only the first one counts.
   *
   * @returns whether the notice was new (and so should be announced).
   */
  applyRevert(notice: IRevertNotice): boolean {
    this._reverting = false;
    if (this._reverted.has(notice.sessionId)) {
      this._changed.emit();
      return false;
    }
    this._reverted.add(notice.sessionId);
    this._revertError = null;
    // The server undoes that session and every later one (they built on it).
    const index = this._undoable.indexOf(notice.sessionId);
    this._undoable = index >= 0 ? this._undoable.slice(0, index) : [];
    this._items.push({
      kind: 'notice',
      id: `revert:${notice.sessionId}`,
      variant: 'reverted',
      text: notice.summary,
      sessionId: notice.sessionId
    });
    this._changed.emit();
    return true;
  }

  /** Set the status reported by the server (`GET chats/{id}`). */
  setStatus(status: unknown): void {
    if (status === 'idle' || status === 'running' || status === 'paused') {
      this._updateStatus(status);
    }
  }

  /**
   * Add a message typed by the user before the server has answered.
   *
   * @returns the item id, to attach the session id later.
   */
  addUserMessage(text: string, steering = false): string {
    const id = localId('user');
    this._items.push({ kind: 'user', id, text, steering });
    this._changed.emit();
    return id;
  }

  /** Attach the session the server started for a user message (once). */
  attachSession(itemId: string, sessionId: string): void {
    const item = this._items.find(i => i.id === itemId);
    if (item && item.kind === 'user' && item.sessionId === undefined) {
      item.sessionId = sessionId;
      this._changed.emit();
    }
  }

  /** Whether the session has ended (its terminal event was applied). */
  hasEnded(sessionId: string): boolean {
    return this._ended.has(sessionId);
  }

  /** Mark a user message the server refused: it started nothing. */
  markUnsent(itemId: string): void {
    const item = this._items.find(i => i.id === itemId);
    if (item && item.kind === 'user') {
      item.unsent = true;
      this._changed.emit();
    }
  }

  /** Add a local notice (info or error) to the transcript. */
  addNotice(variant: 'info' | 'error', text: string): void {
    this._items.push({ kind: 'notice', id: localId('notice'), variant, text });
    this._changed.emit();
  }

  /** Mark a request as being answered, or as answered with an outcome. */
  setRequestState(id: string, state: RequestState, outcome?: string): void {
    const item = this._items.find(i => i.id === id);
    if (item && (item.kind === 'confirmation' || item.kind === 'clarification')) {
      item.state = state;
      item.outcome = outcome ?? item.outcome;
      this._changed.emit();
    }
  }

  /**
   * Take one AAEP event: skip it if already seen, else apply it.
   *
   * @param replay Whether the event comes from history (no announcements).
   * @returns whether the event was new.
   */
  ingest(event: IAAEPEvent, replay = false): boolean {
    if (this._seen.has(event.event_id)) {
      return false;
    }
    this._seen.add(event.event_id);
    this._apply(event, replay);
    return true;
  }

  /**
   * Take a batch of events (history or a resync): in `sequence_number` order
   * within each session, sessions in the order they first appear.
   *
   * @returns the events that were new, in the order applied.
   */
  ingestAll(events: IAAEPEvent[], replay = true): IAAEPEvent[] {
    const firstSeen = new Map<string, number>();
    events.forEach((event, index) => {
      if (!firstSeen.has(event.session_id)) {
        firstSeen.set(event.session_id, index);
      }
    });
    const ordered = events
      .map((event, index) => ({ event, index }))
      .sort((a, b) => {
        const session = firstSeen.get(a.event.session_id)! - firstSeen.get(b.event.session_id)!;
        if (session !== 0) {
          return session;
        }
        const sa = a.event.sequence_number;
        const sb = b.event.sequence_number;
        return typeof sa === 'number' && typeof sb === 'number' && sa !== sb ? sa - sb : a.index - b.index;
      });
    return ordered.map(o => o.event).filter(event => this.ingest(event, replay));
  }

  /** Release resources (signal connections). */
  dispose(): void {
    Signal.clearData(this);
  }

  private _apply(event: IAAEPEvent, replay: boolean): void {
    const name = coreName(event.type);
    const sid = event.session_id;
    const summary = pickSummary(event, 'normal') ?? '';
    switch (name) {
      case 'session.started': {
        this._updateStatus('running');
        if (!this._undoable.includes(sid)) {
          this._undoable.push(sid);
        }
        this._revertError = null;
        const request = str(event, 'request_text');
        const known = this._items.some(
          i =>
            i.kind === 'user' &&
            (i.sessionId === sid || (i.sessionId === undefined && i.text === request))
        );
        if (request && !known) {
          this._items.push({ kind: 'user', id: localId('user'), text: request, sessionId: sid });
        } else if (request) {
          const mine = this._items.find(
            i => i.kind === 'user' && i.sessionId === undefined && i.text === request
          );
          if (mine && mine.kind === 'user') {
            mine.sessionId = sid;
          }
        }
        break;
      }
      case 'output.streaming': {
        const outputId = str(event, 'output_id') ?? `session:${sid}`;
        const key = `answer:${outputId}`;
        let item = this._items.find(i => i.id === key);
        if (!item) {
          item = {
            kind: 'answer',
            id: key,
            sessionId: sid,
            text: '',
            complete: false,
            contentType: str(event, 'content_type') ?? 'text/markdown'
          };
          this._items.push(item);
        }
        if (item.kind === 'answer' && !item.complete) {
          item.text += typeof event.chunk === 'string' ? event.chunk : '';
          item.complete = bool(event, 'complete') === true;
        }
        break;
      }
      case 'tool.invoked': {
        this._resolveRequests(sid, 'resolved');
        const callId = str(event, 'tool_call_id');
        this._items.push({
          kind: 'tool',
          id: callId ? `tool:${callId}` : localId('tool'),
          sessionId: sid,
          callId,
          tool: str(event, 'tool') ?? 'tool',
          summary,
          status: 'running',
          riskLevel: str(event, 'risk_level')
        });
        break;
      }
      case 'tool.completed': {
        const callId = str(event, 'tool_call_id');
        const tool = str(event, 'tool');
        const item = [...this._items]
          .reverse()
          .find(
            i =>
              i.kind === 'tool' &&
              i.sessionId === sid &&
              (callId ? i.callId === callId : i.tool === tool && i.status === 'running')
          );
        if (item && item.kind === 'tool') {
          const status = str(event, 'status');
          item.status =
            status === 'error' || status === 'timeout' ? status : 'success';
          item.durationMs = num(event, 'duration_ms');
          item.errorMessage = str(event, 'error_message');
          if (summary) {
            item.summary = `${item.summary} ${summary}`.trim();
          }
        }
        const progress = this._items.find(i => i.id === `progress:${sid}`);
        if (progress && progress.kind === 'progress') {
          progress.done = true;
        }
        break;
      }
      case 'progress.updated': {
        const progress = (event.progress ?? {}) as Record<string, unknown>;
        const key = `progress:${sid}`;
        const item = {
          kind: 'progress' as const,
          id: key,
          sessionId: sid,
          percent: num(progress, 'percent'),
          step: num(progress, 'step'),
          totalSteps: num(progress, 'total_steps'),
          description: str(progress, 'description') ?? (summary || undefined),
          done: false
        };
        const index = this._items.findIndex(i => i.id === key);
        const previous = index >= 0 ? this._items[index] : null;
        if (previous && previous.kind === 'progress' && !previous.done) {
          this._items[index] = item;
        } else {
          // A new long step: show its progress at the end of the transcript.
          if (index >= 0) {
            this._items.splice(index, 1);
          }
          this._items.push(item);
        }
        break;
      }
      case 'awaiting.confirmation':
      case 'awaiting.clarification': {
        this._items.push({
          kind: name === 'awaiting.confirmation' ? 'confirmation' : 'clarification',
          id: `request:${event.event_id}`,
          event,
          deadline: deadlineOf(event),
          state: 'pending'
        });
        break;
      }
      case 'state.changed': {
        const from = str(event, 'from_state');
        const to = str(event, 'to_state');
        this._agentState = to ?? this._agentState;
        if (from === 'awaiting_input' && to !== 'awaiting_input') {
          this._resolveRequests(sid, 'resolved', summary || undefined);
        }
        if (to === 'paused') {
          this._updateStatus('paused');
        } else if (from === 'paused') {
          this._updateStatus('running');
        }
        break;
      }
      case 'handoff.requested':
        this._items.push({ kind: 'handoff', id: `handoff:${event.event_id}`, event });
        break;
      case 'session.completed':
      case 'session.errored':
      case 'session.cancelled': {
        const variant = name.slice('session.'.length) as
          | 'completed'
          | 'errored'
          | 'cancelled';
        this._resolveRequests(sid, variant === 'cancelled' ? 'cancelled' : 'resolved');
        this._finishSession(sid);
        const hint = str(event, 'remediation_hint');
        this._items.push({
          kind: 'notice',
          id: `end:${event.event_id}`,
          variant,
          // The hint gets its own line; producers often end the summary with it too.
          text: withoutHint(summary, hint) || summary,
          hint,
          sessionId: sid
        });
        break;
      }
      default:
        // Unknown or extension type: show its summary if it has one.
        if (summary && name === null) {
          this._items.push({ kind: 'notice', id: `evt:${event.event_id}`, variant: 'info', text: summary });
        }
    }
    if (name && TERMINAL_EVENTS.has(name)) {
      this._ended.add(sid);
      this._agentState = 'idle';
      this._updateStatus('idle');
    }
    this._changed.emit();
    this._eventProcessed.emit({ event, replay });
  }

  /** Close streaming answers, running tools and progress of a session. */
  private _finishSession(sid: string): void {
    for (const item of this._items) {
      if (item.kind === 'answer' && item.sessionId === sid) {
        item.complete = true;
      } else if (item.kind === 'progress' && item.sessionId === sid) {
        item.done = true;
      } else if (item.kind === 'tool' && item.sessionId === sid && item.status === 'running') {
        item.status = 'timeout';
      }
    }
  }

  /** Resolve the pending requests of a session (someone answered, or it ended). */
  private _resolveRequests(sid: string, state: RequestState, outcome?: string): void {
    for (const item of this._items) {
      if (
        (item.kind === 'confirmation' || item.kind === 'clarification') &&
        item.event.session_id === sid &&
        (item.state === 'pending' || item.state === 'sending')
      ) {
        item.state = state;
        item.outcome = outcome ?? item.outcome;
      }
    }
  }

  private _updateStatus(status: ChatStatus): void {
    if (status !== this._status) {
      this._status = status;
      this._changed.emit();
    }
  }

  private _items: TranscriptItem[] = [];
  private _seen = new Set<string>();
  private _ended = new Set<string>();
  private _status: ChatStatus = 'idle';
  private _agentState = 'idle';
  private _supports: ISupports = { ...DEFAULT_SUPPORTS };
  private _connection: ConnectionState = 'closed';
  private _approvalMode: ApprovalMode = 'ask';
  /** Sessions of this chat whose changes were not undone, oldest first. */
  private _undoable: string[] = [];
  private _reverted = new Set<string>();
  private _reverting = false;
  private _revertError: string | null = null;
  private _changed = new Signal<this, void>(this);
  private _eventProcessed = new Signal<this, IProcessedEvent>(this);
}

/**
 * Remove a remediation hint the summary repeats at its end, so it is shown
 * and said once.
 */
export function withoutHint(summary: string, hint: string | undefined): string {
  if (!hint) {
    return summary;
  }
  const trimmed = summary.trim();
  return trimmed.endsWith(hint.trim())
    ? trimmed.slice(0, trimmed.length - hint.trim().length).trim()
    : trimmed;
}
