"""Tests for the AAEP sequence checker (``jupyter_aaep.aaep.check``).

Every other test in the project leans on this checker to judge the producer's event
streams, so each rule gets a clean case that must pass and at least one broken case that
must be caught with a message naming that rule.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from jupyter_aaep.aaep.check import (
    RULES,
    SequenceChecker,
    SequenceViolation,
    check_events,
    main,
)

Event = dict[str, Any]
CONTEXT = "https://aaep-protocol.org/context/v1"
PRODUCER = {
    "agent_id": "jupyter-aaep",
    "agent_version": "0.1.0",
    "agent_name": "Notebook assistant",
    "model": "claude-test",
}
BASE_TIME = datetime(2026, 11, 21, 9, 30, tzinfo=timezone.utc)
REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- factory


def stamp(when: datetime) -> str:
    """Millisecond RFC 3339 in UTC, the form our producer emits."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class Session:
    """Builds one session's events in call order, with ids and a clock that move on."""

    def __init__(self, tag: str = "A", *, numbered: bool = False) -> None:
        self.tag = tag
        self.session_id = f"sess_{tag}1"
        self.numbered = numbered
        self.count = 0
        self.tokens = 0

    def event(self, name: str, urgency: str | None = "normal", **payload: Any) -> Event:
        event: Event = {
            "@context": CONTEXT,
            "aaep_version": "1.0.0",
            "type": f"aaep:agent.{name}",
            "event_id": f"evt_{self.tag}{self.count:04d}",
            "session_id": self.session_id,
            "timestamp": stamp(BASE_TIME + timedelta(milliseconds=250 * self.count)),
            "producer": dict(PRODUCER),
            "localization_hints": {"primary_language": "en-US"},
        }
        if urgency is not None:
            event["urgency"] = urgency
        if self.numbered:
            event["sequence_number"] = self.count
        event.update(payload)
        self.count += 1
        return event

    def token(self) -> str:
        self.tokens += 1
        return f"rpl_{self.tag}{self.tokens:03d}"

    def started(self) -> Event:
        return self.event("session.started", summary_normal="Working on your request.")

    def state(self, frm: str, to: str) -> Event:
        return self.event(
            "state.changed", "background", from_state=frm, to_state=to, summary_normal=f"Now {to}."
        )

    def confirm(
        self,
        call_id: str | None = "call_1",
        *,
        risk: str = "high",
        irreversible: bool = True,
        default: str = "reject",
        token: str | None = None,
        **extra: Any,
    ) -> Event:
        payload: Event = {
            "action": "Run cell 3, which deletes results.csv.",
            "consequence": "The file is gone for good.",
            "reply_token": token or self.token(),
            "timeout_seconds": 300,
            "default_decision": default,
            "risk_level": risk,
            "irreversible": irreversible,
            "summary_normal": "Approve running cell 3?",
        }
        if call_id is not None:
            payload["extra_context"] = {"tool_call_id": call_id}
        payload.update(extra)
        return self.event("awaiting.confirmation", "critical", **payload)

    def clarify(self, **extra: Any) -> Event:
        payload = {
            "question": "Which column is the date?",
            "reply_token": self.token(),
            "timeout_seconds": 120,
            "summary_normal": "Which column is the date?",
        }
        payload.update(extra)
        return self.event("awaiting.clarification", "critical", **payload)

    def invoked(
        self,
        tool: str = "run_cell",
        call_id: str | None = "call_1",
        *,
        risk: str = "high",
        irreversible: bool = True,
    ) -> Event:
        payload: Event = {"tool": tool, "summary_normal": f"Calling {tool}.", "risk_level": risk}
        payload["irreversible"] = irreversible
        if call_id is not None:
            payload["tool_call_id"] = call_id
        return self.event("tool.invoked", **payload)

    def done_tool(
        self, tool: str = "run_cell", call_id: str | None = "call_1", status: str = "success"
    ) -> Event:
        payload: Event = {"tool": tool, "status": status, "summary_normal": f"{tool} finished."}
        if call_id is not None:
            payload["tool_call_id"] = call_id
        return self.event("tool.completed", **payload)

    def chunk(
        self, text: str, position: Any, complete: Any = False, output_id: str | None = "out_1"
    ) -> Event:
        payload: Event = {
            "chunk": text,
            "position": position,
            "complete": complete,
            "coalesce_hint": "completion" if complete else "sentence",
        }
        if output_id is not None:
            payload["output_id"] = output_id
        return self.event("output.streaming", **payload)

    def completed(self) -> Event:
        return self.event("session.completed", summary_normal="Done.")

    def errored(self, urgency: str | None = "critical") -> Event:
        return self.event(
            "session.errored", urgency, error_category="transient", summary_normal="It failed."
        )

    def cancelled(self) -> Event:
        return self.event("session.cancelled", cancelled_by="user", summary_normal="Stopped.")

    def handoff(self, urgency: str | None = "critical") -> Event:
        return self.event(
            "handoff.requested",
            urgency,
            reason="Needs a human.",
            target_kind="human",
            summary_normal="Handing over to a person.",
        )

    # ---- common stretches of a session

    def opening(self) -> list[Event]:
        return [self.started(), self.state("idle", "thinking")]

    def approval(
        self, call_id: str | None = "call_1", accept: bool = True, **kw: Any
    ) -> list[Event]:
        """thinking -> awaiting_input -> confirmation -> resolved (tool or back to thinking)."""
        return [
            self.state("thinking", "awaiting_input"),
            self.confirm(call_id, **kw),
            self.state("awaiting_input", "calling_tool" if accept else "thinking"),
        ]

    def tool_run(self, call_id: str | None = "call_1", **kw: Any) -> list[Event]:
        """Invoke and complete inside calling_tool, then back to thinking."""
        return [
            self.invoked(call_id=call_id, **kw),
            self.done_tool(call_id=call_id),
            self.state("calling_tool", "thinking"),
        ]

    def answer(self) -> list[Event]:
        return [
            self.state("thinking", "writing_output"),
            self.chunk("Done. ", 0),
            self.chunk("The cell ran.", 6),
            self.chunk("", 19, complete=True),
            self.completed(),
        ]


def valid_session(session: Session | None = None) -> list[Event]:
    """The canonical flow: confirm, run an irreversible cell, stream the answer, finish."""
    s = session or Session()
    return [*s.opening(), *s.approval(), *s.tool_run(), *s.answer()]


def changed(event: Event, **changes: Any) -> Event:
    """A copy of ``event`` with fields replaced (``None`` removes the field)."""
    copy = dict(event)
    for key, value in changes.items():
        if value is None:
            copy.pop(key, None)
        else:
            copy[key] = value
    return copy


def first_violation(events: list[Any]) -> SequenceViolation:
    """Feed until the checker objects (in ``feed`` or ``finish``) and return the error."""
    checker = SequenceChecker()
    with pytest.raises(SequenceViolation) as caught:
        for event in events:
            checker.feed(event)
        checker.finish()
    return caught.value


# --------------------------------------------------------------------------- clean streams


def test_valid_session_passes() -> None:
    events = valid_session()
    assert check_events(events) == []
    checker = SequenceChecker()
    for event in events:
        checker.feed(event)
    checker.finish()
    state = checker.sessions["sess_A1"]
    assert state.terminal_event == events[-1]["event_id"]
    assert state.state == "writing_output"
    assert not state.open_tools


def test_valid_session_passes_schema_validation() -> None:
    from jupyter_aaep.testing.schemas import validate_event

    for event in (
        valid_session() + _parallel_tools(Session("B")) + _clarification_then_handoff(Session("C"))
    ):
        validate_event(event)


def test_interleaved_sessions_are_tracked_separately() -> None:
    a, b = valid_session(Session("A")), valid_session(Session("B"))
    mixed = [e for pair in zip(a, b) for e in pair]
    assert check_events(mixed) == []


def _rejected_then_reasked(s: Session) -> list[Event]:
    return [*s.opening(), *s.approval(accept=False), *s.approval(), *s.tool_run(), *s.answer()]


def _anonymous_confirmation(s: Session) -> list[Event]:
    return [*s.opening(), *s.approval(call_id=None), *s.tool_run(call_id=None), *s.answer()]


def _anonymous_reject_then_reversible_tool(s: Session) -> list[Event]:
    return [
        *s.opening(),
        *s.approval(call_id=None, accept=False),
        s.state("thinking", "calling_tool"),
        *s.tool_run(call_id=None, risk="low", irreversible=False),
        *s.answer(),
    ]


def _parallel_tools(s: Session) -> list[Event]:
    return [
        *s.opening(),
        s.state("thinking", "calling_tool"),
        s.invoked("read_cell", "call_1", risk="low", irreversible=False),
        s.invoked("list_files", "call_2", risk="low", irreversible=False),
        s.done_tool("list_files", "call_2"),
        s.done_tool("read_cell", "call_1", "error"),
        s.state("calling_tool", "thinking"),
        *s.answer(),
    ]


def _tools_paired_by_name(s: Session) -> list[Event]:
    return [
        *s.opening(),
        s.state("thinking", "calling_tool"),
        s.invoked("read_cell", None, risk="low", irreversible=False),
        s.done_tool("read_cell", None, "timeout"),
        s.state("calling_tool", "thinking"),
        *s.answer(),
    ]


def _clarification_then_handoff(s: Session) -> list[Event]:
    return [
        *s.opening(),
        s.state("thinking", "awaiting_input"),
        s.clarify(),
        s.state("awaiting_input", "thinking"),
        s.state("thinking", "handing_off"),
        s.handoff(),
        s.completed(),
    ]


def _cancelled_while_confirmation_pending(s: Session) -> list[Event]:
    return [*s.opening(), s.state("thinking", "awaiting_input"), s.confirm(), s.cancelled()]


def _errored_with_progress_and_extension_event(s: Session) -> list[Event]:
    return [
        *s.opening(),
        s.event("progress.updated", "background", progress={"percent": 50}),
        s.event("progress.updated", "background", type="jupyter:cell.edited", summary_normal="x"),
        s.errored(),
    ]


def _two_outputs_and_implicit_output(s: Session) -> list[Event]:
    return [
        *s.opening(),
        s.state("thinking", "writing_output"),
        s.chunk("First.", 0, output_id="out_a"),
        s.chunk("", 6, True, output_id="out_a"),
        s.chunk("Second.", 0, True, output_id="out_b"),
        s.chunk("Third", 0, output_id=None),
        s.chunk("", 5, True, output_id=None),
        s.completed(),
    ]


def _numbered(s: Session) -> list[Event]:
    s.numbered = True
    return valid_session(s)


def _offsets_and_microseconds(s: Session) -> list[Event]:
    events = valid_session(s)
    # Same instants, other spellings: +01:00 offset and 6 fraction digits.
    events[3]["timestamp"] = "2026-11-21T10:30:00.750000+01:00"
    events[4]["timestamp"] = "2026-11-21T09:30:01.000000Z"
    return events


def _non_events_are_skipped(s: Session) -> list[Event]:
    events = valid_session(s)
    events.insert(0, {"kind": "user_input.accepted", "request_id": "r1"})
    events.insert(3, {"type": "subscription.accepted", "subscription_id": "sub_1"})
    return events


@pytest.mark.parametrize(
    "build",
    [
        _rejected_then_reasked,
        _anonymous_confirmation,
        _anonymous_reject_then_reversible_tool,
        _parallel_tools,
        _tools_paired_by_name,
        _clarification_then_handoff,
        _cancelled_while_confirmation_pending,
        _errored_with_progress_and_extension_event,
        _two_outputs_and_implicit_output,
        _numbered,
        _offsets_and_microseconds,
        _non_events_are_skipped,
    ],
)
def test_other_valid_flows_pass(build: Callable[[Session], list[Event]]) -> None:
    assert check_events(build(Session())) == []


# --------------------------------------------------------------------------- broken streams

Case = Callable[[Session], list[Any]]


def _edit(index: int, **changes: Any) -> Case:
    """A valid session with one event's fields changed."""

    def build(s: Session) -> list[Any]:
        events = valid_session(s)
        events[index] = changed(events[index], **changes)
        return events

    return build


def _dup_id_across_sessions(s: Session) -> list[Event]:
    a = valid_session(s)
    b = valid_session(Session("B"))
    b[0]["event_id"] = a[0]["event_id"]
    return a + b


def _time_goes_back(s: Session) -> list[Event]:
    events = valid_session(s)
    events[5]["timestamp"] = events[2]["timestamp"]
    return events


def _numbering_dropped(s: Session) -> list[Event]:
    events = _numbered(s)
    del events[4]["sequence_number"]
    return events


def _numbering_gap(s: Session) -> list[Event]:
    events = _numbered(s)
    events[4]["sequence_number"] = 9
    return events


def _numbering_late(s: Session) -> list[Event]:
    events = valid_session(s)
    events[3]["sequence_number"] = 3
    return events


def _token_reused_across_sessions(s: Session) -> list[Event]:
    b = Session("B")
    first = valid_session(s)
    reused = first[3]["reply_token"]
    return [*first, *b.opening(), b.state("thinking", "awaiting_input"), b.confirm(token=reused)]


def _after_opening(body: Callable[[Session], list[Event]]) -> Case:
    def build(s: Session) -> list[Event]:
        return [*s.opening(), *body(s)]

    return build


RULE_CASES: list[tuple[int, str, Case]] = [
    # rule 1: envelope basics
    (1, "duplicate event_id", _edit(5, event_id="evt_A0004")),
    (1, "duplicate event_id across sessions", _dup_id_across_sessions),
    (1, "malformed event_id", _edit(2, event_id="evt-0002")),
    (
        1,
        "malformed session_id",
        lambda s: [changed(e, session_id="sess-A") for e in valid_session(s)],
    ),
    (1, "timestamp with 2 fraction digits", _edit(3, timestamp="2026-11-21T09:30:00.75Z")),
    (1, "timestamp without fraction", _edit(3, timestamp="2026-11-21T09:30:01Z")),
    (1, "timestamp without offset", _edit(3, timestamp="2026-11-21T09:30:00.750")),
    (1, "impossible timestamp", _edit(3, timestamp="2026-13-45T99:00:00.000Z")),
    (1, "timestamp goes back", _time_goes_back),
    (1, "sequence_number dropped", _numbering_dropped),
    (1, "sequence_number gap", _numbering_gap),
    (1, "sequence_number appears late", _numbering_late),
    (
        1,
        "sequence_number not 0 at start",
        lambda s: [changed(e, sequence_number=e["sequence_number"] + 1) for e in _numbered(s)],
    ),
    (1, "wrong @context", _edit(1, **{"@context": "https://example.org/context"})),
    (1, "unknown core type", _edit(1, type="aaep:agent.tool.exploded")),
    (
        1,
        "URI form of a core type",
        _edit(1, type="https://aaep-protocol.org/types/agent.state.changed"),
    ),
    (1, "message that is not an object", lambda s: [*valid_session(s), ["not", "an", "event"]]),
    # rule 2: bracketing
    (2, "no session.started", lambda s: valid_session(s)[1:]),
    (2, "session.started twice", lambda s: [*s.opening(), s.started(), s.completed()]),
    (2, "two terminal events", lambda s: [*valid_session(s), s.errored()]),
    (
        2,
        "event after the terminal event",
        lambda s: [*valid_session(s), s.state("writing_output", "idle")],
    ),
    (2, "no terminal event", lambda s: valid_session(s)[:-1][:7]),
    (
        2,
        "extension event before session.started",
        lambda s: [s.event("x", type="jupyter:cell.edited"), *valid_session(s)],
    ),
    # rule 3: critical urgency
    (3, "session.errored with normal urgency", lambda s: [*s.opening(), s.errored("normal")]),
    (3, "session.errored without urgency", lambda s: [*s.opening(), s.errored(None)]),
    (3, "confirmation without urgency", _edit(3, urgency=None)),
    (
        3,
        "clarification with normal urgency",
        _after_opening(
            lambda s: [
                s.state("thinking", "awaiting_input"),
                changed(s.clarify(), urgency="normal"),
            ]
        ),
    ),
    (3, "handoff without urgency", lambda s: [*s.opening(), s.handoff(None)]),
    (3, "unknown urgency value", _edit(1, urgency="urgent")),
    # rule 4: state continuity
    (
        4,
        "first state.changed not from idle",
        _edit(1, from_state="thinking", to_state="writing_output"),
    ),
    (4, "chain broken", _edit(2, from_state="writing_output")),
    (4, "to_state equals from_state", lambda s: [*s.opening(), s.state("thinking", "thinking")]),
    (4, "to_state missing", _edit(2, to_state=None)),
    # rule 5: L1 state coverage
    (
        5,
        "tool.invoked while thinking",
        _after_opening(lambda s: [s.invoked(risk="low", irreversible=False)]),
    ),
    (5, "tool.completed while thinking", _after_opening(lambda s: [s.done_tool()])),
    (5, "output.streaming while thinking", _after_opening(lambda s: [s.chunk("Hi", 0)])),
    (5, "confirmation while thinking", _after_opening(lambda s: [s.confirm()])),
    (5, "clarification while thinking", _after_opening(lambda s: [s.clarify()])),
    (
        5,
        "leaving calling_tool with an open tool",
        _after_opening(
            lambda s: [
                s.state("thinking", "calling_tool"),
                s.invoked(risk="low", irreversible=False),
                s.state("calling_tool", "thinking"),
            ]
        ),
    ),
    # rule 6: tool pairing
    (
        6,
        "orphan completion",
        _after_opening(
            lambda s: [s.state("thinking", "calling_tool"), s.done_tool(call_id="call_9")]
        ),
    ),
    (
        6,
        "second completion",
        lambda s: [*s.opening(), *s.approval(), s.invoked(), s.done_tool(), s.done_tool()],
    ),
    (
        6,
        "completion names another tool",
        lambda s: [*s.opening(), *s.approval(), s.invoked(), s.done_tool(tool="other_tool")],
    ),
    (
        6,
        "tool_call_id reused",
        _after_opening(
            lambda s: [
                s.state("thinking", "calling_tool"),
                s.invoked("t", "call_5", risk="low", irreversible=False),
                s.done_tool("t", "call_5"),
                s.invoked("t", "call_5", risk="low", irreversible=False),
            ]
        ),
    ),
    (
        6,
        "invalid status",
        lambda s: [*s.opening(), *s.approval(), s.invoked(), s.done_tool(status="ok")],
    ),
    (
        6,
        "invocation still open at the end",
        lambda s: [*s.opening(), *s.approval(), s.invoked(), s.completed()],
    ),
    (
        6,
        "orphan completion by name",
        _after_opening(
            lambda s: [
                s.state("thinking", "calling_tool"),
                s.invoked("read", None, risk="low", irreversible=False),
                s.done_tool("write", None),
            ]
        ),
    ),
    (
        6,
        "completion lacks the invocation's id",
        _after_opening(
            lambda s: [
                s.state("thinking", "calling_tool"),
                s.invoked("read", "call_3", risk="low", irreversible=False),
                s.done_tool("read", None),
            ]
        ),
    ),
    # rule 7: confirmation before irreversible
    (
        7,
        "irreversible tool without confirmation",
        _after_opening(lambda s: [s.state("thinking", "calling_tool"), *s.tool_run()]),
    ),
    (
        7,
        "confirmation was for another call",
        lambda s: [*s.opening(), *s.approval(call_id="call_2"), *s.tool_run(call_id="call_1")],
    ),
    (
        7,
        "risk_level differs from confirmation",
        lambda s: [*s.opening(), *s.approval(), *s.tool_run(risk="medium")],
    ),
    (
        7,
        "irreversible differs from confirmation",
        lambda s: [*s.opening(), *s.approval(), *s.tool_run(irreversible=False)],
    ),
    (
        7,
        "confirmation after the invocation",
        lambda s: [
            *s.opening(),
            s.state("thinking", "calling_tool"),
            *s.tool_run(call_id="call_1", risk="low", irreversible=False),
            *s.approval(call_id="call_1"),
        ],
    ),
    (
        7,
        "id-less accept goes stale when calling_tool ends unused",
        lambda s: [
            *s.opening(),
            *s.approval(call_id=None),
            s.state("calling_tool", "thinking"),
            s.state("thinking", "calling_tool"),
            *s.tool_run(call_id=None),
        ],
    ),
    # rule 8: nothing after a rejected action
    (
        8,
        "rejected, then invoked anyway",
        lambda s: [
            *s.opening(),
            *s.approval(accept=False),
            s.state("thinking", "calling_tool"),
            *s.tool_run(),
        ],
    ),
    (
        8,
        "rejected, then invoked as reversible",
        lambda s: [
            *s.opening(),
            *s.approval(accept=False),
            s.state("thinking", "calling_tool"),
            *s.tool_run(risk="high", irreversible=False),
        ],
    ),
    (
        8,
        "rejected without ids, then irreversible",
        lambda s: [
            *s.opening(),
            *s.approval(call_id=None, accept=False),
            s.state("thinking", "calling_tool"),
            *s.tool_run(call_id=None),
        ],
    ),
    (
        8,
        "re-asked, rejected again, invoked",
        lambda s: [
            *s.opening(),
            *s.approval(accept=False),
            *s.approval(accept=False),
            s.state("thinking", "calling_tool"),
            *s.tool_run(),
        ],
    ),
    # rule 9: one pending confirmation per call, unique reply tokens
    (
        9,
        "two pending confirmations for one call",
        _after_opening(lambda s: [s.state("thinking", "awaiting_input"), s.confirm(), s.confirm()]),
    ),
    (
        9,
        "reply_token reused in a session",
        lambda s: [
            *s.opening(),
            *s.approval(token="rpl_same1"),
            *s.tool_run(),
            s.state("thinking", "awaiting_input"),
            s.clarify(reply_token="rpl_same1"),
        ],
    ),
    (9, "reply_token reused across sessions", _token_reused_across_sessions),
    (9, "malformed reply_token", _edit(3, reply_token="rpl-1")),
    (9, "missing reply_token", _edit(3, reply_token=None)),
    # rule 10: streaming
    (10, "position goes down", _edit(11, position=3)),
    (10, "negative position", _edit(9, position=-1)),
    (10, "fractional position", _edit(10, position=6.5)),
    (10, "complete is not a boolean", _edit(10, complete="no")),
    (
        10,
        "chunk after completion",
        lambda s: [*valid_session(s)[:-1], s.chunk("More.", 19), s.completed()],
    ),
    (10, "output never completed", lambda s: [*valid_session(s)[:-2], s.completed()]),
    # rule 11: confirmation safety
    (11, "irreversible high-risk defaulting to accept", _edit(3, default_decision="accept")),
    (
        11,
        "irreversible medium-risk defaulting to accept",
        _edit(3, default_decision="accept", risk_level="medium"),
    ),
    (11, "timeout 0", _edit(3, timeout_seconds=0)),
    (11, "timeout over a day", _edit(3, timeout_seconds=86401)),
    (11, "timeout as a float", _edit(3, timeout_seconds=30.0)),
    (11, "timeout as a boolean", _edit(3, timeout_seconds=True)),
    (11, "risk_level missing", _edit(3, risk_level=None)),
    (11, "irreversible missing", _edit(3, irreversible=None)),
    (
        11,
        "clarification timeout 0",
        _after_opening(
            lambda s: [s.state("thinking", "awaiting_input"), s.clarify(timeout_seconds=0)]
        ),
    ),
]


@pytest.mark.parametrize(
    ("rule", "build"),
    [pytest.param(rule, build, id=f"rule{rule}-{label}") for rule, label, build in RULE_CASES],
)
def test_each_rule_catches_its_violation(rule: int, build: Case) -> None:
    events = build(Session())
    violation = first_violation(events)
    assert violation.rule == rule, str(violation)
    assert str(violation).startswith(f"rule {rule} ({RULES[rule]}) broken ")
    messages = check_events(events)
    assert len(messages) == 1, messages
    assert messages[0] == str(violation)


def test_every_rule_has_a_case() -> None:
    assert {rule for rule, _, _ in RULE_CASES} == set(RULES)


def test_violation_names_rule_event_and_index() -> None:
    events = valid_session()
    events[6] = changed(events[6], status="ok")
    violation = first_violation(events)
    assert (violation.rule, violation.index, violation.event_id) == (6, 6, "evt_A0006")
    assert violation.event_type == "aaep:agent.tool.completed"
    assert violation.session_id == "sess_A1"
    assert str(violation) == (
        "rule 6 (tool pairing) broken by event #6 aaep:agent.tool.completed evt_A0006 "
        "in session sess_A1: status 'ok' is not success, error or timeout."
    )
    assert isinstance(violation, ValueError)


def test_end_of_stream_message_names_session() -> None:
    s = Session()
    violation = first_violation(s.opening())
    assert violation.index is None
    assert str(violation).startswith(
        "rule 2 (bracketing) broken in session sess_A1 at end of stream"
    )


def test_check_events_keeps_checking_other_sessions() -> None:
    a, b, c = Session("A"), Session("B"), Session("C")
    bad_a = valid_session(a)
    bad_a[6] = changed(bad_a[6], status="ok")  # rule 6, later events of A are then ignored
    bad_b = valid_session(b)[:-1]  # never terminates: rule 2 at the end
    good_c = valid_session(c)
    stream = [e for trio in zip(bad_a, bad_b + [{"kind": "ack"}], good_c) for e in trio]
    messages = check_events(stream)
    assert [m.split(" ", 2)[1] for m in messages] == ["6", "2"]
    assert "sess_A1" in messages[0] and "sess_B1" in messages[1]


def test_feed_after_a_violation_ignores_that_session_only() -> None:
    checker = SequenceChecker()
    a, b = Session("A"), Session("B")
    with pytest.raises(SequenceViolation):
        checker.feed(a.state("idle", "thinking"))
    checker.feed(a.started())  # ignored: session A already failed
    for event in valid_session(b):
        checker.feed(event)
    checker.finish()
    assert checker.sessions["sess_A1"].violation is not None
    assert checker.sessions["sess_B1"].violation is None


def test_confirmation_reopened_only_by_a_new_accept() -> None:
    s = Session()
    events = [
        *s.opening(),
        *s.approval(accept=False),
        *s.approval(accept=True),
        *s.tool_run(),
        *s.answer(),
    ]
    assert check_events(events) == []
    checker = SequenceChecker()
    for event in events[:5]:
        checker.feed(event)
    assert checker.sessions["sess_A1"].confirmations_by_call["call_1"].status == "rejected"


def test_checker_is_standard_library_only() -> None:
    """It ships in the package and runs in live streams: no third-party imports."""
    allowed = set(sys.stdlib_module_names) | {"jupyter_aaep"}
    for name in ("check.py", "_check_rules.py"):
        tree = ast.parse((REPO / "jupyter_aaep" / "aaep" / name).read_text(encoding="utf-8"))
        top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in top_level:
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                assert module.split(".")[0] in allowed | {"__future__"}, (name, module)


# --------------------------------------------------------------------------- command line


def write_jsonl(path: Path, messages: list[Any]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path


def test_cli_clean_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = valid_session(Session("A")) + valid_session(Session("B"))
    log = write_jsonl(tmp_path / "events.jsonl", [{"kind": "user_input.accepted"}, *events])
    assert main([str(log)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"checked {len(events)} events in 2 sessions: 0 violations"


def test_cli_reports_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = valid_session()
    events[7] = changed(events[7], from_state="thinking")
    log = write_jsonl(tmp_path / "bad.jsonl", events)
    assert main([str(log)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{log}:8: rule 4 (state continuity) broken by event #7")
    assert out[-1] == f"checked {len(events)} events in 1 session: 1 violation"


def test_cli_several_files_form_one_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = valid_session()
    first = write_jsonl(tmp_path / "1.jsonl", events[:6])
    second = write_jsonl(tmp_path / "2.jsonl", events[6:])
    assert main([str(first), str(second)]) == 0
    assert main([str(first)]) == 1
    assert "never sent session.completed" in capsys.readouterr().out


def test_cli_bad_json_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "broken.jsonl"
    log.write_text(json.dumps(valid_session()[0]) + "\n\n{not json\n", encoding="utf-8")
    assert main([str(log)]) == 2
    err = capsys.readouterr().err
    assert f"{log}:3" in err and "line 3 is not valid JSON" in err


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_with_schemas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_aaep.testing.schemas import find_schema_dir

    schema_dir = str(find_schema_dir())
    reply = {
        "type": "confirmation.reply",
        "reply_token": "rpl_A001",
        "decision": "accept",
        "subscription_id": "sub_1",
        "timestamp": "2026-11-21T09:30:01.100Z",
    }
    clean = write_jsonl(tmp_path / "clean.jsonl", [*valid_session(), reply])
    assert main([str(clean), "--schemas", schema_dir]) == 0
    events = valid_session()
    events[1] = changed(events[1], summary_normal=None)  # a SHOULD of the spec, a promise of ours
    bad = write_jsonl(tmp_path / "bad.jsonl", events)
    assert main([str(bad), "--schemas", schema_dir]) == 0
    out = capsys.readouterr().out
    assert (
        f"{bad}:2: warning (SHOULD): aaep:agent.state.changed evt_A0001 at $.summary_normal" in out
    )
    assert out.splitlines()[-1].endswith("0 violations, 1 warning")
    assert main([str(bad), "--schemas", schema_dir, "--profile", "jupyter-aaep"]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2: schema: aaep:agent.state.changed evt_A0001 at $.summary_normal" in out
    assert main([str(clean), "--schemas", str(tmp_path / "nowhere")]) == 2


def test_cli_validates_against_the_shipped_schemas_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AAEP_SCHEMA_DIR", raising=False)
    events = valid_session()
    events[1] = changed(
        events[1], producer={**events[1]["producer"], "team": "x"}
    )  # closed object: a MUST
    bad = write_jsonl(tmp_path / "bad.jsonl", events)
    assert main([str(bad)]) == 1
    assert f"{bad}:2: schema: aaep:agent.state.changed" in capsys.readouterr().out
    assert main([str(bad), "--no-schemas"]) == 0
    assert "0 violations" in capsys.readouterr().out


def _spec_minimal(events: list[Event]) -> list[Event]:
    """Our events cut down to what AAEP 1.0.0 requires: no aaep_version, no language hints,
    a producer with its agent_id only, urgency only where it is mandatory (critical)."""
    out = []
    for event in events:
        event = {
            k: v
            for k, v in event.items()
            if k not in ("aaep_version", "localization_hints", "verbosity")
        }
        event["producer"] = {"agent_id": event["producer"]["agent_id"]}
        if event.get("urgency") != "critical":
            event.pop("urgency", None)
        if event["type"].endswith(("state.changed",)):
            event.pop("summary_normal", None)
            event.pop("summary_terse", None)
            event.pop("summary_detailed", None)
        out.append(event)
    return out


def test_cli_levels_a_spec_minimal_stream_passes_with_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    minimal = write_jsonl(tmp_path / "minimal.jsonl", _spec_minimal(valid_session()))
    assert main([str(minimal)]) == 0
    out = capsys.readouterr().out
    assert "warning (SHOULD)" in out and "$.aaep_version" in out and "primary_language" in out
    assert "schema:" not in out and " 0 violations, " in out.splitlines()[-1]
    # Our own profile reproduces the old strictness on the same stream.
    assert main([str(minimal), "--profile", "jupyter-aaep"]) == 1
    out = capsys.readouterr().out
    assert "schema:" in out and "warning" not in out
    # A MUST broken: a confirmation whose urgency is left to the default.
    events = _spec_minimal(valid_session())
    asking = next(i for i, e in enumerate(events) if e["type"].endswith("awaiting.confirmation"))
    events[asking] = {k: v for k, v in events[asking].items() if k != "urgency"}
    broken = write_jsonl(tmp_path / "broken.jsonl", events)
    assert main([str(broken)]) == 1
    out = capsys.readouterr().out
    assert "urgency" in out and "critical" in out


def test_the_validator_levels_directly() -> None:
    from jupyter_aaep.testing.schemas import SchemaValidator, SchemaViolation

    spec = SchemaValidator.from_dir(profile="spec")
    ours = SchemaValidator.from_dir(profile="jupyter-aaep")
    event = _spec_minimal(valid_session())[0]
    warnings = spec.validate(event)
    assert {w.path for w in warnings} >= {
        "$.aaep_version",
        "$.urgency",
        "$.localization_hints.primary_language",
    }
    with pytest.raises(SchemaViolation):
        ours.validate(event)
    assert ours.validate(valid_session()[0]) == [] and spec.validate(valid_session()[0]) == []
    with pytest.raises(ValueError, match="profile must be one of"):
        SchemaValidator(spec.schema_dir, {}, profile="loose")  # type: ignore[arg-type]


def test_cli_without_jsonschema_checks_the_sequence_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "jsonschema" else real_find_spec(name, *a),
    )
    log = write_jsonl(tmp_path / "events.jsonl", valid_session())
    assert main([str(log)]) == 0
    assert (
        "jsonschema is not installed, so schema validation was skipped" in capsys.readouterr().out
    )


def test_cli_without_format_checks_skips_the_default_but_refuses_a_named_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_aaep.testing import schemas

    def no_formats(cls: type, path: object = None, **options: object) -> None:
        raise RuntimeError("jsonschema cannot check formats ['uri']; install jsonschema[format]")

    monkeypatch.setattr(schemas.SchemaValidator, "from_dir", classmethod(no_formats))
    log = write_jsonl(tmp_path / "events.jsonl", valid_session())
    assert main([str(log)]) == 0
    assert (
        "schema validation was skipped: jsonschema cannot check formats" in capsys.readouterr().out
    )
    assert main([str(log), "--schemas", str(schemas.SHIPPED_SCHEMA_DIR)]) == 2
    assert "install jsonschema[format]" in capsys.readouterr().err


def test_cli_runs_as_module(tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "events.jsonl", valid_session())
    result = subprocess.run(
        [sys.executable, "-m", "jupyter_aaep.aaep.check", str(log)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "checked 13 events in 1 session: 0 violations"


def test_a_pause_inside_awaiting_input_keeps_the_confirmation_pending() -> None:
    """Pausing while a confirmation is open neither accepts nor rejects it: after the resume
    (back to awaiting_input) the accept still authorises the irreversible call."""
    s = Session()
    events = [
        *s.opening(),
        s.state("thinking", "awaiting_input"),
        s.confirm(),
        s.state("awaiting_input", "paused"),
        s.state("paused", "awaiting_input"),
        s.state("awaiting_input", "calling_tool"),
        *s.tool_run(),
        *s.answer(),
    ]
    assert check_events(events) == []
    checker = SequenceChecker()
    for event in events[:5]:
        checker.feed(event)
    assert checker.sessions["sess_A1"].confirmations_by_call["call_1"].status == "pending"


def test_leaving_a_pause_elsewhere_resolves_the_pending_confirmation() -> None:
    """From paused straight to thinking the prompt is withdrawn (rejected): invoking it breaks rule 8."""
    s = Session()
    events = [
        *s.opening(),
        s.state("thinking", "awaiting_input"),
        s.confirm(),
        s.state("awaiting_input", "paused"),
        s.state("paused", "thinking"),
        s.state("thinking", "calling_tool"),
        s.invoked(),
    ]
    assert first_violation(events).rule == 8
