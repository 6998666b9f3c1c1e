"""The AAEP 1.0.0 producer: events, sessions, fan-out, coalescing, replies and redaction.

Pure Python on purpose: nothing here imports Jupyter, tornado or anthropic, so the protocol
can be tested, reused and reasoned about on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:
    from .broker import Outcome, PendingRequest, ReplyBroker
    from .coalescer import OutputCoalescer
    from .emitter import Emitter, Event, ListSubscriber, Subscriber
    from .events import (
        CORE_EVENT_TYPES,
        CRITICAL_TYPES,
        TERMINAL_TYPES,
        AwaitingClarification,
        AwaitingConfirmation,
        Choice,
        EventPayload,
        HandoffRequested,
        OutputStreaming,
        Progress,
        ProgressUpdated,
        SessionCancelled,
        SessionCompleted,
        SessionErrored,
        SessionStarted,
        StateChanged,
        Summary,
        ToolCompleted,
        ToolInvoked,
        default_decision_for,
    )
    from .redaction import mask_secrets, redact_arguments
    from .session import AAEP_CONTEXT, AAEP_VERSION, Producer, Session, SessionClosed

__all__ = [
    "AAEP_CONTEXT",
    "AAEP_VERSION",
    "CORE_EVENT_TYPES",
    "CRITICAL_TYPES",
    "TERMINAL_TYPES",
    "AwaitingClarification",
    "AwaitingConfirmation",
    "Choice",
    "Emitter",
    "Event",
    "EventPayload",
    "HandoffRequested",
    "ListSubscriber",
    "Outcome",
    "OutputCoalescer",
    "OutputStreaming",
    "PendingRequest",
    "Producer",
    "Progress",
    "ProgressUpdated",
    "ReplyBroker",
    "Session",
    "SessionCancelled",
    "SessionClosed",
    "SessionCompleted",
    "SessionErrored",
    "SessionStarted",
    "StateChanged",
    "Subscriber",
    "Summary",
    "ToolCompleted",
    "ToolInvoked",
    "default_decision_for",
    "mask_secrets",
    "redact_arguments",
]

_WHERE = {
    name: module
    for module, names in {
        "broker": ("Outcome", "PendingRequest", "ReplyBroker"),
        "coalescer": ("OutputCoalescer",),
        "emitter": ("Emitter", "Event", "ListSubscriber", "Subscriber"),
        "events": (
            "CORE_EVENT_TYPES",
            "CRITICAL_TYPES",
            "TERMINAL_TYPES",
            "AwaitingClarification",
            "AwaitingConfirmation",
            "Choice",
            "EventPayload",
            "HandoffRequested",
            "OutputStreaming",
            "Progress",
            "ProgressUpdated",
            "SessionCancelled",
            "SessionCompleted",
            "SessionErrored",
            "SessionStarted",
            "StateChanged",
            "Summary",
            "ToolCompleted",
            "ToolInvoked",
            "default_decision_for",
        ),
        "redaction": ("mask_secrets", "redact_arguments"),
        "session": ("AAEP_CONTEXT", "AAEP_VERSION", "Producer", "Session", "SessionClosed"),
    }.items()
    for name in names
}
"""Which module each name comes from: imported on first use, so a server that loads one part of
the protocol (a wire helper, the redaction) does not pay for all of it (issue 31)."""


__getattr__ = lazy_exports(__name__, _WHERE)
