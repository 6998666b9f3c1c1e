/**
 * The words of the open chat's own happenings: what the panel says when the
 * person acts (sends guidance, stops, undoes, switches chats) and when the
 * session notices something (a refusal, a request about to expire, what was
 * missed while disconnected). The session emits a {@link SessionSignal};
 * {@link sessionWords} turns it into what to say, as `{text, politeness}`
 * items, and the controller hands them to the announcer. Pure: no DOM, no
 * timers, no state; the narrator of AAEP events (the announcer) is separate.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { Verbosity } from './aaep';

/** How urgently a sentence is said: polite waits its turn, assertive interrupts. */
export type Politeness = 'polite' | 'assertive';

/** One thing to say. */
export interface ISaid {
  text: string;
  politeness: Politeness;
}

/** A control the person can use on a running session. */
export type ControlAction = 'stop' | 'pause' | 'resume';

/** Why Undo did nothing. */
export type RevertRefusal = 'no-chat' | 'running' | 'reverting' | 'unsupported' | 'nothing';

/** Something the open chat's session (or the chat list) has to tell the person. */
export type SessionSignal =
  | { kind: 'switched'; title: string }
  | { kind: 'new-chat' }
  | { kind: 'new-chat-failed'; reason: string }
  | { kind: 'load-failed'; message: string }
  | { kind: 'failed'; message: string }
  | { kind: 'guidance-sent'; paused: boolean }
  | { kind: 'sent-as-guidance' }
  | { kind: 'no-guidance' }
  | { kind: 'nothing-to-control'; action: ControlAction }
  | { kind: 'cannot-control'; action: ControlAction }
  | { kind: 'pausing' }
  | { kind: 'nothing-to-continue' }
  | { kind: 'continuing' }
  | { kind: 'cannot-revert'; why: RevertRefusal }
  | { kind: 'reverted'; summary: string }
  | { kind: 'revert-failed'; message: string }
  | { kind: 'mode-locked'; policy: string | null }
  | { kind: 'subscription-rejected'; reason: string }
  | { kind: 'stream-error'; message: string | null }
  | { kind: 'pending-on-open'; count: number }
  | { kind: 'missed'; summary: string }
  | { kind: 'waiting-after-resync'; count: number }
  | { kind: 'steps-failed'; count: number }
  | { kind: 'expiring'; fallback: string | null }
  | { kind: 'last-output'; output: string | null }
  | { kind: 'no-chat'; topic: 'progress' | 'usage' }
  | { kind: 'progress'; sentence: string | null }
  | { kind: 'progress-failed'; reason: string | null }
  | { kind: 'usage'; sentence: string };

/** Every kind of signal, so the unit tests can say each one. */
export const SESSION_SIGNAL_KINDS = [
  'switched',
  'new-chat',
  'new-chat-failed',
  'load-failed',
  'failed',
  'guidance-sent',
  'sent-as-guidance',
  'no-guidance',
  'nothing-to-control',
  'cannot-control',
  'pausing',
  'nothing-to-continue',
  'continuing',
  'cannot-revert',
  'reverted',
  'revert-failed',
  'mode-locked',
  'subscription-rejected',
  'stream-error',
  'pending-on-open',
  'missed',
  'waiting-after-resync',
  'steps-failed',
  'expiring',
  'last-output',
  'no-chat',
  'progress',
  'progress-failed',
  'usage'
] as const satisfies ReadonlyArray<SessionSignal['kind']>;

/** A kind of signal; the list above names every one (checked when compiling). */
export type SessionSignalKind = (typeof SESSION_SIGNAL_KINDS)[number];
const everyKindListed: Exclude<SessionSignal['kind'], SessionSignalKind> extends never ? true : never = true;
void everyKindListed;

/** What to say for a signal, at the person's verbosity. */
export function sessionWords(
  signal: SessionSignal,
  trans: TranslationBundle,
  verbosity: Verbosity = 'normal'
): ISaid[] {
  const terse = verbosity === 'terse';
  const polite = (text: string): ISaid[] => [{ text, politeness: 'polite' }];
  const assertive = (text: string): ISaid[] => [{ text, politeness: 'assertive' }];
  switch (signal.kind) {
    case 'switched':
      return polite(
        signal.title ? trans.__('Switched to the chat “%1”.', signal.title) : trans.__('Switched to another chat.')
      );
    case 'new-chat':
      return polite(terse ? trans.__('New chat started.') : trans.__('New chat started. The message box is ready.'));
    case 'new-chat-failed':
      return assertive(newChatFailed(signal.reason, trans));
    case 'load-failed':
    case 'failed':
    case 'revert-failed':
      return assertive(signal.message);
    case 'guidance-sent':
      if (terse) {
        return polite(trans.__('Guidance sent.'));
      }
      return polite(
        signal.paused
          ? trans.__('Guidance sent; it applies when you resume.')
          : trans.__('Guidance sent; it applies at the next step.')
      );
    case 'sent-as-guidance':
      return polite(
        terse
          ? trans.__('Sent as guidance: the agent is already working.')
          : trans.__('The agent is already working: your message was sent as guidance; it applies at the next step.')
      );
    case 'no-guidance':
      return polite(trans.__('The agent cannot take guidance while it works. Wait until it finishes, or stop it.'));
    case 'nothing-to-control':
      return polite(
        signal.action === 'resume'
          ? trans.__('Nothing is paused, so there is nothing to resume.')
          : signal.action === 'pause'
            ? trans.__('Nothing is running, so there is nothing to pause.')
            : trans.__('Nothing is running, so there is nothing to stop.')
      );
    case 'cannot-control':
      // A chat answered by a coding agent over ACP cannot pause: Stop is what there is.
      return polite(
        signal.action === 'stop'
          ? trans.__('This server cannot stop the agent.')
          : trans.__('This agent cannot pause. Stop it instead: changes made so far are kept.')
      );
    case 'pausing':
      return polite(terse ? trans.__('Pausing.') : trans.__('Pausing the agent at the next safe point.'));
    case 'nothing-to-continue':
      return polite(trans.__('There is no interrupted request to continue in this chat.'));
    case 'continuing':
      return polite(trans.__('Continuing where the agent stopped.'));
    case 'cannot-revert':
      return polite(revertRefusal(signal.why, trans));
    case 'reverted':
      return polite(signal.summary);
    case 'mode-locked':
      return assertive(
        signal.policy ?? trans.__('The administrator of this server does not allow this approval mode.')
      );
    case 'subscription-rejected':
      return assertive(subscriptionRejected(signal.reason, trans));
    case 'stream-error':
      return assertive(streamError(signal.message, trans));
    case 'pending-on-open':
      return assertive(
        trans._n(
          'A request in this chat is waiting for your answer.',
          '%1 requests in this chat are waiting for your answer.',
          signal.count
        )
      );
    case 'missed':
      return polite(trans.__('While the connection was down: %1', signal.summary));
    case 'waiting-after-resync':
      return assertive(
        trans._n('A request is waiting for your answer.', '%1 requests are waiting for your answer.', signal.count)
      );
    case 'steps-failed':
      return polite(
        terse
          ? trans._n('One step failed.', '%1 steps failed.', signal.count)
          : trans._n(
              'One step of this request failed; the transcript says which.',
              '%1 steps of this request failed; the transcript says which.',
              signal.count
            )
      );
    case 'expiring':
      return polite(
        signal.fallback
          ? trans.__('The request expires in 15 seconds; then the answer will be: %1.', signal.fallback)
          : trans.__('The request expires in 15 seconds.')
      );
    case 'last-output':
      return polite(
        signal.output
          ? // The output may end anywhere: its end is said, so it is never heard as cut.
            `${signal.output}\n${trans.__('End of output.')}`
          : trans.__('The agent has not run a cell in this chat yet, so there is no output to hear.')
      );
    case 'no-chat':
      return polite(
        signal.topic === 'progress'
          ? trans.__('No chat is open, so there is no running cell to tell about.')
          : trans.__('No chat is open, so there is no token usage to tell.')
      );
    case 'progress':
      return polite(signal.sentence ?? trans.__('The server did not say how far the cells are.'));
    case 'progress-failed':
      return assertive(
        signal.reason
          ? trans.__('Could not ask how far along the cells are: %1', signal.reason)
          : trans.__('Could not ask how far along the cells are.')
      );
    case 'usage':
      return polite(signal.sentence);
  }
}

/** The sentence of a failed new chat (also shown in the transcript). */
export function newChatFailed(reason: string, trans: TranslationBundle): string {
  return trans.__('Could not start a new chat: %1', reason);
}

/** The sentence of a refused subscription (also shown in the transcript). */
export function subscriptionRejected(reason: string, trans: TranslationBundle): string {
  return trans.__('The agent refused the subscription: %1', reason);
}

/** The sentence of an error frame on the stream (also shown in the transcript). */
export function streamError(message: string | null, trans: TranslationBundle): string {
  return message ?? trans.__('The agent could not handle a message.');
}

/** The transcript's line when the producer ends the subscription. */
export function streamClosed(reason: string, trans: TranslationBundle): string {
  return trans.__('The agent closed the connection: %1', reason);
}

function revertRefusal(why: RevertRefusal, trans: TranslationBundle): string {
  switch (why) {
    case 'no-chat':
      return trans.__('No chat is open, so there are no agent changes to undo.');
    case 'running':
      return trans.__('The agent is working; stop it or wait for it to finish before undoing its changes.');
    case 'reverting':
      return trans.__('The agent is already undoing its changes.');
    case 'unsupported':
      return trans.__("This server cannot undo the agent's changes.");
    case 'nothing':
      return trans.__('There are no agent changes to undo in this chat.');
  }
}

/** A problem that keeps the panel from showing a chat. */
export interface IPanelError {
  message: string;
  /** The server extension does not answer at all (not installed/enabled). */
  serverMissing: boolean;
}

/** An error as the person reads it: the server's sentence, or what to check when there is no server. */
export function describeError(error: unknown, trans: TranslationBundle): IPanelError {
  if (error instanceof Error && (error as { serverMissing?: unknown }).serverMissing === true) {
    return {
      serverMissing: true,
      message: trans.__(
        'The jupyter-aaep server extension is not running, so the agent is unavailable. Check that it is installed and enabled (jupyter server extension list), then restart JupyterLab.'
      )
    };
  }
  return { serverMissing: false, message: String((error as Error)?.message ?? error) };
}

/** What the panel knows when it opens, for {@link whereYouAre}. */
export interface IWhereYouAre {
  /** The notebook followed, or `null`. */
  path: string | null;
  /** The error that keeps the chat from loading, if any. */
  error: IPanelError | null;
  /** The open chat, or `null` while loading. */
  chat: { messages: number; pending: number; running: boolean; guidance: boolean } | null;
  /** The key that jumps to a pending request, if bound. */
  requestKey: string | null;
}

/**
 * Where the person is, for the moment the panel opens: "Agent panel for
 * demo.ipynb. 4 messages. Type your request." (plus a request waiting).
 */
export function whereYouAre(where: IWhereYouAre, trans: TranslationBundle): string {
  const { path, chat, requestKey } = where;
  if (path === null) {
    return trans.__('Agent panel. Open a notebook to chat with the agent about it.');
  }
  const name = path.split('/').pop() || path;
  if (!chat) {
    return where.error
      ? trans.__('Agent panel for %1. %2', name, where.error.message)
      : trans.__('Agent panel for %1. Loading the chat.', name);
  }
  const parts = [
    trans.__('Agent panel for %1.', name),
    chat.messages === 0 ? trans.__('No messages yet.') : trans._n('%1 message.', '%1 messages.', chat.messages)
  ];
  if (chat.pending > 0) {
    parts.push(
      requestKey
        ? trans._n(
            'A request waits for your answer: press %2.',
            '%1 requests wait for your answer: press %2.',
            chat.pending,
            requestKey
          )
        : trans._n('A request waits for your answer.', '%1 requests wait for your answer.', chat.pending)
    );
  }
  parts.push(
    chat.running && chat.guidance
      ? trans.__('The agent is working; type guidance for it.')
      : chat.running
        ? trans.__('The agent is working.')
        : trans.__('Type your request.')
  );
  return parts.join(' ');
}
