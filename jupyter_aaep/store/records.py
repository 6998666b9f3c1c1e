"""The store's records as the rest of the server sees them, and the chat list's cursor.

Standard library only.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StoredChat:
    """One chat as stored: enough to describe it without loading its events."""

    chat_id: str
    notebook_path: str | None
    file_id: str | None
    title: str
    created: str
    updated: str
    approval_mode: str
    can_continue: bool
    model: str | None = None
    """The model the user chose for this chat (``None``: the server's default), with its label."""
    model_label: str | None = None
    root: str | None = None
    """The resolved root folder of the server that made the chat (``None``: stored by a version
    before 4, offered nowhere until a root adopts it; see :mod:`.roots`)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    last_session_id: str | None = None
    snapshot_ids: list[str] = field(default_factory=list)


@dataclass
class StoredSession:
    session_id: str
    chat_id: str
    status: str
    started: str | None
    ended: str | None


@dataclass
class StepRecord:
    """One step of a session: a model request or a tool call (the ``steps`` table)."""

    session_id: str
    kind: str
    """``"model_request"`` or ``"tool"``."""
    status: str
    """``"success"`` or ``"error"`` (a tool's status as its ``tool.completed`` said)."""
    name: str
    """The tool's name, or the model's."""
    text: str = ""
    latency_ms: int | None = None
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    created: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


STEP_COLUMNS = (
    "session_id, kind, status, name, text, latency_ms, error, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, created"
)


CHAT_COLUMNS = (
    "chat_id, notebook_path, file_id, title, created, updated, approval_mode, can_continue, model, "
    "model_label, root"
)


def chat_from_row(row: tuple[Any, ...]) -> StoredChat:
    return StoredChat(
        chat_id=row[0],
        notebook_path=row[1],
        file_id=row[2],
        title=row[3],
        created=row[4],
        updated=row[5],
        approval_mode=row[6],
        can_continue=bool(row[7]),
        model=row[8],
        model_label=row[9],
        root=row[10],
    )


def encode_cursor(updated: str, chat_id: str) -> str:
    """An opaque ``before`` cursor for the chat list (newest first)."""
    return base64.urlsafe_b64encode(json.dumps([updated, chat_id]).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """The (updated, chat_id) a cursor stands for; ``ValueError`` for anything else."""
    try:
        updated, chat_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return str(updated), str(chat_id)
    except Exception as error:
        raise ValueError(
            "The 'before' cursor is not one this server handed out; use the 'next' value "
            "of the previous page."
        ) from error
