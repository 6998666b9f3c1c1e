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

import { IAAEPEvent, TERMINAL_EVENTS, bool, coreName, deadlineOf, num, pickSummary, str } from './aaep';
import { endsSentence } from './speech';
import { ConnectionState } from './eventStream';

/** Run status of a chat. */
export type ChatStatus = 'idle' | 'running' | 'paused';

/**
 * Approval mode of a chat (the server's wire values): `ask` asks before
 * running code, `ask_all` before every change, `auto` approves unflagged
 * calls itself.
 */
export type ApprovalMode = 'ask' | 'ask_all' | 'auto';

/** The approval modes, strictest first (the order of the panel's select). */
export const APPROVAL_MODES: readonly ApprovalMode[] = ['ask_all', 'ask', 'auto'];

/** Whether `value` is an approval mode this panel knows. */
export function isApprovalMode(value: unknown): value is ApprovalMode {
  return (APPROVAL_MODES as readonly unknown[]).includes(value);
}

/** How a confirmation or clarification ended (or `pending`). */
export type RequestState = 'pending' | 'sending' | 'accepted' | 'rejected' | 'answered' | 'resolved' | 'cancelled';

/** A confirmation or clarification request in the transcript. */
export interface IRequestItem {
  kind: 'confirmation' | 'clarification';
  id: string;
  /** The `awaiting.*` event, kept whole (its reply token is echoed exactly). */
  event: IAAEPEvent;
  /** Epoch ms when the request falls back to its default, if known (`null` while paused). */
  deadline: number | null;
  /** While the session is paused, the ms its clock had left (the server stops it too). */
  pausedRemaining?: number;
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
      /** The server's id of this guidance (`gd_…`), once it answered. */
      guidanceId?: string;
      /** The server refused it (nothing started). */
      unsent?: boolean;
      /** Epoch ms of the event (or guidance) it comes from, when known. */
      at?: number;
    }
  | {
      kind: 'answer';
      id: string;
      sessionId: string;
      text: string;
      complete: boolean;
      contentType: string;
      /** A Stop (or an error) ended it in the middle of a sentence. */
      cutOff?: boolean;
    }
  | {
      kind: 'tool';
      id: string;
      sessionId: string;
      callId?: string;
      tool: string;
      /** One sentence: what it does while running, its result once finished. */
      summary: string;
      /** The detailed result (a cell's whole output, bounded), when the producer sent one. */
      detail?: string;
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
      /** A cell left running (a session opened by the kernel watcher, not a request). */
      cellRun?: boolean;
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
      /** Tool steps of the session that failed or timed out (on a session's end). */
      failedSteps?: number;
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
  /** Resuming a paused session (`control` `resume`); follows `pause` when absent. */
  resume: boolean;
  /** Continuing an interrupted request (`control` `continue`). */
  continue: boolean;
}

/** What the server's administrator fixed (`policy` in `GET chats/{id}`). */
export interface IPolicy {
  /** Names of the settings users cannot change (`approval_mode`, `model`, …). */
  locked: string[];
  /** The approval modes users may choose, in the panel's order. */
  approvalModes: ApprovalMode[];
  /** What the administrator fixed, in one sentence, or `null` when nothing is. */
  message: string | null;
}

/** The policy when the server sets none: everything may be chosen. */
export const OPEN_POLICY: IPolicy = { locked: [], approvalModes: [...APPROVAL_MODES], message: null };

/** Read `policy` from a chat description; an absent or malformed one locks nothing. */
export function readPolicy(value: unknown): IPolicy {
  if (typeof value !== 'object' || value === null) {
    return OPEN_POLICY;
  }
  const raw = value as Record<string, unknown>;
  const locked = Array.isArray(raw.locked) ? raw.locked.filter((v): v is string => typeof v === 'string') : [];
  const allowed = Array.isArray(raw.approval_modes) ? raw.approval_modes : APPROVAL_MODES;
  const approvalModes = APPROVAL_MODES.filter(mode => allowed.includes(mode));
  return {
    locked,
    approvalModes: approvalModes.length > 0 ? approvalModes : [...APPROVAL_MODES],
    message: typeof raw.message === 'string' && raw.message.trim() ? raw.message : null
  };
}

/** Token usage of a chat (`usage` in `GET chats/{id}`), summed over its sessions. */
export interface IUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  requests: number;
  /** Estimated cost in US dollars; `null` when the model has no known price (the offline demo). */
  costUsd: number | null;
  /** The chat's budget in US dollars, or `null` without one. */
  budgetUsd: number | null;
  /** How often earlier context was summarised. */
  compactions: number;
}

/** Read `usage` from a chat description, or `null` when it has none. */
export function readUsage(value: unknown): IUsage | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const raw = value as Record<string, unknown>;
  const count = (key: string) =>
    typeof raw[key] === 'number' && Number.isFinite(raw[key]) ? Math.max(0, raw[key] as number) : 0;
  const budget = raw.budget_usd;
  const cost = raw.estimated_cost_usd;
  return {
    inputTokens: count('input_tokens'),
    outputTokens: count('output_tokens'),
    cacheReadTokens: count('cache_read_input_tokens'),
    cacheWriteTokens: count('cache_creation_input_tokens'),
    requests: count('requests'),
    // No price, no figure: null stays null rather than becoming a misleading $0.00.
    costUsd: cost === null ? null : count('estimated_cost_usd'),
    budgetUsd: typeof budget === 'number' && Number.isFinite(budget) ? budget : null,
    compactions: count('context_compactions')
  };
}

/** Every token of a usage: prompt tokens however served, and output. */
export function totalTokens(usage: IUsage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}

/** A token count in few characters: 950, 12.3k, 4.5M. */
export function compactCount(n: number): string {
  if (n < 1000) {
    return String(Math.round(n));
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`;
  }
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Dollars as the meter shows them: two decimals, four below a cent. */
export function dollars(amount: number): string {
  return amount >= 0.01 || amount === 0 ? `$${amount.toFixed(2)}` : `$${amount.toFixed(4)}`;
}

/** Assumed when the server does not say: only what every server has. */
export const DEFAULT_SUPPORTS: ISupports = {
  stop: true,
  pause: false,
  guidance: false,
  approval_mode: true,
  revert: false,
  resume: false,
  continue: false
};

/** Read `supports` from a chat description, defaulting what is missing. */
export function readSupports(value: unknown): ISupports {
  const raw = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const flag = (key: keyof ISupports) =>
    typeof raw[key] === 'boolean' ? (raw[key] as boolean) : DEFAULT_SUPPORTS[key];
  return {
    stop: flag('stop'),
    pause: flag('pause'),
    guidance: flag('guidance'),
    approval_mode: flag('approval_mode'),
    revert: flag('revert'),
    // A server that can pause can resume, unless it says otherwise.
    resume: typeof raw.resume === 'boolean' ? raw.resume : flag('pause'),
    continue: flag('continue')
  };
}

/** Guidance the server recorded for this chat (`guidance` of `GET chats/{id}`). */
export interface IGuidance {
  guidanceId: string;
  sessionId?: string;
  text: string;
  /** Epoch ms, or NaN when unknown. */
  created: number;
}

/** Read the `guidance` list of a chat description (entries it cannot read are skipped). */
export function readGuidance(value: unknown): IGuidance[] {
  if (!Array.isArray(value)) {
    return [];
  }
  const out: IGuidance[] = [];
  for (const raw of value) {
    if (typeof raw !== 'object' || raw === null) {
      continue;
    }
    const entry = raw as Record<string, unknown>;
    if (typeof entry.guidance_id !== 'string' || typeof entry.text !== 'string') {
      continue;
    }
    out.push({
      guidanceId: entry.guidance_id,
      sessionId: typeof entry.session_id === 'string' ? entry.session_id : undefined,
      text: entry.text,
      created: typeof entry.created === 'string' ? Date.parse(entry.created) : NaN
    });
  }
  return out;
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

  /**
   * How often the item with this id changed in place since it was added.
   * Views re-render an entry only when its version changes, so a streamed
   * chunk renders one entry, not the whole transcript.
   */
  version(id: string): number {
    return this._versions.get(id) ?? 0;
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

  /**
   * Whether Continue can be offered: the server supports it, nothing runs,
   * and the chat's last request was interrupted (the server said
   * `can_continue`, or a session ended with a recoverable error).
   */
  get canContinue(): boolean {
    return this._supports.continue && !this.isRunning && (this._canContinue || this._recoverableEnd);
  }

  /**
   * Set what the server says (`can_continue` in the chat description). A
   * recoverable error seen on the stream still counts: a description read
   * while the session winds down may not say so yet.
   */
  setCanContinue(value: unknown): void {
    if (typeof value === 'boolean' && value !== this._canContinue) {
      this._canContinue = value;
      this._changed.emit();
    }
  }

  /** Forget every reason to offer Continue (the user chose it, or it was refused). */
  clearContinue(): void {
    this._canContinue = false;
    this._recoverableEnd = false;
    this._changed.emit();
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
  /** What the administrator fixed for this server. */
  get policy(): IPolicy {
    return this._policy;
  }
  set policy(policy: IPolicy) {
    this._policy = policy;
    this._changed.emit();
  }

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
      item => (item.kind === 'confirmation' || item.kind === 'clarification') && item.state === 'pending'
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

  /**
   * The sessions whose changes can be undone, as the server keeps them
   * (`undoable_sessions`): a request that changed nothing is not among them.
   */
  setUndoable(value: unknown): void {
    if (!Array.isArray(value)) {
      return; // an older server: the sessions seen so far stand in
    }
    this._undoable = value.filter((v): v is string => typeof v === 'string');
    this._changed.emit();
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
      this._touch(item);
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
      this._touch(item);
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
      this._touch(item);
      this._changed.emit();
    }
  }

  /**
   * Whether sessions requested by this `requested_by` are left out (neither
   * shown nor spoken); the controller sets it from the settings.
   */
  hidesRequester: (requestedBy: string) => boolean = () => false;

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
    if (coreName(event.type) === 'session.started') {
      const by = str(event, 'requested_by');
      if (by && this.hidesRequester(by)) {
        this._hidden.add(event.session_id);
      }
    }
    if (this._hidden.has(event.session_id)) {
      return false; // the person asked not to hear about these (a panel setting)
    }
    const before = this._items.length;
    const at = Date.parse(event.timestamp);
    // Remember when new entries happened, to place guidance read from history.
    const mark = () => {
      for (let i = before; i < this._items.length; i++) {
        const item = this._items[i] as { at?: number };
        if (item.at === undefined && Number.isFinite(at)) {
          item.at = at;
        }
      }
    };
    this._apply(event, replay, mark);
    return true;
  }

  /**
   * Show guidance the server recorded (`guidance` of the chat description)
   * that this view does not show yet, in time order among the entries.
   *
   * @returns how many entries were added.
   */
  addGuidance(entries: ReadonlyArray<IGuidance>): number {
    let added = 0;
    let adopted = false;
    for (const entry of entries) {
      const known = this._items.some(i => i.kind === 'user' && i.steering && i.guidanceId === entry.guidanceId);
      if (known) {
        continue;
      }
      // Guidance this view just sent, read back before the server's answer gave it its id:
      // the same message, not a second one.
      const sent = this._items.find(
        i => i.kind === 'user' && i.steering && i.guidanceId === undefined && i.text === entry.text
      );
      if (sent && sent.kind === 'user') {
        sent.guidanceId = entry.guidanceId;
        sent.sessionId = sent.sessionId ?? entry.sessionId;
        this._touch(sent);
        adopted = true;
        continue;
      }
      const item: TranscriptItem = {
        kind: 'user',
        id: `guidance:${entry.guidanceId}`,
        text: entry.text,
        sessionId: entry.sessionId,
        steering: true,
        guidanceId: entry.guidanceId,
        at: entry.created
      };
      const index = Number.isFinite(entry.created)
        ? this._items.findIndex(
            i => (i as { at?: number }).at !== undefined && (i as { at?: number }).at! > entry.created
          )
        : -1;
      if (index >= 0) {
        this._items.splice(index, 0, item);
      } else {
        this._items.push(item);
      }
      added += 1;
    }
    if (added > 0 || adopted) {
      this._changed.emit();
    }
    return added;
  }

  /** Record the server's id (and session) of guidance the user just sent. */
  attachGuidance(itemId: string, guidanceId: string | undefined, sessionId: string | undefined): void {
    const item = this._items.find(i => i.id === itemId);
    if (item && item.kind === 'user') {
      item.steering = true;
      item.guidanceId = guidanceId ?? item.guidanceId;
      item.sessionId = item.sessionId ?? sessionId;
      this._touch(item);
      this._changed.emit();
    }
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

  private _apply(event: IAAEPEvent, replay: boolean, mark: () => void): void {
    const name = coreName(event.type);
    const sid = event.session_id;
    const summary = pickSummary(event, 'normal') ?? '';
    switch (name) {
      case 'session.started': {
        if ((str(event, 'requested_by') ?? '').startsWith(KERNEL_REQUESTER)) {
          // A long cell's story, not a request: the agent's status and Undo are not its business.
          this._cellRuns.add(sid);
          break;
        }
        this._updateStatus('running');
        this._canContinue = false;
        this._recoverableEnd = false;
        if (!this._undoable.includes(sid)) {
          this._undoable.push(sid);
        }
        this._revertError = null;
        const request = str(event, 'request_text');
        const known = this._items.some(
          i => i.kind === 'user' && (i.sessionId === sid || (i.sessionId === undefined && i.text === request))
        );
        if (request && !known) {
          this._items.push({ kind: 'user', id: localId('user'), text: request, sessionId: sid });
        } else if (request) {
          const mine = this._items.find(i => i.kind === 'user' && i.sessionId === undefined && i.text === request);
          if (mine && mine.kind === 'user') {
            mine.sessionId = sid;
            this._touch(mine);
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
          this._touch(item);
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
          item.status = status === 'error' || status === 'timeout' ? status : 'success';
          item.durationMs = num(event, 'duration_ms');
          item.errorMessage = str(event, 'error_message');
          // The result tells the step ("Created cell 4"); its start is not repeated.
          if (summary) {
            item.summary = summary;
          }
          const detail = str(event, 'summary_detailed');
          item.detail = detail && detail !== summary ? detail : undefined;
          this._touch(item);
        }
        const progress = this._items.find(i => i.id === `progress:${sid}`);
        if (progress && progress.kind === 'progress') {
          progress.done = true;
          this._touch(progress);
        }
        break;
      }
      case 'progress.updated': {
        const progress = (event.progress ?? {}) as Record<string, unknown>;
        if (this._isNotice(event, progress)) {
          // A notice about the chat (saving stopped or resumed): its own entry, so it
          // neither replaces nor is replaced by the step's progress (an approval countdown).
          const text = summary || str(progress, 'description');
          if (text) {
            this._items.push({ kind: 'notice', id: `evt:${event.event_id}`, variant: 'info', text, sessionId: sid });
          }
          break;
        }
        const key = `progress:${sid}`;
        const item = {
          kind: 'progress' as const,
          id: key,
          sessionId: sid,
          percent: num(progress, 'percent'),
          step: num(progress, 'step'),
          totalSteps: num(progress, 'total_steps'),
          description: str(progress, 'description') ?? (summary || undefined),
          cellRun: this._cellRuns.has(sid) || undefined,
          done: false
        };
        const index = this._items.findIndex(i => i.id === key);
        const previous = index >= 0 ? this._items[index] : null;
        if (previous && previous.kind === 'progress' && !previous.done) {
          this._items[index] = item;
          this._touch(item);
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
        const extra = event.extra_context;
        // Approved by the chat's setting: shown as such, never as waiting for the user.
        const automatic =
          typeof extra === 'object' && extra !== null && (extra as Record<string, unknown>).auto_approved === true;
        this._items.push({
          kind: name === 'awaiting.confirmation' ? 'confirmation' : 'clarification',
          id: `request:${event.event_id}`,
          event,
          deadline: automatic ? null : deadlineOf(event),
          state: automatic ? 'resolved' : 'pending'
        });
        break;
      }
      case 'state.changed': {
        const from = str(event, 'from_state');
        const to = str(event, 'to_state');
        this._agentState = to ?? this._agentState;
        // A pause while a request waits keeps it open (it can still be answered; the
        // server acts on the answer at the resume): only leaving for work resolves it.
        if (to === 'paused') {
          this._holdRequests(sid, true);
        } else if (from === 'paused') {
          this._holdRequests(sid, false);
        }
        if (from === 'awaiting_input' && to !== 'awaiting_input' && to !== 'paused') {
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
        const variant = name.slice('session.'.length) as 'completed' | 'errored' | 'cancelled';
        this._resolveRequests(sid, variant === 'cancelled' ? 'cancelled' : 'resolved');
        this._finishSession(sid, variant !== 'completed');
        this._recoverableEnd = variant === 'errored' && bool(event, 'recoverable') === true;
        const hint = str(event, 'remediation_hint');
        // The end's own summary may not say that a step failed; then the notice does
        // (a producer that says it, like ours, is not repeated).
        const saidFailed = /\bsteps? failed\b/i.test(summary ?? '');
        const failedSteps = saidFailed
          ? 0
          : this._items.filter(
              i => i.kind === 'tool' && i.sessionId === sid && (i.status === 'error' || i.status === 'timeout')
            ).length;
        this._items.push({
          kind: 'notice',
          id: `end:${event.event_id}`,
          variant,
          failedSteps,
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
      if (!this._cellRuns.has(sid)) {
        this._agentState = 'idle';
        this._updateStatus('idle');
      }
    }
    mark();
    this._changed.emit();
    this._eventProcessed.emit({ event, replay });
  }

  /**
   * Whether a progress update is a notice about the chat rather than a step's
   * progress: the producer wants it heard (`urgency: normal`), it carries no
   * numbers, and no step of its session is running (the chat store's
   * "not being saved" / "saving again").
   */
  private _isNotice(event: IAAEPEvent, progress: Record<string, unknown>): boolean {
    const sid = event.session_id;
    return (
      event.urgency === 'normal' &&
      !this._cellRuns.has(sid) &&
      num(progress, 'percent') === undefined &&
      num(progress, 'step') === undefined &&
      num(event, 'eta_ms') === undefined &&
      !this._items.some(i => i.kind === 'tool' && i.sessionId === sid && i.status === 'running')
    );
  }

  /**
   * Close streaming answers, running tools and progress of a session. When it
   * was stopped or failed, its last answer is marked as cut off if it ends in
   * the middle of a sentence.
   */
  private _finishSession(sid: string, interrupted = false): void {
    if (interrupted) {
      const last = [...this._items].reverse().find(i => i.kind === 'answer' && i.sessionId === sid);
      if (last && last.kind === 'answer' && last.text.trim() && !endsSentence(last.text)) {
        last.cutOff = true;
        this._touch(last);
      }
    }
    for (const item of this._items) {
      if (item.kind === 'answer' && item.sessionId === sid && !item.complete) {
        item.complete = true;
        this._touch(item);
      } else if (item.kind === 'progress' && item.sessionId === sid && !item.done) {
        item.done = true;
        this._touch(item);
      } else if (item.kind === 'tool' && item.sessionId === sid && item.status === 'running') {
        item.status = 'timeout';
        this._touch(item);
      }
    }
  }

  /** Resolve the pending requests of a session (someone answered, or it ended). */
  /** Stop (`hold`) or restart the clocks of a session's open requests, as the server does. */
  private _holdRequests(sid: string, hold: boolean): void {
    const now = Date.now();
    for (const item of this._items) {
      if ((item.kind === 'confirmation' || item.kind === 'clarification') && item.event.session_id === sid) {
        if (hold && item.deadline !== null) {
          item.pausedRemaining = Math.max(0, item.deadline - now);
          item.deadline = null;
          this._touch(item);
        } else if (!hold && item.pausedRemaining !== undefined) {
          item.deadline = now + item.pausedRemaining;
          item.pausedRemaining = undefined;
          this._touch(item);
        }
      }
    }
  }

  private _resolveRequests(sid: string, state: RequestState, outcome?: string): void {
    for (const item of this._items) {
      if (
        (item.kind === 'confirmation' || item.kind === 'clarification') &&
        item.event.session_id === sid &&
        (item.state === 'pending' || item.state === 'sending')
      ) {
        item.state = state;
        item.outcome = outcome ?? item.outcome;
        this._touch(item);
      }
    }
  }

  /** Note that an item changed in place, so its view renders it again. */
  private _touch(item: TranscriptItem): void {
    this._versions.set(item.id, (this._versions.get(item.id) ?? 0) + 1);
  }

  private _updateStatus(status: ChatStatus): void {
    if (status !== this._status) {
      this._status = status;
      this._changed.emit();
    }
  }

  private _items: TranscriptItem[] = [];
  private _versions = new Map<string, number>();
  private _title = '';
  private _usage: IUsage | null = null;
  private _canContinue = false;
  /** The last session ended with a recoverable error. */
  private _recoverableEnd = false;
  private _seen = new Set<string>();
  private _ended = new Set<string>();
  private _policy: IPolicy = OPEN_POLICY;
  /** Sessions that tell a cell left running (`requested_by` `kernel:…`). */
  private _cellRuns = new Set<string>();
  /** Sessions left out because of {@link hidesRequester}. */
  private _hidden = new Set<string>();
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
  return trimmed.endsWith(hint.trim()) ? trimmed.slice(0, trimmed.length - hint.trim().length).trim() : trimmed;
}

/** Turns (a request and everything after it) shown before older ones are collapsed. */
export const VISIBLE_TURNS = 20;

/**
 * Where the shown part of the transcript starts: the first item of the
 * `VISIBLE_TURNS`-th newest turn (a turn starts at a request, not at
 * guidance). Returns the index and how many turns lie before it.
 */
export function collapsePoint(
  items: ReadonlyArray<TranscriptItem>,
  visibleTurns: number = VISIBLE_TURNS
): { start: number; hiddenTurns: number } {
  const starts: number[] = [];
  items.forEach((item, index) => {
    if (item.kind === 'user' && !item.steering) {
      starts.push(index);
    }
  });
  if (starts.length <= visibleTurns) {
    return { start: 0, hiddenTurns: 0 };
  }
  const first = starts.length - visibleTurns;
  return { start: starts[first], hiddenTurns: first + (starts[0] > 0 ? 1 : 0) };
}

/**
 * The detailed result of the newest cell run in the transcript (the agent's
 * `run_cell`, `run_all_cells` or `wait_for_cell` steps), for "Hear the last output": its
 * detailed summary when the producer sent one, else its one-sentence result;
 * `null` when the agent ran no cell in this chat.
 */
export function lastRunOutput(items: ReadonlyArray<TranscriptItem>): string | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'tool' && RUN_TOOLS.has(item.tool) && item.status !== 'running') {
      return item.detail ?? item.summary;
    }
  }
  return null;
}

/** The tools whose results are cell outputs. */
const RUN_TOOLS: ReadonlySet<string> = new Set(['run_cell', 'run_all_cells', 'wait_for_cell']);

/** `requested_by` prefix of sessions that tell a long cell's run (the server's kernel watcher). */
export const KERNEL_REQUESTER = 'kernel:';

/** `requested_by` of the sessions about cells the person ran. */
export const PERSON_RUN = 'kernel:person-run';
