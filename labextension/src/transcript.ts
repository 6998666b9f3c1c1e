/**
 * The shapes of one chat as the panel holds it: transcript entries, pending
 * requests, what the server accepts and what its administrator fixed. Types
 * and constants only; the readers, the reducer and the view helpers build on
 * them.
 */
import { ICitation } from './citations';
import { IAAEPEvent } from './aaep';

/** Run status of a chat. */
export type ChatStatus = 'idle' | 'running' | 'paused';

/**
 * Approval mode of a chat (the server's wire values): `ask` asks before
 * running code, `ask_all` before every change, `auto` approves unflagged
 * calls itself, `plan` reads first and asks once, for the whole plan.
 */
export type ApprovalMode = 'ask' | 'ask_all' | 'auto' | 'plan';

/**
 * The approval modes in the order of the panel's select: plan first (nothing
 * changes before you approve the whole plan), then strictest first.
 */
export const APPROVAL_MODES: readonly ApprovalMode[] = ['plan', 'ask_all', 'ask', 'auto'];

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
      /** The cells it cites, where their words sit in `text` (see citations.ts). */
      citations?: ICitation[];
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

/** Guidance the server recorded for this chat (`guidance` of `GET chats/{id}`). */
export interface IGuidance {
  guidanceId: string;
  sessionId?: string;
  text: string;
  /** Epoch ms, or NaN when unknown. */
  created: number;
}

/** What the server says after undoing a session's changes (`notebook.reverted`). */
export interface IRevertNotice {
  /** The session whose changes (and every later one's) were undone. */
  sessionId: string;
  /** One sentence for the transcript and the screen reader. */
  summary: string;
}

/** Payload of `ChatModel.eventProcessed`: one new event, and whether it came from history. */
export interface IProcessedEvent {
  event: IAAEPEvent;
  /** True while replaying history: announce nothing but a summary. */
  replay: boolean;
}

/** `requested_by` prefix of sessions that tell a long cell's run (the server's kernel watcher). */
export const KERNEL_REQUESTER = 'kernel:';

/** `requested_by` of the sessions about cells the person ran. */
export const PERSON_RUN = 'kernel:person-run';
