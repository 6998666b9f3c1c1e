/**
 * The transcript reducer: `applyEvent(state, event)` returns the chat after
 * one AAEP event, leaving `state` as it was. Adding a new kind of event the
 * panel shows means one more `case` here (and its words in the narrator).
 *
 * Events are deduplicated by `event_id` (transports deliver at least once
 * and replay on reconnect); an event of a hidden session is only marked seen.
 */
import { IAAEPEvent, TERMINAL_EVENTS, bool, coreName, deadlineOf, num, pickSummary, str } from './aaep';
import { Draft, IChatState, draft, isRequest, localId, patch, withMember } from './chatState';
import { citationsOf } from './citations';
import { endsSentence } from './speech';
import { ChatStatus, KERNEL_REQUESTER, RequestState, TranscriptItem } from './transcript';
import { withoutHint } from './transcriptView';

/**
 * The chat after `event`.
 *
 * @param now Epoch ms the event is taken at: pausing stops a waiting
 *   request's clock at this time, resuming restarts it. Defaults to the
 *   event's own timestamp, so the result depends on its inputs only.
 */
export function applyEvent(state: IChatState, event: IAAEPEvent, now?: number): IChatState {
  if (state.seen.has(event.event_id)) {
    return state;
  }
  const d = draft(state);
  d.seen = withMember(state.seen, event.event_id);
  if (state.hidden.has(event.session_id)) {
    return d; // the person asked not to hear about these (a panel setting)
  }
  const before = d.items.length;
  const at = Date.parse(event.timestamp);
  apply(d, event, now ?? (Number.isFinite(at) ? at : 0));
  const name = coreName(event.type);
  if (name && TERMINAL_EVENTS.has(name)) {
    d.ended = withMember(d.ended, event.session_id);
    if (!d.cellRuns.has(event.session_id)) {
      d.agentState = 'idle';
      d.activity = '';
      d.status = 'idle';
    }
  }
  // Remember when new entries happened, to place guidance read from history.
  if (Number.isFinite(at)) {
    for (let i = before; i < d.items.length; i++) {
      if ((d.items[i] as { at?: number }).at === undefined) {
        d.items[i] = { ...d.items[i], at } as TranscriptItem;
      }
    }
  }
  return d;
}

/** The chat after a batch (history, a resync), in the order {@link orderBatch} gives. */
export function applyEvents(state: IChatState, events: ReadonlyArray<IAAEPEvent>, now?: number): IChatState {
  return orderBatch(events).reduce((s, event) => applyEvent(s, event, now), state);
}

/**
 * Put a batch in `sequence_number` order within each session, sessions in
 * the order they first appear. (Live events are applied as they arrive: gaps
 * in the numbers are normal, so waiting for one to fill would only delay.)
 */
export function orderBatch(events: ReadonlyArray<IAAEPEvent>): IAAEPEvent[] {
  const firstSeen = new Map<string, number>();
  events.forEach((event, index) => {
    if (!firstSeen.has(event.session_id)) {
      firstSeen.set(event.session_id, index);
    }
  });
  return events
    .map((event, index) => ({ event, index }))
    .sort((a, b) => {
      const session = firstSeen.get(a.event.session_id)! - firstSeen.get(b.event.session_id)!;
      if (session !== 0) {
        return session;
      }
      const sa = a.event.sequence_number;
      const sb = b.event.sequence_number;
      return typeof sa === 'number' && typeof sb === 'number' && sa !== sb ? sa - sb : a.index - b.index;
    })
    .map(o => o.event);
}

function apply(d: Draft, event: IAAEPEvent, now: number): void {
  const name = coreName(event.type);
  const sid = event.session_id;
  const summary = pickSummary(event, 'normal') ?? '';
  switch (name) {
    case 'session.started':
      return sessionStarted(d, event);
    case 'output.streaming':
      return outputStreaming(d, event);
    case 'tool.invoked': {
      resolveRequests(d, sid, 'resolved');
      const callId = str(event, 'tool_call_id');
      d.items.push({
        kind: 'tool',
        id: callId ? `tool:${callId}` : localId(d, 'tool'),
        sessionId: sid,
        callId,
        tool: str(event, 'tool') ?? 'tool',
        summary,
        status: 'running',
        riskLevel: str(event, 'risk_level')
      });
      return;
    }
    case 'tool.completed':
      return toolCompleted(d, event, summary);
    case 'progress.updated':
      return progressUpdated(d, event, summary);
    case 'awaiting.confirmation':
    case 'awaiting.clarification': {
      const extra = event.extra_context;
      // Approved by the chat's setting: shown as such, never as waiting for the user.
      const automatic =
        typeof extra === 'object' && extra !== null && (extra as Record<string, unknown>).auto_approved === true;
      d.items.push({
        kind: name === 'awaiting.confirmation' ? 'confirmation' : 'clarification',
        id: `request:${event.event_id}`,
        event,
        deadline: automatic ? null : deadlineOf(event),
        state: automatic ? 'resolved' : 'pending'
      });
      return;
    }
    case 'state.changed': {
      const from = str(event, 'from_state');
      const to = str(event, 'to_state');
      d.agentState = to ?? d.agentState;
      // Only a running step has an activity worth the status line; the
      // summary of any other state is said, not shown there.
      d.activity = to === 'calling_tool' ? summary : '';
      // A pause while a request waits keeps it open (it can still be answered; the
      // server acts on the answer at the resume): only leaving for work resolves it.
      if (to === 'paused') {
        holdRequests(d, sid, true, now);
      } else if (from === 'paused') {
        holdRequests(d, sid, false, now);
      }
      if (from === 'awaiting_input' && to !== 'awaiting_input' && to !== 'paused') {
        resolveRequests(d, sid, 'resolved', summary || undefined);
      }
      if (to === 'paused') {
        d.status = 'paused';
      } else if (from === 'paused') {
        d.status = 'running';
      }
      return;
    }
    case 'handoff.requested':
      d.items.push({ kind: 'handoff', id: `handoff:${event.event_id}`, event });
      return;
    case 'session.completed':
    case 'session.errored':
    case 'session.cancelled':
      return sessionEnded(d, event, name, summary);
    default:
      // An extension type: show its summary if it has one.
      if (summary && name === null) {
        d.items.push({ kind: 'notice', id: `evt:${event.event_id}`, variant: 'info', text: summary });
      }
  }
}

function sessionStarted(d: Draft, event: IAAEPEvent): void {
  const sid = event.session_id;
  if ((str(event, 'requested_by') ?? '').startsWith(KERNEL_REQUESTER)) {
    // A long cell's story, not a request: the agent's status and Undo are not its business.
    d.cellRuns = withMember(d.cellRuns, sid);
    return;
  }
  d.status = 'running' as ChatStatus;
  d.serverCanContinue = false;
  d.recoverableEnd = false;
  if (!d.undoable.includes(sid)) {
    d.undoable = [...d.undoable, sid];
  }
  d.revertError = null;
  const request = str(event, 'request_text');
  if (!request) {
    return;
  }
  const known = d.items.some(
    i => i.kind === 'user' && (i.sessionId === sid || (i.sessionId === undefined && i.text === request))
  );
  if (!known) {
    d.items.push({ kind: 'user', id: localId(d, 'user'), text: request, sessionId: sid });
    return;
  }
  // The message this view sent, before its answer named the session.
  const mine = d.items.find(i => i.kind === 'user' && i.sessionId === undefined && i.text === request);
  if (mine && mine.kind === 'user') {
    patch(d, mine, { sessionId: sid });
  }
}

function outputStreaming(d: Draft, event: IAAEPEvent): void {
  const key = `answer:${str(event, 'output_id') ?? `session:${event.session_id}`}`;
  let item = d.items.find(i => i.id === key);
  if (!item) {
    item = {
      kind: 'answer',
      id: key,
      sessionId: event.session_id,
      text: '',
      complete: false,
      contentType: str(event, 'content_type') ?? 'text/markdown'
    };
    d.items.push(item);
  }
  if (item.kind === 'answer' && !item.complete) {
    const cited = citationsOf(event, item.text.length);
    patch(d, item, {
      text: item.text + (typeof event.chunk === 'string' ? event.chunk : ''),
      complete: bool(event, 'complete') === true,
      ...(cited.length ? { citations: [...(item.citations ?? []), ...cited] } : {})
    });
  }
}

function toolCompleted(d: Draft, event: IAAEPEvent, summary: string): void {
  const sid = event.session_id;
  const callId = str(event, 'tool_call_id');
  const tool = str(event, 'tool');
  const item = [...d.items]
    .reverse()
    .find(
      i =>
        i.kind === 'tool' &&
        i.sessionId === sid &&
        (callId ? i.callId === callId : i.tool === tool && i.status === 'running')
    );
  if (item && item.kind === 'tool') {
    const status = str(event, 'status');
    const detail = str(event, 'summary_detailed');
    patch(d, item, {
      status: status === 'error' || status === 'timeout' ? status : 'success',
      durationMs: num(event, 'duration_ms'),
      errorMessage: str(event, 'error_message'),
      // The result tells the step ("Created cell 4"); its start is not repeated.
      summary: summary || item.summary,
      detail: detail && detail !== summary ? detail : undefined
    });
  }
  const progress = d.items.find(i => i.id === `progress:${sid}`);
  if (progress && progress.kind === 'progress') {
    patch(d, progress, { done: true });
  }
}

function progressUpdated(d: Draft, event: IAAEPEvent, summary: string): void {
  const sid = event.session_id;
  const progress = (event.progress ?? {}) as Record<string, unknown>;
  if (isNotice(d, event, progress)) {
    // A notice about the chat (saving stopped or resumed): its own entry, so it
    // neither replaces nor is replaced by the step's progress (an approval countdown).
    const text = summary || str(progress, 'description');
    if (text) {
      d.items.push({ kind: 'notice', id: `evt:${event.event_id}`, variant: 'info', text, sessionId: sid });
    }
    return;
  }
  const key = `progress:${sid}`;
  const item: TranscriptItem = {
    kind: 'progress',
    id: key,
    sessionId: sid,
    percent: num(progress, 'percent'),
    step: num(progress, 'step'),
    totalSteps: num(progress, 'total_steps'),
    description: str(progress, 'description') ?? (summary || undefined),
    cellRun: d.cellRuns.has(sid) || undefined,
    done: false
  };
  const index = d.items.findIndex(i => i.id === key);
  const previous = index >= 0 ? d.items[index] : null;
  if (previous && previous.kind === 'progress' && !previous.done) {
    d.items[index] = item;
  } else {
    // A new long step: show its progress at the end of the transcript.
    if (index >= 0) {
      d.items.splice(index, 1);
    }
    d.items.push(item);
  }
}

/**
 * Whether a progress update is a notice about the chat rather than a step's
 * progress: the producer wants it heard (`urgency: normal`), it carries no
 * numbers, and no step of its session is running (the chat store's "not
 * being saved" / "saving again").
 */
function isNotice(d: Draft, event: IAAEPEvent, progress: Record<string, unknown>): boolean {
  const sid = event.session_id;
  return (
    event.urgency === 'normal' &&
    !d.cellRuns.has(sid) &&
    num(progress, 'percent') === undefined &&
    num(progress, 'step') === undefined &&
    num(event, 'eta_ms') === undefined &&
    !d.items.some(i => i.kind === 'tool' && i.sessionId === sid && i.status === 'running')
  );
}

function sessionEnded(d: Draft, event: IAAEPEvent, name: string, summary: string): void {
  const sid = event.session_id;
  const variant = name.slice('session.'.length) as 'completed' | 'errored' | 'cancelled';
  resolveRequests(d, sid, variant === 'cancelled' ? 'cancelled' : 'resolved');
  finishSession(d, sid, variant !== 'completed');
  d.recoverableEnd = variant === 'errored' && bool(event, 'recoverable') === true;
  const hint = str(event, 'remediation_hint');
  // The end's own summary may not say that a step failed; then the notice does
  // (a producer that says it, like ours, is not repeated).
  const saidFailed = /\bsteps? failed\b/i.test(summary);
  const failedSteps = saidFailed
    ? 0
    : d.items.filter(i => i.kind === 'tool' && i.sessionId === sid && (i.status === 'error' || i.status === 'timeout'))
        .length;
  d.items.push({
    kind: 'notice',
    id: `end:${event.event_id}`,
    variant,
    failedSteps,
    // The hint gets its own line; producers often end the summary with it too.
    text: withoutHint(summary, hint) || summary,
    hint,
    sessionId: sid
  });
}

/**
 * Close streaming answers, running tools and progress of a session. When it
 * was stopped or failed, its last answer is marked as cut off if it ends in
 * the middle of a sentence.
 */
function finishSession(d: Draft, sid: string, interrupted: boolean): void {
  if (interrupted) {
    const last = [...d.items].reverse().find(i => i.kind === 'answer' && i.sessionId === sid);
    if (last && last.kind === 'answer' && last.text.trim() && !endsSentence(last.text)) {
      patch(d, last, { cutOff: true });
    }
  }
  for (const item of [...d.items]) {
    if (item.kind === 'answer' && item.sessionId === sid && !item.complete) {
      patch(d, item, { complete: true });
    } else if (item.kind === 'progress' && item.sessionId === sid && !item.done) {
      patch(d, item, { done: true });
    } else if (item.kind === 'tool' && item.sessionId === sid && item.status === 'running') {
      patch(d, item, { status: 'timeout' });
    }
  }
}

/** Stop (`hold`) or restart the clocks of a session's open requests, as the server does. */
function holdRequests(d: Draft, sid: string, hold: boolean, now: number): void {
  for (const item of [...d.items]) {
    if (!isRequest(item) || item.event.session_id !== sid) {
      continue;
    }
    if (hold && item.deadline !== null) {
      patch(d, item, { pausedRemaining: Math.max(0, item.deadline - now), deadline: null });
    } else if (!hold && item.pausedRemaining !== undefined) {
      patch(d, item, { deadline: now + item.pausedRemaining, pausedRemaining: undefined });
    }
  }
}

/** Resolve the pending requests of a session (someone answered, or it ended). */
function resolveRequests(d: Draft, sid: string, state: RequestState, outcome?: string): void {
  for (const item of [...d.items]) {
    if (isRequest(item) && item.event.session_id === sid && (item.state === 'pending' || item.state === 'sending')) {
      patch(d, item, { state, outcome: outcome ?? item.outcome });
    }
  }
}
