/**
 * The panel's one road to the server: typed endpoints over HTTP, and
 * {@link ChatClient.request}, which sends a chat message and resolves with
 * that message's own answer.
 *
 * Every answer to a client message has one shape, over POST and WebSocket
 * alike: `{kind: "<kind>.accepted", …}`, or an error with a sentence (thrown
 * here as {@link AAEPRequestError}). Over the socket the message carries a
 * `request_id` that its answer echoes; over POST the HTTP answer is the
 * answer. Nothing is renamed and nothing is matched by guessing.
 *
 * This is the only module that imports `requestAPI`: to add an endpoint, add
 * a typed function here; to add a message kind, add its answer type to
 * {@link IAnswers} and send it with `request`.
 */
import { JSONRecord, isRecord } from './aaep';
import { AAEPRequestError, requestAPI } from './handler';
import { IRequestAnswer, readRequestAnswer } from './notebookApproval';

export { AAEPRequestError };

/** What the server answers for a chat (`GET aaep/v1/chats/{id}`). */
export interface IChatInfo {
  chat_id?: string;
  notebook_path?: string;
  status?: string;
  /** The newest session of the chat, if any. */
  session_id?: string | null;
  approval_mode?: string;
  /** Which controls the server accepts (`stop`, `pause`, `guidance`, `approval_mode`, `revert`). */
  supports?: unknown;
  /** The chat's AAEP events so far, oldest first. */
  transcript?: unknown[];
  /** The `awaiting.*` events still waiting for an answer. */
  pending_requests?: unknown[];
  /** The first request, clipped by the server. */
  title?: string;
  created?: string;
  updated?: string;
  paused?: boolean;
  /** Whether an interrupted request can be continued (`control` `continue`). */
  can_continue?: boolean;
  /** Token usage and estimated cost (see `readUsage`). */
  usage?: unknown;
  /** Guidance the user sent, with its session and time. */
  guidance?: unknown;
  /** The model of the chat's next request. */
  model?: string;
  /** The coding agent that answers the chat ("Jupyter agent", or an ACP agent's name). */
  agent?: string;
  /** What the administrator fixed (see `readPolicy`). */
  policy?: unknown;
  /** The sessions whose changes to the notebook can still be undone, oldest first. */
  undoable_sessions?: unknown;
}

/** A model a chat can use (`GET aaep/v1/models`). */
export interface IModelsAnswer {
  models?: { id: string; label: string }[];
  default?: string | null;
  source?: string;
  note?: string | null;
}

/** The kernel's variables for the `@` picker. */
export interface IVariablesAnswer {
  variables?: { name: string; type: string; summary: string }[];
  note?: string;
}

/** The answer of each message kind, by kind. */
export interface IAnswers {
  user_input: {
    kind: 'user_input.accepted';
    chat_id: string;
    session_id: string;
    /** The agent was already working: the message steers it instead. */
    as_guidance?: boolean;
    guidance_id?: string;
  };
  guidance: {
    kind: 'guidance.accepted';
    session_id: string | null;
    guidance_id: string;
    applies?: string;
  };
  control: {
    kind: 'control.accepted';
    action: 'stop' | 'pause' | 'resume' | 'continue' | 'revert';
    stopped?: boolean;
    paused?: boolean;
    resumed?: boolean;
    session_id?: string;
    /** Of a revert: what was undone, and the cells kept because others changed them, in sentences. */
    summary?: string;
    /** Of a revert: one sentence per cell kept as someone else left it (also in `summary`). */
    kept?: string[];
  };
  approval_mode: { kind: 'approval_mode.accepted'; approval_mode: string };
  model: { kind: 'model.accepted'; model: string; label?: string; message?: string };
  agent: { kind: 'agent.accepted'; agent: string; message?: string };
  figure_alt_text: { kind: 'figure_alt_text.accepted'; message?: string; output_index?: number };
  'confirmation.reply': { kind: 'confirmation.reply.accepted' } | null;
  'clarification.reply': { kind: 'clarification.reply.accepted' } | null;
}

/** A message the panel sends to its chat, by its kind (or AAEP type). */
export type ChatMessage<K extends keyof IAnswers> = JSONRecord & ({ kind: K } | { type: K });

/** Something that can carry a frame with a `request_id` (the open WebSocket). */
export interface IFrameSender {
  /** Send one frame now; false when no socket is open (then POST is used). */
  sendFrame(frame: JSONRecord): boolean;
}

/** `GET aaep/v1/chats?notebook_path=…`: one page of a notebook's chats. */
export function listChats(query: Record<string, string>): Promise<{ chats?: IChatInfo[]; next?: unknown }> {
  return requestAPI(['chats'], {}, query);
}

/** `POST aaep/v1/chats`: a new chat for a notebook. */
export function createChat(body: { notebook_path: string; approval_mode?: string }): Promise<IChatInfo> {
  return requestAPI<IChatInfo>(['chats'], { method: 'POST', body });
}

/** `GET aaep/v1/chats/{id}`: status, transcript and open requests. */
export function getChat(chatId: string): Promise<IChatInfo> {
  return requestAPI<IChatInfo>(['chats', chatId]);
}

/**
 * `GET aaep/v1/chats/{id}/usage`: what a session's end changes (`usage`,
 * `can_continue`, `undoable_sessions`, `title`), without the transcript.
 */
export function getUsage(chatId: string): Promise<IChatInfo> {
  return requestAPI<IChatInfo>(['chats', chatId, 'usage']);
}

/**
 * `GET aaep/v1/chats/{id}/requests/{requestId}`: one request as the server
 * describes it (the notebook view's Approve and Reject are drawn from this).
 */
export async function getRequest(chatId: string, requestId: string): Promise<IRequestAnswer> {
  const answer = readRequestAnswer(await requestAPI<unknown>(['chats', chatId, 'requests', requestId]));
  if (!answer) {
    throw new AAEPRequestError(0, 'The server answered with something that is not a request.', false);
  }
  return answer;
}

/** A coding agent a chat can use (`GET aaep/v1/agents`). */
export interface IAgentInfo {
  name: string;
  /** `built_in` (ours) or `acp`. */
  kind: string;
  available: boolean;
  /** Why it cannot be used and what to install, or null. */
  problem: string | null;
}

/** `GET aaep/v1/agents`: ours first. */
export interface IAgentsAnswer {
  agents?: IAgentInfo[];
  default?: string | null;
}

/** `GET aaep/v1/agents`. */
export function listAgents(): Promise<IAgentsAnswer> {
  return requestAPI<IAgentsAnswer>(['agents']);
}

/** `GET aaep/v1/models`. */
export function listModels(): Promise<IModelsAnswer> {
  return requestAPI<IModelsAnswer>(['models']);
}

/** One of the user's MCP servers as `GET aaep/v1/mcp/servers` lists it. */
export interface IMCPServerInfo {
  name: string;
  /** `starting`, `ready`, `failed`, `stopped`, `refused` (not allowed) or `invalid` (bad config). */
  status: string;
  /** Why it is not working: the end of a sentence ("the command x was not found."), or null. */
  message: string | null;
  /** Whether the person trusts it, as it is set up now (a trust given to another setup does not count). */
  trusted?: boolean;
  tools: { name: string; title: string; read_only?: boolean; asks?: boolean }[];
}

/** `GET aaep/v1/mcp/servers`: the user's tool servers, their status and tools. */
export function listMCPServers(): Promise<{ config_file: string | null; servers: IMCPServerInfo[] }> {
  return requestAPI(['mcp', 'servers']);
}

/** A tool server whose word that a tool changes nothing the person trusts (`GET aaep/v1/mcp/trust`). */
export interface IMCPTrust {
  server: string;
  /** What starts it (command line or URL, secrets masked). */
  origin: string;
  /** When the person said so, ISO 8601 UTC (may be empty in an old file). */
  granted_at: string;
}

/** `GET aaep/v1/mcp/trust`: the servers the person trusts. */
export async function listMCPTrust(): Promise<IMCPTrust[]> {
  const answer = await requestAPI<{ trusted?: IMCPTrust[] }>(['mcp', 'trust']);
  return answer.trusted ?? [];
}

/** `DELETE aaep/v1/mcp/trust/{server}`: its "read-only" tools ask again from now on. */
export async function revokeMCPTrust(server: string): Promise<void> {
  await requestAPI<unknown>(['mcp', 'trust', server], { method: 'DELETE' });
}

/** `GET aaep/v1/chats/{id}/variables`. */
export function listVariables(chatId: string): Promise<IVariablesAnswer> {
  return requestAPI<IVariablesAnswer>(['chats', chatId, 'variables']);
}

/** What `GET aaep/v1/chats/{id}/progress` answers: the notebook's running cells and one sentence. */
export interface IProgressAnswer {
  running: JSONRecord[];
  /** Says it all: every running cell's progress, elapsed time and time left, or that none runs. */
  sentence: string;
}

/** `GET aaep/v1/chats/{id}/progress`: *How far along?* */
export function getProgress(chatId: string): Promise<IProgressAnswer> {
  return requestAPI<IProgressAnswer>(['chats', chatId, 'progress']);
}

/** One problem `GET aaep/v1/chats/{id}/accessibility` found, by cell. */
export interface IAccessibilityProblem {
  rule: string;
  /** 1-based, as people count cells; null for the notebook as a whole (no title). */
  cell_number: number | null;
  cell_id: string | null;
  /** The sentence a person reads: "Cell 3: The image chart.png has no alt text." */
  text: string;
}

/** What `GET aaep/v1/chats/{id}/accessibility` answers. */
export interface IAccessibilityAnswer {
  notebook_path: string;
  summary: string;
  problems: IAccessibilityProblem[];
  /** What the check leaves out, in one sentence. */
  not_checked: string;
}

/** `GET aaep/v1/chats/{id}/accessibility`: *Check this notebook's accessibility* (reads only). */
export function getAccessibility(chatId: string): Promise<IAccessibilityAnswer> {
  return requestAPI<IAccessibilityAnswer>(['chats', chatId, 'accessibility']);
}

/** The key of each chat's open event stream, as its server sent it (`stream.key`). */
const streamKeys = new Map<string, string>();

/**
 * Remember (or, with `null`, forget) the key the server gave this panel's
 * event stream of a chat. Every message sent to that chat from here on
 * carries it, so the server hears a reply as the panel's ("Approved in the
 * panel") rather than as some program's holding the same login.
 */
export function setStreamKey(chatId: string, key: string | null): void {
  if (key) {
    streamKeys.set(chatId, key);
  } else {
    streamKeys.delete(chatId);
  }
}

/** Whether this page holds a stream key for the chat (an open stream of the panel's). */
export function hasStreamKey(chatId: string): boolean {
  return streamKeys.has(chatId);
}

/** Forget `key` for the chat, unless a newer stream's key replaced it meanwhile. */
export function forgetStreamKey(chatId: string, key: string | null): void {
  if (key && streamKeys.get(chatId) === key) {
    streamKeys.delete(chatId);
  }
}

/** `message` with the chat's stream key, when the panel has one for that chat. */
export function withStreamKey(chatId: string, message: JSONRecord): JSONRecord {
  const key = streamKeys.get(chatId);
  return key ? { ...message, stream_key: key } : message;
}

/** `POST aaep/v1/chats/{id}/messages` (subscription messages on SSE, and every fallback). */
export async function postMessage(chatId: string, message: JSONRecord): Promise<JSONRecord | null> {
  const body = withStreamKey(chatId, message);
  const answer = await requestAPI<unknown>(['chats', chatId, 'messages'], { method: 'POST', body });
  return isRecord(answer) ? answer : null;
}

/** How long an answer on the socket may take before the request counts as lost (ms). */
const ANSWER_TIMEOUT_MS = 30000;

/**
 * One chat's messages: over the open socket when there is one, else POST.
 * Each request resolves with its own answer.
 */
export class ChatClient {
  constructor(chatId: string, frames: IFrameSender | null) {
    this.chatId = chatId;
    this._frames = frames;
  }

  /** The chat this client talks to. */
  readonly chatId: string;

  /**
   * Send `message`; resolves with its answer (`null` for a reply over POST,
   * which the protocol answers without a body).
   *
   * @throws AAEPRequestError with the server's sentence when it is refused,
   *   or when the connection is lost before the answer arrives.
   */
  request<K extends keyof IAnswers>(message: ChatMessage<K>): Promise<IAnswers[K]> {
    if (this._disposed) {
      return Promise.reject(new AAEPRequestError(0, 'The chat was closed.', false));
    }
    const requestId = `panel-${++this._count}`;
    if (this._frames?.sendFrame({ ...withStreamKey(this.chatId, message), request_id: requestId })) {
      return new Promise<IAnswers[K]>((resolve, reject) => {
        const timer = window.setTimeout(() => {
          this._waiting.delete(requestId);
          reject(new AAEPRequestError(0, 'The server did not answer in time; try again.', false));
        }, ANSWER_TIMEOUT_MS);
        this._waiting.set(requestId, { resolve: resolve as (a: JSONRecord | null) => void, reject, timer });
      });
    }
    return postMessage(this.chatId, message) as Promise<IAnswers[K]>;
  }

  /**
   * Take a frame that carries a `request_id` (from the event stream); true
   * when it answered one of this client's requests.
   */
  settle(frame: JSONRecord): boolean {
    const requestId = typeof frame.request_id === 'string' ? frame.request_id : null;
    const waiting = requestId ? this._waiting.get(requestId) : undefined;
    if (!requestId || !waiting) {
      return false;
    }
    this._waiting.delete(requestId);
    window.clearTimeout(waiting.timer);
    const { request_id: _, status, ...answer } = frame;
    if (answer.kind === 'error') {
      const text = typeof answer.message === 'string' ? answer.message : 'The server refused the message.';
      waiting.reject(new AAEPRequestError(typeof status === 'number' ? status : 400, text, false));
    } else {
      waiting.resolve(status === 204 ? null : answer);
    }
    return true;
  }

  /** The socket closed: answers to what it carried will not come. */
  connectionLost(): void {
    for (const [requestId, waiting] of this._waiting) {
      window.clearTimeout(waiting.timer);
      waiting.reject(new AAEPRequestError(0, 'The connection was lost before the server answered; try again.', false));
      this._waiting.delete(requestId);
    }
  }

  dispose(): void {
    this.connectionLost();
    this._disposed = true;
  }

  private _frames: IFrameSender | null;
  private _count = 0;
  private _disposed = false;
  private _waiting = new Map<
    string,
    { resolve: (answer: JSONRecord | null) => void; reject: (error: Error) => void; timer: number }
  >();
}
