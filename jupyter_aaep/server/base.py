"""The base of every AAEP HTTP handler: one auth resource, JSON bodies and errors, the service.

Kept apart from the routes so the streaming handlers (:mod:`.sse`, :mod:`.websocket`) and the
REST handlers (:mod:`.handlers`) build on it without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from ..mcp.credentials import MCP_ONLY, presented
from .http_errors import AAEPErrorAnswers
from .messages import MAX_MESSAGE_BYTES, Response, parse_json

if TYPE_CHECKING:  # built at the first request that needs it, not when the routes are mounted
    from .service import AAEPService

AUTH_RESOURCE = "kernels"
"""Authorised like the kernel API: see :mod:`.handlers` for why."""

ServiceSource = Callable[[], "AAEPService"]
"""What handlers are given instead of the service: it builds the agent's parts on the first
request that needs them (``agent_parts.py``), so the server's start does not."""


def carries_outside_credential(handler: web.RequestHandler) -> bool:
    """Whether the request carries an outside agent's credential, which opens the MCP endpoint
    only (:mod:`jupyter_aaep.mcp.credentials`): it is refused even beside a valid login."""
    return presented(handler.request.headers, handler.get_query_argument("token", None)) is not None


class ServiceUser:
    """The ``service`` of a handler given a :data:`ServiceSource`."""

    _service_source: ServiceSource

    @property
    def service(self) -> AAEPService:
        return self._service_source()


class AAEPHandler(ServiceUser, AAEPErrorAnswers, ExtensionHandlerMixin, APIHandler):
    """Base of every AAEP endpoint: one auth resource, JSON errors (an ``AAEPError`` raised
    anywhere answers with its status and sentence), the service injected."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, service: ServiceSource, **kwargs: Any) -> None:
        super().initialize(name, **kwargs)
        self._service_source = service

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        if carries_outside_credential(self):  # said before Jupyter's login would say "Forbidden"
            raise web.HTTPError(403, MCP_ONLY)
        await super().prepare()

    def body_json(self) -> dict[str, Any]:
        """The request body as a JSON object, or a 4xx saying what is wrong with it."""
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > MAX_MESSAGE_BYTES:
            raise web.HTTPError(
                413, f"The body is {length} bytes; the limit is {MAX_MESSAGE_BYTES} bytes (1 MiB)."
            )
        return parse_json(self.request.body)

    def respond(self, response: Response) -> None:
        self.set_status(response.status)
        for name, value in response.headers.items():
            self.set_header(name, value)
        if response.status == 204:
            self.finish()
        else:
            self.finish(json.dumps(response.body or {}))
