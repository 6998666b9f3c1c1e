"""Chats, their model history, sessions, events and undo snapshots in SQLite.

Why this shape:

- writes never block the event loop: they go to a writer thread (:mod:`.writer`)
  that commits whatever piled up in one transaction, retries with backoff when the
  database is locked, full or read-only, and keeps the writes in memory meanwhile
  (bounded), so storing heals by itself once the cause is gone;
- reads (listing chats, loading one on demand, recovery at start-up) use a second connection
  on the caller's thread (:mod:`.reader`, ``store.read``): WAL lets them run beside the writer;
- the tables and their upgrades are :mod:`.schema`, the records read back :mod:`.records`;
- the files are private (:mod:`.files`) and the event log is bounded by a retention
  policy (:mod:`.retention`);
- a database that cannot be opened never stops the server: it logs one sentence and runs
  without history until the database can be written.

Standard library only: no Jupyter, tornado or anthropic imports.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

from . import files as store_files
from . import schema
from .health import StoreHealth, advice
from .reader import StoreReader
from .records import (
    STEP_COLUMNS,
    StepRecord,
    StoredChat,
    StoredSession,
    decode_cursor,
    encode_cursor,
)
from .retention import RetentionPolicy
from .schema import SCHEMA_VERSION
from .writer import STOP, StoreWriter, Write

log = logging.getLogger(__name__)

Connect = Callable[[str], sqlite3.Connection]
Run = Callable[[sqlite3.Connection], object]


class ChatStore:
    """Durable storage of chats; see the module docstring for the threading model.

    Parameters
    ----------
    path
        The database file (its folder is created, both private), or ``":memory:"`` (kept in
        this process only).
    on_health
        Called with the new :class:`StoreHealth` each time storing stops or starts working
        again (from the writer thread, or from the constructor when the database cannot be opened).
    connect
        Opens a connection (tests pass one that fails, to play a broken disk).
    lock_timeout
        Seconds one write waits for another program's lock before it counts as failed (and is
        retried later).
    queue_limit
        Event-log writes kept in memory while the database cannot be written.
    retry_max_seconds
        Longest pause between two tries to write again.
    retention
        How much of each chat's event log is kept.
    """

    def __init__(
        self,
        path: str,
        *,
        on_health: Callable[[StoreHealth], None] | None = None,
        connect: Connect | None = None,
        lock_timeout: float = 5.0,
        queue_limit: int = 20000,
        retry_max_seconds: float = 5.0,
        retention: RetentionPolicy | None = None,
    ) -> None:
        self.path = path
        self.durable = path != ":memory:"
        """Whether what is stored outlives this process (a file, not ``:memory:``)."""
        self.lock_timeout = lock_timeout
        self._connect: Connect = connect or self._default_connect
        read_lock = threading.Lock()
        write_lock = threading.Lock()
        memory = path == ":memory:"
        if (
            memory
        ):  # one connection for both, taking turns (an in-memory database is per connection)
            write_lock = read_lock
        else:
            tightened = store_files.prepare(path)  # OSError (no folder) goes to the caller
            if tightened:
                log.warning(
                    "AAEP chat store: %s could be read by other users; made private to you (folder 0700, "
                    "files 0600).",
                    ", ".join(tightened),
                )
        self._writer = StoreWriter(
            path,
            self._open_writer,
            lock=write_lock,
            on_health=on_health,
            queue_limit=queue_limit,
            retry_max_seconds=retry_max_seconds,
            retention=retention,
        )
        self.read = StoreReader(
            path,
            self._connect,
            lock=read_lock,
            shared=None if self.durable else (lambda: self._writer.conn),
            saving=lambda: self._writer.health.saving,
        )
        """Reading chats, events, sessions and steps back (synchronous, on the caller's thread)."""
        try:
            self._writer.conn = self._open_writer()
        except sqlite3.Error as error:
            self._writer.failed(error, quiet=True)
            log.warning(
                "AAEP chat store: the chat database %s cannot be written (%s), so the server runs without "
                "saving chats until it can; %s",
                path,
                error,
                advice(self._writer.health.cause),
            )
        self.read.open()
        self._writer.thread.start()

    def _default_connect(self, path: str) -> sqlite3.Connection:
        return sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=self.lock_timeout
        )

    def _open_writer(self) -> sqlite3.Connection:
        """The writing connection, set up (WAL, schema, upgrades); ``sqlite3.Error`` if it cannot write."""
        conn = self._connect(self.path)
        try:
            schema.prepare(conn, durable=self.durable)
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    # -- health ----------------------------------------------------------------------------------
    @property
    def health(self) -> StoreHealth:
        return self._writer.health

    @property
    def ok(self) -> bool:
        """Whether writes are landing (``False`` while they wait in memory)."""
        return self._writer.health.saving

    @property
    def failure(self) -> str | None:
        """Why chats are not being saved right now, or ``None``."""
        return self._writer.health.problem

    @property
    def queue_limit(self) -> int:
        return self._writer.queue_limit

    @property
    def on_health(self) -> Callable[[StoreHealth], None] | None:
        return self._writer.on_health

    @on_health.setter
    def on_health(self, callback: Callable[[StoreHealth], None] | None) -> None:
        self._writer.on_health = callback

    # -- the writer ------------------------------------------------------------------------------
    def _submit(
        self,
        run: Run,
        *,
        key: Any = None,
        log_entry: bool = False,
        chat_id: str | None = None,
        cancels: tuple[Any, ...] = (),
    ) -> None:
        self._writer.inbox.put(Write(run, key=key, log=log_entry, chat_id=chat_id, cancels=cancels))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is written; False on timeout (e.g. while the
        database cannot be written: the writes still wait in memory)."""
        if not self._writer.thread.is_alive():
            return True
        done = threading.Event()
        self._writer.inbox.put(done)
        return done.wait(timeout)

    def close(self) -> None:
        """Write what is queued (one last try), then close both connections."""
        if self._writer.thread.is_alive():
            self._writer.inbox.put(STOP)
            self._writer.thread.join(self.lock_timeout + 30)
        for conn in {id(c): c for c in (self._writer.conn, self.read.conn)}.values():
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover
                    pass
        self._writer.conn = self.read.conn = None

    # -- writes (never block: they are queued) -----------------------------------------------------
    def save_chat(self, chat: StoredChat) -> None:
        row = (
            chat.chat_id,
            chat.notebook_path,
            chat.file_id,
            chat.title,
            chat.created,
            chat.updated,
            chat.approval_mode,
            int(chat.can_continue),
            chat.model,
            chat.model_label,
            chat.root,
        )
        self._submit(
            lambda c: c.execute(
                "INSERT INTO chats (chat_id, notebook_path, file_id, title, created, updated, approval_mode, can_continue,"
                " model, model_label, root) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET"
                " notebook_path=excluded.notebook_path, file_id=excluded.file_id, title=excluded.title,"
                " updated=excluded.updated, approval_mode=excluded.approval_mode,"
                " can_continue=excluded.can_continue, model=excluded.model, model_label=excluded.model_label,"
                " root=COALESCE(excluded.root, chats.root)",
                row,
            ),
            key=("chat", chat.chat_id),
        )

    def save_history(self, chat_id: str, history: list[dict[str, Any]], *, updated: str) -> None:
        """Store the model history; serialised now, since the loop goes on changing the list."""
        text = json.dumps(history, ensure_ascii=False)
        self._submit(
            lambda c: c.execute(
                "UPDATE chats SET history=?, updated=MAX(updated, ?) WHERE chat_id=?",
                (text, updated, chat_id),
            ),
            key=("history", chat_id),
        )

    def append_event(self, chat_id: str, event: dict[str, Any]) -> None:
        """Queue one published event; it is serialised on the writer thread (events are not
        changed after publishing)."""

        def write(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT INTO events (chat_id, event_id, session_id, body) VALUES (?, ?, ?, ?)",
                (
                    chat_id,
                    event.get("event_id"),
                    event.get("session_id"),
                    json.dumps(event, ensure_ascii=False),
                ),
            )

        self._submit(write, log_entry=True, chat_id=chat_id)

    def session_started(self, chat_id: str, session_id: str, started: str) -> None:
        self._submit(
            lambda c: c.execute(
                "INSERT OR IGNORE INTO sessions (session_id, chat_id, status, started) VALUES (?, ?, 'running', ?)",
                (session_id, chat_id, started),
            ),
            key=("session", session_id),
        )

    def session_ended(
        self,
        session_id: str,
        status: str,
        ended: str,
        terminal: dict[str, Any] | None,
        usage: dict[str, Any] | None,
    ) -> None:
        # The terminal event itself is in the event log; the row names it (its type and id).
        terminal_text = (
            json.dumps(
                {k: terminal[k] for k in ("type", "event_id", "error_code") if k in terminal}
            )
            if terminal is not None
            else None
        )
        usage_text = json.dumps(usage) if usage is not None else None
        self._submit(
            lambda c: c.execute(
                "UPDATE sessions SET status=?, ended=?, terminal=COALESCE(?, terminal), usage=COALESCE(?, usage)"
                " WHERE session_id=?",
                (status, ended, terminal_text, usage_text, session_id),
            ),
            key=("end", session_id),
        )

    def add_step(self, chat_id: str, step: StepRecord) -> None:
        row = (
            chat_id,
            step.session_id,
            step.kind,
            step.status,
            step.name,
            step.text,
            step.latency_ms,
            step.error,
            step.input_tokens,
            step.output_tokens,
            step.cache_read_tokens,
            step.cache_write_tokens,
            step.created,
        )
        self._submit(
            lambda c: c.execute(
                f"INSERT INTO steps (chat_id, {STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            ),
            log_entry=True,
            chat_id=chat_id,
        )

    def save_snapshot(self, chat_id: str, session_id: str, snapshot: dict[str, Any]) -> None:
        text = json.dumps(snapshot, ensure_ascii=False)
        self._submit(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)", (chat_id, session_id, text)
            ),
            key=("snapshot", chat_id, session_id),
        )

    def drop_snapshots(self, chat_id: str, session_ids: Iterable[str]) -> None:
        ids = [(chat_id, s) for s in session_ids]
        if ids:
            self._submit(
                lambda c: c.executemany(
                    "DELETE FROM snapshots WHERE chat_id=? AND session_id=?", ids
                ),
                cancels=tuple(("snapshot", *pair) for pair in ids),
            )

    def set_root(self, chat_id: str, root: str) -> None:
        """An older chat is adopted by *root* (only while it has none)."""
        self._submit(
            lambda c: c.execute(
                "UPDATE chats SET root=? WHERE chat_id=? AND root IS NULL", (root, chat_id)
            ),
            key=("root", chat_id),
        )

    def move_notebook(self, root: str | None, old: str, new: str) -> None:
        """A notebook (or a folder of them) under *root* was renamed: its chats follow it
        (``None``: a store that serves one server, every chat of that path)."""
        self._submit(
            lambda c: c.execute(
                "UPDATE chats SET notebook_path = ? || substr(notebook_path, ?) WHERE (? IS NULL OR "
                "root = ?) AND (notebook_path = ? OR substr(notebook_path, 1, ?) = ?)",
                (new, len(old) + 1, root, root, old, len(old) + 1, old + "/"),
            ),
        )


__all__ = [
    "SCHEMA_VERSION",
    "ChatStore",
    "StepRecord",
    "StoredChat",
    "StoredSession",
    "decode_cursor",
    "encode_cursor",
]
