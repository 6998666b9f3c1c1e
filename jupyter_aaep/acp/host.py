"""Which chat uses which coding agent, and the agents' processes: one per chat, none left behind.

The chat runner asks :meth:`AcpHost.agent_for` at each message; a chat that chose an ACP agent
gets its :class:`AcpChatAgent` (made on its first message; its process starts then). A chat's
agent stops when the chat closes, when the person picks another agent, and when the server
stops (:meth:`close`). The choice itself is kept in a small JSON file beside the chat database,
so it survives a restart (the process does not: the next message starts a new ACP session with
the transcript as context).

The MCP side is passed in as plain callables (mint and revoke an MCP-only credential, route its
calls), so this package never imports the server's or the MCP endpoint's modules.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agent.tools import ToolRegistry
from ..chats.chat import Chat
from ..chats.runner import ChatRunner
from ..errors import InvalidInput
from .agents import BUILT_IN, AgentCatalog
from .client import AcpChatAgent, McpAccess

log = logging.getLogger(__name__)

__all__ = ["AcpHost", "McpHooks"]


@dataclass
class McpHooks:
    """How an ACP session reaches our notebook MCP server (given by the server layer)."""

    url: Callable[[], str]
    mint: Callable[[str], tuple[str, str]]
    """A new MCP-only credential named so: ``(credential id, secret)``."""
    revoke: Callable[[str], None]
    route: Callable[[str, Any], None]
    """Route the calls of credential *id* to a callable (``None``: stop routing them)."""


class AcpHost:
    """The chats' ACP agents.

    Parameters
    ----------
    runner
        The chat runner (its broker answers the agents' questions; its hook is set here).
    catalog
        The agents on offer.
    root
        The server's root folder (the agents read files under it only).
    choices_path
        Where each chat's choice is kept (``None``: memory only).
    registry_for
        Our tools for a chat (the agent's notebook calls run through them).
    mcp
        The MCP hooks, or ``None`` when the MCP endpoint is turned off (the agent then gets no
        notebook tools).
    """

    def __init__(
        self,
        runner: ChatRunner,
        catalog: AgentCatalog,
        *,
        root: str,
        choices_path: str | None,
        registry_for: Callable[[Chat], ToolRegistry],
        mcp: McpHooks | None = None,
        log_dir: str | None = None,
    ) -> None:
        self.runner = runner
        self.catalog = catalog
        self.root = root
        self.choices_path = choices_path
        self.registry_for = registry_for
        self.mcp = mcp
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="aaep-acp-")
        """The agents' stderr logs, one per chat (private: they may hold paths and prompts)."""
        os.makedirs(self.log_dir, mode=0o700, exist_ok=True)
        os.chmod(self.log_dir, 0o700)
        self.agents: dict[str, AcpChatAgent] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self.choices: dict[str, str] = self._load()
        runner.chosen_agent = self.agent_for
        runner.on_chat_closed = self._chat_closed

    # -- choosing -------------------------------------------------------------------------------
    def chosen(self, chat_id: str) -> str:
        return self.choices.get(chat_id, BUILT_IN)

    async def choose(self, chat_id: str, name: Any) -> str:
        """Use agent *name* for the chat's next messages; the sentence the person hears."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput('Name the agent: {"kind": "agent", "agent": "Claude Code"}.')
        chat = self.runner.get(chat_id)
        if chat.running:
            raise InvalidInput(
                "Wait until the agent has finished (or stop it) before changing agents."
            )
        if name == BUILT_IN:
            self.choices.pop(chat_id, None)
        else:
            spec = self.catalog.get(name)
            if spec is None:
                offered = ", ".join([BUILT_IN, *(a.name for a in self.catalog.agents()[0])])
                raise InvalidInput(
                    f"There is no agent named {name!r}; choose one of: {offered} (GET /aaep/v1/agents)."
                )
            if spec.problem:
                raise InvalidInput(spec.problem)
            self.choices[chat_id] = name
        await self.close_chat(chat_id)
        self._save()
        return f"Your next messages in this chat go to {name}."

    def agent_for(self, chat: Chat) -> AcpChatAgent | None:
        """The chat's ACP agent (made now if needed), or ``None`` for our own agent."""
        name = self.choices.get(chat.chat_id)
        if name is None:
            return None
        agent = self.agents.get(chat.chat_id)
        if agent is not None and agent.spec.name == name:
            return agent
        spec = self.catalog.get(name)
        if spec is None or spec.problem:
            return None  # gone since it was chosen: our own agent answers (the list says why)
        folder = os.path.dirname(os.path.join(self.root, chat.notebook_path or "")) or self.root
        agent = AcpChatAgent(
            spec=spec,
            cwd=folder if os.path.isdir(folder) else self.root,
            root=self.root,
            broker=self.runner.broker,
            log_path=os.path.join(self.log_dir, f"{chat.chat_id}.log"),
            open_mcp=self._open_mcp,
            close_mcp=self._close_mcp,
            registry_for=lambda: self.registry_for(chat),
        )
        self.agents[chat.chat_id] = agent
        return agent

    # -- MCP -----------------------------------------------------------------------------------
    def _open_mcp(self, agent: AcpChatAgent) -> McpAccess | None:
        if self.mcp is None:
            return None
        credential_id, token = self.mcp.mint(f"{agent.spec.name} in a chat")
        self.mcp.route(credential_id, agent.notebook_call)
        return McpAccess(url=self.mcp.url(), token=token, credential_id=credential_id)

    def _close_mcp(self, access: McpAccess) -> None:
        if self.mcp is None:
            return
        self.mcp.route(access.credential_id, None)
        self.mcp.revoke(access.credential_id)

    # -- stopping ------------------------------------------------------------------------------
    def _chat_closed(self, chat_id: str) -> None:
        if chat_id in self.agents:
            task = asyncio.ensure_future(self.close_chat(chat_id))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close_chat(self, chat_id: str) -> None:
        agent = self.agents.pop(chat_id, None)
        if agent is not None:
            await agent.stop()

    async def close(self) -> None:
        """Server shutdown: every agent process stops (with its children)."""
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=10)
        for chat_id in list(self.agents):
            try:
                await self.close_chat(chat_id)
            except Exception:  # one agent that fails to stop never keeps the others running
                log.exception("an ACP agent did not stop cleanly")

    # -- the file ------------------------------------------------------------------------------
    def _load(self) -> dict[str, str]:
        if self.choices_path is None or not os.path.exists(self.choices_path):
            return {}
        try:
            with open(self.choices_path, encoding="utf-8") as handle:
                data = json.load(handle)
            return {str(k): str(v) for k, v in (data.get("chats") or {}).items()}
        except (OSError, ValueError, AttributeError) as error:
            log.warning(
                "AAEP agent: %s cannot be read (%s); chats use the built-in agent.",
                self.choices_path,
                error,
            )
            return {}

    def _save(self) -> None:
        if self.choices_path is None:
            return
        temporary = f"{self.choices_path}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"chats": self.choices}, handle)
        os.replace(temporary, self.choices_path)
