/**
 * The state of one chat as a plain value, and the pure changes the person's
 * actions and the server's answers make to it. Nothing here mutates its
 * input, reads a clock or touches the DOM: each change returns a new state
 * (unchanged entries are shared), so a test can hold the before and the
 * after side by side. The events' own changes are in `applyEvent.ts`;
 * `ChatModel` (model.ts) holds the current state and tells the views.
 */
import {
  ChatStatus,
  DEFAULT_SUPPORTS,
  IGuidance,
  IRevertNotice,
  ISupports,
  RequestState,
  TranscriptItem
} from './transcript';

/** One chat, as the panel knows it. */
export interface IChatState {
  /** Transcript entries, oldest first. */
  readonly items: ReadonlyArray<TranscriptItem>;
  /** Ids of the events applied (transports deliver at least once). */
  readonly seen: ReadonlySet<string>;
  /** Sessions whose terminal event was applied. */
  readonly ended: ReadonlySet<string>;
  /** Sessions that tell a cell left running (`requested_by` `kernel:…`). */
  readonly cellRuns: ReadonlySet<string>;
  /** Sessions the person asked not to hear about (a panel setting). */
  readonly hidden: ReadonlySet<string>;
  /** Run status. */
  readonly status: ChatStatus;
  /** The agent's state (`thinking`, `awaiting_input`, …; `idle` between sessions). */
  readonly agentState: string;
  /**
   * Who is doing what while a step runs, in the server's words ("Claude Code
   * is reading the notebook."), or '' (the status line then names the state).
   */
  readonly activity: string;
  /** What the server says (`can_continue` in the chat description). */
  readonly serverCanContinue: boolean;
  /** The last session ended with a recoverable error. */
  readonly recoverableEnd: boolean;
  /** What the server accepts for this chat. */
  readonly supports: ISupports;
  /** Sessions of this chat whose changes were not undone, oldest first. */
  readonly undoable: ReadonlyArray<string>;
  /** Sessions whose changes were undone (the notice is shown once). */
  readonly reverted: ReadonlySet<string>;
  /** An undo request is on its way to the server. */
  readonly reverting: boolean;
  /** Why the last undo failed, or `null`. */
  readonly revertError: string | null;
  /** How many local entries (typed messages, local notices) were made: their ids. */
  readonly localCount: number;
}

/** A chat with nothing in it yet. */
export const EMPTY_CHAT: IChatState = {
  items: [],
  seen: new Set(),
  ended: new Set(),
  cellRuns: new Set(),
  hidden: new Set(),
  status: 'idle',
  agentState: 'idle',
  activity: '',
  serverCanContinue: false,
  recoverableEnd: false,
  supports: DEFAULT_SUPPORTS,
  undoable: [],
  reverted: new Set(),
  reverting: false,
  revertError: null,
  localCount: 0
};

/** A writable copy of a state, private to one change. */
export type Draft = {
  -readonly [K in keyof IChatState]: IChatState[K];
} & { items: TranscriptItem[] };

/** Start a change: a copy whose item list can be edited without touching `state`. */
export function draft(state: IChatState): Draft {
  return { ...state, items: [...state.items] };
}

/** Add to a set of the draft (a new set, the old one is shared with the input). */
export function withMember(set: ReadonlySet<string>, member: string): ReadonlySet<string> {
  if (set.has(member)) {
    return set;
  }
  const next = new Set(set);
  next.add(member);
  return next;
}

/** Replace an entry of the draft by a changed copy (never change the entry itself). */
export function patch<T extends TranscriptItem>(d: Draft, item: T, changes: Partial<T>): T {
  const next = { ...item, ...changes } as T;
  const index = d.items.indexOf(item);
  if (index >= 0) {
    d.items[index] = next;
  }
  return next;
}

/** A fresh id for a local entry, counted in the state. */
export function localId(d: Draft, prefix: string): string {
  d.localCount += 1;
  return `${prefix}-${d.localCount}`;
}

/** Whether an entry is a confirmation or clarification request. */
export function isRequest(
  item: TranscriptItem
): item is Extract<TranscriptItem, { kind: 'confirmation' | 'clarification' }> {
  return item.kind === 'confirmation' || item.kind === 'clarification';
}

// ----- what the views ask -----

/** Pending confirmations and clarifications, oldest first. */
export function pendingRequests(state: IChatState): TranscriptItem[] {
  return state.items.filter(item => isRequest(item) && item.state === 'pending');
}

/** Whether a session is in progress. */
export function isRunning(state: IChatState): boolean {
  return state.status !== 'idle';
}

/**
 * Whether Continue can be offered: the server supports it, nothing runs, and
 * the chat's last request was interrupted (the server said so, or a session
 * ended with a recoverable error).
 */
export function canContinue(state: IChatState): boolean {
  return state.supports.continue && !isRunning(state) && (state.serverCanContinue || state.recoverableEnd);
}

/**
 * Whether the person can ask to undo the agent's changes now: the server
 * supports it, the agent is idle, nothing is being undone, and a session ran
 * whose changes were not undone yet.
 */
export function canRevert(state: IChatState): boolean {
  return state.supports.revert && !isRunning(state) && !state.reverting && state.undoable.length > 0;
}

// ----- changes from the person's actions and the server's answers -----

/** Set a field; the same state when nothing changes (views then do not render). */
export function withField<K extends keyof IChatState>(state: IChatState, key: K, value: IChatState[K]): IChatState {
  return state[key] === value ? state : { ...state, [key]: value };
}

/** The status the server reports (`GET chats/{id}`); anything else is ignored. */
export function setStatus(state: IChatState, status: unknown): IChatState {
  return status === 'idle' || status === 'running' || status === 'paused' ? withField(state, 'status', status) : state;
}

/** The server's `can_continue`; a non-boolean is ignored. */
export function setCanContinue(state: IChatState, value: unknown): IChatState {
  return typeof value === 'boolean' ? withField(state, 'serverCanContinue', value) : state;
}

/** Forget every reason to offer Continue (the person chose it, or it was refused). */
export function clearContinue(state: IChatState): IChatState {
  return { ...state, serverCanContinue: false, recoverableEnd: false };
}

/**
 * The sessions whose changes can be undone, as the server keeps them
 * (`undoable_sessions`); an older server sends none and the sessions seen so
 * far stand in.
 */
export function setUndoable(state: IChatState, value: unknown): IChatState {
  if (!Array.isArray(value)) {
    return state;
  }
  return { ...state, undoable: value.filter((v): v is string => typeof v === 'string') };
}

/**
 * Take the answer to an undo. The same notice may arrive twice (as the
 * answer, and read back with the chat): only the first adds an entry.
 */
export function applyRevert(state: IChatState, notice: IRevertNotice): IChatState {
  if (state.reverted.has(notice.sessionId)) {
    return { ...state, reverting: false };
  }
  const d = draft(state);
  d.reverting = false;
  d.reverted = withMember(state.reverted, notice.sessionId);
  d.revertError = null;
  // The server undoes that session and every later one (they built on it).
  const index = state.undoable.indexOf(notice.sessionId);
  d.undoable = index >= 0 ? state.undoable.slice(0, index) : [];
  d.items.push({
    kind: 'notice',
    id: `revert:${notice.sessionId}`,
    variant: 'reverted',
    text: notice.summary,
    sessionId: notice.sessionId
  });
  return d;
}

/** Add a message the person typed, before the server answered; returns the state and the entry's id. */
export function addUserMessage(state: IChatState, text: string, steering = false): [IChatState, string] {
  const d = draft(state);
  const id = localId(d, 'user');
  d.items.push({ kind: 'user', id, text, steering });
  return [d, id];
}

/** Change a user entry by id (a no-op for another id or kind). */
function changeUser(
  state: IChatState,
  itemId: string,
  change: (item: Extract<TranscriptItem, { kind: 'user' }>) => Partial<Extract<TranscriptItem, { kind: 'user' }>> | null
): IChatState {
  const item = state.items.find(i => i.id === itemId);
  if (!item || item.kind !== 'user') {
    return state;
  }
  const changes = change(item);
  if (!changes) {
    return state;
  }
  const d = draft(state);
  patch(d, item, changes);
  return d;
}

/** Attach the session the server started for a typed message (once). */
export function attachSession(state: IChatState, itemId: string, sessionId: string): IChatState {
  return changeUser(state, itemId, item => (item.sessionId === undefined ? { sessionId } : null));
}

/** Mark a typed message the server refused: it started nothing. */
export function markUnsent(state: IChatState, itemId: string): IChatState {
  return changeUser(state, itemId, () => ({ unsent: true }));
}

/** Record the server's id (and session) of guidance the person just sent. */
export function attachGuidance(
  state: IChatState,
  itemId: string,
  guidanceId: string | undefined,
  sessionId: string | undefined
): IChatState {
  return changeUser(state, itemId, item => ({
    steering: true,
    guidanceId: guidanceId ?? item.guidanceId,
    sessionId: item.sessionId ?? sessionId
  }));
}

/** Add a local notice (info or error) to the transcript. */
export function addNotice(state: IChatState, variant: 'info' | 'error', text: string): IChatState {
  const d = draft(state);
  d.items.push({ kind: 'notice', id: localId(d, 'notice'), variant, text });
  return d;
}

/** Mark a request as being answered, or as answered with an outcome. */
export function setRequestState(
  state: IChatState,
  id: string,
  requestState: RequestState,
  outcome?: string
): IChatState {
  const item = state.items.find(i => i.id === id);
  if (!item || !isRequest(item)) {
    return state;
  }
  const d = draft(state);
  patch(d, item, { state: requestState, outcome: outcome ?? item.outcome });
  return d;
}

/**
 * Show guidance the server recorded (`guidance` of the chat description)
 * that is not shown yet, in time order among the entries. Guidance this
 * view sent, read back before its answer gave it an id, is the same entry.
 */
export function addGuidance(state: IChatState, entries: ReadonlyArray<IGuidance>): IChatState {
  const d = draft(state);
  let changed = false;
  for (const entry of entries) {
    if (d.items.some(i => i.kind === 'user' && i.steering && i.guidanceId === entry.guidanceId)) {
      continue;
    }
    const sent = d.items.find(
      i => i.kind === 'user' && i.steering && i.guidanceId === undefined && i.text === entry.text
    );
    changed = true;
    if (sent && sent.kind === 'user') {
      patch(d, sent, { guidanceId: entry.guidanceId, sessionId: sent.sessionId ?? entry.sessionId });
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
      ? d.items.findIndex(i => (i as { at?: number }).at !== undefined && (i as { at?: number }).at! > entry.created)
      : -1;
    if (index >= 0) {
      d.items.splice(index, 0, item);
    } else {
      d.items.push(item);
    }
  }
  return changed ? d : state;
}

/** Leave a session out (neither shown nor spoken), as the person's settings ask. */
export function hideSession(state: IChatState, sessionId: string): IChatState {
  return withField(state, 'hidden', withMember(state.hidden, sessionId));
}
