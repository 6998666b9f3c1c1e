"""``AAEPExtension``: the Jupyter server extension that runs the agent and serves its AAEP events.

Enabled by ``pip install`` (``jupyter-config/server-config/jupyter_aaep.json``). Every option
is a traitlet (``c.AAEPExtension.model = ...``); the API key is left to the Anthropic SDK,
which reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``) from the environment — the
server's, not the kernels': they are moved out of ``os.environ`` at start-up
(:class:`~.model_client.ModelCredentials`) unless ``kernels_inherit_model_credentials`` is set.

Lifecycle (issue 31: nothing heavy until it is needed): linking routes SIGINT to the server's
own stop; ``initialize_settings`` keeps the model credentials from kernels and gives each kernel
the server starts its own credential (``kernel_credentials.py``); ``initialize_handlers`` mounts
the HTTP contract under ``base_url``; the start hook exports ``AAEP_SERVER_URL`` for kernels
started later. The chat store, tools, runner, streams and MCP parts (and the Anthropic and MCP
SDKs) come with the first request that needs them (``agent_parts.py``). ``stop_extension``
stops whatever was started, each step on its own, at whatever point the server is stopped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Dict, Enum, Float, Integer, List, TraitError, Unicode, default, validate

from ..aaep.session import Producer
from ..agent.approval import APPROVAL_MODES, DEFAULT_TIMEOUTS, ApprovalPolicy
from ..agent.context import ContextSettings
from ..agent.grants import SCOPES
from ..agent.loop import AgentConfig
from ..agent.usage import PriceTable
from ..mcp.credentials import OutsideCredentials
from ..mcp.outside_agents import OutsideAgents
from ..notebook.edit_record import missing_from_file
from ..notebook.running import RunningCells
from ..notebook.service import NotebookService
from ..store.chat_store import ChatStore
from ..store.health import StoreHealth
from ..store.retention import RetentionPolicy
from .agent_parts import AgentParts, build_parts
from .credential_handlers import credential_routes
from .handlers import handler_routes
from .kernel_credentials import KernelCredentials
from .kernel_launch import ARGUMENT as KERNEL_ARGUMENT
from .kernel_launch import add_extension_to_ipython_kernels
from .long_runs import LongRunNews
from .model_client import WITHHELD, ClientFactory, ModelCredentials
from .option_defaults import default_of
from .policy import AdminPolicy
from .signals import end_without_collecting, stop_on_sigint_without_tty
from .sse import EventStreamHandler
from .streams import SERVER_RECONNECT_GRACE, StreamHub

RISK_LEVELS = tuple(DEFAULT_TIMEOUTS)
EXPORTED = ("AAEP_SERVER_URL", "AAEP_KERNEL_SECRET", "AAEP_EXPLORABLE_FIGURES")


class AAEPExtension(ExtensionApp):
    """An AI agent for the user's notebooks that announces every step as AAEP events."""

    name = "jupyter_aaep"
    description = __doc__

    # -- the model and the agent loop (AgentConfig, ContextSettings, the producer's name) -----------
    model = Unicode(
        default_of(AgentConfig, "model"),
        config=True,
        help="Anthropic model the agent uses, e.g. 'claude-sonnet-4-5'. Any model served by "
        "ANTHROPIC_BASE_URL works when that points at an Anthropic-compatible server.",
    )

    max_tokens = Integer(
        default_of(AgentConfig, "max_tokens"),
        config=True,
        help="Most tokens the model may write in one turn. When an answer reaches it, the user is "
        "told the answer was cut off and can ask to continue.",
    )

    max_turns = Integer(
        default_of(AgentConfig, "max_turns"),
        config=True,
        help="Most model turns (a turn ends at each round of tool calls) for one user request. "
        "Reaching it ends the session with an error that says so; the user can then say 'continue'.",
    )

    agent_name = Unicode(
        default_of(Producer, "agent_name"),
        config=True,
        help="The agent's name in every AAEP event (producer.agent_name), as screen readers say it.",
    )

    context_window = Integer(
        0,
        config=True,
        help="The model's context window in tokens. 0 (the default) looks it up by model name "
        "(200000 for the current Claude models). Set it for an Anthropic-compatible server with a "
        "smaller window: old tool results are cleared and old turns summarised before a request "
        "would not fit.",
    )

    context_management = Enum(
        ["auto", "server", "client", "off"],
        default_value=default_of(ContextSettings, "strategy"),
        config=True,
        help="How a long chat is kept inside the context window. 'auto' (the default) uses the "
        "Messages API's context editing where the server offers it and clears old tool results on "
        "this side where it does not; 'client' never asks the server; 'off' sends the whole "
        "conversation every time (a long chat then fails with 'prompt is too long').",
    )

    model_prices = Dict(
        config=True,
        help="Prices for the cost estimate, in USD per million tokens, by model-name prefix (the "
        "longest matching prefix wins), e.g. {'claude-sonnet': {'input': 3, 'output': 15}}. "
        "'cache_write' defaults to 1.25 x input and 'cache_read' to 0.1 x input. None instead of a price "
        "means the model costs nothing (tokens are counted, no cost is offered), as for the offline demo "
        "model. Models not listed keep the built-in prices of the current Claude models.",
    )

    models = List(
        Unicode(),
        config=True,
        help="Models offered in the panel's model picker when the model endpoint has no Models API "
        "(GET /v1/models); where it has one, its list is shown instead. The configured 'model' is always "
        "offered and is the default. Each chat keeps its choice for its next requests.",
    )

    model_images_per_request = Integer(
        default_of(ContextSettings, "max_images"),
        config=True,
        help="Most images (figures from cell outputs) sent to the model with one request, so it "
        "can read plots. Older images in the conversation are replaced by a short note (the agent "
        "can look again). 0 sends none: the model then only reads each figure's size.",
    )

    model_image_max_edge = Integer(
        default_of(NotebookService, "image_max_edge"),
        config=True,
        help="Longest side, in pixels, of a figure (or an MCP tool server's image) sent to the "
        "model; larger ones are downscaled first (and re-encoded as PNG or JPEG) to keep requests small. At least 64.",
    )

    chat_budget_usd = Float(
        0.0,
        config=True,
        help="Estimated cost in USD at which a chat stops asking the model, with an announcement "
        "that says so (the work so far is kept). 0 (the default) means no budget.",
    )

    @validate("context_window", "chat_budget_usd", "model_images_per_request")
    def _not_negative(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(
                f"{proposal['trait'].name} must be 0 (none) or more, not {proposal['value']}."
            )
        return proposal["value"]

    @validate("model_image_max_edge")
    def _image_edge(self, proposal: Any) -> int:
        if proposal["value"] < 64:
            raise TraitError(
                f"model_image_max_edge must be at least 64 pixels, not {proposal['value']}."
            )
        return int(proposal["value"])

    @validate("model_prices")
    def _prices(self, proposal: Any) -> dict[str, Any]:
        try:
            PriceTable(proposal["value"])
        except (ValueError, AttributeError) as error:
            raise TraitError(f"model_prices: {error}") from error
        return dict(proposal["value"])

    # -- approvals (ApprovalPolicy) ----------------------------------------------------------------
    approval_mode = Enum(
        list(APPROVAL_MODES),
        default_value=default_of(ApprovalPolicy, "mode"),
        config=True,
        help="Approval mode of new chats. 'ask' (Ask before running code): the user approves running "
        "code (a cell, all cells, a kernel restart) and any tool marked risky; creating, editing, "
        "moving and deleting cells do not ask (Undo reverts them). 'ask_all' (Ask before every "
        "change): those changes and clearing outputs ask too, and an edit's request shows the cell's "
        "changes line by line. 'auto' (Auto): approved on the user's behalf, except code a static "
        "risk scan flags (shell, file writes and deletes, installs, network writes, environment and "
        "credential reads, exec/eval, dynamic imports, code that does not parse), which always asks. "
        "'auto' is not a sandbox: code the scan does not flag runs without asking. 'plan' (Plan "
        "first): each request starts read-only, the agent proposes a plan, and the user approves it "
        "once, choosing how the rest of that request runs (asking only for flagged code, or before "
        "each step); calls from outside agents over MCP ask as in 'ask'. Users can switch a chat's "
        "mode at any time; a chat keeps 'ask', 'ask_all' or 'plan' across restarts, never 'auto'.",
    )

    confirmation_timeouts = Dict(
        default_value=dict(DEFAULT_TIMEOUTS),
        config=True,
        help="Seconds a confirmation waits for the user, by risk level ('low', 'medium', 'high'), "
        "before it is rejected (silence never approves a step, whatever its risk). Missing levels "
        "keep their defaults. AAEP suggests 180-600 s for "
        "high risk, 60-180 s for medium and 30-90 s for low.",
    )

    clarification_timeout = Integer(
        default_of(ApprovalPolicy, "clarification_timeout"),
        config=True,
        help="Seconds a question from the agent waits for the user's answer before the agent goes on "
        "without it.",
    )

    @validate("confirmation_timeouts")
    def _timeouts(self, proposal: Any) -> dict[str, int]:
        value = proposal["value"]
        unknown = set(value) - set(RISK_LEVELS)
        if unknown:
            raise TraitError(
                f"confirmation_timeouts keys must be low, medium or high; got {sorted(unknown)}."
            )
        for level, seconds in value.items():
            if (
                not isinstance(seconds, int)
                or isinstance(seconds, bool)
                or not 1 <= seconds <= 86400
            ):
                raise TraitError(
                    f"confirmation_timeouts[{level!r}] must be whole seconds from 1 to 86400."
                )
        return {**DEFAULT_TIMEOUTS, **value}

    # -- admin policy (server/policy.py): settings an administrator fixes for every user -----------
    allowed_approval_modes = List(
        Enum(list(APPROVAL_MODES)),
        default_value=list(APPROVAL_MODES),
        config=True,
        help="The approval modes users may choose for a chat, e.g. ['ask', 'ask_all', 'plan'] to turn 'auto' off "
        "for everyone. Chats start in approval_mode, which must be one of them (else the first one is "
        "used); a chat stored in a mode no longer allowed comes back in it. A user who picks another "
        "mode is told the administrator turned it off. The chat state reports the lock (policy.locked).",
    )

    allowed_mcp_stdio_commands = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        config=True,
        help="The commands tool servers (MCP, over stdio) may be started with, by executable name or "
        "absolute path. None (the default) allows any command a user configures; [] allows none. "
        "Reported in the chat state (policy.mcp_stdio_commands); the MCP client enforces it.",
    )

    lock_models = Bool(
        False,
        config=True,
        help="When true, chats may use only 'model' and the models in 'models'; the model endpoint's "
        "own list (GET /v1/models) is not offered, and a user who picks another model is told so.",
    )

    allowed_permission_scopes = List(
        Enum(list(SCOPES)),
        default_value=list(SCOPES),
        config=True,
        help="Where users may give the agent standing permissions ('don't ask again'): any of 'chat', "
        "'notebook', 'always'. [] turns them off. A permission in a scope no longer allowed stops applying.",
    )

    forbidden_permission_rules = List(
        Unicode(),
        default_value=[],
        config=True,
        help="Kinds of step no standing permission may allow, as patterns of rules, e.g. ['run_cell:*'] "
        "(running code always asks) or ['mcp__*']. Users' own 'never' rules still apply.",
    )

    # -- the chat database (ChatStore, RetentionPolicy) --------------------------------------------
    db_path = Unicode(
        config=True,
        help="Where chats, their message history, sessions, events and undo snapshots are stored "
        "(SQLite, WAL mode), so they survive a restart. Defaults to aaep/chats.sqlite3 in the Jupyter "
        "data directory; ':memory:' keeps them in this process only (lost at exit).",
    )

    store_keep_days = Float(
        RetentionPolicy.for_server().keep_days,
        config=True,
        help="Days the chat database keeps the event log (every step, for replay), step records and undo "
        "snapshots of a finished request; older ones are pruned, a little at a time. The chats themselves, their "
        "messages and each request's outcome are kept. 0 keeps them without a time limit.",
    )

    store_keep_mb_per_chat = Float(
        RetentionPolicy.for_server().keep_mb_per_chat,
        config=True,
        help="Megabytes of event log the chat database keeps per chat; beyond that the oldest requests' events, "
        "step records and undo snapshots are pruned, whole requests at a time. 0 means no size limit. With both "
        "limits at 0 the database grows without bound.",
    )

    store_lock_timeout = Float(
        default_of(ChatStore, "lock_timeout"),
        config=True,
        help="Seconds a write waits while another program holds the chat database before storing counts as "
        "interrupted (the chats are told, and writes wait in memory and are retried). Must be more than 0.",
    )

    store_retry_max_seconds = Float(
        default_of(ChatStore, "retry_max_seconds"),
        config=True,
        help="Longest pause, in seconds, between two tries to write to a chat database that could not be "
        "written (locked, full or read-only); the pause starts at 0.1 s and doubles.",
    )

    store_queue_limit = Integer(
        default_of(ChatStore, "queue_limit"),
        config=True,
        help="Steps of the event log kept in memory while the chat database cannot be written. When more "
        "arrive, the oldest waiting steps are given up (and counted in the notice that saving works again); "
        "chats, their messages, each request's outcome and undo snapshots always wait, whatever their number.",
    )

    @default("db_path")
    def _default_db_path(self) -> str:
        return os.path.join(jupyter_data_dir(), "aaep", "chats.sqlite3")

    # -- event streams and replies (StreamHub, the SSE handler, the reply broker) ------------------
    sse_keepalive_seconds = Float(
        default_of(EventStreamHandler.initialize, "keepalive"),
        config=True,
        help="Seconds of silence after which an SSE stream gets a ': keepalive' comment, so clients "
        "and proxies do not drop it as idle. Must be more than 0.",
    )

    reconnect_grace_seconds = Float(
        SERVER_RECONNECT_GRACE,
        config=True,
        help="Seconds a pending confirmation or question waits for a subscriber to come back when "
        "the last one able to answer disconnects without closing (a reloaded page, a dropped "
        "network). After that its default applies (AAEP §5.8.2). An explicit subscription.close "
        "applies the default at once. 0 applies it at once on every disconnect.",
    )

    max_streams_per_client = Integer(
        default_of(StreamHub, "max_streams_per_client"),
        config=True,
        help="Most AAEP streams (SSE or WebSocket) one client may hold open at once; a client is a "
        "Jupyter user at one network address. When a client opens one more, its least recently used "
        "stream is closed (with a subscription.close saying why) and the new one is served, so a "
        "client that leaks connections only ever locks itself out. At least 1.",
    )

    require_reply_sender = Bool(
        False,
        config=True,
        help="When true, a confirmation or clarification reply counts only if its subscription_id "
        "names a subscription that received the request and can answer it (AAEP §10.2). When false "
        "(the default) any reply authenticated by Jupyter counts, whatever subscription_id it carries; "
        "the AAEP conformance suite needs that, as it sends a random id with every reply. When true, "
        "subscribers must start with subscription.request to learn the id they reply with.",
    )

    conformance_input_ack = Bool(
        False,
        config=True,
        help="Only for running the AAEP conformance suite (aaep-conformance 1.0.0, see "
        "scripts/conformance); leave off otherwise. When true, every session's events are preceded "
        "on the event streams by a message that is not an AAEP event, "
        '{"kind": "user_input.accepted", "session_id": ..., "chat_id": ...}. The suite needs it '
        "because it takes the session id from the next message on the stream and discards that "
        "message, which would otherwise be session.started. Other subscribers (the panel, "
        "aaep-listen, aaep-capture) do not need it and would show it as an unknown event: they get "
        "the session id in the answer to user_input (the POST body or the WebSocket response frame).",
    )

    @validate("sse_keepalive_seconds")
    def _keepalive(self, proposal: Any) -> float:
        if proposal["value"] <= 0:
            raise TraitError("sse_keepalive_seconds must be more than 0.")
        return float(proposal["value"])

    # -- cells and kernels (NotebookService, RunningCells, LongRunNews, kernel credentials) --------
    run_cell_wait_seconds = Float(
        default_of(NotebookService, "run_cell_wait_seconds"),
        config=True,
        help="Seconds run_cell and run_all_cells wait for a cell before answering the agent that it is "
        "still running (with its progress and last output). The cell keeps running: nothing "
        "interrupts it unless the model or the person set a time limit; the agent can wait more "
        "with wait_for_cell. At least 1.",
    )

    progress_announce_seconds = Float(
        default_of(RunningCells, "announce_seconds"),
        config=True,
        help="For a running cell that reports no percentage (it prints nothing countable): seconds "
        "between progress announcements at normal verbosity. Cells that report a percentage are "
        "announced at 25, 50 and 75 %. Never less than 15: no two progress events of a run are "
        "closer than 15 seconds.",
    )

    announce_person_runs_after_seconds = Float(
        default_of(LongRunNews, "person_runs_after"),
        config=True,
        help="A cell the person runs themselves that takes longer than this many seconds is "
        'announced in the notebook\'s chat when it ends ("Cell 7 finished after 3 min 12 s: ..."), '
        "with its progress while it runs. 0 turns this off.",
    )

    kernels_inherit_model_credentials = Bool(
        False,
        config=True,
        help="When false (the default), kernels, terminals and every other process this server starts "
        "do not get the model credentials: "
        + ", ".join(WITHHELD)
        + " are taken out of the server's "
        "environment at start-up and kept in its memory for the agent's model client only, so code "
        "run in a notebook cannot print or send the key. Set it to true only if your notebooks call "
        "the Anthropic API themselves with the server's key; any code in any kernel, including code "
        "the agent runs, can then read it.",
    )

    rules_files = Bool(
        True,
        config=True,
        help="Read the rules files for the agent's system prompt: your own "
        "({jupyter config dir}/aaep/rules/*.md), AGENTS.md and CLAUDE.md in the server root and each "
        "folder down to the notebook's, and the project's .aaep/rules/*.md (docs/configuration.md). "
        "The person hears which apply. False: none are read.",
    )

    kernel_replies = Bool(
        False,
        config=True,
        help="When false (the default), the kernel answers no approval: approvals are taken from the "
        "side panel, from the %aaep widget's Approve and Reject (drawn and answered in the browser by the "
        "labextension, with your login) and from other clients that log in to Jupyter. Code running in "
        "a kernel can do whatever a widget's Python side does, so an answer from the kernel cannot be "
        "told apart from code answering the agent's request by itself. When true, the old kernel-side "
        "widget buttons answer too, but never for a chat in auto-approve mode, never while "
        "the agent's own code runs in that kernel, and only for a request that kernel's view received.",
    )

    kernel_autoload = Bool(
        True,
        config=True,
        help="When true (the default), the server makes every new IPython kernel of its Python "
        "environment load the %aaep magic and @aaep_tool support without %load_ext, by adding "
        "'jupyter_aaep' to InteractiveShellApp.extensions in {sys.prefix}/etc/ipython/"
        "ipython_kernel_config.json at start (merged: the file's other settings are kept). When "
        "false, the server takes that entry out again at start; notebooks then use %load_ext "
        "jupyter_aaep. See python -m jupyter_aaep.kernel.autoload for doing it by hand.",
    )

    explorable_figures = Bool(
        True,
        config=True,
        help="When true (the default), every matplotlib or seaborn figure shown in a kernel this "
        "server starts carries its data (from maidr) beside its image: the notebook lets a person "
        "explore it by keyboard (arrows move value by value, with text, braille and sound) and the "
        "agent reads its exact values. When false, figures are images only. Kernels read it from "
        "AAEP_EXPLORABLE_FIGURES at start (kernel/figures.py).",
    )

    @validate("run_cell_wait_seconds")
    def _run_wait(self, proposal: Any) -> float:
        if proposal["value"] < 1:
            raise TraitError("run_cell_wait_seconds must be at least 1.")
        return float(proposal["value"])

    @validate("progress_announce_seconds")
    def _announce_every(self, proposal: Any) -> float:
        if proposal["value"] < 15:
            raise TraitError("progress_announce_seconds must be at least 15.")
        return float(proposal["value"])

    @validate("announce_person_runs_after_seconds")
    def _person_runs(self, proposal: Any) -> float:
        if proposal["value"] < 0:
            raise TraitError("announce_person_runs_after_seconds must be 0 (off) or more.")
        return float(proposal["value"])

    # -- tools (extra tools, outside agents over MCP, the user's MCP servers) ----------------------
    extra_tools = List(
        Unicode(),
        config=True,
        help="Extra tools offered in every chat, as 'package.module:function' references to importable "
        "functions decorated with @jupyter_aaep.aaep_tool (a list or tuple of tools also works). A "
        "reference that fails to import is logged with the reason and skipped; the server keeps running.",
    )

    mcp_server = Bool(
        True,
        config=True,
        help="When true (the default), outside agents (Claude Code, Codex, any MCP client) can work on "
        "notebooks through MCP at {base_url}aaep/v1/mcp (Streamable HTTP, behind Jupyter's login; "
        "python -m jupyter_aaep.mcp bridges stdio clients to it). Their steps are announced in the "
        "notebook's chat and wait for a person's approval as the agent's own do. False turns the endpoint off.",
    )

    mcp_idle_seconds = Float(
        default_of(OutsideAgents, "idle_seconds"),
        config=True,
        help="Seconds an outside agent may stay silent before its session in the notebook's chat ends "
        "('Claude Code finished'); its next call starts a new one. While its session runs, a request to the "
        "notebook's own agent and other outside agents' calls are refused with a sentence saying who is "
        "working. More than 0.",
    )

    mcp_config_file = Unicode(
        "",
        config=True,
        help="The user's tool servers (MCP), in the mcpServers JSON most MCP clients share: stdio servers "
        'with command/args/env, remote ones with "type": "http", url and headers; ${VAR} is taken from '
        "the server's environment. Their tools reach the agent as mcp__{server}__{tool}. Empty (the default): "
        "{jupyter config dir}/aaep/mcp.json. A missing file means no tool servers.",
    )

    mcp_call_timeout_seconds = Float(
        60.0,
        config=True,
        help="Seconds a tool server may take to answer one call before the call is stopped (starting may take at least 30).",
    )

    @validate("mcp_idle_seconds", "mcp_call_timeout_seconds")
    def _mcp_idle(self, proposal: Any) -> float:
        if proposal["value"] <= 0:
            raise TraitError(f"{proposal['trait'].name} must be more than 0.")
        return float(proposal["value"])

    # -- checks shared by options of several groups ------------------------------------------------
    @validate("max_tokens", "max_turns", "clarification_timeout", "max_streams_per_client")
    def _positive(self, proposal: Any) -> int:
        value = proposal["value"]
        if value < 1:
            raise TraitError(f"{proposal['trait'].name} must be at least 1, not {value}.")
        return int(value)

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def server(self) -> ServerApp:
        """The linked ServerApp (always set once the extension is loaded)."""
        assert self.serverapp is not None
        return self.serverapp

    def initialize_settings(self) -> None:
        """Only what must hold from the server's first second: the model credentials kept from
        kernels, each kernel's own credential, the environment kernels read. The agent's parts
        are built on first use (:mod:`.agent_parts`)."""
        self._parts: AgentParts | None = None
        self.admin_policy = self._admin_policy()
        # Outside agents' credentials: a small private file, read now (the token routes need it).
        self.outside_credentials = OutsideCredentials.beside(self.db_path)
        self.clients = ClientFactory(
            credentials=ModelCredentials(withhold=not self.kernels_inherit_model_credentials)
        )
        self._secret = secrets.token_urlsafe(32)
        self.kernel_credentials = KernelCredentials(self._secret.encode())
        self.kernel_credentials.install(self.server.kernel_manager)
        self._previous_env = {name: os.environ.get(name) for name in EXPORTED}
        self._export_environment()
        self._configure_kernel_autoload()
        self._log_configuration()
        self._route_module_logs()

    @property
    def parts(self) -> AgentParts:
        """The store, tools, runner, streams and MCP parts, built by the first call that needs
        them (and started, once the server's loop runs)."""
        if self._parts is None:
            self._parts = build_parts(self)
        if self._loop_started and not self._parts.started:
            self._parts.start()
        return self._parts

    @property
    def built(self) -> AgentParts | None:
        """The parts if something has used them, without building them."""
        return getattr(self, "_parts", None)

    # The parts under the names the rest of the code (and the tests) know them by.
    runner = property(lambda self: self.parts.runner)
    hub = property(lambda self: self.parts.hub)
    store = property(lambda self: self.parts.store)
    toolbox = property(lambda self: self.parts.toolbox)
    service = property(lambda self: self.parts.service)
    long_runs = property(lambda self: self.parts.long_runs)
    mcp_endpoint = property(lambda self: self.parts.endpoint() if self.mcp_server else None)
    mcp_servers = property(lambda self: self.parts.mcp_servers)

    def initialize_handlers(self) -> None:
        self.handlers.extend(
            handler_routes(lambda: self.parts.service, keepalive=self.sse_keepalive_seconds)
        )
        self.handlers.extend(
            credential_routes(
                lambda: self.parts.service,
                self.outside_credentials,
                endpoint_on=self.mcp_server,
                built_endpoint=lambda: self.built.mcp_endpoint if self.built else None,
            )
        )
        if self.mcp_server:
            from ..mcp.http_endpoint import MCPHandler

            self.handlers.append((r"aaep/v1/mcp", MCPHandler, {"endpoint": self._endpoint}))

    def _endpoint(self) -> Any:
        return self.parts.endpoint()  # the route exists only when mcp_server is on

    _loop_started = False

    def _link_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        super()._link_jupyter_server_extension(serverapp)
        # JupyterHub stops with SIGINT, also a server it gave up on while it was starting: from
        # here on that runs the server's own stop (after the rest of its start) and ours.
        self._restore_sigint = stop_on_sigint_without_tty(serverapp)
        end_without_collecting()  # a class's servers stopped at once end sooner (signals.py)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_started = True
        self._export_environment()  # the port is final once the server listens
        if self._parts is not None:  # something used the agent before the loop ran
            self._parts.start()

    async def stop_extension(self) -> None:
        """Stop whatever was started, each step on its own: a server stopped while starting,
        before the extension finished loading, or during a session, shuts down without a
        traceback, and one failing step (logged in a sentence) never skips the others."""
        await self._step("put the interrupt signal back", getattr(self, "_restore_sigint", None))
        parts = self.built
        running = sum(1 for chat in parts.runner.chats() if chat.running) if parts else 0
        self.log.info(
            "AAEP agent: shutting down the server at %s; %d running session(s) closed, to be "
            "continued after a restart.",
            self.serverapp.base_url if self.serverapp is not None else "/",
            running,
        )
        if parts is not None:
            await parts.close(self._step)
        clients = getattr(self, "clients", None)
        if clients is not None:
            await self._step("close the model clients", clients.close)
            await self._step("restore the model credentials", clients.credentials.restore)
        credentials = getattr(self, "kernel_credentials", None)
        if credentials is not None and self.serverapp is not None:
            manager = self.serverapp.kernel_manager
            await self._step(
                "stop giving kernels credentials", lambda: credentials.uninstall(manager)
            )
        await self._step("restore the environment", self._restore_environment)
        await self._step("stop routing the agent's log messages", self._unroute_module_logs)

    async def _step(self, what: str, step: Callable[[], Any] | None) -> None:
        """Run one shutdown step; a failure is logged in one sentence and the shutdown goes on."""
        if step is None:
            return
        try:
            result = step()
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # noqa: BLE001 - each step on its own: the others still run
            self.log.warning(
                "AAEP agent: could not %s while shutting down (%s: %s); the rest of the shutdown "
                "went on.",
                what,
                type(error).__name__,
                error,
            )

    def _restore_environment(self) -> None:
        for name, value in getattr(self, "_previous_env", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    # -- helpers (also called by agent_parts.build_parts) -------------------------------------------
    def open_store(self) -> ChatStore | None:
        """The chat database; ``None`` (memory only) if it cannot even be opened."""
        retention = RetentionPolicy(
            keep_days=max(self.store_keep_days, 0.0),
            keep_mb_per_chat=max(self.store_keep_mb_per_chat, 0.0),
        )
        try:
            return ChatStore(
                self.db_path or ":memory:",
                on_health=self._store_health_changed,
                lock_timeout=max(self.store_lock_timeout, 0.01),
                queue_limit=max(self.store_queue_limit, 1),
                retry_max_seconds=self.store_retry_max_seconds,
                retention=retention,
            )
        except OSError as error:  # e.g. its folder cannot be created
            self.log.warning(
                "AAEP agent: chats cannot be stored in %s (%s); they are kept in memory only and "
                "lost when the server stops.",
                self.db_path,
                error,
            )
            return None

    def _store_health_changed(self, health: StoreHealth) -> None:
        """From the store's writer thread: tell the open chats, on the server's loop."""
        loop = getattr(self, "_loop", None) or getattr(
            getattr(self.server, "io_loop", None), "asyncio_loop", None
        )
        parts = self.built  # never built from the writer thread
        if parts is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(parts.runner.storage_changed, health)

    def edits_missing_on_disk(self, path: str, record: dict[str, Any]) -> list[str] | None:
        """At recovery: the interrupted session's edits that the notebook file lacks."""
        return missing_from_file(self.serverapp.root_dir if self.serverapp else "", record)

    def _admin_policy(self) -> AdminPolicy:
        allowed = tuple(m for m in APPROVAL_MODES if m in self.allowed_approval_modes) or ("ask",)
        if self.approval_mode not in allowed:
            self.log.warning(
                "AAEP agent: approval_mode '%s' is not in allowed_approval_modes; new chats start in "
                "'%s'.",
                self.approval_mode,
                allowed[0],
            )
            self.approval_mode = allowed[0]
        return AdminPolicy(
            approval_modes=allowed,
            kernel_replies=self.kernel_replies,
            mcp_stdio_commands=None
            if self.allowed_mcp_stdio_commands is None
            else tuple(self.allowed_mcp_stdio_commands),
            models=tuple(dict.fromkeys([self.model, *self.models])) if self.lock_models else None,
            budget_usd=self.chat_budget_usd or None,
            permission_scopes=tuple(s for s in SCOPES if s in self.allowed_permission_scopes),
            forbidden_permission_rules=tuple(self.forbidden_permission_rules),
        )

    def chat_policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(
            mode=self.approval_mode,
            allowed=self.admin_policy.approval_modes,
            timeouts=dict(self.confirmation_timeouts),
            clarification_timeout=self.clarification_timeout,
        )

    def _export_environment(self) -> None:
        """For the kernel magic: where this server is. Each kernel's own credential goes into
        that kernel's environment only (``kernel_credentials.py``), never into the server's."""
        url = self.server.connection_url
        os.environ["AAEP_SERVER_URL"] = url
        os.environ.pop("AAEP_KERNEL_SECRET", None)
        os.environ["AAEP_EXPLORABLE_FIGURES"] = "1" if self.explorable_figures else "0"
        parts = self.built
        if parts is not None:
            parts.hub.manifest_uri = url_path_join(url, "aaep/v1/manifest")

    def _configure_kernel_autoload(self) -> None:
        """Kernels of this environment load %aaep by themselves (or no longer do); never fatal."""
        from ..kernel import autoload

        try:
            changed = autoload.enable() if self.kernel_autoload else autoload.disable()
        except autoload.AutoloadError as error:
            if self.kernel_autoload:  # e.g. a shared environment this user cannot write to
                add_extension_to_ipython_kernels(self.server.kernel_manager)
                self.log.warning(
                    "AAEP agent: %s IPython kernels this server starts load %%aaep through their "
                    "command line instead (%s).",
                    error,
                    KERNEL_ARGUMENT,
                )
            else:
                self.log.warning("AAEP agent: %s", error)
            return
        if changed:
            self.log.info(
                "AAEP agent: new kernels of this environment %s %%aaep by themselves (%s).",
                "load" if self.kernel_autoload else "no longer load",
                autoload.config_path(),
            )

    def _route_module_logs(self) -> None:
        """Messages of the ``jupyter_aaep.*`` loggers (why a reply was ignored, a stream that fell
        behind) go to Jupyter's console with its format and level; without this, Python shows
        only their warnings, unformatted, and their info lines nowhere."""
        package = logging.getLogger("jupyter_aaep")
        self._routed = [h for h in self.log.handlers if h not in package.handlers]
        for handler in self._routed:
            package.addHandler(handler)
        self._package_level = package.level
        if package.level == logging.NOTSET:
            package.setLevel(logging.INFO)

    def _unroute_module_logs(self) -> None:
        package = logging.getLogger("jupyter_aaep")
        for handler in getattr(self, "_routed", []):
            package.removeHandler(handler)
        package.setLevel(getattr(self, "_package_level", logging.NOTSET))

    def _log_configuration(self) -> None:
        log = self.log
        log.info(
            "AAEP agent: model %s, at most %d tokens per turn and %d turns per request.",
            self.model,
            self.max_tokens,
            self.max_turns,
        )
        credentials = self.clients.credentials
        if credentials.configured():
            log.info("AAEP agent: an Anthropic API key is set in the environment.")
        else:
            log.warning(
                "AAEP agent: no ANTHROPIC_API_KEY is set; requests will end with an error until "
                "it is exported before starting Jupyter (or run scripts/start --offline from a clone of "
                "jupyter-aaep to try the offline demo model)."
            )
        if credentials.withhold:
            log.info(
                "AAEP agent: kernels and other processes this server starts do not inherit the "
                "model credentials (kernels_inherit_model_credentials is false)."
            )
            if "ANTHROPIC_IDENTITY_TOKEN" in credentials.values() and not credentials.configured():
                # The SDK reads this one again at every token exchange, after it left os.environ.
                log.warning(
                    "AAEP agent: ANTHROPIC_IDENTITY_TOKEN is kept from kernels, and the Anthropic SDK "
                    "reads it at each token exchange, so workload identity will fail. Point "
                    "ANTHROPIC_IDENTITY_TOKEN_FILE at a file holding the token instead."
                )
        base = urlsplit(credentials.values().get("ANTHROPIC_BASE_URL") or "")
        if base.hostname:
            port = f":{base.port}" if base.port else ""
            log.info(
                "AAEP agent: model requests go to %s://%s%s (ANTHROPIC_BASE_URL).",
                base.scheme,
                base.hostname,
                port,
            )
        log.info(
            "AAEP agent: the chat store, tools and tool servers start when the agent is first used."
        )
