"""REST handlers of the AAEP HTTP contract, all behind Jupyter's authentication.

``auth_resource`` is ``"kernels"``, chosen on purpose: the agent runs code in the notebook's
kernel (and, through code, can change any file the kernel can reach). A user who may not
execute code must not be able to make the agent do it for them, so the agent's endpoints are
authorised like the kernel API: reading (chats, events, the manifest) and subscribing need
``kernels:read``; creating a chat needs ``kernels:write``; every message that can start, steer
or approve work (``/messages``, ``/replies``, and the WebSocket) needs ``kernels:execute``.
Every verb is ``@web.authenticated`` then ``@authorized``; POSTs get Jupyter's XSRF check
unless token-authenticated, and the WebSocket Jupyter's origin check.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import RequestError
from .base import AAEPHandler, ServiceSource
from .messages import EXAMPLE, take_request_id

if TYPE_CHECKING:
    from .permissions import Permissions

# What a handler needs beyond the service is imported in the handler, at its first request:
# mounting the routes at start-up imports no agent, notebook or protocol module (issue 31).

_ANY_CHAT = r"(?P<chat_id>[^/]+)"


class ChatsHandler(AAEPHandler):
    """``GET /aaep/v1/chats[?notebook_path=&limit=&before=]`` lists chats (a page, newest first);
    ``POST`` creates one."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        page = self.service.list_chats(
            self.get_argument("notebook_path", None),
            limit=self.get_argument("limit", None),
            before=self.get_argument("before", None),
        )
        self.finish(json.dumps(page))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        response = self.service.create_chat(self.body_json() if self.request.body.strip() else {})
        self.respond(response)


class ChatHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}``: status, transcript and open requests."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        view = self.service.chat_view(chat_id)
        self.finish(json.dumps(view))


class UsageHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/usage``: the usage, ``can_continue``, ``undoable_sessions``
    and ``title``: what the panel reads again when a session ends, without the transcript."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        self.finish(json.dumps(self.service.chat_usage(chat_id)))


class RequestHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/requests/{request_id}``: one confirmation or question
    (by the event id of its ``awaiting.*`` event), whether it is still open, and its outcome.
    The notebook's ``%aaep`` view draws its buttons from this, never from what the kernel says."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str, request_id: str) -> None:
        self.finish(json.dumps(self.service.pending_request(chat_id, request_id)))


class StepsHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/sessions/{session_id}/steps``: what each step of a session did and cost."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str, session_id: str) -> None:
        steps = self.service.session_steps(chat_id, session_id)
        self.finish(json.dumps(steps))


class MessagesHandler(AAEPHandler):
    """``POST /aaep/v1/chats/{chat_id}/messages``, ``POST /aaep/v1/replies`` and its alias
    ``POST /aaep/v1/messages`` (AAEP subscriber tools post replies to ``{endpoint}/messages``).
    The answer has the shape :mod:`.messages` describes, the same as on the WebSocket."""

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def post(self, chat_id: str | None = None) -> None:
        body = self.body_json()
        request_id = take_request_id(body)  # echoed, as on the socket (HTTP itself pairs them)
        response = await self.service.handle(body, chat_id=chat_id)
        if request_id is not None and response.body is not None:
            response.body["request_id"] = request_id
        self.respond(response)


class SubscriptionsHandler(AAEPHandler):
    """``POST /aaep/v1/subscriptions[?chat_id=]`` (Appendix B): negotiate, then stream from Location."""

    @web.authenticated
    @authorized("read")  # type: ignore[untyped-decorator]
    async def post(self) -> None:
        response = self.service.subscribe(self.body_json(), self.get_argument("chat_id", None))
        self.respond(response)


class ManifestHandler(AAEPHandler):
    """``GET /aaep/v1/manifest``: the producer manifest (§5.10)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from ..aaep.manifest import build_manifest
        from ..agent.citations import CITATIONS_CONTEXT
        from ..agent.grant_gate import PERMISSION_CONTEXT
        from ..agent.services import LEFT_RUNNING_CONTEXT

        hub = self.service.hub
        manifest = build_manifest(
            hub.producer,
            endpoints={
                "chats": self.service.url_for("chats"),
                "events": self.service.url_for("events"),
                "replies": self.service.url_for("replies"),
                "subscriptions": self.service.url_for("subscriptions"),
                "chat_events": self.service.url_for("chats/{chat_id}/events"),
                "chat_messages": self.service.url_for("chats/{chat_id}/messages"),
                "chat_websocket": self.service.url_for("chats/{chat_id}/ws"),
            },
            max_concurrent_subscriptions=hub.max_streams,
            extensions=(CITATIONS_CONTEXT, PERMISSION_CONTEXT, LEFT_RUNNING_CONTEXT),
        )
        self.finish(json.dumps(manifest))


class VariablesHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/variables``: the notebook kernel's variables (name, type,
    a one-line summary) for the panel's ``@`` picker; read-only, like the list_variables tool."""

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def get(self, chat_id: str) -> None:
        from .request_context import kernel_variables

        chat = self.service.runner.get(chat_id)
        self.finish(json.dumps(await kernel_variables(self.service.runner, chat)))


class AccessibilityHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/accessibility``: *Check this notebook's accessibility* for
    the chat's notebook, by the rules of the ``check_accessibility`` tool; reads, changes nothing."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        from .request_context import accessibility_report

        chat = self.service.runner.get(chat_id)
        self.finish(json.dumps(await accessibility_report(self.service.runner, chat)))


class ProgressHandler(AAEPHandler):
    """``GET /aaep/v1/chats/{chat_id}/progress``: *How far along?* for the chat's notebook: every
    running cell (the agent's or the person's) with percent, counts, time left, the progress
    bar's ``value_text``, and one ``sentence`` that answers the question."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        from .long_runs import how_far_along

        chat = self.service.runner.get(chat_id)
        news = self.service.runner.services.long_runs
        self.finish(
            json.dumps(
                how_far_along(
                    news.running(chat.notebook_path) if news and chat.notebook_path else []
                )
            )
        )


class ModelsHandler(AAEPHandler):
    """``GET /aaep/v1/models``: the models a chat can use (the Models API's list where the
    endpoint offers it, else the configured one) and the default, for the panel's picker."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish(json.dumps(await self.service.models.describe()))


class AgentsHandler(AAEPHandler):
    """``GET /aaep/v1/agents``: the coding agents a chat can use, our own first, each ACP agent
    with whether it can start and, when it cannot, one sentence saying what to install."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        acp = self.service.acp
        if acp is None:
            self.finish(json.dumps({"agents": [], "default": None}))
            return
        self.finish(json.dumps(await asyncio.to_thread(acp.catalog.describe)))


class MCPServersHandler(AAEPHandler):
    """``GET /aaep/v1/mcp/servers``: the user's tool servers, each with its status, its tools
    (names and titles) and, when it did not start, one sentence saying why."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        servers = self.service.toolbox.mcp
        self.finish(
            json.dumps(
                servers.describe() if servers is not None else {"config_file": None, "servers": []}
            )
        )


class RulesHandler(AAEPHandler):
    """``GET /aaep/v1/rules?notebook_path=``: which rules files apply to that notebook, which
    were left out (inactive or scoped elsewhere), and the problems met reading them, for the
    panel's *Which rules apply here?*."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = self.get_argument("notebook_path", "").strip().lstrip("/")
        if not path:
            raise web.HTTPError(
                400, "Say which notebook: ?notebook_path=<path in the Jupyter root>."
            )
        toolbox = self.service.toolbox
        if toolbox.rules is None:
            self.finish(
                json.dumps(
                    {
                        "applies": [],
                        "skipped": [],
                        "problems": [],
                        "sentence": "Rules files are turned off on this server "
                        "(c.AAEPExtension.rules_files).",
                    }
                )
            )
            return
        applied = await toolbox.rules_for(path)
        self.finish(json.dumps(applied.describe()))


class MCPTrustHandler(AAEPHandler):
    """``GET /aaep/v1/mcp/trust``: the tool servers whose word that a tool changes nothing a
    person trusts (name, what starts it, since when); granted only by answering the question."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        servers = self.service.toolbox.mcp
        self.finish(json.dumps({"trusted": servers.trusted() if servers is not None else []}))


class MCPTrustServerHandler(AAEPHandler):
    """``DELETE /aaep/v1/mcp/trust/{server}``: its "read-only" tools ask again from now on."""

    @web.authenticated
    @authorized
    async def delete(self, server: str) -> None:
        servers = self.service.toolbox.mcp
        if servers is None or not servers.revoke_trust(server):
            raise web.HTTPError(404, f"The tool server {server!r} is not trusted; nothing changed.")
        self.set_status(204)
        self.finish()


class PlanFileHandler(AAEPHandler):
    """``GET|PUT /aaep/v1/plans/{name}``: a plan mode plan as Markdown, for the panel's editor.

    Plans live under a hidden folder of the server root (``.aaep/plans``), which Jupyter's
    contents API refuses to serve unless ``ContentsManager.allow_hidden`` is on; the panel's
    small drive reads and saves them here instead. Saving decides what the agent will do, so
    it needs ``kernels:execute``, like an approval."""

    def _files(self) -> Any:
        files = self.service.toolbox.plans
        if files is None:
            raise web.HTTPError(404, "Plan files are not available on this server.")
        return files

    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        text = self._files().read(name)
        if text is None:
            raise web.HTTPError(404, f"There is no plan called {name}; it may have been removed.")
        self.finish(json.dumps(self._model(name, text)))

    def _model(self, name: str, text: str) -> dict[str, Any]:
        """The file's text and its real modification time (JupyterLab's editor compares it
        before saving, and asks about a newer file on disk)."""
        from datetime import datetime, timezone

        stamp = self._files().modified(name) or 0.0
        modified = datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat()
        return {"name": name, "content": text, "last_modified": modified}

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def put(self, name: str) -> None:
        body = self.body_json()
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, str) or len(content) > 200_000:
            raise web.HTTPError(
                400, 'Send the plan as {"content": "<Markdown>"} (at most 200,000 characters).'
            )
        files = self._files()
        if files.read(name) is None:
            raise web.HTTPError(404, f"There is no plan called {name}; it may have been removed.")
        files.save_text(name, content)
        self.finish(json.dumps(self._model(name, content)))


class PermissionsHandler(AAEPHandler):
    """``GET /aaep/v1/permissions``: the standing permissions (id, rule, scope, a sentence,
    when and where given) and the list as one sentence; ``POST`` gives one, from the person's
    panel only (:mod:`.permissions`)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish(json.dumps(self._permissions().listing()))

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def post(self) -> None:
        try:
            body = self.body_json()
        except RequestError as error:  # its example is a chat message's: show a permission's
            from .permissions import EXAMPLE as PERMISSION

            raise RequestError(error.status, str(error).replace(EXAMPLE, PERMISSION)) from error
        self.respond(self._permissions().add(body))

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def delete(self, grant_id: str | None = None) -> None:
        if grant_id is None:
            raise web.HTTPError(
                405, "Say which permission to take back: DELETE /aaep/v1/permissions/{id}."
            )
        self.respond(self._permissions().revoke(grant_id))

    def _permissions(self) -> Permissions:
        permissions = self.service.permissions
        if permissions is None:
            from .permissions import OFF

            raise web.HTTPError(503, OFF)
        return permissions


def handler_routes(
    service: ServiceSource, *, keepalive: float
) -> list[tuple[str, type, dict[str, Any]]]:
    """Every AAEP route (relative to ``base_url``), each handler given what builds the service."""
    from .figure_script import FigureScriptHandler
    from .kernel_handlers import kernel_routes
    from .sse import EventStreamHandler
    from .websocket import ChatSocketHandler

    common: dict[str, Any] = {"service": service}
    streaming = {**common, "keepalive": keepalive}
    return [
        (r"aaep/v1/manifest", ManifestHandler, common),
        (r"aaep/v1/models", ModelsHandler, common),
        (r"aaep/v1/agents", AgentsHandler, common),
        (r"aaep/v1/mcp/servers", MCPServersHandler, common),
        (r"aaep/v1/rules", RulesHandler, common),
        (r"aaep/v1/figures/maidr\.js", FigureScriptHandler, common),
        (r"aaep/v1/mcp/trust", MCPTrustHandler, common),
        (r"aaep/v1/mcp/trust/(?P<server>[A-Za-z0-9_-]{1,40})", MCPTrustServerHandler, common),
        (r"aaep/v1/plans/(?P<name>plan-[0-9a-f]{12}\.md)", PlanFileHandler, common),
        (r"aaep/v1/permissions", PermissionsHandler, common),
        (r"aaep/v1/permissions/(?P<grant_id>[^/]+)", PermissionsHandler, common),
        (r"aaep/v1/chats", ChatsHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/events", EventStreamHandler, streaming),
        (rf"aaep/v1/chats/{_ANY_CHAT}/messages", MessagesHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/ws", ChatSocketHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/variables", VariablesHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/progress", ProgressHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/usage", UsageHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/accessibility", AccessibilityHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/requests/(?P<request_id>[^/]+)", RequestHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}/sessions/(?P<session_id>[^/]+)/steps", StepsHandler, common),
        (rf"aaep/v1/chats/{_ANY_CHAT}", ChatHandler, common),
        (r"aaep/v1/events", EventStreamHandler, streaming),
        (r"aaep/v1/replies", MessagesHandler, common),
        (r"aaep/v1/messages", MessagesHandler, common),
        (r"aaep/v1/subscriptions", SubscriptionsHandler, common),
        *kernel_routes(
            service, keepalive=keepalive
        ),  # the kernels' own endpoints (secret, not login)
    ]
