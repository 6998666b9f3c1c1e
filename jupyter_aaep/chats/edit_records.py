"""What sessions change in a chat's notebook: a record per session, saved soon, undone alone.

Each session of a chat (the built-in agent's or an outside agent's) keeps its own record of
the edits it made; the last :data:`SNAPSHOTS_KEPT` stay undoable and go to the chat store as
they are made. An edit is followed by a save of the notebook shortly after, so a stop of the
server loses nothing; at a session's end the edits another program's write took away are
named once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ..aaep.session import Session
from ..agent.services import AgentServices, SessionEdits
from ..errors import InvalidInput
from .chat import Chat
from .persistence import ChatPersistence
from .undo_words import actor_of, undo_summary

log = logging.getLogger(__name__)

SNAPSHOTS_KEPT = 10
EDIT_SAVE_DELAY = 0.15
"""Seconds after an agent edit before the notebook is saved (edits in a burst are saved once)."""
RECORD_STORE_WAIT = 2.0
"""Longest a tool's completion waits for its edit record to be written (a slow disk)."""


class Host(Protocol):
    """Where the notebook service and the store come from (the runner; the server sets both
    after start-up, so they are read at each use)."""

    services: AgentServices
    persistence: ChatPersistence | None


class EditRecords:
    """The edit records of every chat a runner holds."""

    def __init__(self, host: Host) -> None:
        self.host = host

    @property
    def services(self) -> AgentServices:
        return self.host.services

    @property
    def persistence(self) -> ChatPersistence | None:
        return self.host.persistence

    def begin(self, chat: Chat, session: Session) -> SessionEdits | None:
        """Record what the session changes in the notebook (for undo, saving and recovery)."""
        notebooks = self.services.notebook
        if notebooks is None or not chat.notebook_path:
            return None
        return notebooks.begin_record(
            chat.chat_id,
            session.id,
            chat.notebook_path,
            lambda record: self._recorded(chat, record),
            actor=session.actor,
        )

    def end(self, chat: Chat) -> None:
        notebooks = self.services.notebook
        if notebooks is not None:
            notebooks.end_record(chat.chat_id)

    async def stored(self, chat: Chat) -> None:
        """Wait until the edit record a tool call just queued is written to the chat store.

        The tool's completion is told only after this: a server killed right after it then
        names the edit on restart instead of saying the agent changed nothing."""
        if not chat.record_unstored or self.persistence is None:
            return
        chat.record_unstored = False
        await self.persistence.written(RECORD_STORE_WAIT)

    def _recorded(self, chat: Chat, record: SessionEdits) -> None:
        """The agent changed the notebook: store the session's record and save the notebook soon."""
        chat.snapshots.pop(record.session_id, None)
        chat.snapshots[record.session_id] = record
        dropped = []
        while len(chat.snapshots) > SNAPSHOTS_KEPT:
            oldest = next(iter(chat.snapshots))
            del chat.snapshots[oldest]
            dropped.append(oldest)
        if self.persistence is not None:
            self.persistence.snapshot_taken(chat, record.session_id, record)
            chat.record_unstored = True
            if dropped:
                self.persistence.snapshots_dropped(chat, dropped)
        if chat.pending_save is None or chat.pending_save.done():
            chat.pending_save = asyncio.ensure_future(self._save_soon(chat))

    async def _save_soon(self, chat: Chat) -> None:
        await asyncio.sleep(EDIT_SAVE_DELAY)
        chat.pending_save = None  # an edit made while this save runs schedules the next one
        await self.save(chat)

    async def save(self, chat: Chat) -> bool:
        """Put the agent's edits on disk now rather than after the shared document's autosave
        delay; False when they may not be there yet."""
        notebooks = self.services.notebook
        if notebooks is None or not chat.notebook_path:
            return True  # no notebook service or no notebook: nothing the agent could have edited
        try:
            return bool(await notebooks.save(chat.notebook_path))
        except Exception as error:  # noqa: BLE001 - the autosave still follows; the log says why
            log.warning(
                "could not save %s at the end of the session: %s", chat.notebook_path, error
            )
            return False

    async def lost_changes(self, record: SessionEdits | None) -> str | None:
        """At the session's end: the agent's edits another program's write took away, said once."""
        notebooks = self.services.notebook
        if record is None or notebooks is None:
            return None
        try:
            await notebooks.lost_edits(record)
        except Exception as error:  # noqa: BLE001 - the notebook may be gone; the tools said so
            log.debug("could not check the notebook for lost edits: %s", error)
        lost = list(record.lost)
        if not lost:
            return None
        return (
            "Another program rewrote the notebook's file during this request, and these changes by the agent "
            f"are gone: {'; '.join(lost)}."
        )

    async def undo(
        self, chat: Chat, session_id: str | None, neighbours: list[Chat]
    ) -> dict[str, Any]:
        """Take back what one session of *chat* (the latest by default) changed, and only that.

        Only the session's own operations are reverted, and only where a cell still holds
        what it left; the records of the other sessions of the notebook's chats
        (*neighbours*) say who changed a cell since, so it is kept and named.
        """
        notebooks = self.services.notebook
        if notebooks is None or not chat.notebook_path or not chat.snapshots:
            raise InvalidInput(
                "There is nothing to undo: the agent has not changed this notebook in this chat "
                "since its changes were last undone."
            )
        target = session_id or next(reversed(chat.snapshots))
        if target not in chat.snapshots:
            raise InvalidInput(
                "There is nothing to undo for that request: it changed nothing in the notebook, "
                "or its changes were already undone."
            )
        record = chat.snapshots[target]
        others = [
            other
            for each in {id(c): c for c in (chat, *neighbours)}.values()
            for sid, other in each.snapshots.items()
            if sid != target
        ]
        report = await notebooks.undo(chat.notebook_path, [record], others=others)
        del chat.snapshots[target]
        if self.persistence is not None:
            self.persistence.snapshots_dropped(chat, [target])
        summary = undo_summary(
            chat.notebook_path,
            removed=report.removed,
            added=report.added,
            restored=report.restored,
            kept=report.kept,
            actor=actor_of(record),
        )
        # The answer to the request, not a notice on the AAEP stream (which carries AAEP events only).
        return {
            "kind": "notebook.reverted",
            "chat_id": chat.chat_id,
            "session_id": target,
            "summary": summary,
            "removed": report.removed,
            "added": report.added,
            "restored": report.restored,
            "kept": list(report.kept),
        }
