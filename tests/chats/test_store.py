"""Chats stored in SQLite: what is saved, how a chat comes back, recovery and a failing disk."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.aaep.check import SequenceChecker
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.chat_json import chat_json
from jupyter_aaep.chats.persistence import RESTART_HINT, ChatPersistence, Discard
from jupyter_aaep.chats.runner import ChatBusy, ChatRunner, InvalidInput, UnknownChat
from jupyter_aaep.mcp.outside_agents import OutsideAgents
from jupyter_aaep.store.chat_store import ChatStore, StoredChat, decode_cursor, encode_cursor
from jupyter_aaep.testing.fake_anthropic import ErrorReply, FakeAnthropic, ToolUse, Turn

GATE = asyncio.Event()


@aaep_tool(risk_level="low")
async def slow_step(name: str) -> str:
    """Wait until the test lets it finish.

    Parameters
    ----------
    name : str
        What the step is called.
    """
    await GATE.wait()
    return f"{name} done"


class Rig:
    """Runners over one database file, as successive server processes would have."""

    def __init__(self, fake: FakeAnthropic, path: Path) -> None:
        self.fake = fake
        self.path = path
        self.clients: list[anthropic.AsyncAnthropic] = []
        self.stores: list[ChatStore] = []

    def runner(self, *, store: ChatStore | None = None, recover: bool = True) -> ChatRunner:
        for (
            earlier
        ) in self.stores:  # what the previous "process" queued is on disk, as after its stop
            assert earlier.flush()
        store = store or ChatStore(str(self.path))
        self.stores.append(store)

        def client() -> anthropic.AsyncAnthropic:
            self.clients.append(
                anthropic.AsyncAnthropic(
                    base_url=self.fake.base_url, api_key=self.fake.api_key, max_retries=0
                )
            )
            return self.clients[-1]

        runner = ChatRunner(
            client_factory=client,
            config=AgentConfig(model="claude-test"),
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), slow_step]),
            persistence=ChatPersistence(store),
        )
        if recover:
            runner.persistence.recover(runner.producer)  # type: ignore[union-attr]
        return runner

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        for store in self.stores:
            store.close()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    GATE.clear()
    async with FakeAnthropic() as fake:
        rig = Rig(fake, tmp_path / "aaep" / "chats.sqlite3")
        yield rig
        await rig.close()
        assert fake.problems == []


def stored_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute(sql))


async def test_a_chat_comes_back_after_a_restart_with_history_events_and_title(rig: Rig) -> None:
    first = rig.runner()
    chat = first.create_chat("analysis.ipynb")
    rig.fake.add(Turn(text="Hi there."), Turn(text="Still here."))
    first.submit(chat.chat_id, "  hello   world  ")
    await chat.task  # type: ignore[misc]
    first.submit(chat.chat_id, "again")
    await chat.task  # type: ignore[misc]
    await first.shutdown()
    assert first.persistence is not None and first.persistence.store.flush()
    events = chat.emitter.history

    second = rig.runner()
    assert second.chats() == [], "nothing is loaded until asked for"
    assert second.persistence is not None
    assert second.persistence.title_of(chat.chat_id) == "hello world"  # for the grants' list
    assert second.persistence.title_of("chat_unknown") is None
    assert second.chats() == [], "reading a title loads nothing"
    again = second.get(chat.chat_id)
    assert again.history == chat.history and len(again.history) == 4
    assert again.title == "hello world" and again.created == chat.created
    assert again.emitter.history == events, "every event, in order, for replay"
    middle = events[3]["event_id"]
    assert second.replay(chat.chat_id, middle) == events[4:]
    again.emitter._history.clear()  # older than what memory keeps: the stored log answers
    assert second.replay(chat.chat_id, middle) == events[4:]
    again.emitter.restore_history(events)
    assert [s for (s,) in stored_rows(rig.path, "SELECT status FROM sessions")] == [
        "completed",
        "completed",
    ]
    usage = json.loads(stored_rows(rig.path, "SELECT usage FROM sessions LIMIT 1")[0][0])
    assert usage["output_tokens"] > 0
    assert stored_rows(rig.path, "PRAGMA journal_mode")[0][0] == "wal"

    # A follow-up in the reloaded chat has the earlier exchange in its context.
    rig.fake.add(Turn(text="Yes."))
    second.submit(chat.chat_id, "do you remember?")
    await again.task  # type: ignore[misc]
    assert [m["role"] for m in rig.fake.requests[-1].body["messages"]] == [
        "user",
        "assistant",
    ] * 2 + ["user"]
    await second.shutdown()


async def test_every_model_request_and_tool_call_is_a_step_record(rig: Rig) -> None:
    """One tool call and two model requests: three rows, with their fields, after a reopen."""
    GATE.set()
    first = rig.runner()
    chat = first.create_chat("analysis.ipynb")
    rig.fake.add(
        Turn(text="Loading.", tool_uses=[ToolUse("slow_step", {"name": "load"})]),
        Turn(text="Loaded."),
    )
    session_id = first.submit(chat.chat_id, "load the data")
    await chat.task  # type: ignore[misc]
    await first.shutdown()

    second = rig.runner()  # the same file, opened again
    steps = second.persistence.store.read.steps(session_id)  # type: ignore[union-attr]
    assert [(s.kind, s.status, s.name) for s in steps] == [
        ("model_request", "success", "claude-test"),
        ("tool", "success", "slow_step"),
        ("model_request", "success", "claude-test"),
    ]
    asked, tool, answered = steps
    assert asked.text == "The model asked for 1 tool." and answered.text == "The model answered."
    sent = [r.usage for r in rig.fake.requests]
    for step, reported in zip((asked, answered), sent, strict=True):
        assert reported is not None
        assert (
            step.input_tokens == reported.input_tokens
            and step.output_tokens is not None
            and step.output_tokens > 0
        )
        assert step.cache_read_tokens == reported.cache_read_input_tokens
        assert step.cache_write_tokens == reported.cache_creation_input_tokens
        assert (
            step.latency_ms is not None
            and step.latency_ms >= 0
            and step.error is None
            and step.created
        )
    assert tool.text == "Finished: slow step.", tool.text
    assert tool.latency_ms is not None and tool.input_tokens is None and tool.error is None
    assert sum(s.output_tokens or 0 for s in steps) == chat.usage.output_tokens
    assert stored_rows(rig.path, "SELECT COUNT(*) FROM steps")[0][0] == 3

    # A request that fails is a step too, with the reason and no tokens.
    again = second.get(chat.chat_id)
    rig.fake.add(ErrorReply(529, "overloaded_error", "Overloaded", retry_after=0))
    failed_session = second.submit(chat.chat_id, "once more")
    await again.task  # type: ignore[misc]
    await second.shutdown()
    assert second.persistence is not None and second.persistence.store.flush()
    [failed] = second.persistence.store.read.steps(failed_session)
    assert (failed.kind, failed.status, failed.input_tokens) == ("model_request", "error", None)
    assert failed.error and "overloaded" in failed.error.lower()
    assert failed.to_json()["status"] == "error" and "input_tokens" not in failed.to_json()


async def test_chats_are_listed_newest_first_in_pages_and_follow_a_renamed_notebook(
    rig: Rig,
) -> None:
    runner = rig.runner()
    made = [runner.create_chat("a.ipynb") for _ in range(5)]
    for index, chat in enumerate(made):
        chat.updated = f"2026-01-0{index + 1}T00:00:00.000Z"
        runner.persistence.store.save_chat(chat.to_stored(root=runner.persistence.roots.root))  # type: ignore[union-attr]
    runner.create_chat("b.ipynb")
    assert runner.persistence is not None and runner.persistence.store.flush()
    fresh = rig.runner()
    page, cursor = fresh.page("a.ipynb", limit=2)
    assert [c.chat_id for c in page] == [made[4].chat_id, made[3].chat_id]
    assert all(isinstance(c, StoredChat) for c in page), "listing loads nothing"
    page2, cursor2 = fresh.page("a.ipynb", limit=2, before=cursor)
    page3, cursor3 = fresh.page("a.ipynb", limit=2, before=cursor2)
    assert [c.chat_id for c in page2 + page3] == [made[2].chat_id, made[1].chat_id, made[0].chat_id]
    assert cursor3 is None
    assert len(fresh.page(None, limit=20)[0]) == 6
    with pytest.raises(InvalidInput, match="cursor"):
        fresh.page(None, before="nonsense")
    assert decode_cursor(encode_cursor("x", "chat_1")) == ("x", "chat_1")

    # The notebook is renamed: its chats are found under the new path through its file id.
    ids = {"a.ipynb": "file-1", "renamed.ipynb": "file-1"}
    store = rig.stores[-1]
    store.save_chat(
        StoredChat(
            chat_id="chat_f",
            notebook_path="a.ipynb",
            file_id="file-1",
            title="t",
            created="2026-02-01T00:00:00.000Z",
            updated="2026-02-01T00:00:00.000Z",
            approval_mode="ask",
            can_continue=False,
        )
    )
    store.flush()
    fresh.persistence = ChatPersistence(store, file_id=ids.get)
    found, _ = fresh.page("renamed.ipynb")
    assert [c.chat_id for c in found] == ["chat_f"] and found[0].notebook_path == "renamed.ipynb"


@pytest.mark.open_sessions
async def test_an_outside_agents_request_cut_by_a_crash_is_told_as_its_own_without_continue(
    rig: Rig, aaep_event_audit: SequenceChecker
) -> None:
    """Issue 25: Claude Code's step waits for approval when the server dies. The next start
    closes its session in Claude Code's name, says nothing it asked for ran, and offers no
    Continue (its own model decides whether to ask again; Continue would be refused)."""
    first = rig.runner()
    chat = first.create_chat("analysis.ipynb", approval_mode="ask_all")  # every change asks
    agents = OutsideAgents(first, first.registry_factory)
    call = asyncio.ensure_future(
        agents.call(
            client_key="mcp-session-1",
            client_name="Claude Code",
            notebook_path="analysis.ipynb",
            tool="slow_step",
            arguments={"name": "load"},
        )
    )
    while not any(
        e.get("type") == "aaep:agent.awaiting.confirmation" for e in chat.emitter.history
    ):
        await asyncio.sleep(0.01)
    session_id = chat.session.id  # type: ignore[union-attr]
    assert first.persistence is not None
    first.persistence.freeze(chat)  # the process dies: nothing more reaches the store
    chat.session.emitter = Discard()  # type: ignore[union-attr]

    second = rig.runner()  # start-up recovery
    again = second.get(chat.chat_id)
    last = again.emitter.history[-1]
    assert last["type"] == "aaep:agent.session.errored" and last["session_id"] == session_id
    assert last["summary_normal"] == (
        "Claude Code's request stopped when the server stopped; nothing it asked for ran."
    )
    assert "Continue" not in json.dumps(last) and "the agent" not in last["summary_normal"]
    assert (last["recoverable"], last["error_code"], last["producer"]["agent_name"]) == (
        False,
        "OUTSIDE_AGENT_SERVER_RESTARTED",
        "Claude Code",
    )
    assert last["remediation_hint"] == "Ask Claude Code again if you still want it done."
    assert chat_json(again)["can_continue"] is False
    with pytest.raises(ChatBusy):
        second.continue_chat(chat.chat_id)
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert not any(e.get("type") == "aaep:agent.tool.invoked" for e in again.emitter.history)


async def test_idle_chats_are_evicted_from_memory_and_loaded_again_on_demand(rig: Rig) -> None:
    runner = rig.runner()
    runner.loaded_limit = 2
    chats = [runner.create_chat(None) for _ in range(3)]
    assert [c.chat_id for c in runner.chats()] == [chats[1].chat_id, chats[2].chat_id]
    assert runner.persistence is not None and runner.persistence.store.flush()
    back = runner.get(chats[0].chat_id)
    assert back is not chats[0] and back.chat_id == chats[0].chat_id
    assert chats[1].chat_id not in {c.chat_id for c in runner.chats()}
    with pytest.raises(UnknownChat):
        runner.get("chat_unknown")


@pytest.mark.open_sessions
async def test_a_session_cut_by_a_restart_is_closed_as_errored_and_can_be_continued(
    rig: Rig, aaep_event_audit: SequenceChecker
) -> None:
    first = rig.runner()
    chat = first.create_chat("analysis.ipynb")
    rig.fake.add(Turn(tool_uses=[ToolUse("slow_step", {"name": "load"})]))
    session_id = first.submit(chat.chat_id, "load the data")
    while not any(e.get("type") == "aaep:agent.tool.invoked" for e in chat.emitter.history):
        await asyncio.sleep(0.01)
    seen = [e["event_id"] for e in chat.emitter.history]
    await first.shutdown()  # the server stops mid-tool
    assert not any(e.get("type") == "aaep:agent.session.cancelled" for e in chat.emitter.history)

    second = rig.runner()  # start-up recovery
    again = second.get(chat.chat_id)
    last = again.emitter.history[-1]
    assert last["type"] == "aaep:agent.session.errored" and last["session_id"] == session_id
    assert (
        last["error_code"],
        last["error_category"],
        last["recoverable"],
        last["remediation_hint"],
    ) == ("SERVER_RESTARTED", "transient", True, RESTART_HINT)
    history = again.emitter.history
    assert [e["event_id"] for e in history[: len(seen)]] == seen, "nothing lost or duplicated"
    closing = history[len(seen) :]
    assert [e["type"].removeprefix("aaep:agent.") for e in closing] == [
        "tool.completed",
        "session.errored",
    ]
    assert closing[0]["status"] == "error" and "server stopped" in closing[0]["error_message"]
    assert second.replay(chat.chat_id, seen[-1]) == closing
    assert chat_json(again)["can_continue"] is True
    assert rig.stores[-1].read.running_sessions() == []
    assert rig.stores[-1].flush()
    [step] = [s for s in rig.stores[-1].read.steps(session_id) if s.kind == "tool"]
    assert (step.name, step.status) == ("slow_step", "error") and "server stopped" in (
        step.error or ""
    )
    third = rig.runner()  # a second restart closes nothing twice
    assert third.get(chat.chat_id).emitter.history[-1]["event_id"] == last["event_id"]

    rig.fake.add(Turn(text="Carried on."))
    new_session = second.continue_chat(chat.chat_id)
    assert new_session != session_id
    await again.task  # type: ignore[misc]
    sent = rig.fake.requests[-1].body["messages"]
    assert sent[0]["content"][0]["text"] == "load the data"
    assert (
        sent[1]["content"][0]["type"] == "tool_use"
        and sent[2]["content"][0]["type"] == "tool_result"
    )
    assert "Continue that request" in rig.fake.requests[-1].last_user_text
    assert chat_json(again)["can_continue"] is False
    with pytest.raises(ChatBusy, match="nothing to continue"):
        second.continue_chat(chat.chat_id)
    await second.shutdown()


async def test_an_in_memory_store_and_the_runner_without_one() -> None:
    store = ChatStore(":memory:")
    store.save_chat(
        StoredChat(
            chat_id="chat_m",
            notebook_path="n.ipynb",
            file_id=None,
            title="m",
            created="2026-01-01T00:00:00.000Z",
            updated="2026-01-01T00:00:00.000Z",
            approval_mode="ask",
            can_continue=False,
        )
    )
    store.append_event("chat_m", {"kind": "note", "event_id": None})
    assert store.flush()
    assert [c.chat_id for c in store.read.list_chats(notebook_path="n.ipynb")] == ["chat_m"]
    assert store.read.events("chat_m") == [{"kind": "note", "event_id": None}]
    assert store.read.events_after("chat_m", "evt_missing") is None
    store.close()
    plain = ChatRunner(client_factory=lambda: None, registry_factory=lambda chat: ToolRegistry([]))  # type: ignore[arg-type,return-value]
    chat = plain.create_chat(None)
    assert (
        plain.storage_problem is None and plain.stored_events_after(chat.chat_id, "evt_x") is None
    )
    assert plain.page()[0] == [chat]


class Notebooks:
    """The notebook service's record-and-undo side, in memory: cells per path."""

    def __init__(self) -> None:
        self.cells: dict[str, list[dict[str, Any]]] = {"nb.ipynb": [{"id": "a", "source": "1"}]}
        self.records: list[Any] = []

    def begin_record(
        self, chat_id: str, session_id: str, path: str, on_change: Any, *, actor: str = "The agent"
    ) -> Any:
        from jupyter_aaep.notebook.edit_record import EditRecord

        self.records.append(EditRecord(path, session_id, on_change=on_change, actor=actor))
        return self.records[-1]

    def end_record(self, chat_id: str) -> None:
        return None

    async def undo(self, path: str, records: list[Any], *, others: Any = ()) -> Any:
        from jupyter_aaep.notebook.edit_record import EditRecord

        created = {
            op.cell_id
            for r in records
            for op in EditRecord.from_json(r).operations  # type: ignore[union-attr]
            if op.kind == "create"
        }
        self.cells[path] = [c for c in self.cells[path] if c["id"] not in created]
        return type(
            "Report", (), {"removed": len(created), "added": 0, "restored": 0, "kept": []}
        )()

    async def save(self, path: str) -> bool:
        return True


async def test_edit_records_survive_a_restart(rig: Rig) -> None:
    from jupyter_aaep.notebook.edit_record import CellOperation

    notebooks = Notebooks()
    first = rig.runner()
    first.services = AgentServices(notebook=notebooks)
    chat = first.create_chat("nb.ipynb")
    rig.fake.add(Turn(text="Done."), Turn(text="Done."))
    first.submit(chat.chat_id, "read it")
    await chat.task  # type: ignore[misc]
    assert chat.snapshots == {}, "a session that changed nothing has nothing to undo"
    session_id = first.submit(chat.chat_id, "change it")
    await chat.task  # type: ignore[misc]
    notebooks.cells["nb.ipynb"].append({"id": "b", "source": "2"})
    notebooks.records[-1].add(
        CellOperation("create", "b", after={"source": "2", "cell_type": "code"})
    )
    second = rig.runner()
    second.services = AgentServices(notebook=notebooks)
    again = second.get(chat.chat_id)
    assert (
        list(again.snapshots) == [session_id]
        and again.snapshots[session_id]["operations"][0]["cell_id"] == "b"
    )
    assert chat_json(second.page("nb.ipynb")[0][0])["undoable_sessions"] == [session_id]
    await second.revert(chat.chat_id)
    assert notebooks.cells["nb.ipynb"] == [{"id": "a", "source": "1"}]
    third = rig.runner()
    assert third.get(chat.chat_id).snapshots == {}, "an undone record is gone from the store too"


async def test_a_tool_s_completion_is_told_only_once_its_edit_record_is_stored(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server killed right after "Created cell 4." names the edit on restart: the record is
    committed before listeners hear the completion, even when the disk is slow."""
    import time

    from jupyter_aaep.notebook.edit_record import CellOperation

    notebooks = Notebooks()
    runner = rig.runner()
    runner.services = AgentServices(notebook=notebooks)
    store = rig.stores[-1]

    @aaep_tool(risk_level="low")
    async def make_cell() -> str:
        """Add a cell."""
        notebooks.records[-1].add(CellOperation("create", "n", after={"source": "1"}))
        return "Created a cell."

    def slow_save(chat_id: str, session_id: str, snapshot: dict[str, Any]) -> None:
        text = json.dumps(snapshot)

        def run(conn: sqlite3.Connection) -> None:
            time.sleep(0.4)  # a slow disk: the event loop has long emitted what followed
            conn.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)", (chat_id, session_id, text)
            )

        store._submit(run, key=("snapshot", chat_id, session_id))

    monkeypatch.setattr(store, "save_snapshot", slow_save)
    runner.registry_factory = lambda chat: ToolRegistry([make_cell])
    chat = runner.create_chat("nb.ipynb")
    stored_at_completion: list[list[str]] = []

    class Listener:
        def deliver(self, event: dict[str, Any]) -> None:
            if event["type"] == "aaep:agent.tool.completed":
                stored_at_completion.append(list(store.read.snapshots(chat.chat_id)))

    chat.emitter.subscribe(Listener())
    rig.fake.add(Turn(tool_uses=[ToolUse("make_cell", {})]), Turn(text="Done."))
    session_id = runner.submit(chat.chat_id, "add a cell")
    await chat.task  # type: ignore[misc]
    assert stored_at_completion == [[session_id]], stored_at_completion


@pytest.mark.open_sessions
async def test_recovery_closes_an_open_output_and_skips_a_session_that_never_spoke(
    rig: Rig,
) -> None:
    from jupyter_aaep.aaep import Emitter, Producer, Session, SessionStarted, Summary
    from jupyter_aaep.aaep.events import OutputStreaming

    store = ChatStore(str(rig.path))
    rig.stores.append(store)
    store.save_chat(
        StoredChat(
            chat_id="chat_o",
            notebook_path=None,
            file_id=None,
            title="o",
            created="2026-01-01T00:00:00.000Z",
            updated="2026-01-01T00:00:00.000Z",
            approval_mode="ask",
            can_continue=False,
        )
    )
    emitter = Emitter()
    session = Session(emitter, Producer(model="m"))
    emitter.subscribe(
        type("ToStore", (), {"deliver": lambda self, e: store.append_event("chat_o", e)})()
    )
    session.emit(SessionStarted(summary=Summary("Started.")))
    store.session_started("chat_o", session.id, "2026-01-01T00:00:00.000Z")
    session.change_state("thinking")
    session.change_state("writing_output")
    session.emit(OutputStreaming(chunk="Half an answer", position=0, complete=False))
    store.session_started(
        "chat_o", "sess_" + "0" * 32, "2026-01-01T00:00:00.000Z"
    )  # no event ever published
    runner = rig.runner()
    loaded = runner.get("chat_o")
    tail = loaded.emitter.history[-2:]
    assert [e["type"].removeprefix("aaep:agent.") for e in tail] == [
        "output.streaming",
        "session.errored",
    ]
    assert tail[0]["complete"] is True and tail[0]["position"] == len("Half an answer")
    assert rig.stores[-1].read.running_sessions() == []
    assert ChatPersistence(store, file_id=lambda path: 1 / 0).file_id_of("x.ipynb") is None  # type: ignore[arg-type,return-value]


async def test_a_chats_model_choice_survives_a_restart_and_old_databases_are_upgraded(
    rig: Rig,
) -> None:
    # A database written by the previous schema (version 2: no model columns) opens and upgrades.
    rig.path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(rig.path) as conn:
        conn.execute(
            "CREATE TABLE chats (chat_id TEXT PRIMARY KEY, notebook_path TEXT, file_id TEXT, "
            "title TEXT NOT NULL DEFAULT '', created TEXT NOT NULL, updated TEXT NOT NULL, "
            "approval_mode TEXT NOT NULL DEFAULT 'ask', history TEXT NOT NULL DEFAULT '[]', "
            "can_continue INTEGER NOT NULL DEFAULT 0)"
        )
        conn.execute("INSERT INTO chats (chat_id, created, updated) VALUES ('chat_old', 'a', 'a')")
    first = rig.runner()
    assert first.get("chat_old").model is None, "an old chat uses the server's default"
    chat = first.create_chat("models.ipynb")
    first.set_model(chat.chat_id, "claude-other", "Claude Other")
    await first.shutdown()

    second = rig.runner()
    again = second.get(chat.chat_id)
    assert (again.model, again.model_label) == ("claude-other", "Claude Other")
    rig.fake.add(Turn(text="Hi."))
    second.submit(chat.chat_id, "hello")
    await again.task  # type: ignore[misc]
    assert rig.fake.requests[-1].body["model"] == "claude-other"
    # Back to the default: nothing stored.
    second.set_model(chat.chat_id, "claude-test")
    await second.shutdown()
    assert rig.runner().get(chat.chat_id).model is None
