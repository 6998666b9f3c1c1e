"""The %aaep view shows a running cell's progress as a real progress bar, also of a cell its
request left running, until that cell ends (no kernel needed)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from jupyter_aaep.aaep.emitter import Emitter, ListSubscriber
from jupyter_aaep.aaep.events import (
    Progress,
    ProgressUpdated,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    Summary,
    ToolCompleted,
    ToolInvoked,
)
from jupyter_aaep.aaep.session import Producer, Session
from jupyter_aaep.agent.services import left_running
from jupyter_aaep.kernel._view_html import header_html
from jupyter_aaep.kernel._view_state import ViewState
from jupyter_aaep.kernel.view import LiveView


def session_events() -> list[dict]:
    emitter, heard = Emitter(), ListSubscriber()
    emitter.subscribe(heard)
    session = Session(emitter, Producer(model="claude-test"))
    session.emit(SessionStarted(summary=Summary(normal="Working on your request.")))
    session.change_state("thinking")
    session.change_state("calling_tool")
    session.emit(
        ToolInvoked(
            tool="run_cell", tool_call_id="call_1", summary=Summary(normal="Running cell 4.")
        )
    )
    session.emit(
        ProgressUpdated(
            progress=Progress(
                percent=40.0,
                step=40,
                total_steps=100,
                description="training 40 of 100, about 3 minutes left",
            ),
            summary=Summary(normal="Cell 4: training 40 of 100, about 3 min left."),
            eta_ms=180_000,
            urgency="normal",
        )
    )
    session.emit(
        ProgressUpdated(
            progress=Progress(description="running for 2 minutes 10 seconds"),
            summary=Summary(normal="Cell 5 is still running after 2 min 10 s."),
        )
    )
    session.emit(
        ToolCompleted(
            tool="run_cell",
            tool_call_id="call_1",
            status="success",
            summary=Summary(normal="Cell 4 ran: accuracy 0.91."),
        )
    )
    session.change_state("thinking")
    session.emit(SessionCompleted(summary=Summary(normal="Done.")))
    return heard.events


def test_progress_is_a_real_progressbar_and_goes_away_when_the_step_ends() -> None:
    events = session_events()
    state = ViewState("train it")
    state.follow(events[0]["session_id"])
    for event in events[:5]:
        state.apply(event)
    html = header_html(state)
    bar = re.search(r"<div [^>]*role=\"progressbar\"[^>]*>", html)
    assert bar is not None
    tag = bar.group(0)
    assert (
        'aria-valuenow="40"' in tag and 'aria-valuemin="0"' in tag and 'aria-valuemax="100"' in tag
    )
    assert (
        'aria-valuetext="training 40 of 100, about 3 minutes left"' in tag
        and 'aria-label="Progress"' in tag
    )
    assert 'style="width:40.0%"' in html

    # Nothing countable: an indeterminate bar (no value), its text says how long it ran.
    state.apply(events[5])
    tag = re.search(r"<div [^>]*role=\"progressbar\"[^>]*>", header_html(state)).group(0)  # type: ignore[union-attr]
    assert "aria-valuenow" not in tag and 'aria-valuetext="running for 2 minutes 10 seconds"' in tag

    for event in events[6:]:
        state.apply(event)
    assert 'role="progressbar"' not in header_html(state)


def _request(
    last_words: str, left: list[int | None] | None = None
) -> tuple[Session, ListSubscriber, Producer]:
    """A request's session that ended with *last_words*, leaving the cells numbered *left*
    running as the server tells it (their sentence, and their count as data); its events are
    in the listener."""
    emitter, heard = Emitter(), ListSubscriber()
    emitter.subscribe(heard)
    producer = Producer(model="claude-test")
    request = Session(emitter, producer)
    request.emit(SessionStarted(summary=Summary(normal="Working on your request.")))
    running = left_running(left) if left else None
    words = f"{last_words} {running.sentence}" if running else last_words
    extensions = (running.extension(),) if running else ()
    request.emit(SessionCompleted(summary=Summary(normal=words), extensions=extensions))
    return request, heard, producer


def _left_running(ended: str = "completed") -> tuple[list[dict], list[dict], Emitter]:
    """The request's session, which ends with its cell still running, and the cell's own
    session, correlated with it the way the server's follower of long runs tells it."""
    request, heard, producer = _request("The training runs in its cell.", [4])
    emitter = request.emitter
    mine = list(heard.events)
    cell = Session(emitter, producer)
    tie = request.id
    cell.emit(
        SessionStarted(
            summary=Summary(normal="Cell 4: epoch 3 of 8."), requested_by="kernel:agent-run"
        ),
        correlation_id=tie,
    )
    cell.emit(
        ProgressUpdated(
            progress=Progress(
                percent=37.5, step=3, total_steps=8, description="epoch 3 of 8, about 25 s left"
            ),
            summary=Summary(normal="Cell 4: epoch 3 of 8, about 25 s left."),
        ),
        correlation_id=tie,
    )
    if ended == "completed":
        cell.emit(
            SessionCompleted(summary=Summary(normal="Cell 4 finished after 40 s: accuracy 0.91.")),
            correlation_id=tie,
        )
    else:
        cell.emit(
            SessionErrored(
                error_category="requires_user",
                error_code="CELL_FAILED",
                summary=Summary(normal="Cell 4 failed after 12 s: ValueError: bad shape."),
                recoverable=False,
            ),
            correlation_id=tie,
        )
    return mine, heard.events[len(mine) :], emitter


def test_a_cell_the_request_left_running_is_followed_to_its_end() -> None:
    mine, cell, _ = _left_running()
    state = ViewState("train it")
    state.follow(mine[0]["session_id"])
    for event in mine:
        state.apply(event)
    assert state.ended == "completed" and state.left_running and state.following

    # Another session of the chat (the panel's, or a cell someone else left) is not ours.
    stranger = dict(cell[1], event_id="evt_stranger0001", correlation_id="sess_someoneelse01")
    assert not state.apply(stranger) and state.bar is None

    state.apply(cell[0])
    state.apply(cell[1])
    tag = re.search(r"<div [^>]*role=\"progressbar\"[^>]*>", header_html(state)).group(0)  # type: ignore[union-attr]
    assert 'aria-valuenow="38"' in tag and 'aria-valuetext="epoch 3 of 8, about 25 s left"' in tag
    assert state.following

    state.apply(cell[2])
    assert not state.following
    assert 'role="progressbar"' not in header_html(state)
    last = list(state.items.values())[-1]
    assert (last.kind, last.variant, last.text) == (  # type: ignore[union-attr]
        "notice",
        "info",
        "Cell 4 finished after 40 s: accuracy 0.91.",
    )


def test_a_failed_cell_left_running_ends_as_an_error_and_a_plain_end_waits_for_nothing() -> None:
    mine, cell, _ = _left_running(ended="errored")
    state = ViewState("train it")
    state.follow(mine[0]["session_id"])
    for event in mine + cell:
        state.apply(event)
    last = list(state.items.values())[-1]
    assert last.variant == "errored" and last.text.startswith("Cell 4 failed after 12 s")  # type: ignore[union-attr]
    assert not state.following

    # A request whose last words leave nothing running is over when it ends.
    events = session_events()
    state = ViewState("train it")
    state.follow(events[0]["session_id"])
    for event in events:
        state.apply(event)
    assert state.ended == "completed" and not state.left_running and not state.following

    # The count is data on the event, not read from the words: a sentence alone (a model that
    # wrote it, or a translation) leaves nothing to wait for.
    request, heard, _ = _request("Cell 4 is still running; you will hear when it ends.")
    state = ViewState("train it")
    state.follow(request.id)
    for event in heard.events:
        state.apply(event)
    assert state.ended == "completed" and not state.left_running and not state.following


def test_two_cells_left_running_are_both_followed_though_the_second_speaks_last() -> None:
    """The second cell's session opens only when it has something to say (here: after the
    first ended), so the view counts the cells its request's last words named."""
    request, heard, producer = _request("I started both runs.", [4, 5])
    state = ViewState("train both")
    state.follow(request.id)
    for event in heard.events:
        state.apply(event)
    assert state.left_running == 2 and state.following
    for number in (4, 5):
        cell = Session(request.emitter, producer)
        cell.emit(
            SessionStarted(
                summary=Summary(normal=f"Cell {number} finished."), requested_by="kernel:agent-run"
            ),
            correlation_id=request.id,
        )
        cell.emit(
            SessionCompleted(summary=Summary(normal=f"Cell {number} finished after 9 s.")),
            correlation_id=request.id,
        )
        for event in heard.events[-2:]:
            state.apply(event)
        assert state.following is (number == 4), number
    said = [item.text for item in state.items.values() if item.kind == "notice"]  # type: ignore[union-attr]
    assert said[-2:] == ["Cell 4 finished after 9 s.", "Cell 5 finished after 9 s."]


class _Scripted:
    """A stand-in client whose event stream is the given events, then stays open."""

    def __init__(self, events: list[dict]) -> None:
        self.events_out = events
        self.sent: list[dict] = []
        self.later: asyncio.Queue[dict] = asyncio.Queue()

    def subscribe(self, request: dict) -> dict:
        return {"type": "subscription.accepted", "subscription_id": "sub_view0001"}

    async def _events(self) -> Any:
        for event in self.events_out:
            yield event
        while True:
            yield await self.later.get()

    def events(self, subscription_id: str | None, last_event_id: str | None = None) -> Any:
        return self._events()

    def start_request(self, text: str, context: list) -> dict:
        return {
            "chat_id": "chat-1",
            "session_id": self.events_out[0]["session_id"],
            "status": "started",
        }

    def send(self, message: dict) -> None:
        self.sent.append(message)


async def test_the_view_stays_until_the_cell_it_left_running_ends() -> None:
    mine, cell, _ = _left_running()
    client = _Scripted(mine + cell[:2])
    view = LiveView(client, "train it")
    task = view.start()
    deadline = time.monotonic() + 10
    while view.state.bar is None and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert view.state.ended == "completed" and view.state.bar is not None
    assert not task.done(), "the view keeps following the cell its request left running"
    client.later.put_nowait(cell[2])
    await asyncio.wait_for(task, 5)
    assert "Cell 4 finished after 40 s: accuracy 0.91." in view.describe()["text"]
    assert client.sent[-1]["type"] == "subscription.close"
