"""Chats, their model history, sessions, events and undo snapshots in SQLite.

Why this shape:

- writes never block the event loop: they go to a writer thread (:mod:`.writer`)
  that commits whatever piled up in one transaction, retries with backoff when the
  database is locked, full or read-only, and keeps the writes in memory meanwhile
  (bounded), so storing heals by itself once the cause is gone;
- reads (listing chats, loading one on demand, recovery at start-up) use a second connection
  on the caller's thread: WAL lets them run beside the writer;
- the files are private (:mod:`.files`) and the event log is bounded by a retention
  policy (:mod:`.retention`);
- a database that cannot be opened never stops the server: it logs one sentence and runs
  without history until the database can be written.

Standard library only: no Jupyter, tornado or anthropic imports.
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import files as store_files
from .health import StoreHealth, advice
from .retention import RetentionPolicy
from .writer import STOP, StoreWriter, Write

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5

GRANTS_TABLE = """
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
"""
"""Added in schema version 5 (an older database gets it when opened)."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS chats (
    chat_id TEXT PRIMARY KEY,
    notebook_path TEXT,
    file_id TEXT,
    title TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    approval_mode TEXT NOT NULL DEFAULT 'ask',
    history TEXT NOT NULL DEFAULT '[]',
    can_continue INTEGER NOT NULL DEFAULT 0,
    model TEXT,
    model_label TEXT,
    root TEXT
);
CREATE INDEX IF NOT EXISTS chats_by_update ON chats (updated DESC, chat_id DESC);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started TEXT,
    ended TEXT,
    terminal TEXT,
    usage TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_chat ON sessions (chat_id);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id TEXT NOT NULL,
    event_id TEXT,
    session_id TEXT,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_chat ON events (chat_id, seq);
CREATE INDEX IF NOT EXISTS events_by_id ON events (event_id);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);
CREATE TABLE IF NOT EXISTS steps (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    latency_ms INTEGER,
    error TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    created TEXT
);
CREATE INDEX IF NOT EXISTS steps_by_session ON steps (session_id, seq);
CREATE TABLE IF NOT EXISTS snapshots (
    chat_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, session_id)
);
"""

Connect = Callable[[str], sqlite3.Connection]
Run = Callable[[sqlite3.Connection], object]


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


_STEP_COLUMNS = (
    "session_id, kind, status, name, text, latency_ms, error, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, created"
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
        self._read_lock = threading.Lock()
        write_lock = threading.Lock()
        memory = path == ":memory:"
        if (
            memory
        ):  # one connection for both, taking turns (an in-memory database is per connection)
            write_lock = self._read_lock
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
        self._reader: sqlite3.Connection | None = None
        self._reader_tried = 0.0
        self._reader_warned = False
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
        self._open_reader()
        self._writer.thread.start()

    def _default_connect(self, path: str) -> sqlite3.Connection:
        return sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=self.lock_timeout
        )

    def _open_writer(self) -> sqlite3.Connection:
        """The writing connection, set up (WAL, schema, upgrades); ``sqlite3.Error`` if it cannot write."""
        conn = self._connect(self.path)
        try:
            if self.durable:
                conn.execute(
                    "PRAGMA auto_vacuum=INCREMENTAL"
                )  # only takes on a new, empty database
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "PRAGMA journal_size_limit=4194304"
                )  # the WAL shrinks back after a burst
            conn.executescript(_SCHEMA)
            self._upgrade(conn)
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _open_reader(self) -> None:
        if self._reader is not None:
            return
        self._reader_tried = time.monotonic()
        try:
            if not self.durable:
                self._reader = self._writer.conn
            else:
                reader = self._connect(self.path)
                reader.execute("SELECT 1 FROM chats LIMIT 1")
                self._reader = reader
        except sqlite3.Error as error:
            self._reader = None
            if (
                self._writer.health.saving and not self._reader_warned
            ):  # else the writer's sentence says it
                log.warning(
                    "AAEP chat store: the chat database %s cannot be read (%s); earlier chats are not "
                    "shown until it can.",
                    self.path,
                    error,
                )
            self._reader_warned = True

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
        for conn in {id(c): c for c in (self._writer.conn, self._reader)}.values():
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover
                    pass
        self._writer.conn = self._reader = None

    # -- writes (never block: they are queued) -----------------------------------------------------
    @staticmethod
    def _upgrade(conn: sqlite3.Connection) -> None:
        """Add what later versions store to a database an earlier version made (version 3: the
        model; version 4: the server root a chat belongs to, ``NULL`` for every older chat;
        version 5: standing permissions, :mod:`jupyter_aaep.chats.stored_grants`)."""
        conn.executescript(GRANTS_TABLE)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(chats)")}
        for column in ("model", "model_label", "root"):
            if column not in columns:
                conn.execute(f"ALTER TABLE chats ADD COLUMN {column} TEXT")
        conn.execute("CREATE INDEX IF NOT EXISTS chats_by_root ON chats (root, notebook_path)")

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
                f"INSERT INTO steps (chat_id, {_STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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

    # -- reads (synchronous, on the caller's thread) -------------------------------------------------
    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._reader is None and time.monotonic() - self._reader_tried > 1.0:
            self._open_reader()  # the database may have become readable (or been created) since
        if self._reader is None:
            return []
        with self._read_lock:
            try:
                return list(self._reader.execute(sql, params))
            except sqlite3.Error as error:
                log.warning(
                    "AAEP chat store: reading failed (%s); stored chats are not shown", error
                )
                return []

    _CHAT_COLUMNS = (
        "chat_id, notebook_path, file_id, title, created, updated, approval_mode, can_continue, model, "
        "model_label, root"
    )

    def _chat(self, row: tuple[Any, ...]) -> StoredChat:
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
        sql = f"SELECT {self._CHAT_COLUMNS} FROM chats"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, chat_id DESC LIMIT ?"
        chats = [self._chat(row) for row in self._read(sql, (*params, limit))]
        for chat in chats:
            chat.snapshot_ids = self.snapshot_ids(chat.chat_id)
            last = self._read(
                "SELECT session_id FROM sessions WHERE chat_id=? ORDER BY started DESC LIMIT 1",
                (chat.chat_id,),
            )
            chat.last_session_id = last[0][0] if last else None
        return chats

    def load_chat(self, chat_id: str) -> StoredChat | None:
        rows = self._read(
            f"SELECT {self._CHAT_COLUMNS}, history FROM chats WHERE chat_id=?", (chat_id,)
        )
        if not rows:
            return None
        chat = self._chat(rows[0])
        chat.history = json.loads(rows[0][11])
        chat.snapshot_ids = self.snapshot_ids(chat_id)
        return chat

    def snapshot_ids(self, chat_id: str) -> list[str]:
        return [
            r[0]
            for r in self._read(
                "SELECT session_id FROM snapshots WHERE chat_id=? ORDER BY rowid", (chat_id,)
            )
        ]

    def snapshots(self, chat_id: str) -> dict[str, dict[str, Any]]:
        rows = self._read(
            "SELECT session_id, body FROM snapshots WHERE chat_id=? ORDER BY rowid", (chat_id,)
        )
        return {session_id: json.loads(body) for session_id, body in rows}

    def events(self, chat_id: str, *, last: int | None = None) -> list[dict[str, Any]]:
        """The chat's events in publishing order (only the *last* ones when given)."""
        if last is None:
            rows = self._read("SELECT body FROM events WHERE chat_id=? ORDER BY seq", (chat_id,))
        else:
            rows = self._read(
                "SELECT body FROM (SELECT seq, body FROM events WHERE chat_id=? ORDER BY seq DESC"
                " LIMIT ?) ORDER BY seq",
                (chat_id, last),
            )
        return [json.loads(r[0]) for r in rows]

    def events_after(self, chat_id: str, event_id: str) -> list[dict[str, Any]] | None:
        """Events after *event_id* in its chat; ``None`` when that event is not stored there."""
        found = self._read(
            "SELECT seq FROM events WHERE chat_id=? AND event_id=?", (chat_id, event_id)
        )
        if not found:
            return None
        rows = self._read(
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
        return [StoredSession(*row) for row in self._read(sql, params)]

    def unrooted_chats(self, notebook_path: str) -> list[str]:
        """The chats of *notebook_path* stored before chats had a root (schema version 4)."""
        rows = self._read(
            "SELECT chat_id FROM chats WHERE root IS NULL AND notebook_path = ?", (notebook_path,)
        )
        return [row[0] for row in rows]

    def count_unrooted(self) -> int:
        rows = self._read("SELECT COUNT(*) FROM chats WHERE root IS NULL")
        return int(rows[0][0]) if rows else 0

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

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._read("SELECT body FROM events WHERE session_id=? ORDER BY seq", (session_id,))
        return [json.loads(r[0]) for r in rows]

    def last_session_event(self, session_id: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT body FROM events WHERE session_id=? ORDER BY seq DESC LIMIT 1", (session_id,)
        )
        return json.loads(rows[0][0]) if rows else None

    def session_states(self, session_id: str) -> str:
        """The state a session was last in (from its last ``state.changed``), ``idle`` if none."""
        for (body,) in self._read(
            "SELECT body FROM events WHERE session_id=? ORDER BY seq DESC", (session_id,)
        ):
            event = json.loads(body)
            if event.get("type") == "aaep:agent.state.changed":
                return str(event.get("to_state"))
        return "idle"

    def steps(self, session_id: str) -> list[StepRecord]:
        """A session's steps in the order they finished."""
        rows = self._read(
            f"SELECT {_STEP_COLUMNS} FROM steps WHERE session_id=? ORDER BY seq", (session_id,)
        )
        return [StepRecord(*row) for row in rows]

    def has_session(self, chat_id: str, session_id: str) -> bool:
        """Whether the session was one of this chat's (started, whether or not it ended)."""
        return bool(
            self._read(
                "SELECT 1 FROM sessions WHERE chat_id=? AND session_id=?", (chat_id, session_id)
            )
        )

    def session_usage(self, chat_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT usage FROM sessions WHERE chat_id=? AND usage IS NOT NULL ORDER BY started",
            (chat_id,),
        )
        return [json.loads(r[0]) for r in rows]


__all__ = [
    "ChatStore",
    "StepRecord",
    "StoredChat",
    "StoredSession",
    "decode_cursor",
    "encode_cursor",
]
