"""The twelve AAEP 1.0.0 core event types, as typed payloads.

A payload holds only what the producer decides (what happened, how to say it); the envelope
(ids, timestamp, producer, sequence number, language) is added by
:class:`jupyter_aaep.aaep.session.Session` when the event is emitted, so no caller can get the
envelope rules wrong. ``to_payload()`` gives the JSON-ready payload keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Urgency = Literal["background", "normal", "critical"]
RiskLevel = Literal["low", "medium", "high"]
Decision = Literal["accept", "reject"]
ErrorCategory = Literal["transient", "permanent", "requires_user", "unknown"]
CancelledBy = Literal["user", "producer", "timeout", "system"]
ToolStatus = Literal["success", "error", "timeout"]
CoalesceHint = Literal["none", "word", "sentence", "paragraph", "completion"]
ResponseKind = Literal["freetext", "yes_no", "multiple_choice", "numeric"]
TargetKind = Literal["human", "specialist_agent", "escalation_queue"]

TYPE_PREFIX = "aaep:agent."
CRITICAL_TYPES = frozenset(
    {
        "aaep:agent.session.errored",
        "aaep:agent.awaiting.confirmation",
        "aaep:agent.awaiting.clarification",
        "aaep:agent.handoff.requested",
    }
)
TERMINAL_TYPES = frozenset(
    {"aaep:agent.session.completed", "aaep:agent.session.errored", "aaep:agent.session.cancelled"}
)


@dataclass(frozen=True)
class Summary:
    """The three lengths of one announcement, written for a person listening to them."""

    normal: str
    terse: str | None = None
    detailed: str | None = None

    def fields(self) -> dict[str, str]:
        terse = self.terse or self.normal
        detailed = self.detailed or self.normal
        return {
            "summary_terse": terse[:4096],
            "summary_normal": self.normal[:16384],
            "summary_detailed": detailed[:16384],
        }


@dataclass(frozen=True)
class Extension:
    """One AAEP extension's data on an event (§3: ``extensions.<prefix>``, the prefix declared by
    a context URI after the core one in ``@context``); subscribers that do not know it ignore it."""

    prefix: str
    context: str
    """The URI that declares the prefix (and documents the data)."""
    data: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class EventPayload:
    """Base of every core payload; subclasses set ``TYPE`` and ``URGENCY``."""

    TYPE: ClassVar[str]
    URGENCY: ClassVar[Urgency] = "normal"

    summary: Summary | None = None
    urgency: Urgency | None = None
    """Overrides the type's recommended urgency; critical types ignore an override."""
    extensions: tuple[Extension, ...] = ()
    """Extension data, put in the envelope by the session (never as custom top-level keys)."""

    @property
    def event_type(self) -> str:
        return self.TYPE

    def resolved_urgency(self) -> Urgency:
        if self.TYPE in CRITICAL_TYPES:
            return "critical"
        return self.urgency or self.URGENCY

    def to_payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in ("summary", "urgency", "extensions"):
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                value = {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
            elif isinstance(value, (list, tuple)) and value and dataclasses.is_dataclass(value[0]):
                value = [
                    {k: v for k, v in dataclasses.asdict(item).items() if v is not None}
                    for item in value
                ]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        if self.summary is not None:
            out.update(self.summary.fields())
        return out


@dataclass(frozen=True, kw_only=True)
class SessionStarted(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.session.started"
    request_text: str | None = None
    requested_by: str | None = None
    tools_available: tuple[str, ...] | None = None
    expected_duration_ms: int | None = None


@dataclass(frozen=True, kw_only=True)
class SessionCompleted(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.session.completed"
    duration_ms: int | None = None
    tool_invocations_count: int | None = None
    output_summary: str | None = None
    result_uri: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionErrored(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.session.errored"
    URGENCY: ClassVar[Urgency] = "critical"
    error_category: ErrorCategory
    error_code: str | None = None
    error_uri: str | None = None
    recoverable: bool | None = None
    remediation_hint: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionCancelled(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.session.cancelled"
    cancelled_by: CancelledBy
    cancellation_reason: str | None = None
    partial_result: str | None = None


@dataclass(frozen=True, kw_only=True)
class StateChanged(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.state.changed"
    from_state: str
    to_state: str
    expected_duration_ms: int | None = None


@dataclass(frozen=True)
class Progress:
    percent: float | None = None
    step: int | None = None
    total_steps: int | None = None
    description: str | None = None


@dataclass(frozen=True, kw_only=True)
class ProgressUpdated(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.progress.updated"
    URGENCY: ClassVar[Urgency] = "background"
    progress: Progress
    eta_ms: int | None = None


@dataclass(frozen=True, kw_only=True)
class ToolInvoked(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.tool.invoked"
    tool: str
    tool_call_id: str | None = None
    description: str | None = None
    args_summary: str | None = None
    expected_duration_ms: int | None = None
    risk_level: RiskLevel | None = None
    irreversible: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCompleted(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.tool.completed"
    tool: str
    status: ToolStatus
    tool_call_id: str | None = None
    duration_ms: int | None = None
    error_message: str | None = None


@dataclass(frozen=True, kw_only=True)
class OutputStreaming(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.output.streaming"
    chunk: str
    position: int
    complete: bool
    coalesce_hint: CoalesceHint | None = None
    output_id: str | None = None
    content_type: str | None = None
    language: str | None = None


@dataclass(frozen=True, kw_only=True)
class AwaitingConfirmation(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.awaiting.confirmation"
    URGENCY: ClassVar[Urgency] = "critical"
    action: str
    consequence: str
    reply_token: str
    timeout_seconds: int
    default_decision: Decision
    risk_level: RiskLevel | None = None
    irreversible: bool | None = None
    reversibility: Literal["reversible", "reversible_with_effort", "irreversible"] | None = None
    allowed_replies: tuple[str, ...] | None = None
    extra_context: dict[str, Any] | None = None


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


@dataclass(frozen=True, kw_only=True)
class AwaitingClarification(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.awaiting.clarification"
    URGENCY: ClassVar[Urgency] = "critical"
    question: str
    reply_token: str
    timeout_seconds: int
    accepted_response_kinds: tuple[ResponseKind, ...] | None = None
    choices: tuple[Choice, ...] | None = None
    context: str | None = None
    default_response: str | None = None


@dataclass(frozen=True, kw_only=True)
class HandoffRequested(EventPayload):
    TYPE: ClassVar[str] = "aaep:agent.handoff.requested"
    URGENCY: ClassVar[Urgency] = "critical"
    reason: str
    target_kind: TargetKind
    target_uri: str | None = None
    packaged_context: dict[str, Any] | None = None
    urgency_for_handoff: Literal["low", "medium", "high"] | None = None


def default_decision_for(*, irreversible: bool, risk_level: RiskLevel) -> Decision:
    """The AAEP safety rule (§6.4.1): when in doubt about a risky action, the default is *reject*.

    The spec forces *reject* for irreversible medium/high risk and recommends it for
    irreversible low and reversible high risk; for reversible medium risk it leaves the choice
    open, and we choose *reject* too, so that only a reversible low-risk action may go ahead
    when nobody answers.
    """
    if irreversible or risk_level != "low":
        return "reject"
    return "accept"


CORE_EVENT_TYPES: tuple[type[EventPayload], ...] = (
    SessionStarted,
    SessionCompleted,
    SessionErrored,
    SessionCancelled,
    StateChanged,
    ProgressUpdated,
    ToolInvoked,
    ToolCompleted,
    OutputStreaming,
    AwaitingConfirmation,
    AwaitingClarification,
    HandoffRequested,
)
