/**
 * A chat's event stream: how AAEP events reach the panel, with reconnection.
 *
 * Preferred: the chat's WebSocket (`…/ws`, `aaep.v1`, one JSON message per
 * text frame), opened by a `subscription.request` frame. Server-Sent Events
 * (sseWire.ts) carry the chat when the socket is unavailable, and meanwhile
 * when it has not opened within {@link SOCKET_HEAD_START_MS}: Chromium opens
 * one WebSocket to a host at a time, and Jupyter holds a starting kernel's
 * socket until the kernel answers. The stream moves to the socket at its
 * first frame (SSE closes) and resynchronises ({@link EventStream.reconnected}):
 * the model skips what the socket's replay repeats (by `event_id`), the chat
 * fetched again brings what was still on its way over SSE.
 *
 * Frames with a `request_id` go to {@link EventStream.answer} (for the
 * `ChatClient`, which sends requests), the rest to {@link EventStream.message}.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { JSONRecord, isRecord } from './aaep';
import { IFrameSender, postMessage } from './chatClient';
import { serverSettings, wsUrl } from './handler';
import { subscriptionClose } from './handshake';
import { IWire, IWireListener, TransportKind, openEventSource } from './sseWire';

export type { TransportKind } from './sseWire';

/** Connection state, as shown in the panel. */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'failed' | 'closed';

/**
 * How long the WebSocket may take to open before SSE carries the chat
 * meanwhile (ms). Unhindered, the chat's socket opened 4-230 ms (median 91)
 * after its creation, timed in the page, in the browser tests at a load of
 * 10 on 2 cores; behind a starting kernel it waits 1-3 s, a slow kernel
 * longer (12.7 s in test_e2e_slow_kernel.py). 400 ms is nearly twice the slowest
 * unhindered opening (no second connection for nothing) and still well
 * under the second after which a panel feels stuck.
 */
export const SOCKET_HEAD_START_MS = 400;

/** Reconnection delays in milliseconds; the last one repeats. */
const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

/** The event stream of one chat: WebSocket first, SSE while it waits and as fallback. */
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

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Write `frame` on the open socket; false when there is none. */
  sendFrame(frame: JSONRecord): boolean {
    const wire = this._active;
    return !this._isDisposed && wire !== null && wire.kind === 'websocket' && wire.send(JSON.stringify(frame));
  }

  /**
   * Send a subscription message (`subscription.request`, `…renegotiate`) on
   * the socket, or by POST, whose answer is emitted on {@link message} too,
   * unless the stream moved to another wire meanwhile (that has its own).
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

  /** Close the connection, telling the producer first when we know our subscription id. */
  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    const close = this._subscriptionId ? subscriptionClose(this._subscriptionId) : null;
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

  /** Open the WebSocket, with SSE after its head start (SSE alone once the socket proved unavailable). */
  connect(): void {
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
          this._sse?.close(); // the first to open: SSE is not needed
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
   * The socket's first frame (its handshake's answer) came while SSE carried
   * the chat: SSE closes. Not at the socket's opening: that leaves a round
   * trip for what SSE was sent before the socket's subscription began.
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
        this.connect();
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
    window.clearTimeout(this._headStart ?? undefined);
    this._headStart = null;
  }

  /** Stop the timers and close both wires. */
  private _teardown(): void {
    this._clearHeadStart();
    window.clearTimeout(this._timer ?? undefined);
    this._timer = null;
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
  private _socketUnavailable: boolean; // it failed to open once (or was not wanted): SSE only
  private _socket: IWire | null = null; // opening or open, as the next one
  private _sse: IWire | null = null;
  private _active: IWire | null = null; // the one that carries the chat
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

/** The chat's WebSocket as a wire (`null` when this browser cannot open it, e.g. a blocked URL). */
function openSocket(chatId: string, listener: IWireListener): IWire | null {
  if (typeof WebSocket === 'undefined') {
    return null;
  }
  let ws: WebSocket;
  try {
    ws = new (serverSettings().WebSocket)(wsUrl(['chats', chatId, 'ws']), ['aaep.v1']);
  } catch {
    return null;
  }
  const silence = () => (ws.onopen = ws.onmessage = ws.onclose = null);
  let wasOpen = false;
  ws.onopen = () => {
    wasOpen = true;
    listener.opened();
  };
  ws.onmessage = (event: MessageEvent) => typeof event.data === 'string' && listener.data(event.data);
  ws.onclose = () => {
    silence();
    listener.closed(wasOpen);
  };
  return {
    kind: 'websocket',
    get isOpen() {
      return ws.readyState === WebSocket.OPEN;
    },
    send(text: string): boolean {
      return ws.readyState === WebSocket.OPEN && (ws.send(text), true);
    },
    close(): void {
      silence();
      try {
        ws.close(4000, 'closed by the panel');
      } catch {
        // Already closed.
      }
    }
  };
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
