"""Chats and the sessions that run in them.

A chat belongs to one notebook and keeps its Anthropic message history across sessions, so
follow-up questions have context. Each user message starts one session, run as one
``asyncio.Task`` the runner holds; Stop cancels that task (the loop then closes the session
with ``session.cancelled``). Everything a subscriber needs goes out through the chat's own
:class:`Emitter`: AAEP events only, unless ``acknowledge_input`` puts the conformance
suite's non-AAEP ``user_input.accepted`` message in front of each session.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic

from ..aaep.broker import ReplyBroker
from ..aaep.emitter import Emitter, Event
from ..aaep.session import Producer, Session
from .approval import ApprovalPolicy
from .context import ContextState
from .loop import AgentConfig, AgentLoop, ChatContext, RunControl, SessionResult
from .tools import ToolRegistry
from .usage import Usage

log = logging.getLogger(__name__)

EVENT_HISTORY_LIMIT = 5000

SUPPORTS: Mapping[str, bool] = {"stop": True, "pause": False, "guidance": False, "approval_mode": True, "revert": True}
SNAPSHOTS_KEPT = 10
"""The run controls a chat accepts now (``control`` stop, pause/resume, guidance, approval mode)."""


class ChatError(Exception):
    """Base of the runner's errors; messages are plain sentences for the person who asked.

    ChatError
    ├── UnknownChat   (no chat with that id: 404)
    ├── ChatBusy      (a session is already running: 409)
    └── InvalidInput  (the request itself is wrong: 400)
    """


class UnknownChat(ChatError):
    pass


class ChatBusy(ChatError):
    pass


class InvalidInput(ChatError):
    pass


@dataclass
class Chat:
    """One conversation about one notebook."""

    chat_id: str
    notebook_path: str | None
    emitter: Emitter = field(default_factory=lambda: Emitter(history_limit=EVENT_HISTORY_LIMIT))
    history: list[dict[str, Any]] = field(default_factory=list)
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    session: Session | None = None
    task: asyncio.Task[SessionResult] | None = None
    control: RunControl = field(default_factory=RunControl)
    results: list[SessionResult] = field(default_factory=list)
    snapshots: dict[str, Any] = field(default_factory=dict)
    """Notebook cells before each recent session (session id → snapshot), for undo."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and estimated cost of every session of this chat (for the budget and the API)."""
    context: ContextState = field(default_factory=ContextState)
    """What the chat learned about its context window and server (see ``agent/context.py``)."""

    def usage_report(self) -> dict[str, Any]:
        """The chat's token usage and estimated cost, in total and per finished session."""
        sessions = [{"session_id": r.terminal_event.get("session_id"), "status": r.status, **r.usage.to_json()}
                    for r in self.results if r.terminal_event is not None]
        return {**self.usage.to_json(), "sessions": sessions, "context_compactions": self.context.compactions}

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def status(self) -> str:
        return "running" if self.running else "idle"

    def describe(self) -> dict[str, Any]:
        return {
            "chat_id": self.chat_id,
            "notebook_path": self.notebook_path,
            "status": self.status,
            "session_id": self.session.id if self.session else None,
            "approval_mode": self.approval.mode,
            # What clients may offer: the panel hides or disables the rest, with a reason.
            "supports": dict(SUPPORTS),
            "undoable_sessions": list(self.snapshots),
        }


class ChatRunner:
    """Creates chats, starts and stops their sessions, and routes replies.

    Parameters
    ----------
    client_factory
        Returns the ``AsyncAnthropic`` client to use (called per session, so a key set
        after start-up is picked up).
    registry_factory
        Returns the tools a chat offers (called per session).
    services
        Collaborators handed to tools through ``ToolContext.services``.
    acknowledge_input
        Publish ``{"kind": "user_input.accepted", "session_id", "chat_id"}`` on the chat's
        stream before each session. Not an AAEP event: only the AAEP conformance suite needs
        it (it takes the session id from the next message on the stream and throws that
        message away, which would otherwise be ``session.started``). Off, subscribers see
        AAEP events only and the sender learns the session id from the answer to its request.
    """

    def __init__(
        self,
        *,
        client_factory: Callable[[], anthropic.AsyncAnthropic],
        registry_factory: Callable[[Chat], ToolRegistry],
        config: AgentConfig | None = None,
        producer: Producer | None = None,
        services: Mapping[str, Any] | None = None,
        policy_factory: Callable[[], ApprovalPolicy] = ApprovalPolicy,
        broker: ReplyBroker | None = None,
        acknowledge_input: bool = False,
    ) -> None:
        self.acknowledge_input = acknowledge_input
        self.client_factory = client_factory
        self.registry_factory = registry_factory
        self.config = config or AgentConfig()
        self.producer = producer or Producer(model=self.config.model)
        self.services: Mapping[str, Any] = services or {}
        self.policy_factory = policy_factory
        self.broker = broker or ReplyBroker()
        self._chats: dict[str, Chat] = {}

    # -- chats -------------------------------------------------------------------------------
    def create_chat(self, notebook_path: str | None) -> Chat:
        if notebook_path is not None and not isinstance(notebook_path, str):
            raise InvalidInput("notebook_path must be a string.")
        chat = Chat(chat_id=f"chat_{secrets.token_hex(16)}", notebook_path=notebook_path,
                    approval=self.policy_factory())
        self._chats[chat.chat_id] = chat
        return chat

    def get(self, chat_id: str) -> Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            raise UnknownChat(f"There is no chat with id {chat_id!r}. Create one with POST /aaep/v1/chats.")
        return chat

    def chats(self, notebook_path: str | None = None) -> list[Chat]:
        return [c for c in self._chats.values() if notebook_path is None or c.notebook_path == notebook_path]

    # -- sessions ------------------------------------------------------------------------------
    def submit(self, chat_id: str, text: Any) -> str:
        """Start a session for *text*; returns its session id at once.

        A new message while the running session waits for the user (a confirmation or a
        question) answers it the way a person means it: never mind, do this instead. The
        waiting session is cancelled (its request withdrawn, nothing runs) and the new one
        starts after it has closed. With ``acknowledge_input`` the acknowledgement of the new
        session goes out first (before the old session's ``session.cancelled``).
        """
        chat = self.get(chat_id)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("The message text must be a non-empty string.")
        previous: asyncio.Task[SessionResult] | None = None
        if chat.running:
            if chat.session is None or chat.session.state != "awaiting_input":
                raise ChatBusy("The agent is still working on the previous request. Stop it or wait until it finishes.")
            previous = chat.task
            chat.control.cancelled_by = "user"
            chat.control.reason = "superseded_by_new_request"
        session = Session(chat.emitter, self.producer)
        chat.session = session
        chat.control = RunControl()
        if self.acknowledge_input:
            chat.emitter.publish({"kind": "user_input.accepted", "session_id": session.id, "chat_id": chat.chat_id})
        if previous is not None:
            previous.cancel()
        chat.task = asyncio.ensure_future(self._run(chat, session, text, after=previous))
        return session.id

    async def _run(
        self, chat: Chat, session: Session, text: str, *, after: asyncio.Task[SessionResult] | None = None
    ) -> SessionResult:
        if after is not None:
            await asyncio.wait([after])  # the superseded session closes (and fixes the history) first
        await self._snapshot(chat, session)
        client = self.client_factory()
        loop = AgentLoop(client, self.registry_factory(chat), broker=self.broker, config=self.config)
        context = ChatContext(
            chat_id=chat.chat_id, notebook_path=chat.notebook_path, services=self.services, approval=chat.approval,
            usage=chat.usage, context=chat.context,
        )
        result = await loop.run(session, chat.history, text, chat=context, control=chat.control)
        chat.results.append(result)
        return result

    async def _snapshot(self, chat: Chat, session: Session) -> None:
        """Remember the notebook's cells before the session, so its changes can be undone."""
        notebooks = self.services.get("notebook")
        if notebooks is None or not chat.notebook_path:
            return
        try:
            chat.snapshots[session.id] = await notebooks.snapshot(chat.notebook_path)
        except Exception as error:  # no undo is better than no agent; the tools report the cause
            log.warning("no undo snapshot of %s before session %s: %s", chat.notebook_path, session.id, error)
            return
        while len(chat.snapshots) > SNAPSHOTS_KEPT:
            del chat.snapshots[next(iter(chat.snapshots))]

    async def revert(self, chat_id: str, session_id: str | None = None) -> dict[str, Any]:
        """Put the notebook's cells back as they were before a session (the latest by default).

        Later sessions' changes go too, since they built on it; outputs come back as they were.
        """
        chat = self.get(chat_id)
        if chat.running:
            raise ChatBusy("The agent is still working. Stop it before undoing its changes.")
        notebooks = self.services.get("notebook")
        target = session_id or next(reversed(chat.snapshots), None)
        if notebooks is None or not chat.notebook_path or target not in chat.snapshots:
            raise InvalidInput("There is nothing to undo: no snapshot of this notebook was taken for that request.")
        report = await notebooks.revert(chat.notebook_path, chat.snapshots[target])
        for later in list(chat.snapshots)[list(chat.snapshots).index(target):]:
            del chat.snapshots[later]
        summary = undo_summary(
            chat.notebook_path, removed=report.removed, added=report.added, restored=report.restored
        )
        notice = {"kind": "notebook.reverted", "chat_id": chat.chat_id, "session_id": target, "summary": summary,
                  "removed": report.removed, "added": report.added, "restored": report.restored}
        chat.emitter.publish(notice)
        return notice

    async def stop(self, chat_id: str, *, cancelled_by: str = "user", reason: str = "stopped_by_user") -> bool:
        """Stop the running session, if any; returns whether one was stopped."""
        chat = self.get(chat_id)
        task = chat.task
        if task is None or task.done():
            return False
        chat.control.cancelled_by = cancelled_by  # type: ignore[assignment]
        chat.control.reason = reason
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=10)
        except (asyncio.CancelledError, asyncio.TimeoutError):
            pass
        except Exception:  # pragma: no cover - the loop converts failures into events
            log.exception("session task failed while stopping")
        return True

    def reply(self, chat_id: str, reply: Mapping[str, Any]) -> bool:
        """Offer a confirmation/clarification reply; never raises for a bad reply."""
        chat = self.get(chat_id)
        session_id = chat.session.id if chat.session else None
        if session_id is None:
            return False
        return self.broker.submit(reply, session_id=session_id)

    def set_approval_mode(self, chat_id: str, mode: Any) -> None:
        try:
            self.get(chat_id).approval.set_mode(mode)
        except ValueError as error:
            raise InvalidInput(str(error)) from error

    def replay(self, chat_id: str, after_event_id: str | None = None) -> list[Event]:
        """Past messages of the chat, optionally only those after *after_event_id*."""
        history = self.get(chat_id).emitter.history
        if after_event_id is None:
            return history
        for index, event in enumerate(history):
            if event.get("event_id") == after_event_id:
                return history[index + 1 :]
        return history

    async def shutdown(self) -> None:
        """Stop every running session (server shutdown): they end as cancelled by the system."""
        running = [c for c in self._chats.values() if c.running]
        await asyncio.gather(
            *(self.stop(c.chat_id, cancelled_by="system", reason="server_shutdown") for c in running),
            return_exceptions=True,
        )


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def undo_summary(path: str, *, removed: int, added: int, restored: int) -> str:
    """One sentence saying what an undo did, naming only what happened.

    *removed* cells were added by the agent, *added* ones are cells it had deleted (put back),
    *restored* ones it had changed or moved.
    """
    parts = [
        text
        for count, text in (
            (removed, f"removed {_cells(removed)} the agent added"),
            (added, f"put back {_cells(added)} the agent deleted"),
            (restored, f"restored {_cells(restored)} the agent changed"),
        )
        if count
    ]
    if not parts:
        return f"Nothing to undo: {path} already matches how it was."
    said = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"Undid the agent's changes to {path}: {said}."
