"""Telling each chat, once per change, whether what happens in it is being saved.

AAEP has no event outside a session (every event carries a ``session_id`` and sits between
``session.started`` and one terminal event), so a chat hears it as a ``progress.updated``
of the session it is running, the moment storing stops or starts working again. A chat
that is idle at that moment loses nothing while idle; it hears the news right after its
next ``session.started``, if it still applies (a store that failed and healed while the
chat was idle is not mentioned at all). Clients that show idle chats can read ``saved`` in
the chat's description at any time.

The notices are ``urgency: "normal"`` rather than the type's recommended ``background``
(a departure AAEP asks producers to document): they are about the person's work, not a
countdown, and the panel speaks them at its normal verbosity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..aaep.events import Progress, ProgressUpdated, Summary
from ..store.chat_store import ChatStore
from ..store.health import StoreHealth, explained
from ..words import plural
from .chat import Chat


class StoreNotices:
    """What each chat was last told about saving (chat id → saving), and the telling."""

    def __init__(self, store: ChatStore) -> None:
        self.store = store
        self.health: StoreHealth = store.health
        self._told: dict[str, bool] = {}

    def changed(self, health: StoreHealth, chats: Iterable[Chat]) -> None:
        """Storing stopped or started working again (on the event loop): tell the running chats."""
        self.health = health
        for chat in chats:
            self.tell(chat)

    def session_started(self, chat: Chat) -> None:
        """Called as a session starts: tell it after its ``session.started`` reached everyone."""
        if self._told.get(chat.chat_id, True) != self._current().saving:
            try:
                loop = asyncio.get_running_loop()
            except (
                RuntimeError
            ):  # published outside a loop (a script driving sessions): nobody listens live
                return
            loop.call_soon(self.tell, chat)

    def _current(self) -> StoreHealth:
        live = self.store.health  # the writer may know before its report reached the loop
        return self.health if live.saving == self.health.saving else live

    def tell(self, chat: Chat) -> None:
        """Say where saving stands in *chat*'s running session, unless it was said already."""
        session = chat.session
        health = self._current()
        if session is None or session.closed or not session.started:
            return
        if self._told.get(chat.chat_id, True) == health.saving:
            return
        self._told[chat.chat_id] = health.saving
        if health.saving:
            terse, normal, detailed = recovered_words(health)
            description = "Saving again."
        else:
            terse, normal, detailed = degraded_words(health, limit=self.store.queue_limit)
            description = "Not being saved for now."
        session.emit(
            ProgressUpdated(
                progress=Progress(description=description),
                urgency="normal",
                summary=Summary(normal=normal, terse=terse, detailed=detailed),
            )
        )


def degraded_words(health: StoreHealth, *, limit: int) -> tuple[str, str, str]:
    """Terse, normal and detailed texts telling a chat that it is not being saved."""
    reason, advice = explained(health.cause)
    normal = (
        f"This chat is not being saved right now: {reason}; the agent keeps working and saves it all once "
        f"it can. {advice}"
    )
    detailed = (
        f"{normal} Until then up to {limit} steps wait in memory; if the server stops before the database "
        "can be written, they are lost."
    )
    if health.detail:
        detailed += f" The database said: {health.detail}."
    return "Chat not being saved for now.", normal, detailed


def recovered_words(health: StoreHealth) -> tuple[str, str, str]:
    """Terse, normal and detailed texts telling a chat that saving works again."""
    if health.dropped:
        steps = plural(health.dropped, "recorded step")
        normal = (
            f"This chat is being saved again. The messages and outcomes are saved, but {steps} of the "
            "event log from the time it was not saved could not be kept."
        )
        return "Chat saved again, with gaps.", normal, normal
    normal = "This chat is being saved again, including everything from while it was not."
    return "Chat saved again.", normal, normal


__all__ = ["StoreNotices", "degraded_words", "recovered_words"]
