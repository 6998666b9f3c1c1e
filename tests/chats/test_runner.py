from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.aaep import ListSubscriber
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.chat_json import chat_json
from jupyter_aaep.chats.runner import ChatBusy, ChatRunner, InvalidInput, UnknownChat
from jupyter_aaep.chats.undo_words import undo_summary
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn


@aaep_tool(risk_level="high", irreversible=True)
async def drop_table(name: str) -> str:
    """Drop a table.

    Parameters
    ----------
    name : str
        Table name.
    """
    return "dropped"


@pytest.fixture
async def runner():
    async with FakeAnthropic() as fake:
        clients: list[anthropic.AsyncAnthropic] = []

        def client_factory() -> anthropic.AsyncAnthropic:
            clients.append(
                anthropic.AsyncAnthropic(
                    base_url=fake.base_url, api_key=fake.api_key, max_retries=0
                )
            )
            return clients[-1]

        runner = ChatRunner(
            client_factory=client_factory,
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), drop_table]),
            config=AgentConfig(model="claude-test"),
        )
        runner.fake = fake  # type: ignore[attr-defined]
        yield runner
        await runner.shutdown()
        for client in clients:
            await client.close()
        assert fake.problems == []


async def wait_until(predicate, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_sessions_keep_chat_history_and_publish_aaep_events_only(runner: ChatRunner) -> None:
    chat = runner.create_chat("analysis.ipynb")
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    runner.fake.add(Turn(text="Hi there."), Turn(text="Still here."))  # type: ignore[attr-defined]

    first = runner.submit(chat.chat_id, "hello")
    assert chat.status == "running"
    await chat.task
    assert (
        seen.events[0]["type"] == "aaep:agent.session.started"
        and seen.events[0]["session_id"] == first
    )
    assert all("@context" in event for event in seen.events), (
        "no non-AAEP acknowledgement by default"
    )
    second = runner.submit(chat.chat_id, "again")
    await chat.task
    assert first != second
    assert chat_json(chat)["status"] == "idle"
    assert len(chat.history) == 4, "both exchanges stay in the chat's history"
    assert runner.chats("analysis.ipynb") == [chat] and runner.chats("other.ipynb") == []
    replay = runner.replay(chat.chat_id)
    started = [e for e in replay if e.get("type") == "aaep:agent.session.started"]
    assert len(started) == 2
    after = runner.replay(chat.chat_id, after_event_id=started[1]["event_id"])
    assert after[0]["type"] != "aaep:agent.session.started" and len(after) < len(replay)
    assert runner.replay(chat.chat_id, after_event_id="evt_unknown") == replay


async def test_the_conformance_switch_acknowledges_input_before_the_session(
    runner: ChatRunner,
) -> None:
    runner.acknowledge_input = True
    chat = runner.create_chat(None)
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    runner.fake.add(Turn(text="Hi there."))  # type: ignore[attr-defined]
    session_id = runner.submit(chat.chat_id, "hello")
    assert seen.events == [
        {"kind": "user_input.accepted", "session_id": session_id, "chat_id": chat.chat_id}
    ]
    await chat.task
    assert (
        seen.events[1]["type"] == "aaep:agent.session.started"
        and seen.events[1]["session_id"] == session_id
    )


async def test_busy_stop_and_bad_input(runner: ChatRunner) -> None:
    chat = runner.create_chat(None)
    runner.fake.add(Turn(text="slow " * 20, stall_after_chunks=2))  # type: ignore[attr-defined]
    runner.submit(chat.chat_id, "talk")
    with pytest.raises(ChatBusy):
        runner.submit(chat.chat_id, "more")
    await wait_until(lambda: chat.session is not None and chat.session.state == "writing_output")
    assert await runner.stop(chat.chat_id)
    assert not await runner.stop(chat.chat_id)
    assert chat.session.terminal_event["type"] == "aaep:agent.session.cancelled"
    assert chat.session.terminal_event["cancelled_by"] == "user"
    runner.fake.release()  # type: ignore[attr-defined]
    with pytest.raises(UnknownChat):
        runner.get("chat_nope")
    with pytest.raises(InvalidInput):
        runner.submit(chat.chat_id, "   ")
    with pytest.raises(InvalidInput):
        runner.create_chat(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        runner.set_approval_mode(chat.chat_id, "always")
    runner.set_approval_mode(chat.chat_id, "auto")
    assert chat_json(chat)["approval_mode"] == "auto"


async def test_replies_are_bound_to_the_chat_session(runner: ChatRunner) -> None:
    chat = runner.create_chat("a.ipynb")
    other = runner.create_chat("b.ipynb")
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    runner.fake.add(Turn(tool_uses=[ToolUse("drop_table", {"name": "t"})]), Turn(text="Dropped."))  # type: ignore[attr-defined]
    assert not runner.reply(chat.chat_id, {})
    runner.submit(chat.chat_id, "drop t")
    await wait_until(lambda: bool(seen.of_type("awaiting.confirmation")))
    confirmation = seen.of_type("awaiting.confirmation")[0]
    assert confirmation["default_decision"] == "reject" and confirmation["timeout_seconds"] == 300
    body = {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "decision": "accept",
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
    }
    assert not runner.reply(other.chat_id, body), "another chat cannot answer"
    assert runner.reply(chat.chat_id, body)
    await chat.task
    assert chat.results[-1].status == "completed"


async def test_shutdown_cancels_running_sessions_as_system(runner: ChatRunner) -> None:
    chat = runner.create_chat("a.ipynb")
    runner.fake.add(Turn(text="wait", stall_after_chunks=1))  # type: ignore[attr-defined]
    runner.submit(chat.chat_id, "go")
    await wait_until(lambda: chat.session is not None and chat.session.started)
    await runner.shutdown()
    assert chat.session.terminal_event["cancelled_by"] == "system"
    runner.fake.release()  # type: ignore[attr-defined]


class _NoRecords:
    """A notebook service of another kind: it saves, but records nothing."""

    async def save(self, path: str) -> bool:
        return True

    def begin_record(
        self, chat_id: str, session_id: str, path: str, on_change: Any = None, **_: Any
    ) -> None:
        return None

    def end_record(self, chat_id: str) -> None:
        return None


async def test_without_edit_records_there_is_nothing_to_undo(runner: ChatRunner) -> None:
    runner.services = AgentServices(notebook=_NoRecords())
    chat = runner.create_chat("a.ipynb")
    runner.fake.add(Turn(text="Fine."))  # type: ignore[attr-defined]
    runner.submit(chat.chat_id, "hi")
    await chat.task
    assert chat.results[-1].status == "completed"
    assert chat.snapshots == {} and chat_json(chat)["undoable_sessions"] == []
    with pytest.raises(InvalidInput, match="nothing to undo"):
        await runner.revert(chat.chat_id)


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ((1, 0, 0), "Undid the agent's changes to a.ipynb: removed 1 cell the agent added."),
        ((2, 0, 0), "Undid the agent's changes to a.ipynb: removed 2 cells the agent added."),
        ((0, 1, 0), "Undid the agent's changes to a.ipynb: put back 1 cell the agent deleted."),
        ((0, 0, 3), "Undid the agent's changes to a.ipynb: restored 3 cells the agent changed."),
        (
            (1, 0, 1),
            (
                "Undid the agent's changes to a.ipynb: removed 1 cell the agent added "
                "and restored 1 cell the agent changed."
            ),
        ),
        (
            (1, 2, 1),
            (
                "Undid the agent's changes to a.ipynb: removed 1 cell the agent added, "
                "put back 2 cells the agent deleted and restored 1 cell the agent changed."
            ),
        ),
        ((0, 0, 0), "Nothing to undo: a.ipynb already holds none of the agent's changes."),
    ],
)
def test_undo_summary_says_only_what_happened(counts: tuple[int, int, int], said: str) -> None:
    removed, added, restored = counts
    assert undo_summary("a.ipynb", removed=removed, added=added, restored=restored) == said
