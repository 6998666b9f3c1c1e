"""A new request while the agent waits for the user, and guidance for a session that has not
started yet: every accepted message gets exactly one receipt the user hears, and a request that
waits for an approval is replaced by a new one whether or not the session is paused there."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from jupyter_aaep.aaep import ListSubscriber
from jupyter_aaep.agent.control import STEERING_PREFIX
from jupyter_aaep.chats.runner import ChatBusy, ChatRunner
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn
from tests.chats import test_runner
from tests.chats.test_runner import wait_until

runner = test_runner.runner  # the chat runner against the scripted model (a fixture)


async def release_until(fake: Any, predicate: Any, timeout: float = 10.0) -> None:
    """Let a stalled stream go on, again until *predicate* holds (a release before the fake's
    thread reached its stall would not free it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("the stalled stream did not go on")
        fake.release()
        await asyncio.sleep(0.05)


def receipts(seen: ListSubscriber) -> list[dict]:
    return [
        e
        for e in seen.of_type("progress.updated")
        if e["summary_normal"].startswith("Guidance received")
    ]


def sent_texts(message: dict) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


async def test_guidance_before_a_superseding_session_starts_is_received_once(
    runner: ChatRunner,
) -> None:
    chat = runner.create_chat("a.ipynb")
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    fake = runner.fake  # type: ignore[attr-defined]
    fake.add(Turn(tool_uses=[ToolUse("drop_table", {"name": "t"})]), Turn(text="Counted the rows."))
    first = runner.submit(chat.chat_id, "drop t")
    await wait_until(lambda: chat.session is not None and chat.session.state == "awaiting_input")

    second = runner.submit(chat.chat_id, "never mind, count the rows")
    # The new session waits for the old one to close: it has not started yet.
    assert chat.session is not None and not chat.session.started
    item, applies, session_id = runner.guide(chat.chat_id, "only the big table")
    assert (applies, session_id) == ("next_turn", second)
    assert receipts(seen) == [], "no receipt before the session it belongs to has started"
    await chat.task

    got = receipts(seen)
    assert len(got) == 1 and got[0]["session_id"] == second
    assert (
        got[0]["summary_normal"]
        == "Guidance received: only the big table. It applies at the next step."
    )
    mine = [e["type"].rsplit(".", 2)[-2:] for e in seen.events if e.get("session_id") == second]
    assert mine[0] == ["session", "started"], "the receipt follows the session's start"
    assert item.applied and chat.results[-1].status == "completed"
    # It reached the model in the new session's first request, after the new request's text.
    assert sent_texts(fake.requests[-1].body["messages"][-1]) == [
        "never mind, count the rows",
        f"{STEERING_PREFIX} only the big table",
    ]
    cancelled = seen.of_type("session.cancelled")
    assert [e["session_id"] for e in cancelled] == [first]


async def test_guidance_while_nothing_runs_is_received_by_the_new_session_start(
    runner: ChatRunner,
) -> None:
    chat = runner.create_chat("a.ipynb")
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    runner.fake.add(Turn(text="Summary."))  # type: ignore[attr-defined]
    _, applies, session_id = runner.guide(chat.chat_id, "summarise")
    assert applies == "new_session"
    await chat.task
    started = seen.of_type("session.started")
    assert [e["session_id"] for e in started] == [session_id] and started[0][
        "request_text"
    ] == "summarise"
    assert receipts(seen) == [], "the session's start is the receipt: not said twice"


async def test_a_message_while_paused_in_a_confirmation_replaces_the_request(
    runner: ChatRunner,
) -> None:
    chat = runner.create_chat("a.ipynb")
    seen = ListSubscriber()
    chat.emitter.subscribe(seen)
    fake = runner.fake  # type: ignore[attr-defined]
    fake.add(
        Turn(tool_uses=[ToolUse("drop_table", {"name": "t"})]), Turn(text="Here are the rows.")
    )
    first = runner.submit(chat.chat_id, "drop t")
    await wait_until(lambda: chat.session is not None and chat.session.state == "awaiting_input")
    assert runner.pause(chat.chat_id) and chat.paused
    assert chat.waiting_for_user and not chat.working, (
        "paused inside an approval, it still waits for you"
    )

    second = runner.submit(chat.chat_id, "show me the rows instead")
    assert second != first
    await chat.task

    old = [e for e in seen.events if e.get("session_id") == first]
    end = old[-1]
    assert end["type"] == "aaep:agent.session.cancelled"
    assert (
        end["cancellation_reason"] == "superseded_by_new_request" and end["cancelled_by"] == "user"
    )
    assert end["summary_normal"] == (
        "Your new message replaced this request. What it was waiting for did not "
        "run. Changes made so far are kept."
    )
    assert not any(e["type"].endswith("tool.invoked") for e in old), "the table was never dropped"
    assert runner.broker.pending() == [], "the approval request is withdrawn"
    assert chat.results[-1].status == "completed" and not chat.paused
    # The model reads the replaced request as closed, then the new one.
    sent = fake.requests[-1].body["messages"]
    assert "the user sent a new request instead" in json.dumps(sent[:-1])
    assert sent_texts(sent[-1]) == ["show me the rows instead"]


async def test_a_message_while_paused_between_turns_is_still_busy_for_submit(
    runner: ChatRunner,
) -> None:
    """Paused while thinking (no approval waiting), a message is guidance for the server, and
    submit refuses to start a second session beside the paused one."""
    chat = runner.create_chat("a.ipynb")
    fake = runner.fake  # type: ignore[attr-defined]
    fake.add(Turn(text="thinking " * 10, stall_after_chunks=0), Turn(text="Done."))
    runner.submit(chat.chat_id, "think")
    await wait_until(lambda: len(fake.requests) == 1)
    assert runner.pause(chat.chat_id)
    await release_until(fake, lambda: chat.paused)
    assert chat.working and not chat.waiting_for_user
    with pytest.raises(ChatBusy):
        runner.submit(chat.chat_id, "something else")
    assert await runner.stop(chat.chat_id)
