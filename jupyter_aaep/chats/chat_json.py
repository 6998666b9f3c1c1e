"""The chat's JSON, written once: what a client reads of a chat, loaded or only stored.

A chat reaches clients in memory (created, opened, listed while loaded) or only as a row of the
store (listed after a restart, before anyone opens it). The two used to be described by two
hands and drifted apart: a stored chat had no ``model_label``, named no model when it used the
server's default, offered pause to a chat an ACP agent answers, and a reloaded chat forgot its
last session. Here both become the same :class:`ChatFacts` first, and one function turns facts
into JSON; the server's own part (model names, policy, URLs) comes in as :class:`ServerFacts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..store.records import StoredChat
from .chat import SUPPORTS, Chat, kept

__all__ = ["ChatFacts", "ServerFacts", "chat_json", "chat_urls"]


@dataclass(frozen=True)
class ServerFacts:
    """What the server adds to every chat it describes, the same for a loaded and a stored one."""

    default_model: str
    """The model of a chat that chose none."""
    label_of: Callable[[str], str]
    """A model's name for people (``claude-…`` → "Claude …")."""
    policy: dict[str, Any]
    """What the administrator fixed (``AdminPolicy.describe()``)."""
    saved: bool
    """Chats are being stored (``False`` while the store fails)."""
    url_for: Callable[[str], str]
    """A path under ``aaep/v1/`` as a URL path under the server's ``base_url``."""
    agent_of: Callable[[str], str | None]
    """The ACP agent a chat chose, or ``None`` for the built-in one."""
    built_in: str
    """The built-in agent's name, as the ``agent`` field says it."""
    mode_of_stored: Callable[[str], str]
    """The approval mode a stored chat loads with (auto is never remembered)."""


@dataclass(frozen=True)
class ChatFacts:
    """What a loaded and a stored chat share: read from either, described by one function
    (the first fields are :data:`.chat.KEPT_FIELDS`)."""

    chat_id: str
    notebook_path: str | None
    session_id: str | None
    approval_mode: str
    undoable_sessions: list[str]
    title: str
    created: str
    updated: str
    can_continue: bool
    model: str | None
    model_label: str | None
    running: bool = False
    paused: bool = False
    state: str = "idle"

    @classmethod
    def of(cls, chat: Chat | StoredChat, server: ServerFacts | None = None) -> ChatFacts:
        if isinstance(chat, Chat):
            running = chat.running
            return cls(
                **{**kept(chat), "can_continue": chat.can_continue and not running},
                session_id=chat.session.id if chat.session else chat.last_session_id,
                approval_mode=chat.approval.mode,
                undoable_sessions=list(chat.snapshots),
                running=running,
                paused=chat.paused,
                # A chat at rest is idle, whatever state its last session ended in.
                state=chat.session.state if running and chat.session is not None else "idle",
            )
        mode = chat.approval_mode
        return cls(
            **kept(chat),
            session_id=chat.last_session_id,
            approval_mode=server.mode_of_stored(mode) if server is not None else mode,
            undoable_sessions=list(chat.snapshot_ids),
        )


def chat_json(chat: Chat | StoredChat, server: ServerFacts | None = None) -> dict[str, Any]:
    """The chat as the HTTP API, the MCP side and the list of chats show it.

    Without *server* only the chat's own fields (the runner and its tests, which have no server).
    """
    facts = ChatFacts.of(chat, server)
    agent = server.agent_of(facts.chat_id) if server is not None else None
    supports = dict(SUPPORTS)
    if agent is not None:  # an ACP agent cannot pause or take guidance mid-request
        supports.update(pause=False, resume=False)
    described: dict[str, Any] = {
        "chat_id": facts.chat_id,
        "notebook_path": facts.notebook_path,
        "status": "running" if facts.running else "idle",
        "paused": facts.paused,
        "session_id": facts.session_id,
        "approval_mode": facts.approval_mode,
        # What clients may offer: the panel hides or disables the rest, with a reason.
        "supports": supports,
        "undoable_sessions": facts.undoable_sessions,
        "title": facts.title,
        "created": facts.created,
        "updated": facts.updated,
        "can_continue": facts.can_continue,
        "model": facts.model,
    }
    if server is None:
        return described
    model = facts.model or server.default_model
    return {
        **described,
        "agent": agent or server.built_in,
        "model": model,
        "model_label": facts.model_label or server.label_of(model),
        "policy": server.policy,
        "state": facts.state,
        "saved": server.saved,
        "urls": chat_urls(facts.chat_id, server.url_for),
    }


def chat_urls(chat_id: str, url_for: Callable[[str], str]) -> dict[str, str]:
    """Where a chat's resources are."""
    base = f"chats/{chat_id}"
    return {
        "chat": url_for(base),
        "events": url_for(f"{base}/events"),
        "messages": url_for(f"{base}/messages"),
        "websocket": url_for(f"{base}/ws"),
    }
