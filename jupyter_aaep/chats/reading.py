"""Reading chats back, from memory and the store merged: the list of earlier chats, a chat's
past events, a session's recorded steps.

The list is newest first, by last change; a cursor names where the next page starts. A
notebook's chats are found by its path and by its file id, so they follow a rename; a stored
chat is described from its row, never loaded into memory for this.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..aaep.emitter import Event
from ..errors import InvalidInput, UnknownSession
from ..store.records import StoredChat, decode_cursor, encode_cursor
from .chat import Chat
from .persistence import ChatPersistence


def chat_page(
    loaded: Iterable[Chat],
    persistence: ChatPersistence | None,
    notebook_path: str | None,
    limit: int,
    before: str | None,
) -> tuple[list[Chat | StoredChat], str | None]:
    """One page of chats (of *notebook_path*, or all), and the next page's cursor."""
    try:
        after = decode_cursor(before) if before else None
    except ValueError as error:
        raise InvalidInput(str(error)) from error
    found: dict[str, Chat | StoredChat] = {}
    file_id = None
    if persistence is not None:
        if notebook_path:
            file_id = persistence.file_id_of(notebook_path)
        for row in persistence.roots.list_chats(
            notebook_path, file_id=file_id, before=after, limit=limit + 1
        ):
            if notebook_path and row.notebook_path != notebook_path:  # renamed: follow it
                row.notebook_path = notebook_path
                persistence.store.save_chat(row)
            found[row.chat_id] = row
    for chat in loaded:
        if notebook_path is not None and chat.notebook_path != notebook_path:
            if file_id is None or chat.file_id != file_id:
                continue
            chat.notebook_path = notebook_path
        if after is None or (chat.updated, chat.chat_id) < after:
            found[chat.chat_id] = chat
    ordered = sorted(found.values(), key=lambda c: (c.updated, c.chat_id), reverse=True)
    page = ordered[:limit]
    more = len(ordered) > limit
    return page, (encode_cursor(page[-1].updated, page[-1].chat_id) if more and page else None)


def events_after(
    chat: Chat, persistence: ChatPersistence | None, after_event_id: str | None
) -> list[Event]:
    """The chat's past events, only those after *after_event_id* when given (from the store
    when memory no longer holds it; all that memory holds when it is unknown)."""
    history = chat.emitter.history
    if after_event_id is None:
        return history
    for index, event in enumerate(history):
        if event.get("event_id") == after_event_id:
            return history[index + 1 :]
    stored = stored_events(persistence, chat.chat_id, after_event_id)
    return stored if stored is not None else history


def stored_events(
    persistence: ChatPersistence | None, chat_id: str, event_id: str
) -> list[Event] | None:
    """Events after *event_id* from the store (older than what memory keeps); ``None`` if unknown."""
    if persistence is None:
        return None
    return persistence.store.read.events_after(chat_id, event_id)


def session_steps(
    chat: Chat, persistence: ChatPersistence | None, session_id: str
) -> list[dict[str, Any]]:
    """The recorded steps of one of the chat's sessions (model requests and tool calls, in
    order). The store's writer records each as it finishes, so a session still running lists
    the steps done so far."""
    store = persistence.store if persistence is not None else None
    if store is None or not store.read.has_session(chat.chat_id, session_id):
        raise UnknownSession(
            f"This chat has no session {session_id!r}; the chat's sessions are the "
            "session_id values of its events (GET /aaep/v1/chats/{chat_id})."
        )
    return [step.to_json() for step in store.read.steps(session_id)]
