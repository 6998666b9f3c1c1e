"""What the agent loop and the tool dispatcher know about the chat a session runs in.

Its own module so the dispatcher can name it without importing the loop that uses the
dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..aaep.events import Progress, ProgressUpdated, Summary
from ..aaep.session import Session
from .approval import ApprovalPolicy
from .context import ContextState
from .services import AgentServices, LeftRunning
from .usage import Usage

if TYPE_CHECKING:
    from .grant_book import GrantBook


@dataclass
class ChatContext:
    """What the loop knows about the chat a session runs in."""

    chat_id: str | None = None
    notebook_path: str | None = None
    reader: str | None = None
    """Who the session's model is, for what the notebook showed it (the base of its edits):
    ``None`` for the chat's own agent, the connection for an outside agent."""
    services: AgentServices = field(default_factory=AgentServices)
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    usage: Usage = field(default_factory=Usage)
    """The chat's token usage so far, added to by every session (for the budget)."""
    context: ContextState = field(default_factory=ContextState)
    save_changes: Callable[[], Awaitable[bool]] | None = None
    """Puts the agent's edits on disk; awaited before the session says it is done (``False``:
    not saved yet, and the user is told)."""
    check_changes: Callable[[], Awaitable[str | None]] | None = None
    """Says which of the session's edits are gone (another program rewrote the file), or
    ``None``; awaited before the session ends, so it never ends with a plain "Done"."""
    edits_stored: Callable[[], Awaitable[None]] | None = None
    """Awaited after each tool call, before its completion is told: the edits it made are in
    the chat store, so a server killed right after still names them when it starts again."""
    still_running: Callable[[], LeftRunning | None] | None = None
    """The agent's cells still running when the session ends, or ``None``: their sentence ("Cell
    4 is still running; you will hear when it ends.") is part of its last words, their count
    data on its ``session.completed`` (:meth:`LeftRunning.extension`)."""
    grants: GrantBook | None = None
    """The person's standing permissions (:mod:`.grant_book`), checked where a step would ask."""
    notices: list[str] = field(default_factory=list)
    """Sentences for the person that came while nothing ran (a program switched the approval
    mode); the next session says them right after it starts, then the list is emptied."""

    def tell_notices(self, session: Session) -> None:
        """Say the waiting notices in *session* (as ``progress.updated`` notices, heard at
        normal verbosity like the store's), once."""
        for said in self.notices:
            session.emit(
                ProgressUpdated(
                    progress=Progress(description=said[:4096]),
                    urgency="normal",
                    summary=Summary(normal=said, terse="Notice."),
                )
            )
        self.notices.clear()


__all__ = ["ChatContext"]
