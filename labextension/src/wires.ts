/**
 * The two wires a chat's events can travel on, opened with the same
 * callbacks so `EventStream` (eventStream.ts) can race them: a WebSocket at
 * `aaep/v1/chats/{id}/ws` (subprotocol `aaep.v1`, one JSON message per text
 * frame both ways) and Server-Sent Events from `…/events` (no upstream: the
 * handshake and messages then go by POST). Which wire is used, and when, is
 * the stream's choice; a wire only opens, carries text and closes.
 */
import { serverSettings, sseUrl, wsUrl } from './handler';

/** Which wire a stream uses. */
export type TransportKind = 'websocket' | 'sse';

/** SSE event names the server may use; unnamed events arrive as `message`. */
const SSE_EVENT_NAMES = ['aaep.event', 'aaep.ack', 'aaep.handshake', 'message'];

/** The WebSocket subprotocol of AAEP (Appendix B.2). */
const WS_SUBPROTOCOL = 'aaep.v1';

/** What a wire tells its owner. Nothing is called after {@link IWire.close}. */
export interface IWireListener {
  /** The wire opened (an SSE wire again after the browser reconnected it). */
  opened(): void;
  /** A text message arrived. */
  data(text: string): void;
  /** The browser is reconnecting the wire by itself (SSE, with `Last-Event-ID`). */
  retrying(): void;
  /** The wire is gone for good; `wasOpen` says whether it ever opened. */
  closed(wasOpen: boolean): void;
}

/** One open (or opening) wire. */
export interface IWire {
  readonly kind: TransportKind;
  /** Whether it is open now. */
  readonly isOpen: boolean;
  /** Write `text` upstream; false when the wire cannot (not open, or SSE). */
  send(text: string): boolean;
  /** Close it; its listener hears nothing more. */
  close(): void;
}

/** Opens a wire of one kind for a chat, or gives `null` when this browser cannot. */
export type WireOpener = (chatId: string, listener: IWireListener) => IWire | null;

/** The chat's WebSocket (`null` when the constructor throws, e.g. a blocked URL). */
export const openSocket: WireOpener = (chatId, listener) => {
  if (typeof WebSocket === 'undefined') {
    return null;
  }
  let ws: WebSocket;
  try {
    ws = new (serverSettings().WebSocket)(wsUrl(['chats', chatId, 'ws']), [WS_SUBPROTOCOL]);
  } catch {
    return null;
  }
  let wasOpen = false;
  const wire: IWire = {
    kind: 'websocket',
    get isOpen() {
      return ws.readyState === WebSocket.OPEN;
    },
    send(text: string): boolean {
      if (ws.readyState !== WebSocket.OPEN) {
        return false;
      }
      ws.send(text);
      return true;
    },
    close(): void {
      ws.onopen = ws.onmessage = ws.onclose = null;
      try {
        ws.close(4000, 'closed by the panel');
      } catch {
        // Already closed.
      }
    }
  };
  ws.onopen = () => {
    wasOpen = true;
    listener.opened();
  };
  ws.onmessage = (event: MessageEvent) => {
    if (typeof event.data === 'string') {
      listener.data(event.data);
    }
  };
  ws.onclose = () => {
    ws.onopen = ws.onmessage = ws.onclose = null;
    listener.closed(wasOpen);
  };
  return wire;
};

/** The chat's SSE stream (`null` when the browser has no `EventSource`). */
export const openEventSource: WireOpener = (chatId, listener) => {
  if (typeof EventSource === 'undefined') {
    return null;
  }
  const source = new EventSource(sseUrl(['chats', chatId, 'events']), { withCredentials: true });
  let wasOpen = false;
  let live = true;
  const onData = (event: MessageEvent) => {
    if (live && typeof event.data === 'string') {
      listener.data(event.data);
    }
  };
  for (const name of SSE_EVENT_NAMES) {
    source.addEventListener(name, onData as EventListener);
  }
  source.onopen = () => {
    if (live) {
      wasOpen = true;
      listener.opened();
    }
  };
  source.onerror = () => {
    if (!live) {
      return;
    }
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. a 404): the owner retries with backoff.
      live = false;
      source.close();
      listener.closed(wasOpen);
    } else {
      listener.retrying();
    }
  };
  return {
    kind: 'sse',
    get isOpen() {
      return live && source.readyState === EventSource.OPEN;
    },
    send: () => false,
    close(): void {
      live = false;
      source.close();
    }
  };
};
