"""A chat store that heals: a foreign lock, a full disk and a read-only file, each followed by recovery.

Real SQLite files and real faults (see ``store_faults.py``). In each case: the sessions
during the outage keep working, the chat is told exactly once that it is not being saved
(with advice that fits the cause) and exactly once that it is saved again, and after a
"restart" (a new runner on the same file) every session is there, completed, with its
events: none shows as interrupted.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.aaep.check import SequenceChecker
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.persistence import ChatPersistence
from jupyter_aaep.chats.runner import Chat, ChatRunner
from jupyter_aaep.chats.store_notices import recovered_words
from jupyter_aaep.store.chat_store import ChatStore, StoredChat
from jupyter_aaep.store.health import StoreHealth
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from tests.store.store_faults import ForeignLock, SmallDisk, immutable, skip_reason

GATE = asyncio.Event()
"""Lets ``long_step`` finish; a new one per test (an Event belongs to the loop that first waits on it)."""
NOT_SAVED = "not being saved right now"
SAVED_AGAIN = "being saved again"


@aaep_tool(risk_level="low")
async def long_step(name: str) -> str:
    """Wait until the test lets it finish.

    Parameters
    ----------
    name : str
        What the step is called.
    """
    await GATE.wait()
    return f"{name} done"


async def wait_until(
    condition: Callable[[], bool],
    timeout: float = 30.0,
    what: str | Callable[[], str] = "condition",
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.01)


class Process:
    """One "server process": a store on the file and a runner told of the store's health
    on its loop, as the server extension does."""

    def __init__(
        self,
        fake: FakeAnthropic,
        path: Path,
        *,
        lock_timeout: float = 0.3,
        retry_max_seconds: float = 0.2,
        **store_options: Any,
    ) -> None:
        self.fake = fake
        self.clients: list[anthropic.AsyncAnthropic] = []
        self.store = ChatStore(
            str(path),
            lock_timeout=lock_timeout,
            retry_max_seconds=retry_max_seconds,
            **store_options,
        )
        loop = asyncio.get_running_loop()
        self.store.on_health = lambda health: loop.call_soon_threadsafe(
            self.runner.storage_changed, health
        )
        self.runner = ChatRunner(
            client_factory=self._client,
            config=AgentConfig(model="claude-test"),
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), long_step]),
            persistence=ChatPersistence(self.store),
        )
        self.recovered = self.runner.persistence.recover(self.runner.producer)  # type: ignore[union-attr]

    def _client(self) -> anthropic.AsyncAnthropic:
        self.clients.append(
            anthropic.AsyncAnthropic(
                base_url=self.fake.base_url, api_key=self.fake.api_key, max_retries=0
            )
        )
        return self.clients[-1]

    async def ask(self, chat: Chat, text: str, answer: str) -> None:
        self.fake.add(Turn(text=answer))
        self.runner.submit(chat.chat_id, text)
        await chat.task  # type: ignore[misc]
        assert chat.results[-1].answer == answer

    async def ask_while_failing(self, chat: Chat, text: str, answer: str) -> None:
        """A request that is still running when the store notices the fault (a long tool step)."""
        GATE.clear()
        self.fake.add(Turn(tool_uses=[ToolUse("long_step", {"name": "load"})]), Turn(text=answer))
        self.runner.submit(chat.chat_id, text)
        await wait_until(
            lambda: bool(notices(chat, NOT_SAVED)) or not chat.running,
            what=lambda: (
                f"the chat to hear it is not saved ({self.store.health}, "
                f"{[e['type'] for e in chat.emitter.history[-6:]]})"
            ),
        )
        assert chat.running, "the notice came while the request was running"
        GATE.set()
        await chat.task  # type: ignore[misc]
        assert chat.results[-1].answer == answer, "the agent keeps working while nothing is saved"
        assert all(
            e.get("status") != "error"
            for e in chat.emitter.history
            if e.get("type") == "aaep:agent.tool.completed"
        ), "the long step itself worked"

    async def close(self) -> None:
        await self.runner.shutdown()
        self.store.close()
        for client in self.clients:
            await client.close()


def notices(chat: Chat, words: str) -> list[dict[str, Any]]:
    return [
        e
        for e in chat.emitter.history
        if e.get("type") == "aaep:agent.progress.updated" and words in str(e.get("summary_normal"))
    ]


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    global GATE
    GATE = asyncio.Event()
    GATE.set()
    async with FakeAnthropic() as fake:
        yield fake
        assert fake.problems == []


async def check_everything_stored(
    fake: FakeAnthropic, path: Path, chat: Chat, answers: list[str]
) -> None:
    """A later process finds every session completed, with its events, and nothing to recover."""
    later = Process(fake, path)
    try:
        assert later.recovered == [], "no session shows as interrupted by a restart"
        with sqlite3.connect(path) as conn:
            statuses = [
                s
                for (s,) in conn.execute(
                    "SELECT status FROM sessions WHERE chat_id=? ORDER BY started", (chat.chat_id,)
                )
            ]
        assert statuses == ["completed"] * len(answers)
        again = later.runner.get(chat.chat_id)
        history = str(again.history)
        positions = [history.find(answer) for answer in answers]
        assert -1 not in positions and positions == sorted(positions), (
            "the model history has every answer, in order"
        )
        ends = [e for e in again.emitter.history if e.get("type") == "aaep:agent.session.completed"]
        assert len(ends) == len(answers), "every session's events are stored, its end included"
        checker = SequenceChecker()  # the stored log reads as well-formed sessions
        for event in again.emitter.history:
            checker.feed(event)
        checker.finish()
    finally:
        await later.close()


def told_once_each_way(chat: Chat, advice: str) -> None:
    degraded, recovered = notices(chat, NOT_SAVED), notices(chat, SAVED_AGAIN)
    assert len(degraded) == 1 and len(recovered) == 1, [
        e.get("summary_normal") for e in degraded + recovered
    ]
    assert advice in degraded[0]["summary_normal"], degraded[0]["summary_normal"]
    assert (
        "free some disk space" not in degraded[0]["summary_normal"].lower()
        or advice == "disk is full"
    )
    assert degraded[0]["urgency"] == "normal" and recovered[0]["urgency"] == "normal"
    assert "everything from while it was not" in recovered[0]["summary_normal"]


async def test_a_foreign_lock_then_release_loses_nothing_and_tells_the_chat_once_each_way(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "aaep" / "chats.sqlite3"
    process = Process(fake, path)
    try:
        chat = process.runner.create_chat(None)
        await process.ask(chat, "one", "First.")
        lock = ForeignLock(path)
        await process.ask_while_failing(chat, "two", "Second.")
        assert process.store.health.cause == "locked"
        await process.ask(chat, "three", "Third.")  # idle before it: told already, not again
        released = lock.release()
        await wait_until(lambda: process.store.ok, what="storing to resume")
        recovery = time.monotonic() - released
        assert recovery < 2.0, f"storing resumed {recovery:.2f} s after the lock was released"
        await process.ask(
            chat, "four", "Fourth."
        )  # hears, after it started, that saving works again
        told_once_each_way(chat, "another program is using the chat database")
        assert process.store.flush()
    finally:
        await process.close()
    await check_everything_stored(fake, path, chat, ["First.", "Second.", "Third.", "Fourth."])


async def test_a_full_disk_then_freed_space_loses_nothing_and_tells_the_chat_once_each_way(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    reason = skip_reason("full", tmp_path)
    if reason:
        pytest.skip(reason)
    disk = SmallDisk(tmp_path / "disk")
    try:
        path = disk.where / "aaep" / "chats.sqlite3"
        process = Process(fake, path)
        try:
            chat = process.runner.create_chat(None)
            await process.ask(chat, "one", "First.")
            disk.fill()
            await process.ask_while_failing(chat, "two", "Second.")
            assert process.store.health.cause == "full"
            disk.free()
            await wait_until(lambda: process.store.ok, what="storing to resume")
            await process.ask(chat, "three", "Third.")
            told_once_each_way(chat, "disk is full")
            assert process.store.flush()
        finally:
            await process.close()
        await check_everything_stored(fake, path, chat, ["First.", "Second.", "Third."])
    finally:
        disk.unmount()


async def test_a_read_only_database_at_start_runs_without_saving_then_heals(
    fake: FakeAnthropic, tmp_path: Path, caplog: Any
) -> None:
    reason = skip_reason("read_only", tmp_path)
    if reason:
        pytest.skip(reason)
    path = tmp_path / "aaep" / "chats.sqlite3"
    first = Process(fake, path)
    chat = first.runner.create_chat(None)
    await first.ask(chat, "one", "First.")
    await first.close()
    immutable(path, True)
    try:
        with caplog.at_level(logging.INFO, logger="jupyter_aaep"):
            process = Process(fake, path)
        lines = [
            r for r in caplog.records if "chat" in r.getMessage() and r.levelno >= logging.WARNING
        ]
        assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
        assert "cannot be written" in lines[0].getMessage() and "writable" in lines[0].getMessage()
        assert not process.store.ok and process.store.health.cause == "read_only"
        again = process.runner.get(chat.chat_id)  # what was stored can still be read
        assert again.title == "one"
        await process.ask(
            again, "two", "Second."
        )  # told at its start: the store was down before it
        assert len(notices(again, NOT_SAVED)) == 1
        assert "read-only" in notices(again, NOT_SAVED)[0]["summary_normal"]
        immutable(path, False)
        await wait_until(lambda: process.store.ok, what="storing to resume")
        await process.ask(again, "three", "Third.")
        told_once_each_way(again, "read-only")
        assert process.store.flush()
        await process.close()
    finally:
        immutable(path, False)
    await check_everything_stored(fake, path, chat, ["First.", "Second.", "Third."])


@pytest.mark.slow
async def test_a_thirty_second_foreign_lock_with_the_default_wait(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    """The issue's case at its real length, with the server's default lock wait and retry pause (5 s)."""
    path = tmp_path / "aaep" / "chats.sqlite3"
    process = Process(fake, path, lock_timeout=5.0, retry_max_seconds=5.0)
    try:
        chat = process.runner.create_chat(None)
        await process.ask(chat, "one", "First.")
        lock = ForeignLock(path)
        started = time.monotonic()
        await process.ask_while_failing(chat, "two", "Second.")
        for number in range(3):
            await process.ask(chat, f"during {number}", f"During {number}.")
        await asyncio.sleep(max(0.0, 30 - (time.monotonic() - started)))
        released = lock.release()
        await wait_until(lambda: process.store.ok, timeout=30, what="storing to resume")
        assert time.monotonic() - released < 6.0
        await process.ask(chat, "after", "After.")
        told_once_each_way(chat, "another program")
        assert process.store.flush()
    finally:
        await process.close()
    await check_everything_stored(
        fake, path, chat, ["First.", "Second.", "During 0.", "During 1.", "During 2.", "After."]
    )


async def test_the_queue_is_bounded_and_the_notice_says_what_was_given_up(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    healths: list[StoreHealth] = []
    store = ChatStore(
        str(path), lock_timeout=0.1, retry_max_seconds=0.1, queue_limit=50, on_health=healths.append
    )
    chat = StoredChat(
        chat_id="chat_q",
        notebook_path=None,
        file_id=None,
        title="q",
        created="2026-01-01T00:00:00.000Z",
        updated="2026-01-01T00:00:00.000Z",
        approval_mode="ask",
        can_continue=False,
    )
    store.save_chat(chat)
    assert store.flush()
    lock = ForeignLock(path)
    store.session_started("chat_q", "sess_a", "2026-01-01T00:00:01.000Z")
    for number in range(200):
        store.append_event(
            "chat_q", {"event_id": f"evt_{number}", "session_id": "sess_a", "n": number}
        )
    store.session_ended("sess_a", "completed", "2026-01-01T00:00:02.000Z", {"type": "end"}, None)
    for number in range(30):  # one chat row, however often it changed
        store.save_chat(StoredChat(**{**chat.__dict__, "title": f"title {number}"}))
    deadline = time.monotonic() + 10
    while store.ok and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert not store.ok and store.failure and "another program" in store.failure
    lock.release()
    assert store.flush(10)
    store.close()
    with sqlite3.connect(path) as conn:
        kept = [
            n for (n,) in conn.execute("SELECT json_extract(body, '$.n') FROM events ORDER BY seq")
        ]
        assert kept == list(range(150, 200)), "the newest 50 steps wait; the oldest are given up"
        assert list(conn.execute("SELECT status FROM sessions")) == [("completed",)]
        assert list(conn.execute("SELECT title FROM chats")) == [("title 29",)]
    assert [h.saving for h in healths] == [False, True]
    assert healths[-1].dropped == 150
    assert "150 recorded steps" in recovered_words(healths[-1])[1]


async def test_an_unreadable_database_at_start_is_one_sentence_and_no_history(
    tmp_path: Path, caplog: Any
) -> None:
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(b"this is not a database, it is a text file " * 200)
    with caplog.at_level(logging.INFO, logger="jupyter_aaep"):
        store = ChatStore(str(path), lock_timeout=0.1, retry_max_seconds=0.1)
    try:
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert all(r.exc_info is None for r in caplog.records), "a sentence, not a traceback"
        assert len([r for r in warnings if "cannot be written" in r.getMessage()]) == 1
        assert not store.ok and store.read.list_chats() == [] and store.read.load_chat("x") is None
        store.save_chat(
            StoredChat(
                chat_id="chat_x",
                notebook_path=None,
                file_id=None,
                title="x",
                created="x",
                updated="x",
                approval_mode="ask",
                can_continue=False,
            )
        )
        assert not store.flush(0.5), "the write waits in memory"
    finally:
        store.close()
