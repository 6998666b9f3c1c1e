"""The live view's widget plumbing, in-process: the real agent loop behind a stand-in client.

``Bridge`` plays ``KernelClient``'s part (blocking ``subscribe``/``start_request``/``send`` as
K2's client has them, and an async ``events`` stream), wired to the real loop and broker, so
the view's task, its button callbacks and its replies run exactly as in a kernel, minus HTTP.
Real kernels and a real server are in ``test_view_kernel.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import ipywidgets as widgets
import pytest
from view_helpers import FINAL, Chat

from jupyter_aaep.kernel import view as view_module
from jupyter_aaep.kernel.view import LiveView, subscription_request
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn


class Bridge:
    """The client API the view uses, on an in-memory chat."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.sent: list[dict[str, Any]] = []
        self.subscribed: list[dict[str, Any]] = []
        self.requests: list[tuple[str, list[dict[str, str]]]] = []
        self.fail_sends = False
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        chat.emitter.subscribe(self)
        self.task: asyncio.Task[Any] | None = None

    def deliver(self, event: dict[str, Any]) -> None:  # an Emitter subscriber
        self.queue.put_nowait(event)

    def subscribe(self, request: dict[str, Any]) -> dict[str, Any]:
        self.subscribed.append(request)
        return {
            "type": "subscription.accepted",
            "subscription_id": "sub_widget1",
            "aaep_version": "1.0.0",
        }

    async def _events(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            yield await self.queue.get()

    def events(
        self, subscription_id: str | None, last_event_id: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        assert subscription_id == "sub_widget1"
        return self._events()

    def start_request(self, text: str, context: list[dict[str, str]]) -> dict[str, Any]:
        self.requests.append((text, context))
        loop = self.loop
        future = asyncio.run_coroutine_threadsafe(self._start(text), loop)
        return {"chat_id": "chat-1", "session_id": future.result(5), "status": "started"}

    async def _start(self, text: str) -> str:
        self.task = self.chat.start(text)
        for _ in range(500):
            started = self.chat.events.of_type("session.started")
            if started:
                return str(started[-1]["session_id"])
            await asyncio.sleep(0.01)
        raise AssertionError("the session did not start")

    def send(self, message: dict[str, Any]) -> None:
        if self.fail_sends:
            raise RuntimeError("The jupyter-aaep server does not answer.")
        self.sent.append(message)
        if message["type"].endswith(".reply"):
            self.loop.call_soon_threadsafe(self.chat.broker.submit, message)


@pytest.fixture
async def bridge() -> AsyncIterator[Bridge]:
    async with FakeAnthropic() as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        async with client:
            b = Bridge(Chat(fake, client))
            b.loop = asyncio.get_running_loop()  # type: ignore[attr-defined]
            yield b
            if b.task is not None:
                await asyncio.wait_for(b.task, 30)  # a busy CI machine is slow
        assert fake.problems == [], fake.problems


async def held(bridge: Bridge) -> None:
    """Wait, off the loop the agent runs on, until its model stream waits at its stall: the
    session starts before the request reaches the fake, and a release before the request
    frees nothing (under load the agent then waited forever and the teardown timed out)."""
    await asyncio.to_thread(bridge.chat.fake.wait_until_held)


async def until(condition: Any, what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def buttons(view: LiveView) -> list[widgets.Button]:
    found: list[widgets.Button] = []
    pending: list[widgets.Widget] = [view.widget]
    while pending:
        widget = pending.pop(0)
        if isinstance(widget, widgets.Button):
            found.append(widget)
        pending.extend(getattr(widget, "children", ()))
    return found


def text_of(view: LiveView) -> str:
    parts: list[str] = []
    pending: list[widgets.Widget] = [view.widget]
    while pending:
        widget = pending.pop(0)
        if isinstance(widget, widgets.HTML):
            parts.append(widget.value)
        pending.extend(getattr(widget, "children", ()))
    return "\n".join(parts)


async def test_approve_in_the_widget_runs_the_step_and_shows_the_answer(bridge: Bridge) -> None:
    bridge.chat.fake.add(
        Turn(text="I will run cell 3.", tool_uses=[ToolUse("run_code", {"cell": 3})]),
        Turn(text=FINAL),
    )
    view = LiveView(
        bridge, "Run cell 3 for me", context=[{"name": "df", "description": "a DataFrame"}]
    )
    assert "You asked the agent:</strong> Run cell 3 for me" in text_of(view)
    task = view.start()
    await until(
        lambda: [b for b in buttons(view) if b.description == "Approve running cell 3"],
        "the Approve button",
    )
    assert bridge.subscribed == [subscription_request()]
    assert bridge.subscribed[0]["capabilities"]["supports_confirmation_reply"] is True
    assert bridge.requests == [
        ("Run cell 3 for me", [{"name": "df", "description": "a DataFrame"}])
    ]
    approve, reject = buttons(view)
    assert (approve.description, reject.description) == (
        "Approve running cell 3",
        "Reject running cell 3",
    )
    assert not approve.disabled and not reject.disabled
    assert "If you do not answer, it will be" in text_of(view)

    approve.click()  # what a comm "click" message does in a kernel
    await until(lambda: view.state.ended, "the session to end")
    await asyncio.wait_for(task, 5)
    [reply] = [m for m in bridge.sent if m["type"] == "confirmation.reply"]
    assert reply["decision"] == "accept" and reply["subscription_id"] == "sub_widget1"
    assert bridge.sent[-1]["type"] == "subscription.close"  # the view says goodbye at the end
    # The pressed button keeps the focus (enabled, inert) and says what became of the answer.
    assert (approve.description, approve.disabled, reject.disabled) == ("Approved.", False, True)
    approve.click()
    assert len([m for m in bridge.sent if m["type"] == "confirmation.reply"]) == 1
    shown = text_of(view)
    assert "Approved." in shown and "Answered elsewhere" not in shown
    assert "<strong>Done:</strong> Running cell 3. Cell 3 ran and printed 45." in shown
    assert "Cell 3 printed <strong>45</strong>" in shown and "<script>" not in shown
    assert "<strong>Finished:</strong>" in shown and "aria-live" not in shown


async def test_a_question_is_answered_from_the_text_box(bridge: Bridge) -> None:
    bridge.chat.fake.add(
        Turn(tool_uses=[ToolUse("ask_user", {"question": "Which year?"})]), Turn(text="2024 it is.")
    )
    view = LiveView(bridge, "Which year should I use?")
    view.start()
    send = await until(
        lambda: [b for b in buttons(view) if b.description == "Send answer"], "the Send button"
    )
    send[0].click()  # nothing typed: said in the card, nothing sent
    assert "Type an answer first" in text_of(view) and bridge.sent == []
    box = next(w for w in _all(view) if isinstance(w, widgets.Text))
    assert box.description == "Your answer"
    box.value = "2024"
    send[0].click()
    await until(lambda: view.state.ended, "the session to end")
    [reply] = [m for m in bridge.sent if m["type"] == "clarification.reply"]
    assert reply["response"] == "2024"
    assert box.disabled and "Thanks, got your answer." in text_of(view)
    assert send[0].description == "Thanks, got your answer."


async def test_a_reply_that_cannot_be_sent_is_said_and_can_be_given_again(bridge: Bridge) -> None:
    bridge.chat.fake.add(Turn(tool_uses=[ToolUse("run_code", {"cell": 2})]), Turn(text="Done."))
    view = LiveView(bridge, "run cell 2")
    view.start()
    await until(lambda: buttons(view), "the buttons")
    bridge.fail_sends = True
    buttons(view)[1].click()
    await until(lambda: "Your answer was not sent" in text_of(view), "the problem to show")
    approve, reject = buttons(view)
    assert not reject.disabled and not approve.disabled  # the user can answer again
    assert reject.description == "Reject running cell 2"  # its own name again, not "Sending…"
    bridge.fail_sends = False
    reject.click()
    await until(lambda: view.state.ended, "the session to end")
    assert "You rejected it" in text_of(view)


async def test_a_refused_subscription_says_the_request_was_not_sent(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        bridge,
        "subscribe",
        lambda request: {
            "type": "subscription.rejected",
            "reason_code": "rate_limit",
            "reason_message": "Too many subscriptions.",
        },
    )
    view = LiveView(bridge, "anything")
    await asyncio.wait_for(view.start(), 5)
    assert bridge.requests == []
    shown = text_of(view)
    assert "could not subscribe to the agent&#x27;s events: Too many subscriptions." in shown
    assert "Your request was not sent." in shown


async def test_the_countdown_moves_while_the_request_waits(
    bridge: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_module, "TICK", 0.05)
    clock = [time.time()]
    bridge.chat.fake.add(Turn(tool_uses=[ToolUse("run_code", {"cell": 1})]), Turn(text="Ok."))
    view = LiveView(bridge, "tick", now=lambda: clock[0])
    view.start()
    await until(lambda: buttons(view), "the buttons")
    before = view._cards[next(iter(view._cards))].outcome.value
    clock[0] += 30
    await until(
        lambda: view._cards[next(iter(view._cards))].outcome.value != before,
        "the countdown to move",
    )
    buttons(view)[0].click()
    await until(lambda: view.state.ended, "the session to end")


def _all(view: LiveView) -> list[widgets.Widget]:
    found: list[widgets.Widget] = []
    pending: list[widgets.Widget] = [view.widget]
    while pending:
        widget = pending.pop(0)
        found.append(widget)
        pending.extend(getattr(widget, "children", ()))
    return found


async def test_a_request_sent_while_the_agent_works_follows_that_session(bridge: Bridge) -> None:
    """The chat was busy (the side panel's request): the server took ours as guidance and
    named the running session, which the view then follows."""
    bridge.chat.fake.add(Turn(text="Working on the panel's request.", stall_after_chunks=1))
    running = await bridge._start("asked in the panel")

    def as_guidance(text: str, context: list[dict[str, str]]) -> dict[str, Any]:
        bridge.requests.append((text, context))
        return {
            "chat_id": "chat-1",
            "input_id": "gd_1",
            "session_id": running,
            "status": "guidance",
        }

    bridge.start_request = as_guidance  # type: ignore[method-assign]
    view = LiveView(bridge, "also do this")
    view.start()
    await until(lambda: view.state.session_id == running, "the view to follow the running session")
    assert "went to it as guidance" in text_of(view)
    await held(bridge)
    bridge.chat.fake.release()
    await until(lambda: view.state.ended, "the session to end")
    assert "Working on the panel&#x27;s request." in text_of(view)


async def test_a_stream_that_ends_early_or_is_closed_is_said(bridge: Bridge) -> None:
    bridge.chat.fake.add(Turn(text="Hello.", stall_after_chunks=1))
    view = LiveView(bridge, "say hello")
    task = view.start()
    await until(lambda: view.state.session_id, "the session")
    view.take(
        {
            "type": "subscription.close",
            "subscription_id": "sub_widget1",
            "reason_code": "stream_limit",
            "reason_message": "Too many streams from this client.",
        }
    )
    assert (
        "The server closed the live view&#x27;s subscription (Too many streams from this client.)"
        in text_of(view)
    )
    await view.stop()
    assert task.cancelled() or task.done()
    assert bridge.sent[-1]["type"] == "subscription.close"  # said goodbye while stopping
    await held(bridge)
    bridge.chat.fake.release()
