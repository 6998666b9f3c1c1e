"""The chat store is private by construction: folder 0700, files 0600 (WAL and shared memory too),
whatever the umask; a store left readable by others is tightened at start, with one log line."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_aaep.store.chat_store import ChatStore, StoredChat


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def a_chat(chat_id: str) -> StoredChat:
    return StoredChat(
        chat_id=chat_id,
        notebook_path=None,
        file_id=None,
        title="t",
        created="2026-01-01T00:00:00.000Z",
        updated="2026-01-01T00:00:00.000Z",
        approval_mode="ask",
        can_continue=False,
    )


@pytest.mark.parametrize("umask", [0o022, 0o000], indirect=True, ids=["umask-022", "umask-000"])
def test_a_new_store_is_private_with_its_wal_and_shared_memory(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "data" / "aaep" / "chats.sqlite3"
    store = ChatStore(str(path))
    try:
        store.save_chat(a_chat("chat_1"))
        store.save_history(
            "chat_1",
            [{"role": "user", "content": "a secret plan"}],
            updated="2026-01-02T00:00:00.000Z",
        )
        assert store.flush()
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        assert wal.exists() and shm.exists(), "SQLite made its companion files"
        assert mode(path.parent) == 0o700
        assert {p.name: mode(p) for p in (path, wal, shm)} == {
            p.name: 0o600 for p in (path, wal, shm)
        }
        with sqlite3.connect(
            path
        ) as other:  # a reader of the user's own (a backup tool) leaves them as they are
            assert other.execute("SELECT title FROM chats").fetchone() == ("t",)
        assert mode(wal) == 0o600 and mode(shm) == 0o600
    finally:
        store.close()
    assert mode(path) == 0o600


@pytest.mark.parametrize("umask", [0o022], indirect=True)
def test_a_store_readable_by_others_is_tightened_once_with_a_log_line(
    tmp_path: Path, umask: int, caplog: Any
) -> None:
    path = tmp_path / "aaep" / "chats.sqlite3"
    path.parent.mkdir(mode=0o755)
    with sqlite3.connect(path) as conn:  # as an earlier version left it: the umask's modes
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        keep = sqlite3.connect(path)
        keep.execute("SELECT * FROM t").fetchall()  # keeps -wal and -shm in place
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        os.chmod(name, 0o644)
    os.chmod(path.parent, 0o755)
    with caplog.at_level(logging.INFO, logger="jupyter_aaep"):
        ChatStore(str(path)).close()
        ChatStore(str(path)).close()
    companions = [Path(f"{path}-wal"), Path(f"{path}-shm")]  # still open through `keep`
    assert [mode(p) for p in companions if p.exists()] == [0o600, 0o600]
    keep.close()
    said = [r.getMessage() for r in caplog.records if "made private" in r.getMessage()]
    assert len(said) == 1, "one line, at the start that changed something"
    assert "could be read by other users" in said[0] and str(path) in said[0]
    assert mode(path.parent) == 0o700 and mode(path) == 0o600


def test_a_shared_folder_named_in_db_path_is_left_open_but_the_files_are_private(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    (folder / "notes.txt").write_text("someone else's file")
    path = folder / "chats.sqlite3"
    store = ChatStore(str(path))
    store.save_chat(a_chat("chat_2"))
    assert store.flush()
    store.close()
    assert mode(folder) == 0o755, "a folder with other files in it is not ours to close"
    assert mode(path) == 0o600
