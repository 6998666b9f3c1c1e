"""Who is listening: open streams, the subscription each one serves, and handshakes.

A *stream* is one open connection (an SSE response or a WebSocket). It always serves exactly
one :class:`~jupyter_aaep.aaep.subscription.Subscription`: the implicit one it opened with,
or the one a handshake negotiated. Handshakes reach a stream three ways:

- over its own WebSocket (``subscription.request`` as a frame);
- ``POST {chat}/messages`` with ``subscription.request``: the in-band form the AAEP examples
  and the conformance suite use. It applies to every SSE stream of that chat opened
  *without* ``?subscription_id=`` (a plain ``GET /events`` cannot otherwise say which
  stream is its own); each gets its own subscription and the answer on its stream. With no
  such stream, the subscription waits to be picked up by ``GET …/events?subscription_id=``;
- ``POST /aaep/v1/subscriptions`` (Appendix B): the subscription waits for
  ``GET …/events?subscription_id=`` and no open stream is touched.

When a stream goes away, its subscription can no longer answer confirmations: the broker is
told, so a request nobody else can answer takes its default (§5.8.2) — at once after an
explicit ``subscription.close``, and after a short reconnect grace when the connection just
dropped (a reloaded page must not silently reject the approval the user was about to give).
A stream that opens meanwhile and can answer joins the pending requests of its chat.

Streams are limited per *client* (the user and their address), not only per server: a client
over ``max_streams_per_client`` loses its idlest stream (least recent activity), which gets a
``subscription.close`` saying why; the new stream is always served. At ``max_streams`` the
client holding the most streams gives up its idlest one. Who a stream *says* it is (its
handshake) and its stream key are :mod:`.reply_origin`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..aaep.capabilities import Terms
from ..aaep.emitter import Event, SubscriberOverflow
from ..aaep.handshake import Accepted, Answer, negotiate, reject, renegotiate
from ..aaep.ids import new_id
from ..aaep.session import Producer
from ..aaep.subscription import Subscription
from .reply_origin import StreamKeys

if TYPE_CHECKING:
    from ..aaep.broker import ReplyBroker
    from ..chats.chat import Chat

log = logging.getLogger(__name__)

Transport = Literal["sse", "websocket"]
DETACHED_GRACE_SECONDS = 300.0
PENDING_LIMIT = 256
MAX_PENDING_MESSAGES = 10_000  # unsent messages a stream may hold (a slow client) before it ends


@dataclass
class Stream:
    """One open connection and the subscription it currently serves."""

    chat_id: str | None  # None: every chat (``/aaep/v1/events``)
    subscription: Subscription
    transport: Transport
    bound_by_url: bool = False
    """Opened with ``?subscription_id=``: in-band POSTed handshakes leave it alone."""
    stream_id: str = field(default_factory=lambda: new_id("sub").replace("sub_", "stm_"))
    closed: bool = False
    on_end: Callable[[int, str], None] | None = None
    """How the transport ends the connection from our side (code, reason)."""
    client: str = ""  # who opened it (user and address), for the per-client stream limit
    last_activity: float = field(default_factory=time.monotonic)
    _unsubscribe: Callable[[], None] | None = None

    def touch(self) -> None:
        """The client used this stream (a frame or a message about its subscription)."""
        self.last_activity = time.monotonic()

    async def next(self) -> Event | None:
        """The next message to send, following the stream onto a renegotiated subscription."""
        while True:
            subscription = self.subscription
            message = await subscription.next()
            if message is not None:
                return message
            if self.closed or subscription is self.subscription:
                return None


def client_key(user: Any, address: str | None, *, token_authenticated: bool = False) -> str:
    """Whom a stream belongs to for the per-client limit: the Jupyter user at an address.
    Requests authenticated by the server's token alone get a new random user each time, so
    they all count as one client per address ("token"): bearers of the token are one principal.
    """
    name = (
        "token"
        if token_authenticated
        else (
            getattr(user, "username", None)
            or (user if isinstance(user, str) else None)
            or "anonymous"
        )
    )
    return f"{name}@{address or 'unknown'}"


@dataclass
class _Waiting:
    """A negotiated subscription no stream has picked up yet, or whose stream went away."""

    chat_id: str | None
    accepted: Accepted
    since: float = field(default_factory=time.monotonic)


SERVER_RECONNECT_GRACE = 30.0
"""Seconds a pending request waits for its subscriber to come back (``reconnect_grace_seconds``)."""


class StreamHub:
    """Every stream and subscription of the server, and the broker's view of who can answer."""

    def __init__(
        self,
        *,
        producer: Producer,
        chat_lookup: Callable[[str], Chat],
        max_streams: int = 1024,
        max_streams_per_client: int = 32,
        reconnect_grace: float = 0.0,
    ) -> None:
        if max_streams < 1 or max_streams_per_client < 1:
            raise ValueError("max_streams and max_streams_per_client must be at least 1.")
        self.producer = producer
        self.reconnect_grace = reconnect_grace
        self.broker: ReplyBroker | None = None
        self.manifest_uri: str | None = None
        self.max_streams = max_streams
        self.max_streams_per_client = max_streams_per_client
        self.max_pending = MAX_PENDING_MESSAGES  # per stream
        self._chat_lookup = chat_lookup
        self._streams: list[Stream] = []
        self._accepted: dict[str, Accepted] = {}
        """The negotiation behind each live subscription (renegotiation builds on it)."""
        self._waiting: dict[str, _Waiting] = {}
        self._everything: list[Stream] = []
        self.keys = StreamKeys()  # who each stream says it is, and its key (reply_origin)

    # -- fan-out --------------------------------------------------------------------------------
    def attach_chat(self, chat: Chat) -> None:
        """Forward a chat's messages to the streams that follow every chat."""
        chat.emitter.subscribe(_ToEverything(self))

    def deliver_everywhere(self, message: Event) -> None:
        for stream in tuple(self._everything):
            try:
                stream.subscription.deliver(message)
            except SubscriberOverflow:
                log.warning("AAEP stream %s fell behind and was closed", stream.stream_id)
                self.close_stream(stream)

    # -- opening and closing ------------------------------------------------------------------------
    def open_stream(
        self,
        chat: Chat | None,
        *,
        transport: Transport,
        subscription_id: str | None = None,
        back_channel: bool = True,
        replay: Iterable[Event] = (),
        client: str = "",
    ) -> Stream:
        """Register a new connection; *replay* is delivered before any live message.

        Raises ``LookupError`` for a ``subscription_id`` that is not waiting for a stream here.
        At a stream limit the idlest stream of the client over it is closed to make room.
        """
        chat_id = chat.chat_id if chat is not None else None
        if subscription_id is not None:
            waiting = self._waiting.get(subscription_id)
            if waiting is None:
                raise LookupError(
                    f"There is no subscription {subscription_id} waiting for a stream. "
                    "Request one with subscription.request first (it may have been closed)."
                )
            if waiting.chat_id != chat_id:
                raise LookupError(f"Subscription {subscription_id} belongs to another endpoint.")
            del self._waiting[subscription_id]
            subscription = self._subscription(waiting.accepted.terms, subscription_id)
            self._accepted[subscription_id] = waiting.accepted
        else:
            subscription = self._subscription(
                Terms.implicit(can_reply=back_channel and chat is not None)
            )
        self._make_room(client)
        stream = Stream(
            chat_id,
            subscription,
            transport,
            bound_by_url=subscription_id is not None,
            client=client,
        )
        for message in replay:
            subscription.deliver(message)
        self._subscribe(stream, chat)
        self._streams.append(stream)
        self._join_pending(stream)
        return stream

    def _subscription(self, terms: Terms, subscription_id: str | None = None) -> Subscription:
        return Subscription(terms, subscription_id=subscription_id, max_pending=self.max_pending)

    def _make_room(self, client: str) -> None:
        """Keep within the per-client and the server-wide limit before a stream of *client* opens."""
        mine = [s for s in self._streams if s.client == client]
        if len(mine) >= self.max_streams_per_client:
            self._evict(
                min(mine, key=lambda s: s.last_activity),
                f"This client opened more than {self.max_streams_per_client} AAEP streams; "
                "its least recently used stream was closed to make room for the new one.",
            )
        if len(self._streams) >= self.max_streams:
            counts = Counter(s.client for s in self._streams)
            heaviest = max(counts, key=lambda name: counts[name])
            self._evict(
                min(
                    (s for s in self._streams if s.client == heaviest),
                    key=lambda s: s.last_activity,
                ),
                f"This server serves at most {self.max_streams} AAEP streams; the least recently used "
                "stream of the client with the most streams was closed to make room.",
            )

    def _evict(self, stream: Stream, reason: str) -> None:
        """Close *stream* from our side, telling its subscriber why (a reconnect grace applies)."""
        log.info(
            "AAEP stream %s of %s closed at the stream limit",
            stream.stream_id,
            stream.client or "a client",
        )
        self._end_stream(stream, "stream_limit", reason)

    def streams_of(self, client: str) -> list[Stream]:
        """The open streams of *client*, oldest first."""
        return [s for s in self._streams if s.client == client]

    def touch_subscription(self, subscription_id: Any) -> None:
        """A message named this subscription: its stream is in use."""
        stream = self._stream_of(subscription_id)
        if stream is not None:
            stream.touch()

    def _join_pending(self, stream: Stream) -> None:
        """A newcomer able to answer may answer what its chat is waiting for (after a reload)."""
        if self.broker is None or stream.chat_id is None:
            return
        chat = self._chat_lookup(stream.chat_id)
        if chat.session is None:
            return
        for kind in ("confirmation", "clarification"):
            if stream.subscription.terms.can_answer(kind):
                self.broker.entitle(chat.session.id, stream.subscription.id, kind)

    def _subscribe(self, stream: Stream, chat: Chat | None) -> None:
        if chat is None:
            self._everything.append(stream)
            stream._unsubscribe = lambda: (
                self._everything.remove(stream) if stream in self._everything else None
            )
        else:
            stream._unsubscribe = chat.emitter.subscribe(stream.subscription)

    def close_stream(self, stream: Stream, *, final: bool = False) -> None:
        """Stop delivering; its subscription's requests default after the grace (or now: *final*)."""
        if stream.closed:
            return
        stream.closed = True
        self.keys.closed(stream)
        if stream._unsubscribe is not None:
            stream._unsubscribe()
        if stream in self._streams:
            self._streams.remove(stream)
        subscription = stream.subscription
        subscription.close()
        self._forget(
            subscription.id,
            reconnect_chat=stream.chat_id if stream.bound_by_url else False,
            final=final,
        )

    def _forget(
        self,
        subscription_id: str,
        *,
        reconnect_chat: str | None | Literal[False] = False,
        final: bool = False,
    ) -> None:
        accepted = self._accepted.pop(subscription_id, None)
        if reconnect_chat is not False and accepted is not None:
            # EventSource reconnects to the same URL: let it find its terms again for a while.
            self._wait(accepted, chat_id=reconnect_chat)
        if self.broker is None:
            return
        if final or self.reconnect_grace <= 0:
            self._apply_defaults(subscription_id)
        else:
            asyncio.get_running_loop().call_later(
                self.reconnect_grace, self._apply_defaults, subscription_id
            )

    def _apply_defaults(self, subscription_id: str) -> None:
        if self.broker is None:
            return
        applied = self.broker.apply_defaults_for_subscription(subscription_id)
        if applied:
            log.info(
                "AAEP subscription %s left; %d pending request(s) took their default",
                subscription_id,
                applied,
            )

    def _wait(self, accepted: Accepted, *, chat_id: str | None) -> None:
        now = time.monotonic()
        for key in [k for k, w in self._waiting.items() if now - w.since > DETACHED_GRACE_SECONDS]:
            del self._waiting[key]
        while len(self._waiting) >= PENDING_LIMIT:
            del self._waiting[next(iter(self._waiting))]
        self._waiting[accepted.subscription_id] = _Waiting(chat_id, accepted)

    def shutdown(self, reason: str = "The Jupyter server is shutting down.") -> None:
        for stream in list(self._streams):
            self._end_stream(stream, "producer_shutdown", reason, final=True)

    def _end_stream(self, stream: Stream, code: str, reason: str, *, final: bool = False) -> None:
        """Send the subscriber ``subscription.close`` with *code* and *reason*, then close."""
        stream.subscription.send_control(
            {
                "type": "subscription.close",
                "subscription_id": stream.subscription.id,
                "reason_code": code,
                "reason_message": reason,
            }
        )
        if stream.on_end is not None:
            stream.on_end(4000, code.replace("_", " "))
        self.close_stream(stream, final=final)

    # -- handshakes ---------------------------------------------------------------------------------
    def handshake(
        self,
        request: Any,
        *,
        chat_id: str | None,
        origin: Stream | None = None,
        in_band: bool = True,
    ) -> Answer:
        """Answer a ``subscription.request``; see the module docstring for where it applies."""
        if origin is not None:
            targets = [origin]
        elif in_band and chat_id is not None:
            targets = [
                s
                for s in self._streams
                if s.chat_id == chat_id and s.transport == "sse" and not s.bound_by_url
            ]
        else:
            targets = []
        if not targets:
            answer = negotiate(request, producer=self.producer, manifest_uri=self.manifest_uri)
            if isinstance(answer, Accepted):
                self._wait(answer, chat_id=chat_id)
            return answer
        answer = reject("unknown", "No stream.")
        for stream in targets:
            answer = negotiate(request, producer=self.producer, manifest_uri=self.manifest_uri)
            if isinstance(answer, Accepted):
                self._rebind(stream, answer)
            elif answer.malformed and stream.transport == "websocket":
                continue  # the socket answers with an error frame and keeps its subscription
            stream.subscription.send_control(answer.message)
            if isinstance(answer, Accepted):
                self.keys.bound(stream, request)  # who it says it is; its key, if it asked
        return answer

    def _rebind(self, stream: Stream, accepted: Accepted) -> None:
        old = stream.subscription
        new = self._subscription(accepted.terms, accepted.subscription_id)
        self._accepted[new.id] = accepted
        if stream._unsubscribe is not None:
            stream._unsubscribe()
        stream.subscription = new
        chat = self._chat_lookup(stream.chat_id) if stream.chat_id is not None else None
        self._subscribe(stream, chat)
        for message in old.release():
            new.deliver(message)
        new.on_queued = old.on_queued  # the transport still writes in the publisher's step
        if self.broker is not None:
            # The same subscriber on new terms: requests it could answer stay answerable.
            for request in self.broker.pending():
                allowed = request.allowed_subscriptions
                if allowed is not None and old.id in allowed and new.terms.can_answer(request.kind):
                    request.allowed_subscriptions = allowed | {new.id}
        self._forget(old.id)

    def renegotiate(self, message: Any) -> tuple[Answer, Subscription | None]:
        """Answer ``subscription.renegotiate``; a rejection ends the subscription.

        Raises ``LookupError`` when no live subscription has that id.
        """
        subscription_id = message.get("subscription_id") if isinstance(message, Mapping) else None
        stream = self._stream_of(subscription_id)
        waiting = self._waiting.get(str(subscription_id))
        if stream is None and waiting is None:
            raise LookupError(
                f"There is no open subscription {subscription_id!r}; send subscription.request instead."
            )
        before = (
            self._accepted.get(str(subscription_id)) if stream is not None else waiting.accepted  # type: ignore[union-attr]
        )
        answer = renegotiate(
            message,
            before.requested if before else {},
            producer=self.producer,
            manifest_uri=self.manifest_uri,
        )
        if stream is not None:
            if isinstance(answer, Accepted):
                stream.subscription.update_terms(answer.terms)
                self._accepted[stream.subscription.id] = answer
                stream.subscription.send_control(answer.message)
            else:
                stream.subscription.send_control(answer.message)
                self.end_subscription(
                    stream.subscription.id, code=4001, reason="renegotiation rejected"
                )
            return answer, stream.subscription
        if isinstance(answer, Accepted):
            self._waiting[answer.subscription_id] = _Waiting(waiting.chat_id, answer)  # type: ignore[union-attr]
        else:
            self._waiting.pop(str(subscription_id), None)
        return answer, None

    def end_subscription(
        self, subscription_id: Any, *, code: int = 4005, reason: str = "closed by subscriber"
    ) -> bool:
        """``subscription.close`` from either side: stop sending, apply pending defaults."""
        if (
            isinstance(subscription_id, str)
            and self._waiting.pop(subscription_id, None) is not None
        ):
            return True
        stream = self._stream_of(subscription_id)
        if stream is None:
            return False
        if stream.on_end is not None:
            stream.on_end(code, reason)
        stream.bound_by_url = False  # an explicit close is final: no reconnect grace
        self.close_stream(stream, final=True)
        return True

    def is_waiting(self, subscription_id: str) -> bool:
        """Negotiated but not yet picked up by ``GET …/events?subscription_id=``."""
        return subscription_id in self._waiting

    def _stream_of(self, subscription_id: Any) -> Stream | None:
        return next((s for s in self._streams if s.subscription.id == subscription_id), None)

    # -- the broker's question --------------------------------------------------------------------------
    def entitled(
        self, event: Mapping[str, Any], kind: Literal["confirmation", "clarification"]
    ) -> frozenset[str]:
        """Subscriptions that received this request and said they can answer it."""
        chat_id = self._chat_of_session(str(event.get("session_id")))
        return frozenset(
            s.subscription.id
            for s in self._streams
            if not s.closed
            and (s.chat_id is None or s.chat_id == chat_id)
            and s.subscription.terms.can_answer(kind)
        )

    def _chat_of_session(self, session_id: str) -> str | None:
        for stream in self._streams:
            if stream.chat_id is None:
                continue
            chat = self._chat_lookup(stream.chat_id)
            if chat.session is not None and chat.session.id == session_id:
                return chat.chat_id
        return None


class _ToEverything:
    """The subscriber a chat's emitter feeds for the streams that follow every chat."""

    def __init__(self, hub: StreamHub) -> None:
        self._hub = hub

    def deliver(self, message: Event) -> None:
        self._hub.deliver_everywhere(message)
