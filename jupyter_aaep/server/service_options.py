"""The service's options: the chat database, event streams, cells and kernels, and tools.

Each is a traitlet of :class:`ServiceOptions`, set as ``c.AAEPExtension.<name>`` (the extension
inherits them); a default that belongs to the class an option configures is stated here as a
literal, so loading the extension imports none of those classes (issue 31), and
``tests/server/test_option_defaults.py`` holds the two equal. :meth:`ServiceOptions.open_store`
builds the chat database from its options (and imports the store then).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_core.paths import jupyter_data_dir
from traitlets import Bool, Float, Integer, List, Unicode, default, validate
from traitlets.config import LoggingConfigurable

from ..store.retention import RetentionPolicy
from .model_client import WITHHELD
from .option_bounds import Lowest, checked

if TYPE_CHECKING:
    from ..store.chat_store import ChatStore
    from ..store.health import StoreHealth

LOWEST = {
    "sse_keepalive_seconds": Lowest(0, above=True, unit="seconds"),
    "max_streams_per_client": Lowest(1),
    "run_cell_wait_seconds": Lowest(1, unit="second"),
    "progress_announce_seconds": Lowest(15, unit="seconds"),
    "announce_person_runs_after_seconds": Lowest(0, zero="off"),
    "mcp_idle_seconds": Lowest(0, above=True, unit="seconds"),
    "mcp_call_timeout_seconds": Lowest(0, above=True, unit="seconds"),
}


class ServiceOptions(LoggingConfigurable):
    """Where chats are stored, how events are streamed, how cells run and which tools come."""

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
        5.0,
        config=True,
        help="Seconds a write waits while another program holds the chat database before storing counts as "
        "interrupted (the chats are told, and writes wait in memory and are retried). Must be more than 0.",
    )

    store_retry_max_seconds = Float(
        5.0,
        config=True,
        help="Longest pause, in seconds, between two tries to write to a chat database that could not be "
        "written (locked, full or read-only); the pause starts at 0.1 s and doubles.",
    )

    store_queue_limit = Integer(
        20000,
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
        10.0,
        config=True,
        help="Seconds of silence after which an SSE stream gets a ': keepalive' comment, so clients "
        "and proxies do not drop it as idle. Must be more than 0.",
    )

    reconnect_grace_seconds = Float(
        30.0,
        config=True,
        help="Seconds a pending confirmation or question waits for a subscriber to come back when "
        "the last one able to answer disconnects without closing (a reloaded page, a dropped "
        "network). After that its default applies (AAEP §5.8.2). An explicit subscription.close "
        "applies the default at once. 0 applies it at once on every disconnect.",
    )

    max_streams_per_client = Integer(
        32,
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

    # -- cells and kernels (NotebookService, RunningCells, LongRunNews, kernel credentials) --------
    run_cell_wait_seconds = Float(
        30.0,
        config=True,
        help="Seconds run_cell and run_all_cells wait for a cell before answering the agent that it is "
        "still running (with its progress and last output). The cell keeps running: nothing "
        "interrupts it unless the model or the person set a time limit; the agent can wait more "
        "with wait_for_cell. At least 1.",
    )

    progress_announce_seconds = Float(
        60.0,
        config=True,
        help="For a running cell that reports no percentage (it prints nothing countable): seconds "
        "between progress announcements at normal verbosity. Cells that report a percentage are "
        "announced at 25, 50 and 75 %. Never less than 15: no two progress events of a run are "
        "closer than 15 seconds.",
    )

    announce_person_runs_after_seconds = Float(
        10.0,
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

    tune_memory_allocator = Bool(
        True,
        config=True,
        help="When true (the default), on Linux with glibc the server process uses at most 2 "
        "malloc arenas and maps blocks of 1 MB or more on their own (as MALLOC_ARENA_MAX=2 and "
        "MALLOC_MMAP_THRESHOLD_=1048576 would), so the memory a cell's big output passed through "
        "goes back to the system afterwards. Values set in the environment are kept. False leaves "
        "glibc's defaults (docs/configuration.md, Memory after a big output).",
    )

    rules_files = Bool(
        True,
        config=True,
        help="Read the rules files for the agent's system prompt: your own "
        "({jupyter config dir}/aaep/rules/*.md), AGENTS.md and CLAUDE.md in the server root and each "
        "folder down to the notebook's, and the project's .aaep/rules/*.md (docs/configuration.md). "
        "The person hears which apply. False: none are read.",
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
        30.0,
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

    @validate(*LOWEST)
    def _service_bounds(self, proposal: Any) -> Any:
        return checked(proposal, LOWEST)

    def open_store(self, on_health: Callable[[StoreHealth], None]) -> ChatStore | None:
        """The chat database; ``None`` (memory only) if it cannot even be opened."""
        from ..store.chat_store import ChatStore  # at the first request that needs it

        retention = RetentionPolicy(
            keep_days=max(self.store_keep_days, 0.0),
            keep_mb_per_chat=max(self.store_keep_mb_per_chat, 0.0),
        )
        try:
            return ChatStore(
                self.db_path or ":memory:",
                on_health=on_health,
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
