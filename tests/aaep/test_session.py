from __future__ import annotations

import pytest

from jupyter_aaep.aaep import (
    AwaitingConfirmation,
    Emitter,
    ListSubscriber,
    Producer,
    Progress,
    ProgressUpdated,
    Session,
    SessionClosed,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    StateChanged,
    Summary,
    default_decision_for,
)
from jupyter_aaep.aaep.clock import SessionClock, format_timestamp, parse_timestamp
from jupyter_aaep.aaep.ids import is_valid_id, new_id, safe_tool_name
from jupyter_aaep.aaep.session import state_summary


def make() -> tuple[Session, ListSubscriber]:
    emitter = Emitter()
    events = ListSubscriber()
    emitter.subscribe(events)
    return Session(emitter, Producer(model="claude-test")), events


def test_envelope_is_complete_and_sequenced() -> None:
    session, events = make()
    session.emit(SessionStarted(summary=Summary("Started.")), correlation_id="trace-1")
    session.change_state("thinking")
    assert session.change_state("thinking") is None
    session.emit(ProgressUpdated(progress=Progress(percent=50, description="Half way")))
    session.emit(
        SessionErrored(error_category="transient", urgency="background", summary=Summary("Failed."))
    )
    first, state, progress, errored = events.events
    assert first["@context"] == "https://aaep-protocol.org/context/v1"
    assert first["producer"] == {
        "agent_id": "jupyter-aaep",
        "agent_version": "0.1.0",
        "agent_name": "Jupyter notebook agent",
        "model": "claude-test",
    }
    assert first["correlation_id"] == "trace-1" and first["verbosity"] == "normal"
    assert [e["sequence_number"] for e in events.events] == [0, 1, 2, 3]
    assert state["urgency"] == "background" and progress["urgency"] == "background"
    assert "verbosity" not in progress or progress["summary_normal"]
    assert errored["urgency"] == "critical", "critical types ignore an override"
    assert progress["progress"] == {"percent": 50, "description": "Half way"}
    assert session.closed and session.terminal_event is errored


def test_session_refuses_what_the_protocol_forbids() -> None:
    session, _ = make()
    with pytest.raises(RuntimeError):
        session.emit(SessionCompleted(summary=Summary("x")))  # before started
    session.emit(SessionStarted(summary=Summary("Started.")))
    with pytest.raises(RuntimeError):
        session.emit(SessionStarted(summary=Summary("again")))
    with pytest.raises(RuntimeError):
        session.emit(StateChanged(from_state="thinking", to_state="idle"))
    session.emit(SessionCompleted(summary=Summary("Done.")))
    assert session.change_state("thinking") is None, "no state changes after the end"
    with pytest.raises(SessionClosed):
        session.emit(SessionCompleted(summary=Summary("x")))
    with pytest.raises(ValueError):
        Session(Emitter(), Producer(), session_id="session-1")


def test_safety_rule_and_confirmation_payload() -> None:
    assert default_decision_for(irreversible=True, risk_level="low") == "reject"
    assert default_decision_for(irreversible=False, risk_level="high") == "reject"
    assert default_decision_for(irreversible=False, risk_level="medium") == "reject"
    assert default_decision_for(irreversible=False, risk_level="low") == "accept"
    payload = AwaitingConfirmation(
        action="a",
        consequence="c",
        reply_token="rpl_1",
        timeout_seconds=5,
        default_decision="reject",
        allowed_replies=("accept", "reject"),
        summary=Summary("Confirm?", terse="?", detailed="Confirm it?"),
    ).to_payload()
    assert payload["allowed_replies"] == ["accept", "reject"]
    assert payload["summary_terse"] == "?" and payload["summary_detailed"] == "Confirm it?"


def test_ids_clock_and_state_phrases() -> None:
    assert is_valid_id("call", new_id("call")) and not is_valid_id("call", "call_a-b")
    assert safe_tool_name("mcp/server:tool") == "mcp_server_tool"
    assert safe_tool_name("9lives") == "_9lives"
    clock = SessionClock()
    stamps = [clock.now() for _ in range(5)]
    assert stamps == sorted(stamps)
    parsed = parse_timestamp("2026-05-24T15:22:11.342+01:00")
    assert format_timestamp(parsed) == "2026-05-24T14:22:11.342Z"
    for bad in ("2026-05-24", "2026-05-24T15:22:11", 5):
        with pytest.raises(ValueError):
            parse_timestamp(bad)  # type: ignore[arg-type]
    assert state_summary("thinking").normal == "The agent is thinking."
    assert state_summary("handing_off").normal == "The agent is now handing off."
    # An outside agent's session says who is at work.
    assert state_summary("paused", "Claude Code").normal == "Claude Code is paused."
    assert state_summary("thinking", "Claude Code").terse == "Thinking."
