/**
 * A chat's event stream: how AAEP events reach the panel, with reconnection.
 *
 * Preferred: the chat's WebSocket, opened by a `subscription.request` frame.
 * Fallback: Server-Sent Events (the handshake then goes by POST), used when
 * the WebSocket is unavailable, and meanwhile whenever the WebSocket has not
 * opened within {@link SOCKET_HEAD_START_MS}: Chromium opens one WebSocket
 * to a host at a time, and Jupyter holds a starting kernel's socket until the
 * kernel answers, so the chat's socket can wait seconds behind it. When the
 * socket opens later the stream moves to it (the SSE wire closes) and
 * {@link EventStream.reconnected} asks the session to resynchronise: the
 * model skips events it has (by `event_id`), and the chat fetched again
 * brings any event that was still on its way over SSE. The wires themselves
 * are in wires.ts.
 *
 * What arrives is split in two: answers to requests (frames with a
 * `request_id`) go to {@link EventStream.answer}, for the `ChatClient` that
 * sent them; everything else (AAEP events, subscription messages) to
 * {@link EventStream.message}. Requests themselves are `ChatClient`'s job.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { JSONRecord, isRecord } from './aaep';
import { IFrameSender, postMessage } from './chatClient';
import { IWire, IWireListener, TransportKind, openEventSource, openSocket } from './wires';

export type { TransportKind } from './wires';

/** Connection state, as shown in the panel. */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'failed' | 'closed';

/**
 * How long the WebSocket may take to open before SSE carries the chat
 * meanwhile (ms). Unhindered, the chat's socket opens in well under 100 ms
 * here even under load; a kernel starting in the same page holds it for one
 * to several seconds. 400 ms stays clear of the first (no second connection
 * for nothing) and well under the second, and it is still short of the
 * second or so a person waits for a panel before it feels stuck.
 */
export const SOCKET_HEAD_START_MS = 400;

/** Reconnection delays in milliseconds; the last one repeats. */
const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

/**
 * The event stream of one chat: WebSocket first, SSE while it waits and as fallback.
 */
export class EventStream implements IDisposable, IFrameSender {
  /**
   * @param options.chatId The chat to connect to.
   * @param options.handshake Builds the `subscription.request` to send
   *   whenever a connection opens (called again on every reconnect so it
   *   carries the current settings).
   */
  constructor(options: EventStream.IOptions) {
    this._chatId = options.chatId;
    this._handshake = options.handshake;
    this._socketUnavailable = !(options.preferWebSocket ?? true);
  }

  /** Every JSON object received that answers no request, in arrival order. */
  get message(): ISignal<this, JSONRecord> {
    return this._message;
  }

  /** Every frame that answers a request (it carries the request's `request_id`). */
  get answer(): ISignal<this, JSONRecord> {
    return this._answer;
  }

  /** Emitted when {@link state} changes (not when the wire does: a move keeps it open). */
  get stateChanged(): ISignal<this, ConnectionState> {
    return this._stateChanged;
  }

  /**
   * Emitted when a connection opens again after it was lost, and when the
   * stream moved from SSE to the WebSocket. Messages sent meanwhile may be
   * missing (a WebSocket has no resume): resynchronise.
   */
  get reconnected(): ISignal<this, void> {
    return this._reconnected;
  }

  /** The current connection state. */
  get state(): ConnectionState {
    return this._state;
  }

  /** The wire in use (the last one used once lost), or `null` before the first connection. */
  get kind(): TransportKind | null {
    return this._kind;
  }

  /** Whether the transport has been disposed. */
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Open the connection (WebSocket first, SSE after a head start). Safe to call once. */
  connect(): void {
    this._connect();
  }

  /** Write `frame` on the open socket; false when there is none. */
  sendFrame(frame: JSONRecord): boolean {
    const wire = this._active;
    return !this._isDisposed && wire !== null && wire.kind === 'websocket' && wire.send(JSON.stringify(frame));
  }

  /**
   * Send a subscription message (`subscription.request`, `…renegotiate`):
   * on the socket, whose answer is an AAEP message on {@link message}, or by
   * POST, whose AAEP answer is emitted on {@link message} too, unless the
   * stream moved to another wire meanwhile (it then has its own answer).
   *
   * @throws AAEPRequestError when the POST fails (the server's message).
   */
  async sendSubscription(message: JSONRecord): Promise<void> {
    if (this._isDisposed || this.sendFrame(message)) {
      return;
    }
    const wire = this._active;
    const answer = await postMessage(this._chatId, message);
    if (answer && !this._isDisposed && this._active === wire) {
      this._message.emit(answer);
    }
  }

  /**
   * Close the connection, telling the producer first when we know our
   * subscription id (best effort).
   */
  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    const close = this._closeMessage();
    if (close && !this.sendFrame(close) && this._kind === 'sse') {
      void postMessage(this._chatId, close).catch(() => undefined);
    }
    this._isDisposed = true;
    this._teardown();
    this._setState('closed');
    Signal.clearData(this);
  }

  /** Remember the subscription id the producer granted (for the close). */
  setSubscriptionId(id: string | null): void {
    this._subscriptionId = id;
  }

  private _closeMessage(): JSONRecord | null {
    if (!this._subscriptionId) {
      return null;
    }
    return {
      type: 'subscription.close',
      subscription_id: this._subscriptionId,
      reason_code: 'subscriber_closed',
      reason_message: 'The JupyterLab panel switched chats or was closed.'
    };
  }

  /** Open the WebSocket, with SSE after its head start; SSE alone once the socket proved unavailable. */
  private _connect(): void {
    this._teardown();
    this._setState(this._everOpened ? 'reconnecting' : 'connecting');
    if (!this._socketUnavailable) {
      const socket = openSocket(this._chatId, this._socketListener());
      if (socket) {
        this._socket = socket;
        this._headStart = window.setTimeout(() => {
          this._headStart = null;
          if (!this._active && !this._sse) {
            this._openSse();
          }
        }, SOCKET_HEAD_START_MS);
        return;
      }
      this._socketUnavailable = true;
    }
    this._openSse();
  }

  private _openSse(): void {
    const source = openEventSource(this._chatId, this._sseListener());
    if (source) {
      this._sse = source;
    } else if (!this._socket) {
      this._setState('failed');
    }
  }

  /** The socket's callbacks; a closed wire calls none, so each concerns the current socket. */
  private _socketListener(): IWireListener {
    return {
      opened: () => {
        const socket = this._socket!;
        this._clearHeadStart();
        socket.send(JSON.stringify(this._handshake()));
        if (this._active === null) {
          // First: SSE, if it was started, is not needed.
          this._sse?.close();
          this._sse = null;
          this._activate(socket);
          if (this._reopened) {
            this._reconnected.emit();
          }
        } // else SSE carries the chat until the socket's first frame (see _moveToSocket)
      },
      data: text => {
        if (this._active !== this._socket) {
          this._moveToSocket();
        }
        this._receive(text);
      },
      retrying: () => undefined,
      closed: wasOpen => {
        const wasActive = this._active !== null && this._active === this._socket;
        this._socket = null;
        if (wasActive) {
          this._lost();
        } else if (!wasOpen) {
          // The socket endpoint is unavailable (proxy, old server): SSE from now on.
          this._socketUnavailable = true;
          this._clearHeadStart();
          if (!this._sse) {
            this._openSse();
          }
        } // else it closed before its first frame: SSE goes on, the next reconnect tries again
      }
    };
  }

  /**
   * The socket's first frame (the answer to its handshake) arrived while SSE
   * carried the chat: close SSE and go on with the socket. Waiting for that
   * frame, not the socket's opening, leaves a whole round trip for what SSE
   * was sent before the socket's subscription began to arrive; what the
   * socket's replay repeats is skipped by `event_id` in the model, and the
   * resynchronisation asked by {@link reconnected} brings anything else.
   */
  private _moveToSocket(): void {
    this._sse?.close();
    this._sse = null;
    this._activate(this._socket!);
    this._reconnected.emit();
  }

  /** The SSE wire's callbacks (it carries the chat until the socket can). */
  private _sseListener(): IWireListener {
    return {
      opened: () => {
        const source = this._sse!;
        this._activate(source); // an open socket carries nothing before its first frame
        // SSE has no upstream: the handshake goes through POST …/messages.
        void this.sendSubscription(this._handshake()).catch(() => undefined);
        if (this._reopened) {
          this._reconnected.emit();
        }
      },
      data: text => {
        if (this._active === this._sse) {
          this._receive(text);
        }
      },
      retrying: () => {
        // The browser reconnects by itself, sending Last-Event-ID.
        if (this._active === this._sse) {
          this._setState('reconnecting');
        }
      },
      closed: () => {
        const wasActive = this._active === this._sse;
        this._sse = null;
        if (wasActive && this._socket?.isOpen) {
          this._moveToSocket();
        } else if (wasActive) {
          this._lost();
        } else if (!this._socket) {
          this._scheduleReconnect();
        } // else the socket may still open
      }
    };
  }

  /** `wire` carries the chat now; `_reopened` says whether one did before. */
  private _activate(wire: IWire): void {
    this._reopened = this._everOpened;
    this._everOpened = true;
    this._active = wire;
    this._kind = wire.kind;
    this._attempt = 0;
    this._setState('open');
  }

  /** The wire that carried the chat is gone: close the other too, retry with backoff. */
  private _lost(): void {
    this._teardown();
    this._scheduleReconnect();
  }

  private _scheduleReconnect(): void {
    const delay = BACKOFF_MS[Math.min(this._attempt, BACKOFF_MS.length - 1)];
    this._attempt += 1;
    this._setState(this._attempt >= 3 ? 'failed' : 'reconnecting');
    this._timer = window.setTimeout(() => {
      this._timer = null;
      if (!this._isDisposed) {
        this._connect();
      }
    }, delay);
  }

  private _receive(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      console.warn('jupyter-aaep: ignored a message that is not JSON');
      return;
    }
    const items = Array.isArray(parsed) ? parsed : [parsed]; // batches tolerated; AAEP sends one per frame
    for (const item of items) {
      if (isRecord(item)) {
        (typeof item.request_id === 'string' ? this._answer : this._message).emit(item);
      }
    }
  }

  private _clearHeadStart(): void {
    if (this._headStart !== null) {
      window.clearTimeout(this._headStart);
      this._headStart = null;
    }
  }

  /** Stop the timers and close both wires. */
  private _teardown(): void {
    this._clearHeadStart();
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    this._active = null;
    this._socket?.close();
    this._socket = null;
    this._sse?.close();
    this._sse = null;
  }

  private _setState(state: ConnectionState): void {
    if (this._state !== state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _chatId: string;
  private _handshake: () => JSONRecord;
  /** The socket failed to open once (or was not wanted): SSE only. */
  private _socketUnavailable: boolean;
  /** The WebSocket, opening or open. */
  private _socket: IWire | null = null;
  /** The SSE wire, opening or open. */
  private _sse: IWire | null = null;
  /** The wire that carries the chat (one of the two), or null. */
  private _active: IWire | null = null;
  private _kind: TransportKind | null = null;
  private _state: ConnectionState = 'closed';
  private _everOpened = false;
  private _reopened = false;
  private _attempt = 0;
  private _headStart: number | null = null;
  private _timer: number | null = null;
  private _subscriptionId: string | null = null;
  private _isDisposed = false;
  private _message = new Signal<this, JSONRecord>(this);
  private _answer = new Signal<this, JSONRecord>(this);
  private _stateChanged = new Signal<this, ConnectionState>(this);
  private _reconnected = new Signal<this, void>(this);
}

/** Options of {@link EventStream}. */
export namespace EventStream {
  export interface IOptions {
    /** The chat id. */
    chatId: string;
    /** Builds the `subscription.request` sent on every (re)connection. */
    handshake: () => JSONRecord;
    /** Try the WebSocket first (default true). */
    preferWebSocket?: boolean;
  }
}
