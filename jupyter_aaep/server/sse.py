"""Server-Sent Events: ``GET /aaep/v1/chats/{chat_id}/events`` and ``GET /aaep/v1/events``.

Framing (Appendix B.1): an AAEP event is ``event: aaep.event`` / ``id: <event_id>`` /
``data: <one-line JSON>``; any other message (the acknowledgement of a user message, a
handshake answer, a replay notice) is a plain ``data:`` line, so ``EventSource.onmessage``
sees it and the ``Last-Event-ID`` of a reconnecting browser always names an AAEP event. A
``: keepalive`` comment goes out after every ``keepalive`` seconds of silence (clients and
proxies time out idle streams). Each message is flushed at once; a disconnect closes the
stream's subscription, which lets requests only it could answer take their default.

Query parameters: ``subscription_id`` picks up a negotiated subscription
(``POST /aaep/v1/subscriptions``), ``last_event_id`` stands in for the header.

Every message is serialised by :func:`~jupyter_aaep.aaep.wire.dumps` (the WebSocket uses it
too), which always yields valid UTF-8; should one message still fail to go out, it is
logged and skipped, and the stream goes on: one bad message never ends a stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
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
        self._stream = stream
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # proxies must not buffer the stream
        try:
            await self._send(": connected\n\n")
            while True:
                try:
                    message = await _within(stream.next(), self.keepalive)
                except asyncio.TimeoutError:
                    await self._send(": keepalive\n\n")
                    continue
                if message is None:
                    break
                frame = encoded(sse_frame, message)
                if frame is None:
                    continue
                await self._send(frame)
                if delivered is not None and isinstance(message, dict):
                    delivered(message)
        except StreamClosedError:
            self._client_gone = True
        finally:
            self.service.hub.close_stream(stream)
        if not self._client_gone:
            self.finish(set_content_type="text/event-stream; charset=utf-8")

    async def _send(self, text: str) -> None:
        self.write(text)
        await self.flush()

    def on_connection_close(self) -> None:
        self._client_gone = True
        if self._stream is not None:
            self.service.hub.close_stream(self._stream)
        super().on_connection_close()
