"""The chat record: one conversation about one notebook, as the runner and the store see it.

Its own module so that the runner (which runs a chat's sessions) and the persistence layer
(which stores a chat and brings it back) both import it, and neither imports the other's
caller: the record knows nothing of either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..aaep.clock import ms_to_timestamp, utc_now_ms
from ..aaep.emitter import Emitter
from ..aaep.session import Session
from ..agent.approval import ApprovalPolicy
from ..agent.context import ContextState
from ..agent.control import Guidance, RunControl
from ..agent.loop import SessionResult
from ..agent.usage import Usage

__all__ = ["EVENT_HISTORY_LIMIT", "SUPPORTS", "Chat", "now_iso"]


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
    """An edit record was queued for the store and not yet waited for (see ``Runner.edits_stored``)."""
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

    def describe(self) -> dict[str, Any]:
        return {
            "chat_id": self.chat_id,
            "notebook_path": self.notebook_path,
            "status": self.status,
            "paused": self.paused,
            "session_id": self.session.id if self.session else None,
            "approval_mode": self.approval.mode,
            # What clients may offer: the panel hides or disables the rest, with a reason.
            "supports": dict(SUPPORTS),
            "undoable_sessions": list(self.snapshots),
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "can_continue": self.can_continue and not self.running,
            "model": self.model,
        }
