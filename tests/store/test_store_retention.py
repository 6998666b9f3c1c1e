"""Retention keeps the chat database bounded: a size limit per chat and a time limit, pruned in
whole sessions, a little at a time, with free pages given back to the disk."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from jupyter_aaep.aaep.emitter import Emitter
from jupyter_aaep.store.chat_store import ChatStore, StepRecord, StoredChat
from jupyter_aaep.store.retention import RetentionPolicy
from jupyter_aaep.testing.store_soak import largest_chat_bytes, soak

SESSIONS = 400
CHATS = 4
KEEP_MB = 0.1
PUBLISH = Emitter.publish
"""Publishing without the suite's per-event schema audit (tests/conftest.py), for the soak's volume."""


def test_a_soak_of_short_sessions_stays_within_the_size_limit_in_whole_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = ChatStore(str(tmp_path / "checked.sqlite3"))
    soak(
        checked, sessions=4, chats=2, settle_seconds=0
    )  # the soak's sessions are valid AAEP (audited)
    checked.close()
    monkeypatch.setattr(Emitter, "publish", PUBLISH)  # thousands more of the same shapes: no audit
    path = tmp_path / "chats.sqlite3"
    store = ChatStore(
        str(path), retention=RetentionPolicy(keep_mb_per_chat=KEEP_MB, interval_seconds=0.2)
    )
    result = soak(store, sessions=SESSIONS, chats=CHATS)
    store.close()
    bound = int(KEEP_MB * 1024 * 1024)
    assert result.largest_chat_event_bytes <= bound
    assert largest_chat_bytes(str(path)) > bound * 0.5, (
        "pruning keeps what the limit allows, not less"
    )
    with sqlite3.connect(path) as conn:
        produced_per_session = 9
        assert result.events_kept < SESSIONS * produced_per_session / 4, result.events_kept
        by_session: dict[str, list[str]] = {}
        for session_id, body in conn.execute("SELECT session_id, body FROM events ORDER BY seq"):
            by_session.setdefault(session_id, []).append(json.loads(body)["type"])
        for kinds in by_session.values():  # whole sessions only: each starts and ends
            assert kinds[0].endswith("session.started") and kinds[-1].endswith(
                "session.completed"
            ), kinds
            assert len(kinds) == produced_per_session, kinds
        statuses = {s for (s,) in conn.execute("SELECT status FROM sessions")}
        assert (
            statuses == {"completed"}
            and conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == SESSIONS
        )
        assert conn.execute("SELECT count(*) FROM sessions WHERE terminal IS NOT NULL").fetchone()[
            0
        ] == len(by_session)
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        assert free <= 256 + 16, "free pages beyond the reuse slack go back to the disk"
        size = (
            conn.execute("PRAGMA page_count").fetchone()[0]
            * conn.execute("PRAGMA page_size").fetchone()[0]
        )
    # The file: the events the limit allows, a row per session (1 KB, with its share of pages left
    # half-empty by pruning), the free pages kept for reuse, and 1 MB for the schema, indexes and chats.
    allowed = CHATS * bound + SESSIONS * 1024 + 256 * 4096 + 1024 * 1024
    assert size <= allowed, (size, allowed)


def test_sessions_past_the_time_limit_go_with_their_steps_and_undo_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    store = ChatStore(str(path), retention=RetentionPolicy(keep_days=7, interval_seconds=0.05))
    store.save_chat(
        StoredChat(
            chat_id="chat_t",
            notebook_path="t.ipynb",
            file_id=None,
            title="t",
            created="2026-01-01T00:00:00.000Z",
            updated="2026-01-01T00:00:00.000Z",
            approval_mode="ask",
            can_continue=False,
        )
    )
    now = datetime.now(timezone.utc)
    for session_id, age in (("sess_old", 10), ("sess_new", 1)):
        when = (now - timedelta(days=age)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        store.session_started("chat_t", session_id, when)
        store.append_event(
            "chat_t", {"event_id": f"evt_{session_id}", "session_id": session_id, "type": "x"}
        )
        store.add_step(
            "chat_t", StepRecord(session_id=session_id, kind="tool", status="success", name="t")
        )
        record = {"kind": "operations", "operations": [{"kind": "create", "cell_id": "c"}]}
        store.save_snapshot("chat_t", session_id, record)  # an undoable one: read back
        store.session_ended(session_id, "completed", when, None, None)
    assert store.flush()
    for _ in range(100):
        if store.read.steps("sess_old") == [] and not store.read.has_session("chat_t", "sess_old"):
            break
        time.sleep(0.05)
    assert store.read.session_events("sess_old") == [] and store.read.steps("sess_old") == []
    assert not store.read.has_session("chat_t", "sess_old") and list(
        store.read.snapshots("chat_t")
    ) == ["sess_new"]
    assert (
        len(store.read.session_events("sess_new")) == 1 and len(store.read.steps("sess_new")) == 1
    )
    assert store.read.load_chat("chat_t") is not None, "the chat itself is kept"
    store.close()


def test_a_running_session_is_never_pruned(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    store = ChatStore(
        str(path), retention=RetentionPolicy(keep_mb_per_chat=0.001, interval_seconds=0.05)
    )
    store.session_started("chat_r", "sess_run", "2026-01-01T00:00:00.000Z")
    for number in range(50):
        store.append_event(
            "chat_r", {"event_id": f"evt_{number}", "session_id": "sess_run", "pad": "x" * 100}
        )
    assert store.flush()
    time.sleep(0.5)
    assert len(store.read.session_events("sess_run")) == 50, (
        "a request still running keeps its whole log"
    )
    store.close()
