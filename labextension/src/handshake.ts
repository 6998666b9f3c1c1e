/**
 * The panel's side of the AAEP handshake: the `subscription.request` it
 * opens every connection with, and what the producer says on the stream
 * besides events and answers (accepted, rejected, closed, errors), read
 * into one typed value each. Pure, so both are unit-tested without a
 * browser; the session acts on what {@link readStreamMessage} returns.
 */
import { AAEP_VERSION, IAAEPEvent, JSONRecord, Verbosity, isAAEPEvent, str } from './aaep';

/** What the handshake depends on: the person's settings and the browser's languages. */
export interface IHandshakeOptions {
  verbosity: Verbosity;
  /** The browser's language first (`navigator.language`). */
  languages: ReadonlyArray<string>;
}

/** The panel's subscriber id (one per installation kind, not per person). */
export const SUBSCRIBER_ID = 'jupyter-aaep-panel';

/** The `subscription.request` sent when a connection opens (and on every reconnect). */
export function subscriptionRequest(options: IHandshakeOptions): JSONRecord {
  return {
    type: 'subscription.request',
    aaep_version: AAEP_VERSION,
    subscriber_id: SUBSCRIBER_ID,
    subscriber_name: 'JupyterLab AAEP panel',
    capabilities: {
      preferred_verbosity: options.verbosity,
      // The panel merges announcements itself; the event budget only needs
      // to keep the transcript smooth, so it is higher than the speech rate.
      max_events_per_second: 20,
      coalesce_boundaries: ['sentence', 'completion'],
      supports_confirmation_reply: true,
      supports_clarification_reply: true,
      supported_conformance_levels: [1, 2, 3],
      languages: [...options.languages, 'en-US'].filter(
        (lang, i, all) => /^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$/.test(lang) && all.indexOf(lang) === i
      )
    },
    // Asks for this stream's key: replies sent with it are heard as the panel's
    // (see `setStreamKey` in chatClient.ts and docs/protocol.md).
    extensions: { jupyter_aaep: { stream_key: true } }
  };
}

/** The `subscription.close` the panel sends when it leaves a chat. */
export function subscriptionClose(subscriptionId: string): JSONRecord {
  return {
    type: 'subscription.close',
    subscription_id: subscriptionId,
    reason_code: 'subscriber_closed',
    reason_message: 'The JupyterLab panel switched chats or was closed.'
  };
}

/**
 * A subscription id for replies sent before the handshake was answered: the
 * server issues ids for implicit subscriptions and must not reject unknown
 * ones (DIGEST §11.2).
 */
export function implicitSubscriptionId(random: (bytes: Uint8Array) => Uint8Array): string {
  const bytes = random(new Uint8Array(16));
  return 'sub_' + Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
}

/** One message of the stream that answers no request, read. */
export type StreamMessage =
  | { kind: 'event'; event: IAAEPEvent }
  | { kind: 'accepted'; subscriptionId: string | null }
  | { kind: 'rejected'; reason: string }
  | { kind: 'closed'; reason: string | null }
  | { kind: 'replay-unavailable' }
  | { kind: 'key'; key: string }
  | { kind: 'error'; message: string | null }
  | { kind: 'other' };

/**
 * Read a message of the stream: an AAEP event, a subscription message, a
 * stream note, or an error of a frame sent without a `request_id` (the
 * handshake). Anything else is `other` and ignored: a subscriber survives
 * what it does not know.
 */
export function readStreamMessage(message: JSONRecord): StreamMessage {
  if (isAAEPEvent(message)) {
    return { kind: 'event', event: message };
  }
  const type = str(message, 'type');
  const kind = str(message, 'kind');
  switch (type) {
    case 'subscription.accepted':
      return { kind: 'accepted', subscriptionId: str(message, 'subscription_id') ?? null };
    case 'subscription.rejected':
      return { kind: 'rejected', reason: str(message, 'reason_message') ?? str(message, 'reason_code') ?? '' };
    case 'subscription.close':
      // The producer ends the subscription (e.g. the server shuts down); the
      // stream reconnects when it comes back.
      return { kind: 'closed', reason: str(message, 'reason_message') ?? null };
  }
  if (kind === 'replay.unavailable') {
    return { kind: 'replay-unavailable' };
  }
  const key = str(message, 'stream_key');
  if (kind === 'stream.key' && key) {
    return { kind: 'key', key };
  }
  if (kind === 'error' || type === 'error') {
    return { kind: 'error', message: str(message, 'message') ?? null };
  }
  return { kind: 'other' };
}
