"""The terms one subscription is served under: what a producer honours after a handshake (§5.3).

A :class:`Terms` object is the *honoured* side of a capability negotiation. It is immutable
and JSON-serialisable as ``honored_capabilities``; :mod:`.handshake` builds it from a request,
and :mod:`.subscription` enforces it. Subscriptions without a handshake (plain SSE or
WebSocket) get :meth:`Terms.implicit`, the protocol defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Verbosity = Literal["terse", "normal", "detailed"]
Boundary = Literal["none", "word", "sentence", "paragraph", "completion"]

VERBOSITIES: tuple[Verbosity, ...] = ("terse", "normal", "detailed")
BOUNDARY_LEVELS: dict[str, int] = {
    "none": 0,
    "word": 1,
    "sentence": 2,
    "paragraph": 3,
    "completion": 4,
}
"""Coarseness of each coalescing boundary: a chunk ending at level *n* also ends at every lower one."""
DEFAULT_BOUNDARIES: tuple[Boundary, ...] = ("sentence", "completion")
DEFAULT_INCLUDE: tuple[str, ...] = ("aaep:agent.*",)
PRODUCED_LANGUAGES: tuple[str, ...] = ("en-US",)
"""The languages this producer writes its human-readable text in."""
CONFORMANCE_LEVELS: tuple[int, ...] = (1, 2, 3)

_TYPE_URI = "https://aaep-protocol.org/types/"


def compact_type(event_type: str) -> str:
    """``https://aaep-protocol.org/types/agent.x`` → ``aaep:agent.x``; other values unchanged."""
    if event_type.startswith(_TYPE_URI):
        return "aaep:" + event_type[len(_TYPE_URI) :]
    return event_type


def pattern_matches(pattern: str, event_type: str) -> bool:
    """An event-filter pattern: an exact type, or a prefix followed by a trailing ``*``."""
    pattern, event_type = compact_type(pattern), compact_type(event_type)
    if pattern.endswith("*"):
        return event_type.startswith(pattern[:-1])
    return pattern == event_type


def valid_pattern(pattern: str) -> bool:
    """Only a trailing ``*`` is a wildcard; one anywhere else would be read literally, so refuse it."""
    return bool(pattern) and "*" not in pattern[:-1]


@dataclass(frozen=True)
class EventFilter:
    """Which event types a subscription receives; ``exclude`` wins over ``include``."""

    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()

    def allows(self, event_type: str) -> bool:
        if any(pattern_matches(p, event_type) for p in self.exclude):
            return False
        return any(pattern_matches(p, event_type) for p in self.include)

    def to_json(self) -> dict[str, list[str]]:
        return {"include": list(self.include), "exclude": list(self.exclude)}


def language_servable(tag: str) -> bool:
    """Whether text in one of :data:`PRODUCED_LANGUAGES` serves a reader of *tag* (§11 matching).

    Exact match, or the same primary language (``en`` and ``en-GB`` read ``en-US`` text: the
    region and script fallbacks of §11 end at the primary subtag).
    """
    wanted = tag.lower()
    for produced in PRODUCED_LANGUAGES:
        have = produced.lower()
        if wanted == have or wanted.split("-")[0] == have.split("-")[0]:
            return True
    return False


_LANGUAGE_TAG = re.compile(r"^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$")


def valid_language_tag(tag: object) -> bool:
    return isinstance(tag, str) and _LANGUAGE_TAG.match(tag) is not None


@dataclass(frozen=True)
class Terms:
    """Honoured capabilities: never more permissive than what the subscriber asked for."""

    max_events_per_second: int | None = None
    """Non-critical messages per second (a token bucket); ``None`` means unlimited."""
    preferred_verbosity: Verbosity = "normal"
    languages: tuple[str, ...] = ("en-US",)
    supports_confirmation_reply: bool = False
    """Whether this subscriber answers confirmations; if not, it is sent none (§5.8.2)."""
    supports_clarification_reply: bool = False
    coalesce_boundaries: tuple[str, ...] = DEFAULT_BOUNDARIES
    event_filter: EventFilter = field(default_factory=EventFilter)
    conformance_levels: tuple[int, ...] = (1,)
    extensions: tuple[str, ...] | None = None
    """Echoed ``supported_extensions`` (the empty intersection with ours), if it was asked."""

    @classmethod
    def implicit(cls, *, can_reply: bool = False) -> Terms:
        """The defaults for a subscriber that never sent ``subscription.request``.

        ``can_reply`` marks a stream that comes with its own reply back-channel (a chat's
        ``/events`` + ``/messages`` pair, or its WebSocket): such a subscriber can answer
        confirmations, so it is sent them.
        """
        return cls(supports_confirmation_reply=can_reply, supports_clarification_reply=can_reply)

    def can_answer(self, kind: Literal["confirmation", "clarification"]) -> bool:
        if kind == "confirmation":
            return self.supports_confirmation_reply
        return self.supports_clarification_reply

    @cached_property
    def boundary_levels(self) -> tuple[tuple[int, str], ...]:
        """Sorted once per terms: every chunk of every subscriber asks."""
        return tuple(sorted((BOUNDARY_LEVELS[b], b) for b in self.coalesce_boundaries))

    def to_json(self) -> dict[str, Any]:
        """The ``honored_capabilities`` object of ``subscription.accepted``."""
        out: dict[str, Any] = {}
        if self.max_events_per_second is not None:
            out["max_events_per_second"] = self.max_events_per_second
        out["preferred_verbosity"] = self.preferred_verbosity
        out["languages"] = list(self.languages)
        out["supports_confirmation_reply"] = self.supports_confirmation_reply
        out["supports_clarification_reply"] = self.supports_clarification_reply
        out["coalesce_boundaries"] = list(self.coalesce_boundaries)
        out["event_filters"] = self.event_filter.to_json()
        out["supported_conformance_levels"] = list(self.conformance_levels)
        if self.extensions is not None:
            out["supported_extensions"] = list(self.extensions)
        return out
