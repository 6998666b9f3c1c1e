"""``aaep/v1/kernel/...``: the endpoints a notebook's own kernel calls (the ``%aaep`` magic,
``@aaep_tool`` registration, the widget view).

They do not use Jupyter's login: kernels have no Jupyter token. Every request instead carries
``X-AAEP-Kernel-Id``, ``X-AAEP-Kernel-Time``, ``X-AAEP-Kernel-Nonce`` and
``X-AAEP-Kernel-Signature``: an HMAC-SHA256 of ``METHOD \\n PATH?QUERY \\n TIME \\n NONCE \\n
BODY`` keyed with that kernel's own credential, which the server put into that kernel's
environment alone when it started it (``kernel_credentials.py``: never on disk, not shared
between kernels). A signature is accepted once and only near the server's clock, so a request
cannot be replayed. The credential opens these endpoints only, for that kernel's notebook only;
a Jupyter token does not open them, and they open nothing else.

A kernel may name a chat (``?chat_id=``): it must be one of its own notebook's chats. Without
one, it acts on the notebook's newest chat (as the panel opens it). A reply goes to the chat
whose session asked, and only if that chat belongs to the kernel's notebook.

Answers from kernel code cannot be told apart from a person's click on the widget (cell code
runs in the same process as the widget's Python side). So they are off unless the server
enables them (``kernel_replies``), always refused in *auto* mode and while the agent's own code
runs, and accepted only for a request this kernel's event stream actually delivered.

Failures are 403 (unknown kernel, bad or reused signature, someone else's chat) and 409 (the
kernel is not a notebook's kernel), each with a sentence in ``{"message": ...}``. No XSRF
cookie is checked: the custom headers are the cross-site defence (a browser page cannot send
them to this origin without a CORS grant, and it cannot know the credential).

Streams and messages go through :class:`AAEPService` exactly as the chat endpoints do.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from .base import AAEPHandler, ServiceSource
from .kernel_credentials import signature
from .kernel_gateway import KernelCaller, KernelGateway
from .sse import EventStreamHandler

kernel_signature = signature


# -- handlers ------------------------------------------------------------------------------------
class KernelHandler(AAEPHandler):
    """Base of the kernel endpoints: the secret and signature instead of Jupyter's login."""

    def initialize(
        self, name: str, service: ServiceSource, gateway: KernelGateway | None = None, **kwargs: Any
    ) -> None:
        super().initialize(name, service, **kwargs)
        assert gateway is not None
        self.gateway = gateway

    def check_xsrf_cookie(self) -> None:
        """No XSRF cookie: the signed custom headers are the cross-site defence (see the module)."""

    async def caller(self) -> KernelCaller:
        if self.gateway.extension is None:
            self.gateway.extension = self.extensionapp
        caller = await self.gateway.caller(
            self.request.method or "GET",
            self.request.uri or "/",
            self.request.headers,
            self.request.body or b"",
        )
        return replace(caller, chat_id=self.get_query_argument("chat_id", None) or None)

    def body_or_empty(self) -> dict[str, Any]:
        return self.body_json() if (self.request.body or b"").strip() else {}

    def answer(self, body: dict[str, Any], status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))


class KernelStatusHandler(KernelHandler):
    """``GET aaep/v1/kernel/status``: the notebook, its chat's state, the model, tools and open requests."""

    @allow_unauthenticated
    async def get(self) -> None:
        caller = await self.caller()
        self.answer(self.gateway.status(caller))


class KernelToolsHandler(KernelHandler):
    """``GET aaep/v1/kernel/tools``: this kernel's tools."""

    @allow_unauthenticated
    async def get(self) -> None:
        caller = await self.caller()
        self.answer(self.gateway.tools(caller))


class KernelToolHandler(KernelHandler):
    """``PUT``/``DELETE aaep/v1/kernel/tools/{name}``: register (replace) or remove one tool."""

    @allow_unauthenticated
    async def put(self, name: str) -> None:
        caller = await self.caller()
        self.answer(self.gateway.put_tool(caller, name, self.body_json()))

    @allow_unauthenticated
    async def delete(self, name: str) -> None:
        caller = await self.caller()
        self.answer(self.gateway.delete_tool(caller, name))


class KernelRequestsHandler(KernelHandler):
    """``POST aaep/v1/kernel/requests``: ``%aaep`` starts a session in the notebook's chat."""

    @allow_unauthenticated
    async def post(self) -> None:
        caller = await self.caller()
        self.respond(self.gateway.request(caller, self.body_json()))


class KernelSubscriptionsHandler(KernelHandler):
    """``POST aaep/v1/kernel/subscriptions``: the Level 3 handshake for the kernel's chat."""

    @allow_unauthenticated
    async def post(self) -> None:
        caller = await self.caller()
        self.respond(self.gateway.subscribe(caller, self.body_json()))


class KernelMessagesHandler(KernelHandler):
    """``POST aaep/v1/kernel/messages``: replies, control and guidance for the kernel's chat."""

    @allow_unauthenticated
    async def post(self) -> None:
        caller = await self.caller()
        self.respond(await self.gateway.message(caller, self.body_json()))


class KernelEventsHandler(KernelHandler, EventStreamHandler):  # type: ignore[misc]  # both initialize(**kwargs)
    """``GET aaep/v1/kernel/events``: SSE of the kernel's notebook chat (the chat stream's framing)."""

    @allow_unauthenticated
    async def get(self) -> None:
        caller = await self.caller()
        chat = self.gateway.chat(caller, create=True)
        assert chat is not None
        await self.serve(
            chat.chat_id,
            client=f"kernel:{caller.kernel_id}",
            delivered=lambda message: self.gateway.showed(caller.kernel_id, message),
        )


def kernel_routes(
    service: ServiceSource, *, keepalive: float
) -> list[tuple[str, type, dict[str, Any]]]:
    """The ``aaep/v1/kernel/...`` routes (relative to ``base_url``), sharing one gateway."""
    common: dict[str, Any] = {"service": service, "gateway": KernelGateway(service)}
    return [
        (r"aaep/v1/kernel/status", KernelStatusHandler, common),
        (r"aaep/v1/kernel/tools", KernelToolsHandler, common),
        (r"aaep/v1/kernel/tools/(?P<name>[^/]+)", KernelToolHandler, common),
        (r"aaep/v1/kernel/requests", KernelRequestsHandler, common),
        (r"aaep/v1/kernel/subscriptions", KernelSubscriptionsHandler, common),
        (r"aaep/v1/kernel/messages", KernelMessagesHandler, common),
        (r"aaep/v1/kernel/events", KernelEventsHandler, {**common, "keepalive": keepalive}),
    ]


__all__ = ["kernel_routes", "kernel_signature"]
