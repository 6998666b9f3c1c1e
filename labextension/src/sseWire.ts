/**
 * What a wire of a chat's event stream is, and its Server-Sent Events wire
 * (`aaep/v1/chats/{id}/events`; no upstream: the handshake and messages go
 * by POST). `EventStream` (eventStream.ts) opens its WebSocket wire itself,
 * with the same callbacks, and races the two: which wire carries the chat,
 * and when, is its choice; a wire only opens, carries text and closes. This
 * module is out of the way of a chat on its WebSocket.
 */
import { sseUrl } from './handler';

/** Which wire a stream uses. */
export type TransportKind = 'websocket' | 'sse';

/** SSE event names the server may use; unnamed events arrive as `message`. */
const SSE_EVENT_NAMES = ['aaep.event', 'aaep.ack', 'aaep.handshake', 'message'];

/** What a wire tells its owner. Nothing is called after {@link IWire.close}. */
export interface IWireListener {
  /** The wire opened (an SSE wire again after the browser reconnected it). */
  opened(): void;
  /** A text message arrived. */
  data(text: string): void;
  /** The browser is reconnecting the wire by itself (SSE, with `Last-Event-ID`). */
  retrying?(): void;
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

/** The chat's SSE stream (`null` when the browser has no `EventSource`). */
export function openEventSource(chatId: string, listener: IWireListener): IWire | null {
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
      listener.retrying?.();
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
}
