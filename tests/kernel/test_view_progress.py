"""The %aaep view shows a running cell's progress as a real progress bar (no kernel needed)."""

from __future__ import annotations

import re

from jupyter_aaep.aaep.emitter import Emitter, ListSubscriber
from jupyter_aaep.aaep.events import (
    Progress,
    ProgressUpdated,
    SessionCompleted,
    SessionStarted,
    Summary,
    ToolCompleted,
    ToolInvoked,
)
from jupyter_aaep.aaep.session import Producer, Session
from jupyter_aaep.kernel._view_html import header_html
from jupyter_aaep.kernel._view_state import ViewState


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
