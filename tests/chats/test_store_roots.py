"""A chat belongs to one server root: one chat database shared by servers rooted in different
folders keeps each root's chats to itself (listing, loading, recovery, renames), and a database
of the previous schema is adopted chat by chat only on evidence from the notebook's cells."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anthropic
import pytest

from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.persistence import ChatPersistence
from jupyter_aaep.chats.runner import ChatRunner, UnknownChat
from jupyter_aaep.store.chat_store import SCHEMA_VERSION, ChatStore
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

Make = Callable[..., ChatRunner]


@pytest.fixture
async def make(tmp_path: Path) -> AsyncIterator[Make]:
    """Runners over one database file, each as a server rooted in a folder of its own."""
    stores: list[ChatStore] = []
    clients: list[anthropic.AsyncAnthropic] = []
    async with FakeAnthropic() as fake:

        def runner(root: str | None, cells: dict[str, set[str]] | None = None) -> ChatRunner:
            for earlier in stores:
                assert earlier.flush()
            store = ChatStore(str(tmp_path / "aaep" / "chats.sqlite3"))
            stores.append(store)

            def client() -> anthropic.AsyncAnthropic:
                clients.append(
                    anthropic.AsyncAnthropic(
                        base_url=fake.base_url, api_key=fake.api_key, max_retries=0
                    )
                )
                return clients[-1]

            made = ChatRunner(
                client_factory=client,
                config=AgentConfig(model="claude-test"),
                registry_factory=lambda chat: ToolRegistry(conversation_tools()),
                persistence=ChatPersistence(
                    store, root=root, cell_ids=lambda path: (cells or {}).get(path)
                ),
            )
            made.fake = fake  # type: ignore[attr-defined]
            return made

        yield runner
        for each in clients:
            await each.close()
        for store in stores:
            store.close()


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute(sql))


@pytest.mark.open_sessions
async def test_servers_rooted_elsewhere_never_list_load_or_recover_each_others_chats(
    make: Make, tmp_path: Path
) -> None:
    in_x = make("/data/X")
    chat = in_x.create_chat("leak.ipynb")
    in_x.fake.add(Turn(text="X's answer."), Turn(text="Slow.", delay=30.0))  # type: ignore[attr-defined]
    in_x.submit(chat.chat_id, "X-SECRET")
    await chat.task  # type: ignore[misc]
    running = in_x.submit(chat.chat_id, "and more")
    while not any(
        e.get("type") == "aaep:agent.state.changed" and e["session_id"] == running
        for e in chat.emitter.history
    ):
        await asyncio.sleep(0.01)
    await in_x.shutdown()  # X stops mid-request: its session stays open in the store

    in_y = make("/data/Y")
    assert in_y.persistence.recover(in_y.producer) == [], "X's running session is X's to close"  # type: ignore[union-attr]
    assert in_y.page("leak.ipynb")[0] == [] and in_y.page(None)[0] == []
    with pytest.raises(UnknownChat):
        in_y.get(chat.chat_id)
    with pytest.raises(UnknownChat):
        in_y.continue_chat(chat.chat_id)
    assert [c.chat_id for c in in_x.page("leak.ipynb")[0]] == [chat.chat_id]
    assert make("/data/X").persistence.recover(in_x.producer) == [running]  # type: ignore[union-attr]


async def test_a_rename_moves_only_this_roots_chats_of_that_notebook_or_folder(
    make: Make, tmp_path: Path
) -> None:
    in_y = make("/data/Y")
    theirs = in_y.create_chat("dir/b.ipynb")
    in_x = make("/data/X")
    mine = in_x.create_chat("dir/b.ipynb")
    other = in_x.create_chat("dirt/c.ipynb")  # a name that only starts like the folder
    in_x.notebook_moved("dir", "new")
    assert (mine.notebook_path, other.notebook_path) == ("new/b.ipynb", "dirt/c.ipynb")
    assert in_x.persistence.store.flush()  # type: ignore[union-attr]
    rows = dict(
        _rows(tmp_path / "aaep" / "chats.sqlite3", "SELECT chat_id, notebook_path FROM chats")
    )
    assert rows == {
        theirs.chat_id: "dir/b.ipynb",
        mine.chat_id: "new/b.ipynb",
        other.chat_id: "dirt/c.ipynb",
    }
    assert [c.chat_id for c in make("/data/X").page("new/b.ipynb")[0]] == [mine.chat_id]


def _old_database(path: Path) -> None:
    """Schema 3, as the previous version left it: chats without a root, one with an edit record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE chats (chat_id TEXT PRIMARY KEY, notebook_path TEXT, file_id TEXT, "
            "title TEXT NOT NULL DEFAULT '', created TEXT NOT NULL, updated TEXT NOT NULL, "
            "approval_mode TEXT NOT NULL DEFAULT 'ask', history TEXT NOT NULL DEFAULT '[]', "
            "can_continue INTEGER NOT NULL DEFAULT 0, model TEXT, model_label TEXT)"
        )
        conn.execute(
            "CREATE TABLE snapshots (chat_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "body TEXT NOT NULL, PRIMARY KEY (chat_id, session_id))"
        )
        for chat_id in ("chat_made", "chat_read"):
            conn.execute(
                "INSERT INTO chats (chat_id, notebook_path, title, created, updated) "
                "VALUES (?, 'a.ipynb', ?, '2026-01-01', '2026-01-01')",
                (chat_id, chat_id),
            )
        record = {
            "kind": "operations",
            "path": "a.ipynb",
            "session_id": "sess_1",
            "operations": [{"kind": "create", "cell_id": "agent01", "after": {"source": "y"}}],
        }
        conn.execute(
            "INSERT INTO snapshots VALUES ('chat_made', 'sess_1', ?)", (json.dumps(record),)
        )


async def test_an_old_database_keeps_working_and_its_chats_go_only_where_the_evidence_is(
    make: Make, tmp_path: Path
) -> None:
    path = tmp_path / "aaep" / "chats.sqlite3"
    _old_database(path)
    copy = make("/data/Y", {"a.ipynb": {"c1", "c2"}})  # an untouched copy of the notebook
    assert copy.page("a.ipynb")[0] == []
    with pytest.raises(UnknownChat):
        copy.get("chat_made")
    assert copy.persistence.unrooted_note() is not None  # type: ignore[union-attr]
    worked = make("/data/X", {"a.ipynb": {"c1", "c2", "agent01"}})
    assert [c.chat_id for c in worked.page("a.ipynb")[0]] == ["chat_made"]
    assert worked.get("chat_made").notebook_path == "a.ipynb"
    assert worked.persistence.store.flush()  # type: ignore[union-attr]
    assert dict(_rows(path, "SELECT chat_id, root FROM chats")) == {
        "chat_made": "/data/X",
        "chat_read": None,
    }, "adopted for good by the root with the evidence; the other stays unlisted, unrooted"
    assert _rows(path, "SELECT value FROM meta WHERE key='schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    # Once adopted, it is X's: the copy never gets it, even when its notebook later holds that cell.
    later = make("/data/Y", {"a.ipynb": {"c1", "c2", "agent01"}})
    assert later.page("a.ipynb")[0] == [] and later.page(None)[0] == []
    assert [c.chat_id for c in make("/data/X").page(None)[0]] == ["chat_made"]
    assert {c.chat_id for c in make(None).page("a.ipynb")[0]} == {"chat_made", "chat_read"}, (
        "a store serving one server (no root) still lists everything"
    )
