/**
 * A chat's event stream: how AAEP events reach the panel, with reconnection.
 *
 * Preferred: a WebSocket at `aaep/v1/chats/{id}/ws` with the `aaep.v1`
 * subprotocol, one JSON message per text frame in both directions, opened by
 * a `subscription.request`. Fallback: Server-Sent Events from `…/events`
 * (the handshake then goes by POST).
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
import { serverSettings, sseUrl, wsUrl } from './handler';

/** Which wire the transport currently uses. */
export type TransportKind = 'websocket' | 'sse';

/** Connection state, as shown in the panel. */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'failed' | 'closed';

/** SSE event names the server may use; unnamed events arrive as `message`. */
const SSE_EVENT_NAMES = ['aaep.event', 'aaep.ack', 'aaep.handshake', 'message'];

/** The WebSocket subprotocol of AAEP (Appendix B.2). */
const WS_SUBPROTOCOL = 'aaep.v1';

/** Reconnection delays in milliseconds; the last one repeats. */
const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

/**
 * The event stream of one chat: WebSocket first, SSE as fallback.
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
    this._preferWebSocket = options.preferWebSocket ?? true;
  }

  /** Every JSON object received that answers no request, in arrival order. */
  get message(): ISignal<this, JSONRecord> {
    return this._message;
  }

  /** Every frame that answers a request (it carries the request's `request_id`). */
  get answer(): ISignal<this, JSONRecord> {
    return this._answer;
  }

  /** Emitted when {@link state} or {@link kind} changes. */
  get stateChanged(): ISignal<this, ConnectionState> {
    return this._stateChanged;
  }

  /**
   * Emitted when a connection opens again after it was lost. Messages sent
   * meanwhile may be missing (a WebSocket has no resume): resynchronise.
   */
  get reconnected(): ISignal<this, void> {
    return this._reconnected;
  }

  /** The current connection state. */
  get state(): ConnectionState {
    return this._state;
  }

  /** The wire in use, or `null` before the first connection. */
  get kind(): TransportKind | null {
    return this._kind;
  }

  /** Whether the transport has been disposed. */
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Open the connection (WebSocket first). Safe to call once. */
  connect(): void {
    if (this._preferWebSocket && typeof WebSocket !== 'undefined') {
      this._openWebSocket();
    } else {
      this._openEventSource();
    }
  }

  /** Write `frame` on the open socket; false when there is none. */
  sendFrame(frame: JSONRecord): boolean {
    if (this._isDisposed || !this._ws || this._ws.readyState !== WebSocket.OPEN) {
      return false;
    }
    this._ws.send(JSON.stringify(frame));
    return true;
  }

  /**
   * Send a subscription message (`subscription.request`, `…renegotiate`):
   * on the socket, whose answer is an AAEP message on {@link message}, or by
   * POST, whose AAEP answer is emitted on {@link message} too.
   *
   * @throws AAEPRequestError when the POST fails (the server's message).
   */
  async sendSubscription(message: JSONRecord): Promise<void> {
    if (this._isDisposed || this.sendFrame(message)) {
      return;
    }
    const answer = await postMessage(this._chatId, message);
    if (answer && !this._isDisposed) {
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
    if (close && this._ws?.readyState === WebSocket.OPEN) {
      try {
        this._ws.send(JSON.stringify(close));
      } catch {
        // The socket is going away anyway.
      }
    } else if (close && this._kind === 'sse') {
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

  private _openWebSocket(): void {
    this._teardown();
    this._setState(this._everOpened ? 'reconnecting' : 'connecting');
    const settings = serverSettings();
    let opened = false;
    let ws: WebSocket;
    try {
      ws = new settings.WebSocket(wsUrl(['chats', this._chatId, 'ws']), [WS_SUBPROTOCOL]);
    } catch {
      this._openEventSource();
      return;
    }
    this._ws = ws;
    ws.onopen = () => {
      opened = true;
      const again = this._everOpened;
      this._everOpened = true;
      this._attempt = 0;
      this._kind = 'websocket';
      this._setState('open');
      ws.send(JSON.stringify(this._handshake()));
      if (again) {
        this._reconnected.emit();
      }
    };
    ws.onmessage = (event: MessageEvent) => {
      if (typeof event.data === 'string') {
        this._receive(event.data);
      }
    };
    ws.onclose = () => {
      if (this._ws !== ws || this._isDisposed) {
        return;
      }
      this._ws = null;
      if (!opened) {
        // The socket endpoint is unavailable (proxy, old server): use SSE.
        this._openEventSource();
      } else {
        this._scheduleReconnect(() => this._openWebSocket());
      }
    };
  }

  private _openEventSource(): void {
    this._teardown();
    this._setState(this._everOpened ? 'reconnecting' : 'connecting');
    if (typeof EventSource === 'undefined') {
      this._setState('failed');
      return;
    }
    const source = new EventSource(sseUrl(['chats', this._chatId, 'events']), {
      withCredentials: true
    });
    this._source = source;
    const listener = (event: MessageEvent) => {
      if (typeof event.data === 'string') {
        this._receive(event.data);
      }
    };
    for (const name of SSE_EVENT_NAMES) {
      source.addEventListener(name, listener as EventListener);
    }
    source.onopen = () => {
      const again = this._everOpened;
      this._everOpened = true;
      this._attempt = 0;
      this._kind = 'sse';
      this._setState('open');
      // SSE has no upstream: the handshake goes through POST …/messages.
      void this.sendSubscription(this._handshake()).catch(() => undefined);
      if (again) {
        this._reconnected.emit();
      }
    };
    source.onerror = () => {
      if (this._source !== source || this._isDisposed) {
        return;
      }
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (e.g. a 404): retry ourselves with backoff.
        this._source = null;
        source.close();
        this._scheduleReconnect(() => this._openEventSource());
      } else {
        // The browser reconnects by itself, sending Last-Event-ID.
        this._setState('reconnecting');
      }
    };
  }

  private _scheduleReconnect(open: () => void): void {
    const delay = BACKOFF_MS[Math.min(this._attempt, BACKOFF_MS.length - 1)];
    this._attempt += 1;
    this._setState(this._attempt >= 3 ? 'failed' : 'reconnecting');
    this._timer = window.setTimeout(() => {
      this._timer = null;
      if (!this._isDisposed) {
        open();
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

  private _teardown(): void {
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    if (this._ws) {
      const ws = this._ws;
      this._ws = null;
      ws.onopen = ws.onmessage = ws.onclose = null;
      try {
        ws.close(4000, 'closed by the panel');
      } catch {
        // Already closed.
      }
    }
    if (this._source) {
      this._source.close();
      this._source = null;
    }
  }

  private _setState(state: ConnectionState): void {
    if (this._state !== state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _chatId: string;
  private _handshake: () => JSONRecord;
  private _preferWebSocket: boolean;
  private _ws: WebSocket | null = null;
  private _source: EventSource | null = null;
  private _kind: TransportKind | null = null;
  private _state: ConnectionState = 'closed';
  private _everOpened = false;
  private _attempt = 0;
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
