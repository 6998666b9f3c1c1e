"""The chat database's tables, and what an older database gets when it is opened.

Standard library only.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 5

GRANTS_TABLE = """
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
"""
"""Added in schema version 5 (an older database gets it when opened)."""


SCHEMA = """
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


def prepare(conn: sqlite3.Connection, *, durable: bool) -> None:
    """Set up the writing connection: WAL for a file, the tables, the upgrades, the version."""
    if durable:
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # only takes on a new, empty database
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA journal_size_limit=4194304")  # the WAL shrinks back after a burst
    conn.executescript(SCHEMA)
    upgrade(conn)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def upgrade(conn: sqlite3.Connection) -> None:
    """Add what later versions store to a database an earlier version made (version 3: the
    model; version 4: the server root a chat belongs to, ``NULL`` for every older chat;
    version 5: standing permissions, :mod:`jupyter_aaep.chats.stored_grants`)."""
    conn.executescript(GRANTS_TABLE)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chats)")}
    for column in ("model", "model_label", "root"):
        if column not in columns:
            conn.execute(f"ALTER TABLE chats ADD COLUMN {column} TEXT")
    conn.execute("CREATE INDEX IF NOT EXISTS chats_by_root ON chats (root, notebook_path)")
