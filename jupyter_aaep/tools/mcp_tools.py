"""The user's MCP servers as the agent's tools (``mcp__{server}__{tool}``).

Each server has one long-lived client session owned by one asyncio task: the task enters the
transport and session contexts, lists the tools, and waits until it is told to close, because
the SDK's contexts must be left in the task that entered them. Tool calls come from the agent's
own tasks and only use ``session.call_tool``, with a timeout. A server that crashed makes the
call fail with a sentence and is started again on its next use; a stdio server's stderr goes to
``{runtime dir}/aaep-mcp-{name}.log``.

How a call is approved comes from the tool's annotations (hints, trusted as far as the server
is; ``"approval": "always"`` trusts none): read-only tools run unasked; destructive ones (or
ones that do not say) ask, with the arguments shown; open-world ones say they reach outside
this machine.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..aaep.redaction import mask_secrets
from ..agent.tool_schema import schema_problem
from ..agent.tools import ToolSpec
from ..errors import ToolError
from ..notebook._figures import ImageBudget
from ..notebook.progress_pacing import (
    MIN_GAP_SECONDS,
)
from ._mcp_claims import (
    clean_title,
    model_description,
    model_schema,
)
from ._mcp_startup import ERROR_LINE, private_log, why_not_started
from .mcp_config import ServerConfig, ServerProblem, command_allowed, read_config
from .mcp_tool import MCPTool, never_called
from .mcp_trust import MCPTrust

__all__ = ["MCPServers", "MCPTool", "private_log"]

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class _Server:
    """One configured server: its session (owned by ``_owner``), status and tools."""

    config: ServerConfig
    timeout: float
    log_dir: Path
    allowed: tuple[str, ...] | None
    start_timeout: float = 30.0
    status: str = "starting"
    problem: str | None = None
    tools: list[MCPTool] = field(default_factory=list)
    images: ImageBudget = field(default_factory=ImageBudget)
    progress_min_gap: float = MIN_GAP_SECONDS
    """Seconds between two progress events of one call (the pacing of cell runs)."""
    trust: MCPTrust | None = None
    """Where a person's trust in servers' read-only claims is kept (``None``: trust none)."""
    session: Any = None
    _owner: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _close: asyncio.Event = field(default_factory=asyncio.Event)
    _errlog: TextIO | None = None
    _errlog_start: int = 0
    _errlog_path: Path | None = None
    """The log's path: a file object made from a descriptor is named by its number, not its path."""

    def start(self) -> None:
        if self.config.transport == "stdio" and not command_allowed(
            self.config.command, self.allowed
        ):
            self.status, self.problem = (
                "refused",
                (
                    f"The administrator does not allow starting tool servers with {self.config.command}."
                ),
            )
            log.warning("AAEP: tool server %s not started: %s", self.config.name, self.problem)
            return
        self._ready, self._close = asyncio.Event(), asyncio.Event()
        self.status = "starting"
        self._owner = asyncio.create_task(self._own(), name=f"aaep-mcp-{self.config.name}")

    async def _own(self) -> None:
        import anyio
        from mcp.client.session import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(self.start_timeout):
                    await session.initialize()
                    listed = await session.list_tools()
                self.tools = self._usable(listed.tools)
                self.session, self.status, self.problem = session, "ready", None
                self._ready.set()
                await self._close.wait()
        except Exception as error:  # noqa: BLE001 - any failure to start is one sentence
            said = self._last_words()
            self.status, self.problem = (
                "failed",
                why_not_started(self.config, error, self.start_timeout, said),
            )
            log.warning("AAEP: tool server %s stopped: %s", self.config.name, self.problem)
        finally:
            self.session = None
            if self.status == "ready":
                self.status = "stopped"
            self._ready.set()
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    def _last_words(self) -> str | None:
        """The error line a stdio server wrote to its log while starting (what a person would
        look for in it: "Error: Cannot find module …"), or ``None``."""
        if self._errlog is None or self._errlog_path is None:
            return None
        try:
            self._errlog.flush()
            with open(self._errlog_path, encoding="utf-8", errors="replace") as log_file:
                log_file.seek(self._errlog_start)
                lines = [line.strip() for line in log_file.read(200_000).splitlines()]
        except OSError:
            return None
        lines = [line for line in lines if line]
        errors = [line for line in lines if ERROR_LINE.match(line)]
        found = errors or lines
        return mask_secrets(found[-1])[:200] if found else None

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if self.config.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = await stack.enter_async_context(
                create_mcp_http_client(headers=self.config.headers or None)
            )
            return streamable_http_client(self.config.url, http_client=client)
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        self._errlog_path = self.log_dir / f"aaep-mcp-{self.config.name}.log"
        self._errlog = private_log(self._errlog_path)
        self._errlog_start = self._errlog.tell()
        params = StdioServerParameters(
            command=self.config.command,
            args=list(self.config.args),
            env={**get_default_environment(), **self.config.env},
        )
        return stdio_client(params, errlog=self._errlog)

    def _usable(self, listed: Iterable[Any]) -> list[MCPTool]:
        """The server's tools the model can be offered; the others are logged and left out."""
        tools: dict[str, MCPTool] = {}
        for tool in listed:
            made = self._tool(tool)
            problem = schema_problem(made.input_schema)
            if problem or made.name in tools:
                log.warning(
                    "AAEP: tool %s of the tool server %s was left out: %s.",
                    tool.name,
                    self.config.name,
                    problem or "its name clashes with another of its tools",
                )
                continue
            tools[made.name] = made
        return list(tools.values())

    def trusts_claims(self) -> bool:
        """Whether a person trusts this server's word that a tool changes nothing."""
        return self.trust is not None and self.trust.trusted(self.config)

    def grant_trust(self) -> None:
        if self.trust is not None:
            self.trust.grant(self.config)
        self.apply_trust()

    def apply_trust(self) -> None:
        """Untrusted "read-only" tools need approval, so they never run side by side unasked."""
        trusted = self.trusts_claims()
        for tool in self.tools:
            tool.require_confirmation = tool.irreversible or (tool.claims_read_only and not trusted)

    def _tool(self, tool: Any) -> MCPTool:
        hints = tool.annotations
        title = clean_title(
            tool.title
            or (hints.title if hints else None)
            or tool.name.replace("_", " ").replace("-", " ")
        )
        read_only = bool(hints and hints.read_only_hint) and not self.config.always_ask
        destructive = (
            self.config.always_ask
            or not read_only
            and (hints is None or hints.destructive_hint is None or hints.destructive_hint)
        )
        open_world = self.config.always_ask or hints is None or hints.open_world_hint is not False
        schema, parameters = model_schema(
            tool.input_schema
            if isinstance(tool.input_schema, dict)
            else {"type": "object", "properties": {}}
        )
        return MCPTool(
            name=f"mcp__{self.config.name}__{_UNSAFE.sub('_', tool.name)}"[:64],
            description=model_description(
                self.config.name, title, tool.description or "", parameters
            ),
            input_schema=schema,
            func=never_called,
            risk_level="medium" if destructive else "low",
            irreversible=destructive,
            require_confirmation=destructive or (read_only and not self.trusts_claims()),
            read_only=read_only,
            claims_read_only=read_only,
            label=f"{title}, from the {self.config.name} server",
            server=self,
            remote_name=tool.name,
            title=title,
            open_world=open_world,
            images=self.images,
        )

    async def _session(self) -> Any:
        if self.session is None and self.status != "refused":
            if self._owner is not None and not self._owner.done():
                await self.stop()
            self.start()
            try:
                await asyncio.wait_for(self._ready.wait(), self.start_timeout + 1)
            except asyncio.TimeoutError:
                pass
        if self.session is None:
            raise ToolError(
                f"The {self.config.name} tool server is not available: {self.problem or 'it did not start.'}"
            )
        return self.session

    async def call(self, name: str, arguments: dict[str, Any], progress: Any, title: str) -> Any:
        session = await self._session()

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress(done, total, message)

        try:
            return await session.call_tool(
                name, arguments, read_timeout_seconds=self.timeout, progress_callback=on_progress
            )
        except Exception as error:
            text = str(error)
            if "timed out" in text.lower() or isinstance(error, TimeoutError):
                raise ToolError(
                    f"The {self.config.name} tool server did not answer within "
                    f"{self.timeout:g} seconds; {title} was stopped."
                ) from error
            self.session, self.status = None, "stopped"
            self.problem = f"it stopped while running {title} ({text or type(error).__name__})."
            self._close.set()
            raise ToolError(
                f"The {self.config.name} tool server stopped while running {title} "
                f"({text or type(error).__name__}); it will be started again on the next call."
            ) from error

    async def stop(self) -> None:
        self._close.set()
        owner, self._owner = self._owner, None
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(owner, 5)
            except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001
                log.warning("AAEP: tool server %s did not stop cleanly.", self.config.name)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.config.name,
            "transport": self.config.transport,
            "status": self.status,
            "message": self.problem,
            "trusted": self.trusts_claims(),
            "tools": [
                {
                    "name": t.name,
                    "title": t.human_label(),
                    "read_only": t.read_only,
                    "asks": t.require_confirmation,
                }
                for t in self.tools
            ],
        }


class MCPServers:
    """Every configured server: started after the loop runs, their tools for the registry,
    their state for ``GET /aaep/v1/mcp/servers``, closed when Jupyter stops."""

    def __init__(
        self,
        config_file: Path,
        *,
        timeout: float,
        log_dir: Path,
        allowed: tuple[str, ...] | None,
        images: ImageBudget | None = None,
        start_timeout: float = 30.0,
        trust: MCPTrust | None = None,
    ) -> None:
        self.config_file = config_file
        self.trust = trust
        self.problems: list[ServerProblem] = []
        configs, self.problems = read_config(config_file)
        for problem in self.problems:
            log.warning("AAEP: %s", problem.sentence)
        self.servers = [
            _Server(
                c,
                timeout,
                log_dir,
                allowed,
                images=images or ImageBudget(),
                start_timeout=max(timeout, start_timeout),
                trust=trust,
            )
            for c in configs
        ]
        self._started = False

    def start(self) -> None:
        """Start every server (once), in the running loop: from the extension's start hook, or
        from the first look at the tools when the hook did not run (embedded servers, tests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._started:
            return
        self._started = True
        for server in self.servers:
            server.start()

    async def wait_started(self, timeout: float) -> None:
        self.start()
        waits = [s._ready.wait() for s in self.servers if s.status == "starting"]
        if waits:
            await asyncio.wait_for(asyncio.gather(*waits), timeout)

    def tools(self) -> Iterable[ToolSpec]:
        self.start()
        for server in self.servers:
            yield from server.tools

    def describe(self) -> dict[str, Any]:
        self.start()
        return {
            "config_file": str(self.config_file),
            "servers": [s.describe() for s in self.servers]
            + [
                {"name": p.name, "status": "invalid", "message": p.sentence, "tools": []}
                for p in self.problems
            ],
        }

    def trusted(self) -> list[dict[str, str]]:
        """The servers whose read-only claims a person trusts (``GET /aaep/v1/mcp/trust``)."""
        return self.trust.listed() if self.trust is not None else []

    def revoke_trust(self, name: str) -> bool:
        """Take back the trust in server *name*; whether it was trusted."""
        revoked = self.trust is not None and self.trust.revoke(name)
        for server in self.servers:
            if server.config.name == name:
                server.apply_trust()
        return revoked

    async def close(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers))
