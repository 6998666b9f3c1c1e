"""Reading the chat database: its own connection on the caller's thread, and the queries.

WAL lets these reads run beside the writer thread (:mod:`.writer`). A database that cannot be
read yields nothing (earlier chats are not shown), and the connection is tried again a second
later. Standard library only.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .records import (
    CHAT_COLUMNS,
    STEP_COLUMNS,
    StepRecord,
    StoredChat,
    StoredSession,
    chat_from_row,
)

log = logging.getLogger(__name__)

UNDOABLE = (
    "(CASE WHEN json_valid(body) THEN json_extract(body, '$.kind') = 'operations'"
    " AND json_array_length(body, '$.operations') > 0 ELSE 0 END)"
)
"""The one test of a stored edit record that undo can use: this version's per-operation record,
not empty. Rows that fail it (whole-notebook snapshots of earlier versions, which would undo
people's work; empty records) are neither listed (``undoable_sessions``) nor loaded: a stored
chat used to list sessions that loading then dropped."""


class StoreReader:
    """The reading connection of a :class:`~.chat_store.ChatStore`, and what it asks."""

    def __init__(
        self,
        path: str,
        connect: Callable[[str], sqlite3.Connection],
        *,
        lock: threading.Lock,
        shared: Callable[[], sqlite3.Connection | None] | None,
        saving: Callable[[], bool],
    ) -> None:
        self.path = path
        self.connect = connect
        self.lock = lock
        self.shared = shared
        """The writer's connection, read through as well (an in-memory database is per connection)."""
        self.saving = saving
        """Whether writes land (when they do not, the writer's sentence already said why)."""
        self.conn: sqlite3.Connection | None = None
        self.tried = 0.0
        self.warned = False

    def open(self) -> None:
        if self.conn is not None:
            return
        self.tried = time.monotonic()
        try:
            if self.shared is not None:
                self.conn = self.shared()
            else:
                reader = self.connect(self.path)
                reader.execute("SELECT 1 FROM chats LIMIT 1")
                self.conn = reader
        except sqlite3.Error as error:
            self.conn = None
            if self.saving() and not self.warned:  # else the writer's sentence says it
                log.warning(
                    "AAEP chat store: the chat database %s cannot be read (%s); earlier chats are not "
                    "shown until it can.",
                    self.path,
                    error,
                )
            self.warned = True

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.conn is None and time.monotonic() - self.tried > 1.0:
            self.open()  # the database may have become readable (or been created) since
        if self.conn is None:
            return []
        with self.lock:
            try:
                return list(self.conn.execute(sql, params))
            except sqlite3.Error as error:
                log.warning(
                    "AAEP chat store: reading failed (%s); stored chats are not shown", error
                )
                return []

    def list_chats(
        self,
        *,
        notebook_path: str | None = None,
        file_id: str | None = None,
        before: tuple[str, str] | None = None,
        limit: int = 20,
        root: str | None = None,
        adopted: Iterable[str] = (),
    ) -> list[StoredChat]:
        """Chats newest first (by last update); with *file_id*, chats of that file under any path.

        With *root*, only that server root's chats (and the older chats *adopted* by it whose
        root is not stored yet); without, every chat (a store not shared by servers)."""
        where: list[str] = []
        params: list[Any] = []
        if root is not None:
            ids = list(adopted)
            where.append(
                f"(root = ?{' OR chat_id IN (' + ','.join('?' * len(ids)) + ')' if ids else ''})"
            )
            params += [root, *ids]
        if notebook_path is not None:
            if file_id is not None:
                where.append("(file_id = ? OR notebook_path = ?)")
                params += [file_id, notebook_path]
            else:
                where.append("notebook_path = ?")
                params.append(notebook_path)
        if before is not None:
            where.append("(updated < ? OR (updated = ? AND chat_id < ?))")
            params += [before[0], before[0], before[1]]
        sql = f"SELECT {CHAT_COLUMNS} FROM chats"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, chat_id DESC LIMIT ?"
        chats = [chat_from_row(row) for row in self.rows(sql, (*params, limit))]
        for chat in chats:
            chat.snapshot_ids = self.snapshot_ids(chat.chat_id)
            chat.last_session_id = self.last_session_id(chat.chat_id)
        return chats

    def load_chat(self, chat_id: str) -> StoredChat | None:
        rows = self.rows(f"SELECT {CHAT_COLUMNS}, history FROM chats WHERE chat_id=?", (chat_id,))
        if not rows:
            return None
        chat = chat_from_row(rows[0])
        chat.history = json.loads(rows[0][11])
        chat.snapshot_ids = self.snapshot_ids(chat_id)
        chat.last_session_id = self.last_session_id(chat_id)
        return chat

    def last_session_id(self, chat_id: str) -> str | None:
        """The chat's newest session, which a chat described or loaded from the store names."""
        last = self.rows(
            "SELECT session_id FROM sessions WHERE chat_id=? ORDER BY started DESC LIMIT 1",
            (chat_id,),
        )
        return str(last[0][0]) if last else None

    def snapshot_ids(self, chat_id: str) -> list[str]:
        """The sessions :meth:`snapshots` returns, without reading their records (for lists)."""
        return [
            r[0]
            for r in self.rows(
                f"SELECT session_id FROM snapshots WHERE chat_id=? AND {UNDOABLE} ORDER BY rowid",
                (chat_id,),
            )
        ]

    def snapshots(self, chat_id: str) -> dict[str, dict[str, Any]]:
        """The chat's undoable edit records by session, oldest first (see :data:`UNDOABLE`)."""
        rows = self.rows(
            f"SELECT session_id, body FROM snapshots WHERE chat_id=? AND {UNDOABLE} ORDER BY rowid",
            (chat_id,),
        )
        return {session_id: json.loads(body) for session_id, body in rows}

    def events(self, chat_id: str, *, last: int | None = None) -> list[dict[str, Any]]:
        """The chat's events in publishing order (only the *last* ones when given)."""
        if last is None:
            rows = self.rows("SELECT body FROM events WHERE chat_id=? ORDER BY seq", (chat_id,))
        else:
            rows = self.rows(
                "SELECT body FROM (SELECT seq, body FROM events WHERE chat_id=? ORDER BY seq DESC"
                " LIMIT ?) ORDER BY seq",
                (chat_id, last),
            )
        return [json.loads(r[0]) for r in rows]

    def events_after(self, chat_id: str, event_id: str) -> list[dict[str, Any]] | None:
        """Events after *event_id* in its chat; ``None`` when that event is not stored there."""
        found = self.rows(
            "SELECT seq FROM events WHERE chat_id=? AND event_id=?", (chat_id, event_id)
        )
        if not found:
            return None
        rows = self.rows(
            "SELECT body FROM events WHERE chat_id=? AND seq>? ORDER BY seq", (chat_id, found[0][0])
        )
        return [json.loads(r[0]) for r in rows]

    def running_sessions(self, root: str | None = None) -> list[StoredSession]:
        """Sessions that never ended: the server stopped while they ran (with *root*, only those
        of that root's chats and of chats older versions stored: another root's server may be
        running them now)."""
        sql = "SELECT session_id, chat_id, status, started, ended FROM sessions WHERE status='running'"
        params: tuple[Any, ...] = ()
        if root is not None:
            sql += " AND chat_id IN (SELECT chat_id FROM chats WHERE root = ? OR root IS NULL)"
            params = (root,)
        return [StoredSession(*row) for row in self.rows(sql, params)]

    def unrooted_chats(self, notebook_path: str) -> list[str]:
        """The chats of *notebook_path* stored before chats had a root (schema version 4)."""
        rows = self.rows(
            "SELECT chat_id FROM chats WHERE root IS NULL AND notebook_path = ?", (notebook_path,)
        )
        return [row[0] for row in rows]

    def count_unrooted(self) -> int:
        rows = self.rows("SELECT COUNT(*) FROM chats WHERE root IS NULL")
        return int(rows[0][0]) if rows else 0

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        rows = self.rows("SELECT body FROM events WHERE session_id=? ORDER BY seq", (session_id,))
        return [json.loads(r[0]) for r in rows]

    def last_session_event(self, session_id: str) -> dict[str, Any] | None:
        rows = self.rows(
            "SELECT body FROM events WHERE session_id=? ORDER BY seq DESC LIMIT 1", (session_id,)
        )
        return json.loads(rows[0][0]) if rows else None

    def session_states(self, session_id: str) -> str:
        """The state a session was last in (from its last ``state.changed``), ``idle`` if none."""
        for (body,) in self.rows(
            "SELECT body FROM events WHERE session_id=? ORDER BY seq DESC", (session_id,)
        ):
            event = json.loads(body)
            if event.get("type") == "aaep:agent.state.changed":
                return str(event.get("to_state"))
        return "idle"

    def steps(self, session_id: str) -> list[StepRecord]:
        """A session's steps in the order they finished."""
        rows = self.rows(
            f"SELECT {STEP_COLUMNS} FROM steps WHERE session_id=? ORDER BY seq", (session_id,)
        )
        return [StepRecord(*row) for row in rows]

    def has_session(self, chat_id: str, session_id: str) -> bool:
        """Whether the session was one of this chat's (started, whether or not it ended)."""
        return bool(
            self.rows(
                "SELECT 1 FROM sessions WHERE chat_id=? AND session_id=?", (chat_id, session_id)
            )
        )

    def session_usage(self, chat_id: str) -> list[dict[str, Any]]:
        rows = self.rows(
            "SELECT usage FROM sessions WHERE chat_id=? AND usage IS NOT NULL ORDER BY started",
            (chat_id,),
        )
        return [json.loads(r[0]) for r in rows]
