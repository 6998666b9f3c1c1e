"""``/aaep/v1/chats/{chat_id}/ws``: the chat's events and messages over one WebSocket (App. B.2).

The subprotocol ``aaep.v1`` is selected when the client offers it; clients that offer none
are accepted too (the conformance suite's WebSocket client offers none). One JSON message per
text frame, in both directions: the server sends what an SSE stream would carry, the client
sends what it would POST to ``/messages``. A ``subscription.request`` is answered in the next
frame. Every other message is answered in one frame of the shape :mod:`.messages` describes:
``{"kind": "<kind>.accepted", "status": …, …}`` (``status`` is what the POST would have
answered), or ``{"kind": "error", "status": …, "message": …}``; a frame's ``request_id`` comes
back in its answer. The answer to a ``user_input`` is sent before any event of its session.
AAEP replies are answered only when they carry a ``request_id`` (the protocol answers them
without a body). A bad frame never closes the socket.

Nothing is sent before the client's first frame has been answered (or ``HANDSHAKE_WAIT``
seconds have passed without one): the first client message is a ``subscription.request``
(App. B.2), so its ``subscription.accepted`` is always the first frame, and the replay (the
running session, any question still open) follows under the negotiated terms. A message that
may go out when it is published is written in the publisher's own step, as a bare broadcast
does (``_push``); the send loop does the rest (the replay, rate-limited or held messages).
Writes are not awaited one by one (each awaited write cost every message two more loop
iterations per subscriber); a write is awaited only while the socket still holds unsent
bytes, so a client that reads slowly, or not at all, holds at most what was ready at once in
the socket's buffer, and its subscription's queue is bounded (``StreamHub.max_pending``):
past it the subscription is dropped and the socket ends.

Close codes: 4000 the producer ended it (shutdown, or the client's stream limit), 4001 a
handshake was rejected, 4005 the subscriber sent ``subscription.close``.

Whatever a frame holds, the socket stays open: a binary frame, bad JSON, a message of the
wrong shape, a malformed ``subscription.request`` (its rejection reason comes back as an error
frame; only a well-formed request the producer cannot serve ends the socket with 4001) and
even a failure of ours while handling it (status 500, logged) are answered with an error
frame. Outgoing messages go through the same serialiser as SSE; one that cannot be sent is
logged and skipped.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..aaep.wire import dumps
from ..errors import AAEPError
from ..mcp.credentials import MCP_ONLY
from .base import AUTH_RESOURCE, ServiceSource, ServiceUser, carries_outside_credential
from .http_errors import AAEPErrorAnswers, http_status
from .messages import MAX_MESSAGE_BYTES, REPLY_TYPES, accepted, parse_json, take_request_id
from .sse import behind, encoded, ready, retrieve

if TYPE_CHECKING:  # the streams come with the first request (issue 31)
    from .streams import Stream

SUBPROTOCOL = "aaep.v1"
HANDSHAKE_WAIT = 1.0
"""Seconds a new socket waits for the client's first frame before it sends the replay anyway
(a client that never sends a ``subscription.request`` gets the implicit subscription)."""
log = logging.getLogger(__name__)


class ChatSocketHandler(
    ServiceUser,
    AAEPErrorAnswers,
    ExtensionHandlerMixin,
    WebSocketMixin,
    WebSocketHandler,
    JupyterHandler,
):
    """One subscriber's socket on one chat."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, service: ServiceSource, **kwargs: Any) -> None:
        super().initialize(name, **kwargs)
        self._service_source = service
        self.chat_id = ""
        self.aaep_stream: Stream | None = None
        self._pump: asyncio.Task[None] | None = None
        self._end: tuple[int, str] | None = None
        self._greeted = asyncio.Event()
        """Set once the client's first frame has been handled: sending may begin."""
        self._waiting = False  # the send loop waits for a slow client's socket

    def set_default_headers(self) -> None:
        """JupyterHandler's default headers (CSP and friends) make no sense on a socket."""

    def get_compression_options(self) -> dict[str, Any] | None:
        options: dict[str, Any] | None = self.settings.get("websocket_compression_options", None)
        return options

    def prepare(self, *args: Any, **kwargs: Any) -> Any:
        if carries_outside_credential(
            self
        ):  # it opens the MCP endpoint only: a JSON 403, no upgrade
            self.set_status(403)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": MCP_ONLY, "reason": None}))
            return None
        return super().prepare(*args, **kwargs)

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        return SUBPROTOCOL if SUBPROTOCOL in subprotocols else None

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Authorise like running code in a kernel, check the chat, then upgrade."""
        chat_id = str(kwargs.get("chat_id") or (args[0] if args else ""))
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(
                403, f"User is not authorized to execute on resource: {AUTH_RESOURCE}."
            )
        self.service.chat_view(chat_id)
        self.chat_id = chat_id
        await super().get(*args, **kwargs)

    def open(self, *args: Any, **kwargs: Any) -> None:
        from .streams import client_key

        super().open()  # starts the keep-alive pings
        self.set_nodelay(True)  # see sse.send_at_once
        self.aaep_stream = self.service.open_stream(
            self.chat_id,
            transport="websocket",
            client=client_key(
                self.current_user,
                self.request.remote_ip,
                token_authenticated=self.token_authenticated,
            ),
        )
        self.aaep_stream.on_end = self._ending
        self.aaep_stream.subscription.on_queued = self._push
        self._pump = asyncio.ensure_future(self._send_all())

    def _ending(self, code: int, reason: str) -> None:
        """Close with *code* once what is queued (e.g. the rejection) has been sent."""
        self._end = (code, reason)

    async def _send_all(self) -> None:
        stream = self.aaep_stream
        assert stream is not None
        try:
            # The handshake first, by construction: its answer jumps the subscription's
            # queue, and the replay waiting there moves to the negotiated subscription.
            await asyncio.wait_for(self._greeted.wait(), HANDSHAKE_WAIT)
        except asyncio.TimeoutError:
            pass
        try:
            while True:
                message = await stream.next()
                if message is None:
                    break
                text = encoded(_serialised, message)
                if text is None:
                    continue
                sent = self.write_message(text)
                if behind(self.ws_connection):
                    self._waiting = True
                    try:
                        await sent  # the client reads slower than we send: wait for the socket
                    finally:
                        self._waiting = False
                else:
                    sent.add_done_callback(retrieve)
        except WebSocketClosedError:
            pass
        finally:
            self.service.hub.close_stream(stream)
        if self.ws_connection is not None and not self.ws_connection.is_closing():
            code, reason = self._end or (4000, "subscription ended")
            self.close(code, reason)

    def _push(self) -> None:
        """Send what the subscription has ready now, in the publisher's step (as a bare
        broadcast does), unless the send loop owns the socket: before the first frame was
        answered, or while it waits for a slow client. Order is kept: both take from the
        same queue, in its order, and write at once."""
        stream = self.aaep_stream
        if (
            stream is None
            or stream.closed
            or self._waiting
            or not self._greeted.is_set()
            or self.ws_connection is None
            or self.ws_connection.is_closing()
            or behind(self.ws_connection)
        ):
            return
        try:
            for _message, text in ready(stream, _serialised):
                self.write_message(text).add_done_callback(retrieve)
        except WebSocketClosedError:
            pass  # the send loop ends the stream

    def _send(self, frame: dict[str, Any], request_id: str | None) -> None:
        if request_id is not None:
            frame["request_id"] = request_id
        try:
            self.write_message(dumps(frame))
        except WebSocketClosedError:
            pass

    def _error(self, status: int, message: str, request_id: str | None = None) -> None:
        self._send({"kind": "error", "status": status, "message": message}, request_id)

    async def on_message(self, message: str | bytes) -> None:
        """Answer one frame; nothing in it can close the socket (see the module docstring)."""
        if self.aaep_stream is not None:
            self.aaep_stream.touch()
        try:
            await self._handle_frame(message)
        except Exception:
            log.exception("AAEP WebSocket frame on chat %s failed", self.chat_id)
            self._error(
                500,
                "The server failed while handling this message; it has been logged. The socket "
                "stays open: send the message again, or report the problem if it keeps failing.",
            )
        finally:
            self._greeted.set()
            if self.aaep_stream is not None:  # a handshake may have given it a new subscription
                self.aaep_stream.subscription.on_queued = self._push
            self._push()

    async def _handle_frame(self, message: str | bytes) -> None:
        from .message_kinds import KINDS, classify  # loaded by the first frame (issue 31)

        if isinstance(message, bytes):
            self._error(400, "Send JSON in text frames, not binary frames.")
            return
        if len(message) > MAX_MESSAGE_BYTES:
            self._error(413, f"The frame is larger than {MAX_MESSAGE_BYTES} bytes (1 MiB).")
            return
        request_id: str | None = None
        try:
            body = parse_json(message)
            request_id = take_request_id(body)
            kind = classify(body)
            response = await self.service.handle(
                body, chat_id=self.chat_id, origin=self.aaep_stream
            )
        except AAEPError as error:
            self._error(http_status(error), error.message, request_id)
            return
        if kind == "subscription.request" and response.status == 400 and response.body is not None:
            # malformed: the current subscription goes on, as after any other bad frame
            self._error(
                400,
                str(response.body.get("message") or "The subscription.request is malformed."),
                request_id,
            )
        elif (
            kind == "subscription.request"
            and self.aaep_stream is not None
            and (response.body is not None and response.body.get("type") == "subscription.rejected")
        ):
            self._ending(4001, "subscription rejected")
            self.service.hub.close_stream(self.aaep_stream)  # the rejection is still sent first
        elif kind in KINDS:
            self._send({**(response.body or {}), "status": response.status}, request_id)
        elif kind in REPLY_TYPES and request_id is not None:
            self._send({"kind": accepted(kind), "status": response.status}, request_id)

    def on_close(self) -> None:
        if self.aaep_stream is not None:
            self.service.hub.close_stream(self.aaep_stream)
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()  # nothing more can be sent on a closed socket


_recent: dict[int, tuple[Any, str]] = {}
"""The JSON of the last messages sent, by identity: every socket of a chat sends the same
message object (unless its verbosity reshaped it), so it is serialised once, not per socket."""


def _serialised(message: Any) -> str:
    known = _recent.get(id(message))
    if known is not None and known[0] is message:
        return known[1]
    text = dumps(message)
    if len(text) > 65_536:
        return text  # a big message is not kept alive for a cache
    if len(_recent) >= 64:
        del _recent[next(iter(_recent))]
    _recent[id(message)] = (message, text)  # holding the message keeps its id from reuse
    return text


__all__ = ["HANDSHAKE_WAIT", "SUBPROTOCOL", "ChatSocketHandler"]
