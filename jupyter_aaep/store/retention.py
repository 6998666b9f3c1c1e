"""How much of each chat's event log the store keeps, and the pruning that enforces it.

The event log (every AAEP event, for replay and reconnects) and the step records are what
grows with use; chats, their message history and session outcomes are small and are kept.
Two limits, either or both:

- ``keep_days``: sessions that ended longer ago go: their events, steps, undo snapshot and row;
- ``keep_mb_per_chat``: a chat's events beyond that many megabytes go, oldest session first,
  with their steps and undo snapshot; the session's row keeps its status and times (about
  100 bytes) until the time limit takes it.

Pruning removes whole sessions (never half of one, so a stored session still reads as a
well-formed stream) and runs on the store's writer thread in small transactions of at most
``batch`` rows, giving way to queued writes between them: the event loop never waits for
it. Freed pages are reused by later writes, so the file stops growing; on a database
created with ``auto_vacuum=INCREMENTAL`` (every new one) they are also given back to the
disk a few at a time. An older database keeps its size until a manual ``VACUUM``.

Standard library only.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class RetentionPolicy:
    """What the store keeps; 0 means no limit of that kind."""

    keep_days: float = 0.0
    keep_mb_per_chat: float = 0.0
    interval_seconds: float = 60.0
    """Least time between two pruning passes."""
    batch: int = 500
    """Most rows deleted in one transaction."""

    @classmethod
    def for_server(cls) -> RetentionPolicy:
        """What a Jupyter server keeps unless configured (``store_keep_days``,
        ``store_keep_mb_per_chat``); a store built in code keeps everything by default."""
        return cls(keep_days=90.0, keep_mb_per_chat=20.0)

    @property
    def active(self) -> bool:
        return self.keep_days > 0 or self.keep_mb_per_chat > 0

    @property
    def chat_bytes(self) -> int:
        return int(self.keep_mb_per_chat * 1024 * 1024)


def _expired_sessions(conn: sqlite3.Connection, days: float, limit: int) -> list[tuple[str, str]]:
    cutoff = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT session_id, chat_id FROM sessions WHERE status != 'running' AND ended IS NOT NULL AND ended < ?"
            " LIMIT ?",
            (cutoff, limit),
        )
    ]


def _oversized_sessions(
    conn: sqlite3.Connection, chat_id: str, keep: int, limit: int
) -> list[tuple[str, str]]:
    """The oldest sessions of *chat_id* whose events lie beyond the newest *keep* bytes."""
    total = 0
    cut_seq = None
    for seq, size in conn.execute(
        "SELECT seq, length(body) FROM events WHERE chat_id=? ORDER BY seq DESC", (chat_id,)
    ):
        total += size
        if total > keep:
            cut_seq = seq
            break
    if cut_seq is None:
        return []
    rows = conn.execute(
        "SELECT DISTINCT session_id FROM events WHERE chat_id=? AND seq<=? AND session_id IS NOT NULL LIMIT ?",
        (chat_id, cut_seq, limit),
    )
    sessions = [(r[0], chat_id) for r in rows]
    running = {r[0] for r in conn.execute("SELECT session_id FROM sessions WHERE status='running'")}
    return [s for s in sessions if s[0] not in running]


def _drop_loose(conn: sqlite3.Connection, chat_id: str, keep: int, batch: int) -> int:
    """Events with no session (chat notices) older than the byte limit allows."""
    rows = conn.execute(
        "SELECT seq, length(body) FROM events WHERE chat_id=? ORDER BY seq DESC", (chat_id,)
    )
    total = 0
    for seq, size in rows:
        total += size
        if total > keep:
            return conn.execute(
                "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE chat_id=? AND seq<=? AND session_id"
                " IS NULL LIMIT ?)",
                (chat_id, seq, batch),
            ).rowcount
    return 0


def prune_step(conn: sqlite3.Connection, policy: RetentionPolicy, chats: set[str]) -> int:
    """One small pruning transaction's worth of deletes (the caller commits); rows deleted.

    *chats* are those written since the last pass (only they can have grown past the size
    limit); a chat is removed from it once it is within the limit.
    """
    victims: list[tuple[str, str]] = []
    expired = False
    if policy.keep_days > 0:
        victims = _expired_sessions(conn, policy.keep_days, 50)
        expired = bool(victims)
    if not victims and policy.keep_mb_per_chat > 0:
        for chat_id in sorted(chats):
            victims = _oversized_sessions(conn, chat_id, policy.chat_bytes, 50)
            if victims:
                break
            if _drop_loose(conn, chat_id, policy.chat_bytes, policy.batch):
                return 1
            chats.discard(chat_id)
    deleted = 0
    for session_id, chat_id in victims:
        if deleted >= policy.batch:
            break
        deleted += conn.execute(
            "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE session_id=? LIMIT ?)",
            (session_id, policy.batch),
        ).rowcount
        deleted += conn.execute("DELETE FROM steps WHERE session_id=?", (session_id,)).rowcount
        deleted += conn.execute(
            "DELETE FROM snapshots WHERE chat_id=? AND session_id=?", (chat_id, session_id)
        ).rowcount
        if expired:  # past the time limit: the request's row goes too
            deleted += conn.execute(
                "DELETE FROM sessions WHERE session_id=?", (session_id,)
            ).rowcount
        else:  # its outcome stays (status and times), without the copy of its last event and its usage
            conn.execute(
                "UPDATE sessions SET terminal=NULL, usage=NULL WHERE session_id=?", (session_id,)
            )
    return deleted


def release_space(conn: sqlite3.Connection, *, slack: int = 256, most: int = 2048) -> None:
    """Give free pages back to the disk beyond *slack* kept for reuse, at most *most* per call
    (only where ``auto_vacuum`` is incremental; elsewhere later writes reuse them)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        return
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    if free > slack:
        conn.executescript(
            f"PRAGMA incremental_vacuum({int(min(free - slack, most))});"
        )  # execute() frees 1 page


__all__ = ["RetentionPolicy", "prune_step", "release_space"]
