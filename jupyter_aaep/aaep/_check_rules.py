"""Per-session state and rule functions behind :mod:`jupyter_aaep.aaep.check`.

The checker proper (``check.py``) owns what spans the whole stream (event ids, reply
tokens, routing events to sessions); everything that only needs one session's history
lives here, so each rule is a small function that can be read next to the AAEP text it
enforces. Rule functions raise :class:`RuleBreach` with the rule number and a reason;
the checker turns that into a ``SequenceViolation`` that also names the event.

Standard library only: this module ships in the package and runs in live streams.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeGuard

Event = Mapping[str, Any]

CORE_PREFIX = "aaep:agent."
CORE_CONTEXT = "https://aaep-protocol.org/context/v1"
URI_TYPE_PREFIX = "https://aaep-protocol.org/types/agent."

CORE_NAMES = frozenset(
    {
        "session.started",
        "session.completed",
        "session.errored",
        "session.cancelled",
        "state.changed",
        "progress.updated",
        "tool.invoked",
        "tool.completed",
        "output.streaming",
        "awaiting.confirmation",
        "awaiting.clarification",
        "handoff.requested",
    }
)
TERMINAL_NAMES = frozenset({"session.completed", "session.errored", "session.cancelled"})
CRITICAL_NAMES = frozenset(
    {"session.errored", "awaiting.confirmation", "awaiting.clarification", "handoff.requested"}
)

#: Rule number -> short name, used in every violation message.
RULES: dict[int, str] = {
    1: "envelope basics",
    2: "bracketing",
    3: "critical urgency",
    4: "state continuity",
    5: "L1 state coverage",
    6: "tool pairing",
    7: "confirmation before irreversible",
    8: "nothing after a rejected action",
    9: "single pending confirmation and unique reply tokens",
    10: "streaming",
    11: "confirmation safety",
}

EVENT_ID_RE = re.compile(r"evt_[A-Za-z0-9]{1,64}")
SESSION_ID_RE = re.compile(r"sess_[A-Za-z0-9]{1,64}")
REPLY_TOKEN_RE = re.compile(r"rpl_[A-Za-z0-9]{1,64}")
# Exactly 3 or 6 fraction digits, upper-case T and Z: the producer profile of RFC 3339.
TIMESTAMP_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.(?:\d{3}|\d{6})(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
)

URGENCIES = frozenset({"background", "normal", "critical"})
TOOL_STATUSES = frozenset({"success", "error", "timeout"})
RISK_LEVELS = frozenset({"low", "medium", "high"})
MAX_TIMEOUT_SECONDS = 86_400


class RuleBreach(Exception):
    """A rule failed for the event being checked; the checker adds the event context."""

    def __init__(self, rule: int, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


@dataclass
class ToolCall:
    """An invocation still waiting for its ``tool.completed``."""

    tool: str
    call_id: str | None
    event_id: str


@dataclass
class Confirmation:
    """One ``awaiting.confirmation``; ``status`` is pending, accepted, rejected or used."""

    event_id: str
    call_id: str | None
    risk_level: Any
    irreversible: Any
    status: str = "pending"


@dataclass
class OutputState:
    """Where one output stream stands: last chunk position and whether it completed."""

    position: int
    complete: bool


@dataclass
class SessionState:
    """Everything remembered about one session while its events stream by."""

    session_id: str
    started_event: str | None = None
    terminal_event: str | None = None
    event_count: int = 0
    last_timestamp: datetime | None = None
    last_timestamp_text: str = ""
    uses_sequence: bool | None = None
    next_sequence: int = 0
    state: str = "idle"
    state_changes: int = 0
    open_tools: list[ToolCall] = field(default_factory=list)
    call_ids: set[str] = field(default_factory=set)
    completed_call_ids: set[str] = field(default_factory=set)
    confirmations_by_call: dict[str, Confirmation] = field(default_factory=dict)
    anonymous_confirmations: list[Confirmation] = field(default_factory=list)
    outputs: dict[str, OutputState] = field(default_factory=dict)
    violation: str | None = None


def _is_int(value: Any) -> TypeGuard[int]:
    """JSON integers only: ``bool`` is an ``int`` subclass in Python but not in JSON."""
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------- rule 1


def parse_timestamp(value: Any) -> datetime:
    """Parse an envelope timestamp, insisting on the 3-or-6-digit RFC 3339 profile."""
    if not isinstance(value, str) or TIMESTAMP_RE.fullmatch(value) is None:
        raise RuleBreach(
            1,
            f"timestamp {value!r} is not RFC 3339 with exactly 3 or 6 fraction digits "
            "and a Z or ±HH:MM offset.",
        )
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        return datetime.fromisoformat(text)
    except ValueError as exc:
        raise RuleBreach(1, f"timestamp {value!r} is not a real date and time ({exc}).") from None


def check_context(event: Event) -> None:
    """``@context`` is the core URL, or a list that starts with it."""
    context = event.get("@context")
    first = context[0] if isinstance(context, list) and context else context
    if first != CORE_CONTEXT:
        raise RuleBreach(1, f"@context must be {CORE_CONTEXT!r} or a list starting with it.")


def check_time_and_sequence(s: SessionState, event: Event, name: str | None) -> None:
    """Timestamps never go back within a session; sequence numbers are all-or-nothing."""
    when = parse_timestamp(event.get("timestamp"))
    if s.last_timestamp is not None and when < s.last_timestamp:
        raise RuleBreach(
            1,
            f"timestamp {event.get('timestamp')} is earlier than the session's previous "
            f"event ({s.last_timestamp_text}).",
        )
    s.last_timestamp, s.last_timestamp_text = when, str(event.get("timestamp"))
    has_seq = "sequence_number" in event
    if name == "session.started":
        s.uses_sequence = has_seq
    elif has_seq != s.uses_sequence:
        raise RuleBreach(
            1,
            "sequence_number must be on every event of a session or on none, but this "
            + ("event has one and session.started had none." if has_seq else "event lacks it."),
        )
    if has_seq:
        seq = event["sequence_number"]
        if not _is_int(seq) or seq != s.next_sequence:
            raise RuleBreach(1, f"sequence_number is {seq!r}, expected {s.next_sequence}.")
        s.next_sequence += 1


# --------------------------------------------------------------------------- rules 2 and 3


def check_bracketing(s: SessionState, name: str | None) -> None:
    """session.started first and once; nothing at all after the terminal event."""
    if s.terminal_event is not None:
        raise RuleBreach(
            2,
            f"the session already ended with terminal event {s.terminal_event}; "
            "nothing may follow it.",
        )
    if name == "session.started" and s.started_event is not None:
        raise RuleBreach(2, f"session.started was already sent as {s.started_event}.")
    if s.started_event is None and name != "session.started":
        raise RuleBreach(2, "the first event of a session must be session.started.")


def check_urgency(event: Event, name: str | None) -> None:
    """Critical events must say so explicitly: subscribers route on the field, not the type."""
    urgency = event.get("urgency")
    if name in CRITICAL_NAMES and urgency != "critical":
        raise RuleBreach(3, f"{name} must carry urgency 'critical' explicitly, got {urgency!r}.")
    if urgency is not None and urgency not in URGENCIES:
        raise RuleBreach(3, f"urgency {urgency!r} is not background, normal or critical.")


# --------------------------------------------------------------------------- rules 4 and 5


def require_state(s: SessionState, name: str, wanted: str) -> None:
    """Rule 5: some events only make sense while the announced state is ``wanted``."""
    if s.state != wanted:
        raise RuleBreach(
            5, f"{name} may only be sent while the state is {wanted!r}, but it is {s.state!r}."
        )


def on_state_changed(s: SessionState, event: Event) -> None:
    """Chain the states, then resolve confirmations when leaving ``awaiting_input``."""
    frm, to = event.get("from_state"), event.get("to_state")
    if not (isinstance(frm, str) and frm and isinstance(to, str) and to):
        raise RuleBreach(4, "state.changed needs non-empty from_state and to_state strings.")
    if frm != s.state:
        where = (
            "the first state.changed must leave 'idle'"
            if s.state_changes == 0
            else (f"the previous state.changed entered {s.state!r}")
        )
        raise RuleBreach(4, f"from_state is {frm!r} but {where}.")
    if to == frm:
        raise RuleBreach(4, f"to_state equals from_state ({to!r}); that is not a change.")
    if frm == "calling_tool" and s.open_tools:
        ids = ", ".join(t.call_id or t.tool for t in s.open_tools)
        raise RuleBreach(
            5,
            f"the state leaves 'calling_tool' while invocations are still open ({ids}); "
            "tool.completed must come first.",
        )
    if frm == "awaiting_input" and to != "paused":
        resolve_confirmations(s, accepted=(to == "calling_tool"))
    if frm == "paused" and to != "awaiting_input":
        # A pause inside awaiting_input keeps its prompts pending (they are answered when the
        # session goes on); leaving the pause elsewhere resolves them like leaving awaiting_input.
        resolve_confirmations(s, accepted=(to == "calling_tool"))
    if frm == "calling_tool":
        # An id-less accept authorises the tool call of this calling_tool stretch only.
        s.anonymous_confirmations = [c for c in s.anonymous_confirmations if c.status != "accepted"]
    s.state = to
    s.state_changes += 1


# --------------------------------------------------------------------------- rules 6, 7, 8


def on_tool_invoked(s: SessionState, event: Event) -> None:
    """Open an invocation after checking its id and the consent it needs."""
    require_state(s, "tool.invoked", "calling_tool")
    tool = event.get("tool")
    if not isinstance(tool, str) or not tool:
        raise RuleBreach(6, "tool.invoked needs a non-empty tool name.")
    call_id = event.get("tool_call_id")
    if call_id is not None:
        if not isinstance(call_id, str):
            raise RuleBreach(6, f"tool_call_id {call_id!r} is not a string.")
        if call_id in s.call_ids:
            raise RuleBreach(6, f"tool_call_id {call_id} was already used in this session.")
    check_consent(s, event, call_id)
    if call_id is not None:
        s.call_ids.add(call_id)
    s.open_tools.append(ToolCall(tool, call_id, str(event.get("event_id"))))


def check_consent(s: SessionState, event: Event, call_id: str | None) -> None:
    """Rules 7/8: an irreversible action needs an accepted, not rejected, confirmation."""
    irreversible = event.get("irreversible") is True
    linked = s.confirmations_by_call.get(call_id) if call_id is not None else None
    if linked is not None:
        if linked.status == "rejected":
            raise RuleBreach(
                8,
                f"the confirmation {linked.event_id} for {call_id} was rejected, so "
                "that action must not be invoked without a new, accepted confirmation.",
            )
        if linked.status != "accepted":
            raise RuleBreach(
                7,
                f"the confirmation {linked.event_id} for {call_id} is {linked.status}, "
                "not accepted.",
            )
        if event.get("risk_level", "low") != (linked.risk_level or "low") or irreversible != (
            linked.irreversible is True
        ):
            raise RuleBreach(
                7,
                f"risk_level/irreversible ({event.get('risk_level')!r}/"
                f"{event.get('irreversible')!r}) "
                f"differ from confirmation {linked.event_id} "
                f"({linked.risk_level!r}/{linked.irreversible!r}).",
            )
        linked.status = "used"
        return
    adjacent = s.anonymous_confirmations.pop() if s.anonymous_confirmations else None
    status = adjacent.status if adjacent is not None else "missing"
    if adjacent is not None:
        adjacent.status = "used"
    if not irreversible or status == "accepted":
        return
    if adjacent is not None and status == "rejected":
        raise RuleBreach(
            8,
            f"the preceding confirmation {adjacent.event_id} was rejected, so this "
            "irreversible tool.invoked must not follow without a new, accepted confirmation.",
        )
    raise RuleBreach(
        7, "an irreversible tool.invoked needs an accepted awaiting.confirmation before it."
    )


def on_tool_completed(s: SessionState, event: Event) -> None:
    """Close exactly one open invocation, matched by id or, without ids, by tool name."""
    require_state(s, "tool.completed", "calling_tool")
    tool, status, call_id = event.get("tool"), event.get("status"), event.get("tool_call_id")
    if status not in TOOL_STATUSES:
        raise RuleBreach(6, f"status {status!r} is not success, error or timeout.")
    if call_id is not None:
        if call_id in s.completed_call_ids:
            raise RuleBreach(6, f"tool call {call_id} already has its tool.completed.")
        match = next((t for t in s.open_tools if t.call_id == call_id), None)
        if match is None:
            raise RuleBreach(
                6, f"no earlier tool.invoked has tool_call_id {call_id!r} (orphan completion)."
            )
    else:
        match = next((t for t in s.open_tools if t.call_id is None and t.tool == tool), None)
        if match is None:
            if any(t.tool == tool for t in s.open_tools):
                raise RuleBreach(
                    6,
                    f"the open {tool!r} invocation has a tool_call_id, so its completion "
                    "must carry it too.",
                )
            raise RuleBreach(
                6, f"no open tool.invoked for tool {tool!r} (orphan or second completion)."
            )
    if match.tool != tool:
        raise RuleBreach(
            6, f"tool is {tool!r} but its invocation {match.event_id} was {match.tool!r}."
        )
    s.open_tools.remove(match)
    if call_id is not None:
        s.completed_call_ids.add(call_id)


# --------------------------------------------------------------------------- rules 7, 9, 11


def on_confirmation(s: SessionState, event: Event) -> None:
    """Record a confirmation after its safety fields and pending-uniqueness are checked."""
    require_state(s, "awaiting.confirmation", "awaiting_input")
    check_confirmation_safety(event)
    extra = event.get("extra_context")
    call_id = extra.get("tool_call_id") if isinstance(extra, Mapping) else None
    record = Confirmation(
        str(event.get("event_id")), call_id, event.get("risk_level"), event.get("irreversible")
    )
    if call_id is None:
        s.anonymous_confirmations.append(record)
        return
    if call_id in s.call_ids:
        raise RuleBreach(
            7, f"tool call {call_id} was already invoked; confirmation must come before it."
        )
    previous = s.confirmations_by_call.get(call_id)
    if previous is not None and previous.status == "pending":
        raise RuleBreach(
            9,
            f"confirmation {previous.event_id} for {call_id} is still pending; "
            "only one may be pending per tool call.",
        )
    s.confirmations_by_call[call_id] = record


def check_timeout(event: Event, name: str) -> None:
    """``timeout_seconds`` is a JSON integer in 1..86400."""
    timeout = event.get("timeout_seconds")
    if not _is_int(timeout) or not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
        raise RuleBreach(11, f"{name} timeout_seconds {timeout!r} is not an integer in 1..86400.")


def check_confirmation_safety(event: Event) -> None:
    """Rule 11: both risk fields set, and risky irreversible actions default to reject."""
    check_timeout(event, "awaiting.confirmation")
    risk, irreversible, default = (
        event.get("risk_level"),
        event.get("irreversible"),
        event.get("default_decision"),
    )
    if risk not in RISK_LEVELS or not isinstance(irreversible, bool):
        raise RuleBreach(
            11,
            f"awaiting.confirmation must set risk_level (low/medium/high) and irreversible "
            f"(bool); got {risk!r} and {irreversible!r}.",
        )
    if default not in ("accept", "reject"):
        raise RuleBreach(11, f"default_decision {default!r} is not accept or reject.")
    if irreversible and risk in ("medium", "high") and default != "reject":
        raise RuleBreach(
            11, f"an irreversible {risk}-risk action must have default_decision 'reject'."
        )


def on_clarification(s: SessionState, event: Event) -> None:
    """Clarifications block like confirmations, so they too live in ``awaiting_input``."""
    require_state(s, "awaiting.clarification", "awaiting_input")
    check_timeout(event, "awaiting.clarification")


def resolve_confirmations(s: SessionState, *, accepted: bool) -> None:
    """Leaving ``awaiting_input`` answers every pending prompt: accept iff to calling_tool."""
    pending = [c for c in s.confirmations_by_call.values() if c.status == "pending"]
    pending += [c for c in s.anonymous_confirmations if c.status == "pending"]
    for confirmation in pending:
        confirmation.status = "accepted" if accepted else "rejected"


# --------------------------------------------------------------------------- rule 10 and the end


def on_output_streaming(s: SessionState, event: Event) -> None:
    """Positions never go back; one ``complete: true`` per output; nothing after it."""
    require_state(s, "output.streaming", "writing_output")
    key = event.get("output_id") or ""
    position, complete = event.get("position"), event.get("complete")
    label = f"output {key}" if key else "the session output"
    if not _is_int(position) or position < 0:
        raise RuleBreach(10, f"position {position!r} is not an integer >= 0.")
    if not isinstance(complete, bool):
        raise RuleBreach(10, f"complete {complete!r} is not a boolean.")
    current = s.outputs.get(str(key))
    if current is not None and current.complete:
        raise RuleBreach(10, f"{label} already completed; no chunk may follow.")
    if current is not None and position < current.position:
        raise RuleBreach(
            10, f"position went down from {current.position} to {position} in {label}."
        )
    s.outputs[str(key)] = OutputState(position, complete)


def check_nothing_open(s: SessionState) -> None:
    """At the terminal event every invocation and every output must be finished."""
    if s.open_tools:
        ids = ", ".join(f"{t.call_id or t.tool} ({t.event_id})" for t in s.open_tools)
        raise RuleBreach(6, f"the session ends with tool invocations never completed: {ids}.")
    unfinished = [k or "(session output)" for k, o in s.outputs.items() if not o.complete]
    if unfinished:
        raise RuleBreach(
            10, f"the session ends with outputs never completed: {', '.join(unfinished)}."
        )


HANDLERS: dict[str, Callable[[SessionState, Event], None]] = {
    "state.changed": on_state_changed,
    "tool.invoked": on_tool_invoked,
    "tool.completed": on_tool_completed,
    "output.streaming": on_output_streaming,
    "awaiting.confirmation": on_confirmation,
    "awaiting.clarification": on_clarification,
}
