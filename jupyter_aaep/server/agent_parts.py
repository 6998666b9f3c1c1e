"""The agent's working parts, built on first use: the chat store, the tools, the chat runner, the
event streams, the MCP endpoint and the user's MCP tool servers.

Why not at start: on JupyterHub a whole class starts its servers at once, and most of them are
never asked anything. Building these parts at start opened the chat database (and its writer
thread), read every tool and MCP configuration and started the MCP tool servers' processes for
every user; their modules (the Anthropic and MCP SDKs among them) are loaded by the same code.
Now the server's start keeps only what must hold from the first second (the model credentials
kept from kernels, kernels' own credentials, the traitlets), and :class:`AgentParts` is built
by :func:`build_parts` when the first agent request needs it (the panel's first call, a kernel's
``%aaep``, an outside agent's MCP call); starting them begins the Anthropic SDK's import on a
worker thread, which every model client waits for (``model_client.ClientFactory.preload``), and
the user's MCP tool servers (and the MCP SDK, which shares modules with it) start once that
import has ended, so no two threads import the same modules at once;
outside agents' MCP endpoint (and the MCP SDK) waits for the first MCP request. Closing is per part, each step on its own, so a failure in one never skips
the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from jupyter_server.utils import url_path_join

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..acp.host import AcpHost
    from ..agent.grant_book import GrantBook
    from ..agent.plan import PlanFiles
    from ..agent.rules import RuleFiles
    from ..chats.runner import ChatRunner
    from ..mcp.http_endpoint import MCPEndpoint
    from ..store.chat_store import ChatStore
    from ..tools.mcp_tools import MCPServers
    from .chat_roots import RenameFollower
    from .long_runs import LongRunNews
    from .server_options import ServerOptions
    from .service import AAEPService
    from .streams import StreamHub
    from .toolbox import Toolbox


@dataclass
class AgentParts:
    """Everything a chat needs, built once; ``start`` once the server's loop runs."""

    store: ChatStore | None
    toolbox: Toolbox
    hub: StreamHub
    runner: ChatRunner
    long_runs: LongRunNews | None
    service: AAEPService
    mcp_servers: MCPServers
    endpoint_factory: Callable[[], MCPEndpoint] | None
    """Builds outside agents' MCP endpoint (and loads the MCP SDK) on its first request."""
    mcp_endpoint: MCPEndpoint | None = None
    renames: RenameFollower | None = None
    """Moves a chat with its notebook when the notebook is renamed inside the root."""
    acp: AcpHost | None = None
    """The coding agents chats chose over ACP, and their processes."""
    started: bool = False
    _after_sdk: asyncio.Future[None] | None = None

    def endpoint(self) -> MCPEndpoint:
        """Outside agents' MCP endpoint, built by its first request (it starts itself then)."""
        if self.mcp_endpoint is None:
            assert self.endpoint_factory is not None, "the MCP endpoint is turned off"
            self.mcp_endpoint = self.endpoint_factory()
        return self.mcp_endpoint

    def start(self) -> None:
        """The parts' own tasks (and the MCP tool servers' processes), on the running loop."""
        if self.started:
            return
        self.started = True
        if self.long_runs is not None:
            self.long_runs.start()
        clients = self.runner.client_factory
        preload, ready = getattr(clients, "preload", None), getattr(clients, "ready", None)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            preload = None
        if preload is not None:
            preload()
        if ready is None or not getattr(clients, "loading", False):
            self.mcp_servers.start()
            return
        self._after_sdk = asyncio.ensure_future(self._start_mcp_servers(ready))

    async def _start_mcp_servers(self, sdk_ready: Callable[[], Awaitable[None]]) -> None:
        await sdk_ready()
        self.mcp_servers.start()

    async def close(self, step: Callable[[str, Callable[[], Any]], Awaitable[None]]) -> None:
        """Stop every part, each through *step* (which runs it and logs a failure in a sentence)."""
        if self._after_sdk is not None:
            self._after_sdk.cancel()  # a stop before the SDK loaded starts no tool server
        if self.long_runs is not None:
            await step("stop following long cell runs", self.long_runs.close)
        if self.mcp_endpoint is not None:
            await step("close the MCP endpoint for outside agents", self.mcp_endpoint.stop)
        await step("stop the running chat sessions", self.runner.shutdown)
        if self.acp is not None:
            await step("stop the coding agents' processes", self.acp.close)
        await step("stop the MCP tool servers", self.mcp_servers.close)
        await step("close the event streams", self.hub.shutdown)
        if self.renames is not None:
            await step("stop following notebook renames", self.renames.close)
        if self.store is not None:
            await step("close the chat database", self.store.close)
        await step("close the tools", self.toolbox.close)


def build_parts(ext: ServerOptions) -> AgentParts:
    """Build the parts from *ext*'s settings (imports the agent's modules on this first call)."""
    from .._version import __version__
    from ..aaep.broker import ReplyBroker
    from ..aaep.session import Producer
    from ..agent.context import ContextSettings, Strategy
    from ..agent.loop import AgentConfig
    from ..agent.usage import PriceTable
    from ..chats.persistence import ChatPersistence
    from ..chats.runner import ChatRunner
    from .chat_roots import RenameFollower, notebook_cell_ids, per_root_file_id, server_root
    from .long_runs import LongRunNews
    from .models import ModelCatalog
    from .permissions import Permissions
    from .service import AAEPService
    from .streams import StreamHub
    from .toolbox import Toolbox

    server = ext.server
    producer = Producer(agent_version=__version__, agent_name=ext.agent_name, model=ext.model)
    config = AgentConfig(
        model=ext.model,
        max_tokens=ext.max_tokens,
        max_turns=ext.max_turns,
        context=ContextSettings(
            window=ext.context_window or None,
            strategy=cast(Strategy, ext.context_management),
            max_images=ext.model_images_per_request,
        ),
        prices=PriceTable(ext.model_prices),
        budget_usd=ext.chat_budget_usd or None,
    )
    store = ext.chat_store()
    toolbox = Toolbox(log=ext.log)
    toolbox.load(server, ext.extra_tools)
    if ext.rules_files:
        toolbox.rules = _rule_files(ext)
    toolbox.plans = _plan_files(ext)
    notebooks = toolbox.notebooks
    if notebooks is not None:
        notebooks.image_max_edge = ext.model_image_max_edge
        notebooks.max_images = min(notebooks.max_images, ext.model_images_per_request)
        notebooks.run_cell_wait_seconds = ext.run_cell_wait_seconds
        notebooks.runs.announce_seconds = ext.progress_announce_seconds
    runner_box: list[ChatRunner] = []
    hub = StreamHub(
        producer=producer,
        chat_lookup=lambda chat_id: runner_box[0].get(chat_id),
        reconnect_grace=ext.reconnect_grace_seconds,
        max_streams_per_client=ext.max_streams_per_client,
    )
    hub.manifest_uri = url_path_join(server.connection_url, "aaep/v1/manifest")
    broker = ReplyBroker(entitled=hub.entitled, check_sender=ext.require_reply_sender)
    runner = ChatRunner(
        client_factory=ext.clients,
        registry_factory=toolbox.registry_for,
        config=config,
        producer=producer,
        services=toolbox.agent_services(),
        policy_factory=ext.chat_policy,
        broker=broker,
        acknowledge_input=ext.conformance_input_ack,
    )
    runner_box.append(runner)
    hub.broker = broker
    long_runs = None
    if notebooks is not None:
        long_runs = LongRunNews(
            runner,
            notebooks,
            producer,
            person_runs_after=ext.announce_person_runs_after_seconds,
            announce_seconds=ext.progress_announce_seconds,
        )
        runner.services = toolbox.agent_services(long_runs=long_runs)
    runner.on_chat_loaded = hub.attach_chat
    renames = None
    if store is not None:
        # A chat belongs to one notebook under this server's root (chat_roots.py).
        root = server_root(ext.server)
        persistence = ChatPersistence(
            store,
            file_id=per_root_file_id(server.web_app.settings),
            root=root,
            cell_ids=lambda path: notebook_cell_ids(root, path),
        )
        runner.persistence = persistence
        persistence.recover(producer, check_edits=ext.edits_missing_on_disk)
        note = persistence.unrooted_note()
        if note:
            ext.log.info(note)
        renames = RenameFollower(ext.server, runner.notebook_moved)
    runner.grants = _grant_book(ext, store)
    base_url = server.base_url
    service = AAEPService(
        runner,
        hub,
        url_for=lambda path: url_path_join(base_url, "aaep/v1", path),
        models=ModelCatalog(
            ext.clients, default=ext.model, configured=ext.models, locked=ext.lock_models
        ),
        policy=ext.admin_policy,
        toolbox=toolbox,
    )
    service.permissions = Permissions(runner.grants, hub.keys, _chat_titles(runner))
    servers = _mcp_servers(ext, toolbox)
    if store is not None and store.ok:
        ext.log.info("AAEP agent: chats are stored in %s.", store.path)
    ext.log.info(
        "AAEP agent: ready on first use, with %d tools (%s); new chats start in approval mode '%s'.",
        len(toolbox.tools),
        ", ".join(t.name for t in toolbox.tools),
        ext.approval_mode,
    )
    endpoint = (lambda: _mcp_endpoint(ext, runner, toolbox, hub)) if ext.mcp_server else None
    parts = AgentParts(
        store, toolbox, hub, runner, long_runs, service, servers, endpoint, renames=renames
    )
    parts.acp = service.acp = _acp_host(ext, parts)
    return parts


def _acp_host(ext: ServerOptions, parts: AgentParts) -> AcpHost:
    """The chats' ACP agents; their notebook calls reach our MCP endpoint with a credential of
    their own, minted per ACP session and revoked when it ends."""
    import os

    from jupyter_core.paths import jupyter_config_path, jupyter_runtime_dir

    from ..acp.agents import AgentCatalog
    from ..acp.host import AcpHost, McpHooks
    from .chat_roots import server_root

    def route(credential_id: str, calls: Any) -> None:
        hosts = parts.endpoint().agents.hosts
        if calls is None:
            hosts.pop(f"credential:{credential_id}", None)
        else:
            hosts[f"credential:{credential_id}"] = calls

    def mint(name: str) -> tuple[str, str]:
        record, token = ext.outside_credentials.mint(name)
        return record.id, token

    def revoke(credential_id: str) -> None:
        ext.outside_credentials.revoke(credential_id)

    hooks = None
    if ext.mcp_server:
        hooks = McpHooks(
            url=lambda: url_path_join(ext.server.connection_url, "aaep/v1/mcp"),
            mint=mint,
            revoke=revoke,
            route=route,
        )
    db = ext.db_path
    choices = (
        os.path.join(os.path.dirname(os.path.abspath(db)), "acp_agents.json")
        if db and db != ":memory:"
        else None
    )
    return AcpHost(
        parts.runner,
        AgentCatalog(jupyter_config_path()),
        root=server_root(ext.server) or os.path.abspath(ext.server.root_dir),
        choices_path=choices,
        registry_for=parts.toolbox.registry_for,
        mcp=hooks,
        log_dir=os.path.join(jupyter_runtime_dir(), "aaep-acp"),
    )


def _chat_titles(runner: ChatRunner) -> Callable[[str], str | None]:
    """A chat's title (its first request), for the permissions list to name a chat's grant;
    a stored chat's is read without loading its events."""

    def title(chat_id: str) -> str | None:
        loaded = next((chat for chat in runner.chats() if chat.chat_id == chat_id), None)
        if loaded is not None:
            return loaded.title or None
        return runner.persistence.title_of(chat_id) if runner.persistence is not None else None

    return title


def _grant_book(ext: ServerOptions, store: ChatStore | None) -> GrantBook:
    """The person's standing permissions: chat and notebook ones in the chat store, 'always'
    ones in the user's config folder (``{jupyter config dir}/aaep/permissions.json``)."""
    from pathlib import Path

    from jupyter_core.paths import jupyter_config_dir

    from ..agent.grant_book import GrantBook
    from ..agent.grant_file import GrantFile
    from ..chats.stored_grants import StoredGrants

    return GrantBook(
        StoredGrants(store) if store is not None else None,
        GrantFile(Path(jupyter_config_dir()) / "aaep" / "permissions.json"),
        forbidden=ext.admin_policy.permission_refused,
    )


def _rule_files(ext: ServerOptions) -> RuleFiles:
    """The rules files of this server's root and the user's own (agent/rules.py)."""
    from pathlib import Path

    from jupyter_core.paths import jupyter_config_dir

    from ..agent.rules import RuleFiles

    root = Path(getattr(ext.server, "root_dir", None) or ".").expanduser().resolve()
    return RuleFiles(root, user_dir=Path(jupyter_config_dir()) / "aaep" / "rules")


def _plan_files(ext: ServerOptions) -> PlanFiles:
    """Plan mode's plans, under a hidden folder of this server's root (agent/plan.py)."""
    from pathlib import Path

    from ..agent.plan import PlanFiles

    return PlanFiles(Path(getattr(ext.server, "root_dir", None) or ".").expanduser().resolve())


def _mcp_servers(ext: ServerOptions, toolbox: Toolbox) -> MCPServers:
    """The user's MCP servers, read now and started with the parts."""
    from pathlib import Path

    from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir, jupyter_runtime_dir

    from ..notebook._figures import ImageBudget
    from ..tools.mcp_tools import MCPServers
    from ..tools.mcp_trust import MCPTrust

    path = (
        Path(ext.mcp_config_file)
        if ext.mcp_config_file
        else Path(jupyter_config_dir()) / "aaep" / "mcp.json"
    )
    servers = MCPServers(
        path,
        timeout=ext.mcp_call_timeout_seconds,
        log_dir=Path(jupyter_runtime_dir()),
        allowed=ext.admin_policy.mcp_stdio_commands,
        images=ImageBudget(
            max_images=ext.model_images_per_request, max_edge=ext.model_image_max_edge
        ),
        # Private to the user, beside the chat store: which servers' claims a person trusts.
        trust=MCPTrust(Path(jupyter_data_dir()) / "aaep" / "mcp-trust.json"),
    )
    toolbox.mcp = servers
    return servers


def _mcp_endpoint(
    ext: ServerOptions, runner: ChatRunner, toolbox: Toolbox, hub: StreamHub
) -> MCPEndpoint:
    """Outside agents' MCP endpoint (its session manager starts on its first request)."""
    from jupyter_server.utils import ensure_async

    from ..mcp.http_endpoint import MCPEndpoint
    from ..mcp.notebook_server import build_notebook_server, check_inside_root
    from ..mcp.outside_agents import OutsideAgents

    contents = ext.server.contents_manager

    async def notebook_exists(path: str) -> bool:
        root = getattr(contents, "root_dir", None)
        if isinstance(root, str) and root:  # a file-backed contents manager: links stay inside
            check_inside_root(root, path)
        return bool(await ensure_async(contents.file_exists(path)))  # type: ignore[no-untyped-call]

    agents = OutsideAgents(
        runner, toolbox.registry_for, attach_chat=hub.attach_chat, idle_seconds=ext.mcp_idle_seconds
    )
    return MCPEndpoint(
        build_notebook_server(toolbox.tools, agents, file_exists=notebook_exists),
        agents,
        credentials=ext.outside_credentials,
    )
