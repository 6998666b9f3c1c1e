"""One chat's coding agent over ACP: its process, its ACP session, and one AAEP session per message.

Why this shape: the chat runner runs a session of our own agent with ``AgentLoop.run``; a chat
that chose an ACP agent runs :meth:`AcpChatAgent.run` instead, with the same arguments and the
same result, so everything around a session (its task, Stop, the store, the transcript, Undo
of the notebook edits made through our tools) is the chat's, unchanged. The process starts
with the chat's first message to the agent and stays for the next ones (the agent keeps its own
context); it stops when the chat is closed, the agent is changed or the server stops.

A new ACP session (a new process after a restart, or a failed one) gets the chat's transcript
as context in its first prompt, and the person hears that it is a new session.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._version import __version__
from ..aaep.broker import ReplyBroker
from ..aaep.events import (
    SessionStarted,
    Summary,
)
from ..aaep.session import Session
from ..agent.chat_context import ChatContext
from ..agent.control import RunControl
from ..agent.dispatch import ToolDispatcher
from ..agent.history import append_user_text
from ..agent.loop import SessionResult
from ..agent.tool_use import ToolUse
from ..agent.tools import ToolRegistry
from ..agent.usage import Usage
from ..errors import ToolError
from .agents import AgentSpec
from .endings import cancelled, ended, errored
from .narration import Narrator
from .permissions import NOTEBOOK_REFUSAL, Gate
from .prompts import START_TIMEOUT, first_prompt, start_problem, transcript
from .rpc import AgentExited, AgentProcess, RpcError
from .usage import CostMeter

log = logging.getLogger(__name__)

__all__ = ["AcpChatAgent", "McpAccess"]

PROTOCOL_VERSION = 1


@dataclass
class McpAccess:
    """Our notebook MCP server as the agent reaches it: its URL and the session's credential."""

    url: str
    token: str
    credential_id: str

    def server(self) -> dict[str, Any]:
        return {
            "type": "http",
            "name": "notebook",
            "url": self.url,
            "headers": [{"name": "Authorization", "value": f"Bearer {self.token}"}],
        }


@dataclass
class _Turn:
    """The AAEP session now in progress, with what its updates and questions go through."""

    session: Session
    narrator: Narrator
    gate: Gate
    control: RunControl
    dispatcher: ToolDispatcher | None = None
    notebook_path: str | None = None


@dataclass
class AcpChatAgent:
    """The ACP agent of one chat.

    Parameters
    ----------
    spec
        Which agent and how to start it.
    cwd
        The notebook's folder (the agent's working folder).
    root
        The server's root: ``fs/read_text_file`` serves files under it only.
    broker
        Where the person's answers to its questions arrive.
    open_mcp, close_mcp
        Mint the MCP-only credential for an ACP session (and the hook that routes its calls
        into the running AAEP session), and take it back.
    log_path
        The agent's private stderr log.
    """

    spec: AgentSpec
    cwd: str
    root: str
    broker: ReplyBroker
    log_path: str
    open_mcp: Callable[[AcpChatAgent], McpAccess | None] = lambda _agent: None
    close_mcp: Callable[[McpAccess], None] = lambda _access: None
    registry_for: Callable[[], ToolRegistry] | None = None
    """Our notebook tools, for the calls the agent makes through our MCP server."""
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    meter: CostMeter = field(default_factory=CostMeter)
    """What the current ACP session has cost so far (its ``usage_update`` figures are totals)."""
    process: AgentProcess | None = None
    acp_session: str | None = None
    mcp: McpAccess | None = None
    turn: _Turn | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    # -- the process -----------------------------------------------------------------------------
    def environment(self) -> dict[str, str]:
        """The agent's environment: the server's, without what must not reach it, plus its own.

        ``IS_SANDBOX`` makes claude-agent-acp skip every permission (and Claude Code then
        refuses to run as root); our own secrets (the kernel secret, the Jupyter token) open
        the person's server and are not the agent's."""
        env = {
            k: v
            for k, v in self.base_env.items()
            if k != "IS_SANDBOX" and not k.startswith("AAEP_") and k not in ("JUPYTER_TOKEN",)
        }
        env.update(self.spec.env)
        return env

    async def _ensure_session(self) -> bool:
        """The agent's process and ACP session, started if needed; whether the session is new."""
        if self.process is not None and self.process.running and self.acp_session:
            return False
        await self.stop()
        self.process = AgentProcess(
            self.spec.command,
            list(self.spec.args),
            env=self.environment(),
            cwd=self.cwd,
            stderr_path=self.log_path,
            on_request=self._on_request,
            on_notify=self._on_notify,
        )
        await self.process.start()
        await asyncio.wait_for(
            self.process.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": True, "writeTextFile": False},
                        "terminal": False,
                    },
                    "clientInfo": {
                        "name": "jupyter-aaep",
                        "title": "Jupyter AAEP",
                        "version": __version__,
                    },
                },
            ),
            START_TIMEOUT,
        )
        self.mcp = self.open_mcp(self)
        answer = await asyncio.wait_for(
            self.process.request(
                "session/new",
                {"cwd": self.cwd, "mcpServers": [self.mcp.server()] if self.mcp else []},
            ),
            START_TIMEOUT,
        )
        self.acp_session = str((answer or {}).get("sessionId") or "")
        if not self.acp_session:
            raise RpcError(-32603, "The agent did not open a session.")
        self.meter.new_session()
        return True

    async def stop(self) -> None:
        """Stop the process (and its children) and take back its MCP credential."""
        process, self.process, self.acp_session = self.process, None, None
        if process is not None:
            await process.stop()
        if self.mcp is not None:
            access, self.mcp = self.mcp, None
            self.close_mcp(access)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    # -- one message ----------------------------------------------------------------------------
    async def run(
        self,
        session: Session,
        history: list[dict[str, Any]],
        user_text: str,
        *,
        chat: ChatContext | None = None,
        control: RunControl | None = None,
        attachment: str | None = None,
    ) -> SessionResult:
        """Answer *user_text* with the agent in *session* (the chat runner's contract)."""
        async with self._lock:
            return await self._run(
                session, history, user_text, chat, control or RunControl(), attachment
            )

    async def _run(
        self,
        session: Session,
        history: list[dict[str, Any]],
        user_text: str,
        chat: ChatContext | None,
        control: RunControl,
        attachment: str | None,
    ) -> SessionResult:
        name = self.spec.name
        earlier = transcript(history)
        fresh = self.process is None or not self.process.running or not self.acp_session
        where = f" on {chat.notebook_path}" if chat is not None and chat.notebook_path else ""
        note = (
            f" This is a new {name} session: it gets this chat's earlier messages as context."
            if fresh and earlier
            else ""
        )
        session.emit(
            SessionStarted(
                summary=Summary(
                    normal=f"{name} is working on your request{where}.{note}",
                    terse=f"{name} started.",
                ),
                request_text=user_text[:4000],
                requested_by="user",
            )
        )
        if chat is not None:
            chat.tell_notices(session)
        control.bind(session, self.broker)
        append_user_text(history, user_text)
        narrator = Narrator(session, name, cwd=self.cwd)
        approval = chat.approval if chat is not None else None
        gate = Gate(
            session,
            self.broker,
            narrator,
            timeout_for=(approval.timeout_for if approval is not None else lambda _risk: 120),
            until_running=control.until_running,
            chat=chat,
        )
        dispatcher = None
        if chat is not None and self.registry_for is not None:
            dispatcher = ToolDispatcher(
                self.registry_for(),
                self.broker,
                session,
                chat,
                on_handoff=lambda _r: None,
                control=control,
            )
        self.turn = _Turn(
            session, narrator, gate, control, dispatcher, chat.notebook_path if chat else None
        )
        started = session.now_ms()
        try:
            session.change_state("thinking", routine=True)
            try:
                new = await self._ensure_session()
            except (AgentExited, RpcError, OSError, asyncio.TimeoutError) as error:
                return errored(
                    name, session, narrator, history, start_problem(name, error, self.log_path)
                )
            prompt_text = user_text if not attachment else f"{user_text}\n\n{attachment}"
            if new:
                prompt_text = first_prompt(prompt_text, earlier if fresh else "")
            assert self.process is not None
            try:
                answer = await self.process.request(
                    "session/prompt",
                    {
                        "sessionId": self.acp_session,
                        "prompt": [{"type": "text", "text": prompt_text}],
                    },
                )
            except (AgentExited, RpcError) as error:
                await self.stop()
                return errored(
                    name,
                    session,
                    narrator,
                    history,
                    f"{name} stopped answering: {error}. Send your message again to start it anew "
                    f"(its log: {self.log_path}).",
                )
            stop_reason = str((answer or {}).get("stopReason") or "end_turn")
            used = self._count_usage(chat, narrator, (answer or {}).get("usage"))
            if chat is not None and chat.save_changes is not None:
                await chat.save_changes()  # its notebook edits are on disk before "finished"
            return ended(name, session, narrator, history, stop_reason, started, usage=used)
        except asyncio.CancelledError:
            self._count_usage(chat, narrator, None)  # what it cost before Stop still counts
            await self._cancel()
            cancelled(name, session, narrator, history, control)
            raise
        finally:
            self.turn = None
            self.broker.cancel_session(session.id)

    def _count_usage(self, chat: ChatContext | None, narrator: Narrator, reported: Any) -> Usage:
        """This prompt's tokens and cost, added to the chat's meter as our own sessions are."""
        used = self.meter.prompt_usage(reported, narrator)
        if chat is not None:
            chat.usage.merge(used)
        return used

    async def _cancel(self) -> None:
        """Stop: ``session/cancel`` to the agent; its pending questions are answered cancelled
        (their waits end when the session's requests are withdrawn)."""
        if self.process is not None and self.process.running and self.acp_session:
            try:
                await asyncio.wait_for(
                    self.process.notify("session/cancel", {"sessionId": self.acp_session}), 2.0
                )
            except (AgentExited, asyncio.TimeoutError):
                pass

    async def notebook_call(
        self, notebook_path: str, tool: str, arguments: dict[str, Any], call_id: str
    ) -> dict[str, Any]:
        """One call of our notebook tools made by this agent over MCP: run in the AAEP session
        of the message it works on, through the dispatcher our own agent uses (approval, risk
        scan, narration, the edit record for Undo)."""
        turn = self.turn
        if turn is None or turn.dispatcher is None or turn.session.closed:
            raise ToolError(
                "No request of the person is running in this chat now; the notebook tools work "
                "only while you answer one."
            )
        if turn.notebook_path and notebook_path != turn.notebook_path:
            raise ToolError(
                f"This chat works on {turn.notebook_path}; open a chat in {notebook_path} to work there."
            )
        turn.narrator.finish_output()
        use = ToolUse(id=call_id, name=tool, input=arguments)
        results = await turn.dispatcher.run_all([use])
        turn.narrator.steps.extend(turn.dispatcher.completed_labels)
        turn.dispatcher.completed_labels.clear()
        turn.dispatcher.calls = []
        if turn.session.state == "calling_tool":
            turn.session.change_state("thinking")
        return (
            results[0]
            if results
            else {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": "No result.",
                "is_error": True,
            }
        )

    # -- the agent's requests and updates ------------------------------------------------------
    def _on_notify(self, method: str, params: dict[str, Any]) -> None:
        if method != "session/update" or params.get("sessionId") != self.acp_session:
            return
        turn = self.turn
        if turn is not None and isinstance(params.get("update"), dict):
            turn.narrator.update(params["update"])

    async def _on_request(self, method: str, params: dict[str, Any]) -> Any:
        turn = self.turn
        if method == "session/request_permission":
            if turn is None or turn.session.closed:
                return {"outcome": {"outcome": "cancelled"}}
            return await turn.gate.request(params)
        if method == "fs/read_text_file":
            return {"content": await asyncio.to_thread(self._read, params)}
        if method == "fs/write_text_file":
            raise RpcError(
                -32603,
                "Writing files through the client is not offered; use your own file tools. "
                + NOTEBOOK_REFUSAL,
            )
        raise RpcError(-32601, f"{method} is not offered by this client.")

    def _read(self, params: dict[str, Any]) -> str:
        """A text file under the server's root (never outside it, links resolved)."""
        path = os.path.realpath(str(params.get("path") or ""))
        root = os.path.realpath(self.root)
        if os.path.commonpath([path, root]) != root:
            raise RpcError(-32602, "Only files inside the Jupyter server's folder can be read.")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines(keepends=True)
        except OSError as error:
            raise RpcError(-32602, f"The file cannot be read: {error.strerror}.") from error
        start = max(int(params.get("line") or 1) - 1, 0)
        limit = params.get("limit")
        chosen = lines[start : start + int(limit)] if isinstance(limit, int) else lines[start:]
        return "".join(chosen)
