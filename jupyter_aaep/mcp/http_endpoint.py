"""``{base_url}aaep/v1/mcp``: MCP's Streamable HTTP, behind Jupyter's own authentication.

The MCP SDK serves Streamable HTTP as an ASGI app; Jupyter is a tornado server. This handler
authenticates the request first, then hands it to the
SDK's session manager through a small ASGI adapter that streams the answer (SSE) back as it is
written and reports a closed connection as ``http.disconnect``.

Two ways in: the person's Jupyter login (token header or cookie; per user under JupyterHub),
or an outside agent's credential (:mod:`.credentials`) in ``Authorization: Bearer …``, checked
on every request, so a revoked one is refused from its next request on, even inside an open MCP
session. A credential request is authenticated here and not by Jupyter (which does not know
it); the person's authority for it was checked when they minted it. Its name and id go to the
tool calls in the ASGI scope (``aaep.credential``), where no client header can reach. Anything
unauthenticated gets 403 and reaches nothing.

The session manager needs one task to own it for its whole life (DESIGN §13):
:class:`MCPEndpoint` starts that owner after the server's loop runs and stops it at shutdown.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from jupyter_server.auth import User
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.call_context import CallContext
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web
from tornado.iostream import StreamClosedError

from .credentials import (
    CREDENTIAL_SCOPE_KEY,
    OutsideCredential,
    OutsideCredentials,
    presented,
    scrubbed,
    session_key,
)
from .rpc_errors import check_message, reword

if TYPE_CHECKING:  # the SDK loads with the endpoint, on its first request (issue 31)
    from mcp.server.lowlevel.server import Server

    from .outside_agents import OutsideAgents

log = logging.getLogger(__name__)

__all__ = ["MCPEndpoint", "MCPHandler"]

UNKNOWN_CREDENTIAL = (
    "This server does not know that outside-agent credential: it was revoked, or mistyped. Ask "
    "the person at the notebook to make a new one (Connect an outside agent, in the agent panel)."
)
IN_THE_HEADER = (
    "Send the outside-agent credential in the Authorization header (Authorization: Bearer …), "
    "not in the address, where logs and browser history would keep it."
)


MAX_BODY_BYTES = 4 * 1024 * 1024
TOO_LARGE = (
    f"The request is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB and was not read; send less at "
    "once (a cell's source, for example, has at most 1,000,000 characters)."
)


def _reworded(body: bytes) -> bytes:
    """An SDK error body with its message as a sentence a client's model can act on."""
    try:
        message = json.loads(body)
        error = message["error"]
        error["message"] = reword(str(error.get("message", "")))
    except (ValueError, KeyError, TypeError):
        return json.dumps(_rpc_error(None, reword(body.decode("utf-8", "replace")))).encode()
    return json.dumps(message).encode()


def _rpc_error(request_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": text}}


def _request_id(body: bytes) -> Any:
    """The id of the request in *body*, when it can be read cheaply (for an error's answer)."""
    match = re.match(
        rb'\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(\d{1,15}|"[^"\\]{0,200}")', body
    )
    return json.loads(match.group(1)) if match else None


class MCPEndpoint:
    """The SDK's session manager, owned by one task from start to stop."""

    def __init__(
        self,
        server: Server[Any],
        agents: OutsideAgents,
        *,
        credentials: OutsideCredentials | None = None,
        session_idle_seconds: float = 3600.0,
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.agents = agents
        self.credentials = credentials
        self.manager = StreamableHTTPSessionManager(
            server, session_idle_timeout=session_idle_seconds, max_request_body_size=MAX_BODY_BYTES
        )
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()

    def start(self) -> None:
        if self._owner is None:
            self._owner = asyncio.ensure_future(self._own())

    async def _own(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await self._stop.wait()
        except (
            Exception
        ):  # pragma: no cover - logged: the endpoint then answers 503 with a sentence
            log.exception("the MCP endpoint stopped")
        finally:
            self._ready.clear()

    async def ready(self, timeout: float = 10.0) -> bool:
        self.start()
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        await self.agents.close()
        self._stop.set()
        if self._owner is not None:
            await asyncio.wait([self._owner], timeout=5)


Verb = Callable[..., Awaitable[None]]


def _person_or_credential(method: Verb) -> Verb:
    """Jupyter's authorisation for the person's login; none more for a credential (the person's
    authority was checked when they minted it, and a credential opens this endpoint only)."""
    checked = authorized(method)

    @functools.wraps(method)
    async def inner(self: MCPHandler, *args: Any, **kwargs: Any) -> None:
        if self.credential is not None:
            await method(self, *args, **kwargs)
        else:
            await checked(self, *args, **kwargs)

    return inner


class MCPHandler(ExtensionHandlerMixin, APIHandler):
    """Streamable HTTP (POST, GET and DELETE on one URL), after Jupyter has authenticated the caller."""

    auth_resource = "kernels"  # like the agent's own API (server/base.py): outside agents run code

    def initialize(self, name: str, endpoint: MCPEndpoint | Callable[[], MCPEndpoint]) -> None:
        """*endpoint*, or what builds it on the first request (the server's start skips it)."""
        super().initialize(name=name)
        self._endpoint = endpoint
        self._closed = asyncio.Event()
        self.credential: OutsideCredential | None = None

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        """An outside agent's credential is checked here; anything else is Jupyter's login."""
        token = presented(self.request.headers, self.get_query_argument("token", None))
        if token is None:
            await super().prepare()
            return
        CallContext.set(CallContext.JUPYTER_HANDLER, self)  # as Jupyter's own prepare does
        if not self.check_host():
            raise web.HTTPError(403)
        if token == (self.get_query_argument("token", None) or "").strip():
            raise web.HTTPError(403, IN_THE_HEADER)
        credentials = self.endpoint.credentials
        record = credentials.check(token) if credentials is not None else None
        if record is None:
            raise web.HTTPError(403, UNKNOWN_CREDENTIAL)
        self.credential = record
        user = User(username=f"outside-agent-{record.id}", name=record.name)
        self.current_user = self._jupyter_current_user = user
        # Like Jupyter's token: a header a foreign page cannot send, so no XSRF cookie, no origin check.
        self._token_authenticated = True

    def _request_summary(self) -> str:
        return scrubbed(super()._request_summary())  # a token in the address stays out of the log

    @property
    def endpoint(self) -> MCPEndpoint:
        endpoint = self._endpoint
        return endpoint if isinstance(endpoint, MCPEndpoint) else endpoint()

    def on_connection_close(self) -> None:
        self._closed.set()

    @web.authenticated
    @_person_or_credential
    async def post(self) -> None:
        await self._serve()

    @web.authenticated
    @_person_or_credential
    async def get(self) -> None:
        await self._serve()

    @web.authenticated
    @_person_or_credential
    async def delete(self) -> None:
        session_id = self.request.headers.get("mcp-session-id")
        await self._serve()
        if session_id:
            credential = self.credential.id if self.credential is not None else None
            self.endpoint.agents.disconnected(session_key(credential, session_id))

    async def _serve(self) -> None:
        if not await self.endpoint.ready():
            raise web.HTTPError(503, "The MCP endpoint is not running; the server log says why.")
        request = self.request
        body = request.body or b""
        # The answer is streamed (SSE: progress, then the result) in small writes; Nagle's algorithm
        # would hold one back until the client acknowledged the one before.
        stream = getattr(request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)
        problem = check_message(body) if request.method == "POST" else None
        if problem is not None:  # said in a sentence here, not in the SDK's parser's words
            status, error = problem
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(error))
            return
        sent_body = False
        started = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await self._closed.wait()
            return {"type": "http.disconnect"}

        too_large = False
        error_body: bytearray | None = None

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal started, too_large, error_body
            if too_large:
                return  # the SDK's plain-text body is replaced by a sentence
            if error_body is not None:  # an SDK error, reworded once it is whole
                error_body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    self.write(_reworded(bytes(error_body)))
                return
            if message["type"] == "http.response.start" and message["status"] == 413:
                started = too_large = True
                self.set_status(413)
                self.set_header("Content-Type", "application/json")
                self.write(json.dumps(_rpc_error(_request_id(body), TOO_LARGE)))
                return
            if message["type"] == "http.response.start":
                started = True
                self.set_status(message["status"])
                self.clear_header("Content-Type")
                for key, value in message.get("headers", []):
                    name = key.decode("latin-1")
                    if message["status"] >= 400 and name.lower() == "content-length":
                        continue  # the reworded body has another length
                    self.add_header(name, value.decode("latin-1"))
                if message["status"] >= 400:
                    error_body = bytearray()
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    self.write(chunk)
                try:
                    await self.flush()
                except StreamClosedError:
                    self._closed.set()

        host, _, port = (request.host or "127.0.0.1").partition(":")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": (request.query or "").encode("latin-1"),
            "headers": [
                (k.lower().encode("latin-1"), v.encode("latin-1"))
                for k, v in request.headers.get_all()
            ],
            "client": (request.remote_ip or "127.0.0.1", 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }
        if self.credential is not None:
            scope[CREDENTIAL_SCOPE_KEY] = {"id": self.credential.id, "name": self.credential.name}
        await self.endpoint.manager.handle_request(scope, receive, send)
        if not started:
            raise web.HTTPError(500, "The MCP endpoint gave no answer.")
        if not self._finished:
            self.finish()
