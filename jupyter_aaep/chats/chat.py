"""The chat record: one conversation about one notebook, as the runner and the store see it.

Its own module so that the runner (which runs a chat's sessions) and the persistence layer
(which stores a chat and brings it back) both import it, and neither imports the other's
caller: the record knows nothing of either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..aaep.clock import ms_to_timestamp, utc_now_ms
from ..aaep.emitter import Emitter
from ..aaep.session import Session
from ..agent.approval import ApprovalPolicy
from ..agent.config import AgentConfig
from ..agent.context import ContextState
from ..agent.control import Guidance, RunControl
from ..agent.run_state import SessionResult
from ..agent.usage import Usage
from ..errors import ChatBusy, InvalidInput
from ..store.records import StoredChat

log = logging.getLogger(__name__)

__all__ = ["EVENT_HISTORY_LIMIT", "KEPT_FIELDS", "SUPPORTS", "Chat", "kept", "now_iso"]


def now_iso() -> str:
    """The current time as an AAEP timestamp (when a chat was created or last changed)."""
    return ms_to_timestamp(utc_now_ms())


EVENT_HISTORY_LIMIT = 5000
"""Events a chat's emitter keeps in memory for subscribers that resume (older ones come from the store)."""

SUPPORTS: Mapping[str, bool] = {
    "stop": True,
    "pause": True,
    "resume": True,
    "guidance": True,
    "approval_mode": True,
    "revert": True,
    "continue": True,
}
"""The run controls a chat accepts now (``control`` stop, pause/resume, guidance, approval mode)."""

KEPT_FIELDS = (
    "chat_id",
    "notebook_path",
    "title",
    "created",
    "updated",
    "can_continue",
    "model",
    "model_label",
)
"""What a chat in memory and its row in the store hold alike, under the same names: copied
from one to the other, and what the chat's JSON reads of either (:mod:`.chat_json`)."""


def kept(chat: Chat | StoredChat) -> dict[str, Any]:
    """The :data:`KEPT_FIELDS` of a chat or of its stored row."""
    return {name: getattr(chat, name) for name in KEPT_FIELDS}


TITLE_LENGTH = 80
"""Longest chat title (the first request, clipped) in the list of earlier chats."""


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
    """What each recent session changed in the notebook (session id → its edit record, or the
    record's stored JSON), for undo; sessions that changed nothing are not here."""
    record_unstored: bool = False
    """An edit record was queued for the store and not yet waited for (see ``EditRecords.stored``)."""
    pending_save: asyncio.Future[Any] | None = None
    """The save that follows the agent's latest edit (debounced by ``EDIT_SAVE_DELAY``)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and estimated cost of every session of this chat (for the budget and the API)."""
    context: ContextState = field(default_factory=ContextState)
    """What the chat learned about its context window and server (see ``agent/context.py``)."""
    guidance: list[Guidance] = field(default_factory=list)
    """Guidance the user sent while the agent worked, oldest first (listed in the chat view)."""
    title: str = ""
    """The chat's first request, clipped (for the list of earlier chats)."""
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    file_id: str | None = None
    """The notebook's id from jupyter_server_fileid, so the chat follows a renamed notebook."""
    can_continue: bool = False
    """The last session was interrupted (a server restart, a recoverable error): Continue may resume it."""
    model: str | None = None
    """The model the user chose for this chat (``None``: the server's default)."""
    model_label: str | None = None
    model_changed: bool = False
    """The user chose a model since the last session: the next one says "Using Claude …"."""
    baseline_subscribers: int = 2
    """Subscribers that are not a person's stream (the store's writer, the server's fan-out)."""
    held_by: str | None = None
    """The outside agent (an MCP client, e.g. "Claude Code") whose session runs now, if any."""
    notices: list[str] = field(default_factory=list)
    """Said at the start of the next session (see ``ChatContext.notices``)."""
    last_session_id: str | None = None
    """The newest session a reloaded chat had before the restart (``session`` is then ``None``)."""

    @classmethod
    def from_stored(cls, stored: StoredChat, emitter: Emitter, approval: ApprovalPolicy) -> Chat:
        """A stored chat back in memory (its events, history and edit records follow)."""
        approval.restore(stored.approval_mode)  # 'auto' is never remembered across restarts
        return cls(
            **kept(stored),
            file_id=stored.file_id,
            emitter=emitter,
            history=stored.history,
            approval=approval,
            last_session_id=stored.last_session_id,
        )

    def to_stored(self, *, root: str | None) -> StoredChat:
        """The chat's row in the store (its events, history and edit records are stored apart)."""
        return StoredChat(
            **kept(self), file_id=self.file_id, approval_mode=self.approval.mode, root=root
        )

    def request_started(self, text: str) -> bool:
        """A session is about to start: the chat gets its title, Continue no longer applies.
        Whether that changed what is stored of the chat."""
        changed = self.can_continue or not self.title
        self.can_continue = False
        if not self.title:
            flat = " ".join(text.split())
            self.title = (
                flat if len(flat) <= TITLE_LENGTH else flat[: TITLE_LENGTH - 1].rstrip() + "…"
            )
        return changed

    def session_ended(self, session: Session) -> None:
        """Continue applies after a session that ended with a recoverable error."""
        terminal = session.terminal_event or {}
        self.can_continue = (
            terminal.get("type") == "aaep:agent.session.errored"
            and terminal.get("recoverable") is True
        )

    def set_approval_mode(self, mode: Any) -> None:
        try:
            self.approval.set_mode(mode)
        except ValueError as error:
            raise InvalidInput(str(error)) from error

    def choose_model(self, model: str | None, label: str | None) -> None:
        """Use *model* from the next session on (``None``: the server's default), said then."""
        self.model, self.model_label, self.model_changed = model, label, True

    def config_for(self, base: AgentConfig) -> AgentConfig:
        """The server's settings with the chat's model, announced with the first session that uses it."""
        model = self.model or base.model
        announce = (self.model_label or model) if self.model_changed else None
        self.model_changed = False
        if model == base.model and announce is None:
            return base
        return replace(base, model=model, announce_model=announce)

    async def stop(self, cancelled_by: str, reason: str) -> bool:
        """Stop the running session, if any (waiting up to 10 s for it to close); whether one was."""
        task = self.task
        if task is None or task.done():
            return False
        self.control.cancelled_by = cancelled_by  # type: ignore[assignment]
        self.control.reason = reason
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=10)
        except (asyncio.CancelledError, asyncio.TimeoutError):
            pass
        except Exception:  # pragma: no cover - the loop converts failures into events
            log.exception("session task failed while stopping")
        return True

    def refuse_if_held(self) -> None:
        """One agent works on a notebook at a time: an outside agent's session is not steered or
        replaced by a message (it could not read it); the person stops it first."""
        if self.running and self.held_by:
            raise ChatBusy(
                f"{self.held_by} is working on {self.notebook_path or 'this notebook'} right now. "
                "Stop it, or wait until it finishes, then send your request."
            )

    def usage_report(self) -> dict[str, Any]:
        """The chat's token usage and estimated cost, in total and per finished session."""
        sessions = [
            {
                "session_id": r.terminal_event.get("session_id"),
                "status": r.status,
                **r.usage.to_json(),
            }
            for r in self.results
            if r.terminal_event is not None
        ]
        return {
            **self.usage.to_json(),
            "sessions": sessions,
            "context_compactions": self.context.compactions,
        }

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def working(self) -> bool:
        """Running and not waiting for the user's reply: a new message then is guidance."""
        return self.running and self.session is not None and not self.waiting_for_user

    @property
    def waiting_for_user(self) -> bool:
        """The session waits for a reply (a confirmation or a question), paused there or not:
        a new message then replaces the waiting request."""
        if not self.running or self.session is None:
            return False
        return (
            self.session.state == "awaiting_input" or self.control.paused_from == "awaiting_input"
        )

    @property
    def paused(self) -> bool:
        return self.running and self.control.paused

    @property
    def status(self) -> str:
        return "running" if self.running else "idle"
