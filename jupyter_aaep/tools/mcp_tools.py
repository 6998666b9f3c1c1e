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
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..aaep.redaction import mask_secrets, redact_arguments
from ..agent.tool_schema import schema_problem
from ..agent.tools import ActionPreview, ToolContext, ToolResult, ToolSpec
from ..errors import ToolError
from ..notebook._figures import ImageBudget, prepare_image
from ..notebook.progress import ProgressReading
from ..notebook.progress_pacing import (
    MIN_GAP_SECONDS,
    ProgressPacer,
    progress_phrase,
    value_text,
)
from ..words import duration_words, plural
from .mcp_config import ServerConfig, ServerProblem, command_allowed, read_config

__all__ = ["MCPServers", "MCPTool"]

log = logging.getLogger(__name__)

RESULT_CHARS = 20_000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _never_called(**_: Any) -> Any:  # pragma: no cover - MCPTool.call replaces it
    raise ToolError("An MCP tool runs in its server.")


@dataclass
class MCPTool(ToolSpec):
    """One tool of one MCP server; calling it calls the server."""

    server: Any = None
    remote_name: str = ""
    title: str = ""
    open_world: bool = True
    images: ImageBudget = field(default_factory=ImageBudget)
    """How many of a result's images reach the model, and how large (the server's settings)."""

    async def describe(self, ctx: ToolContext, arguments: dict[str, Any]) -> ActionPreview:
        label = self.human_label()
        redacted = redact_arguments(arguments).summary()
        outside = " It reaches outside this machine." if self.open_world else ""
        shown = mask_secrets(json.dumps(arguments, indent=2, ensure_ascii=False))
        return ActionPreview(
            summary=f"Using {label}.{outside}",
            terse=f"{label}.",
            detail=f"Using {label}, with {redacted}.{outside}",
            action=f"Use {label}, with the arguments shown.",
            consequence=(
                "What it does is up to that server; the agent cannot undo it."
                if self.irreversible
                else None
            ),
            extra_context={
                "code": shown,
                "tool_server": self.server.config.name,
                "open_world": self.open_world,
            },
            args_summary=redacted,
        )

    async def call(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        # A server may send progress many times a second; it is paced like a cell's run (at
        # most one event per ``progress_min_gap``, milestones announced), not passed through.
        label = self.human_label()
        pacer = ProgressPacer(time.monotonic(), min_gap=self.server.progress_min_gap)

        def progress(done: float, total: float | None, message: str | None) -> None:
            percent = min(100.0, round(100 * done / total, 1)) if total else None
            reading = ProgressReading(percent=percent, current=done, total=total)
            beat = pacer.tick(time.monotonic(), reading)
            if beat is None:
                return
            told = mask_secrets(message)[:200] if message else ""
            phrase = told or progress_phrase(reading)
            said = (
                f"{label}: {phrase}."
                if phrase
                else f"{label} is still working after {duration_words(beat.elapsed)}."
            )
            integral = total is not None and float(done).is_integer() and float(total).is_integer()
            ctx.report_progress(
                told or value_text(reading, beat.elapsed),
                percent=percent,
                step=max(1, int(done)) if integral and done else None,
                total_steps=max(1, int(total)) if integral and total else None,
                announce=beat.announce,
                summary=said,
            )

        result = await self.server.call(self.remote_name, arguments, progress, self.title)
        return self._result(result)

    def _result(self, result: Any) -> ToolResult:
        blocks: list[dict[str, Any]] = []
        texts: list[str] = []
        images = dropped = 0
        for item in result.content:
            kind = getattr(item, "type", "")
            if kind == "text":
                texts.append(item.text)
            elif kind == "image":
                size = len(item.data) * 3 // 4
                if (
                    item.mime_type not in IMAGE_TYPES
                    or size > MAX_IMAGE_BYTES
                    or images >= self.images.max_images
                ):
                    dropped += 1
                    continue
                # Checked, and downscaled past the budget, exactly like a notebook's figures.
                block, note, _ = prepare_image(item.mime_type, item.data, self.images)
                if block is None:
                    texts.append(f"[{note}]")
                    continue
                images += 1
                blocks.append(block)
            elif kind == "resource_link":
                texts.append(f"[A link to {item.uri}]")
            elif kind == "resource":
                resource = item.resource
                texts.append(getattr(resource, "text", None) or f"[A resource at {resource.uri}]")
            else:
                texts.append(f"[Content of type {kind} that the agent cannot read.]")
        if not texts and not blocks and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, ensure_ascii=False))
        text = "\n".join(texts)
        if len(text) > RESULT_CHARS:
            text = text[:RESULT_CHARS] + f"\n[… cut: the result has {len(text):,} characters.]"
        if dropped:
            text += f"\n[{dropped} image(s) left out: too many, too large or of a kind the model cannot read.]"
        label = self.human_label()
        if result.is_error:
            reason = " ".join(text.split())[:300] or "no details"
            return ToolResult(
                content=text or "The tool failed.",
                is_error=True,
                summary=f"{label} failed: {reason}",
                error_message=reason,
            )
        heard = f"Finished: {label}." + (
            f" It returned {plural(images, 'image')}." if images else ""
        )
        content: str | list[dict[str, Any]] = text or "Done."
        if blocks:
            content = ([{"type": "text", "text": text}] if text else []) + blocks
        return ToolResult(content=content, summary=heard)


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
            self.status, self.problem = "failed", _why(self.config, error, self.start_timeout, said)
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
        errors = [line for line in lines if _ERROR_LINE.match(line)]
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
        self._errlog = _private_log(self._errlog_path)
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

    def _tool(self, tool: Any) -> MCPTool:
        hints = tool.annotations
        title = (
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
        schema = (
            tool.input_schema
            if isinstance(tool.input_schema, dict)
            else {"type": "object", "properties": {}}
        )
        server_text = f"From the {self.config.name} tool server. "
        return MCPTool(
            name=f"mcp__{self.config.name}__{_UNSAFE.sub('_', tool.name)}"[:64],
            description=(server_text + (tool.description or title))[:4000],
            input_schema=schema,
            func=_never_called,
            risk_level="medium" if destructive else "low",
            irreversible=destructive,
            require_confirmation=destructive,
            read_only=read_only,
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


def _private_log(path: Path) -> TextIO:
    """A stdio server's stderr log, opened for appending and readable by its owner only
    (``0600`` whatever the umask): what a tool server writes may quote the user's files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a log made by an older version, or under a loose umask
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception)\b\S*:? ")
"""A line that states an error: "Error: Cannot find module …", "ModuleNotFoundError: No module …"."""


def _why(
    config: ServerConfig, error: BaseException, timeout: float, said: str | None = None
) -> str:
    if isinstance(error, TimeoutError):
        return f"it did not answer within {timeout:g} seconds of starting."
    if isinstance(error, FileNotFoundError):
        return f"the command {config.command} was not found."
    inner = getattr(error, "exceptions", None)
    if inner:
        return _why(config, inner[0], timeout, said)
    if config.transport == "http":
        return mask_secrets(
            f"{config.url} did not accept the connection ({error or type(error).__name__}); check its url and headers."
        )[:300]
    if said:
        quoted = said.rstrip(".")
        return f"it stopped while starting, saying “{quoted}” (its log: aaep-mcp-{config.name}.log in the Jupyter runtime folder)."
    return f"it could not start ({type(error).__name__}: {error or 'no details'})."[:300]


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
    ) -> None:
        self.config_file = config_file
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

    async def close(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers))
