"""Server-Sent Events: ``GET /aaep/v1/chats/{chat_id}/events`` and ``GET /aaep/v1/events``.

Framing (Appendix B.1): an AAEP event is ``event: aaep.event`` / ``id: <event_id>`` /
``data: <one-line JSON>``; any other message (the acknowledgement of a user message, a
handshake answer, a replay notice) is a plain ``data:`` line, so ``EventSource.onmessage``
sees it and the ``Last-Event-ID`` of a reconnecting browser always names an AAEP event. A
``: keepalive`` comment goes out when a ``keepalive`` period passed with nothing sent (clients
and proxies time out idle streams). A message that may go out when it is published is written
and flushed in the publisher's own step (``_push``, as the WebSocket does); the send loop
sends the rest (keepalives, rate-limited or held messages, a slow client's backlog). A
disconnect closes the stream's subscription, which lets requests only it could answer take
their default.

Query parameters: ``subscription_id`` picks up a negotiated subscription
(``POST /aaep/v1/subscriptions``), ``last_event_id`` stands in for the header.

Every message is serialised by :func:`~jupyter_aaep.aaep.wire.dumps` (the WebSocket uses it
too), which always yields valid UTF-8; should one message still fail to go out, it is
logged and skipped, and the stream goes on: one bad message never ends a stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from ..aaep.ids import is_valid_id
from ..aaep.wire import dumps
from .base import AAEPHandler, ServiceSource

if TYPE_CHECKING:  # the streams come with the first request (issue 31)
    from ..aaep.emitter import Event
    from .streams import Stream

log = logging.getLogger(__name__)
T = TypeVar("T")


def sse_frame(message: Event) -> str:
    """One message as an SSE frame (JSON escapes line breaks, so ``data:`` is one line)."""
    data = dumps(message)
    ident = message.get("event_id")
    if (
        "@context" in message
        and isinstance(ident, str)
        and is_valid_id("evt", ident)
        and "\n" not in ident
    ):
        return f"event: aaep.event\nid: {ident}\ndata: {data}\n\n"
    return f"data: {data}\n\n"


def encoded(encode: Callable[[Any], str], message: Any) -> str | None:
    """*message* as text for a subscriber, or None (logged) when it cannot be: a bug in one
    message must not end a stream or a socket."""
    try:
        return encode(message)
    except Exception:
        log.exception("AAEP message could not be serialised and was skipped: %.200r", message)
        return None


def ready(stream: Stream, encode: Callable[[Any], str]) -> Iterator[tuple[Event, str]]:
    """What *stream*'s subscription may send now, each message with its text (one that cannot
    be encoded is logged and skipped): for a transport that writes in the publisher's step."""
    for message in stream.subscription.take_ready():
        text = encoded(encode, message)
        if text is not None:
            yield message, text


def behind(connection: Any) -> bool:
    """Whether a connection's socket still holds unsent bytes (no socket: count it as behind).
    A transport then leaves sending to its loop, which waits for a slow client."""
    socket_stream = getattr(connection, "stream", None)
    return socket_stream is None or bool(socket_stream.writing())


def send_at_once(connection: Any) -> None:
    """Turn Nagle's algorithm off for a stream of events (``TCP_NODELAY``): with it, a small
    frame written while the previous one is not yet acknowledged waits for that
    acknowledgement, which the reader delays by up to 40 ms on Linux (200 ms on Windows) when it
    has nothing to send. Tornado does this only for a response's last write, and for a
    WebSocket only when asked (``set_nodelay``; ``websocket.py`` asks). A stream's frames are
    few and small; each is worth a packet. Found by the run_cell benchmark, its panel reading
    in a process of its own: ``tool.completed`` 18 ms p50 after its publication instead of 2."""
    stream = getattr(connection, "stream", None)  # an HTTP/1 connection (not a test double)
    if stream is not None:
        stream.set_nodelay(True)


def retrieve(sent: asyncio.Future[None]) -> None:
    """A write nobody awaited may fail (the client left): that is not worth a warning."""
    if not sent.cancelled():
        sent.exception()


async def _within(awaitable: Awaitable[T], seconds: float) -> T:
    """``asyncio.wait_for`` without its extra task where Python has ``asyncio.timeout`` (3.11+).

    A message then goes out on the loop iteration it is published in, instead of waiting for
    the task's completion to be relayed through two more iterations, each shared with whatever
    else the server does meanwhile (the agent's next model request): the run_cell benchmark.
    """
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:  # Python 3.10
        return await asyncio.wait_for(awaitable, seconds)
    async with timeout(seconds):
        return await awaitable


class EventStreamHandler(AAEPHandler):
    """One SSE stream, served until the client leaves or its subscription ends."""

    def initialize(
        self, name: str, service: ServiceSource, keepalive: float = 10.0, **kwargs: Any
    ) -> None:
        super().initialize(name, service, **kwargs)
        self.keepalive = keepalive
        self._stream: Stream | None = None
        self._client_gone = False
        self._delivered: Callable[[dict[str, Any]], None] | None = None
        self._sending = False  # the loop below awaits a flush: it owns the connection
        self._pushed = False  # something went out in a publisher's step (no keepalive due)

    @web.authenticated
    @authorized
    async def get(self, chat_id: str | None = None) -> None:
        from .streams import client_key

        await self.serve(
            chat_id,
            client=client_key(
                self.current_user,
                self.request.remote_ip,
                token_authenticated=self.token_authenticated,
            ),
        )

    async def serve(
        self,
        chat_id: str | None,
        *,
        client: str,
        delivered: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Stream *chat_id*'s messages (every chat's with ``None``) to *client*, whom the
        per-client stream limit counts; the kernel endpoint reuses this after its own checks
        (*delivered* hears each message sent)."""
        stream = self.service.open_stream(
            chat_id,
            transport="sse",
            subscription_id=self.get_argument("subscription_id", None),
            last_event_id=self.request.headers.get("Last-Event-ID")
            or self.get_argument("last_event_id", None),
            client=client,
        )
        self._stream, self._delivered = stream, delivered
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # proxies must not buffer the stream
        send_at_once(self.request.connection)
        try:
            await self._send(": connected\n\n")
            stream.subscription.on_queued = self._push
            self._push()  # the replay
            while True:
                try:
                    message = await _within(stream.next(), self.keepalive)
                except asyncio.TimeoutError:
                    if not self._pushed:  # silence: nothing went out since the last wait
                        await self._send(": keepalive\n\n")
                    self._pushed = False
                    continue
                if message is None:
                    break
                frame = encoded(sse_frame, message)
                if frame is None:
                    continue
                await self._send(frame)
                self._heard(message)
        except StreamClosedError:
            self._client_gone = True
        finally:
            self.service.hub.close_stream(stream)
        if not self._client_gone:
            self.finish(set_content_type="text/event-stream; charset=utf-8")

    async def _send(self, text: str) -> None:
        self.write(text)
        self._sending = True
        try:
            await self.flush()
        finally:
            self._sending = False

    def _heard(self, message: Event) -> None:
        if self._delivered is not None and isinstance(message, dict):
            self._delivered(message)

    def _push(self) -> None:
        """Write what may go out now in the publisher's own step (the WebSocket does the same),
        rather than when the loop above next runs: a published ``tool.completed`` is then on
        its way before the agent's next model request takes the event loop. Not while the
        loop owns the connection (a flush awaited) or the client reads slowly; order is kept,
        both take from the same queue."""
        stream = self._stream
        if (
            stream is None
            or stream.closed
            or self._client_gone
            or self._finished
            or self._sending
            or behind(self.request.connection)
        ):
            return
        wrote = False
        for message, frame in ready(stream, sse_frame):
            self.write(frame)
            wrote = True
            self._heard(message)
        if wrote:
            self._pushed = True
            self.flush().add_done_callback(retrieve)

    def on_connection_close(self) -> None:
        self._client_gone = True
        if self._stream is not None:
            self.service.hub.close_stream(self._stream)
        super().on_connection_close()
