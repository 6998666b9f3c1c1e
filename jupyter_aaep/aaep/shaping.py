"""Shaping events for one subscriber: verbosity, coalescing boundaries and merging (§5.3, §5.6).

Everything here works on copies of emitted events and keeps them valid: a merged
``output.streaming`` chunk keeps the first chunk's ``position`` and the last one's
``complete`` flag, a merged ``state.changed`` goes from the first state to the last, and a
reshaped event still carries ``summary_normal``. The merged message takes the identity
(``event_id``, ``timestamp``, ``sequence_number``) of its newest part, so ``Last-Event-ID``
replays continue after everything it contains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from .capabilities import BOUNDARY_LEVELS, Terms, compact_type

Kind = Literal["chunk", "state", "progress", "event", "message"]

OUTPUT_STREAMING = "aaep:agent.output.streaming"
STATE_CHANGED = "aaep:agent.state.changed"
PROGRESS_UPDATED = "aaep:agent.progress.updated"
_URGENCY_ORDER = {"background": 0, "normal": 1, "critical": 2}
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n\s*$")


def is_event(message: Mapping[str, Any]) -> bool:
    """AAEP events carry ``@context``; acknowledgements and handshake messages do not."""
    return "@context" in message


_KINDS: dict[str, Kind] = {
    OUTPUT_STREAMING: "chunk",
    STATE_CHANGED: "state",
    PROGRESS_UPDATED: "progress",
}


def kind_of(message: Mapping[str, Any]) -> Kind:
    if not is_event(message):
        return "message"
    return kind_of_type(compact_type(str(message.get("type", ""))))


def kind_of_type(event_type: str) -> Kind:
    """The kind of an event of *event_type* (compact form)."""
    return _KINDS.get(event_type, "event")


def for_verbosity(event: dict[str, Any], verbosity: str) -> dict[str, Any]:
    """The event as this subscriber wants its summaries: ``verbosity`` set, extra lengths dropped.

    ``summary_normal`` always stays (every announceable event needs it); a terse subscriber
    does not receive the detailed text it will never read.
    """
    if verbosity == "normal" and event.get("verbosity", "normal") == "normal":
        return event  # the common case, checked first: every subscriber runs this per event
    if not any(key.startswith("summary_") for key in event):
        return event
    shaped = dict(event)
    shaped["verbosity"] = verbosity
    if verbosity == "terse":
        shaped.pop("summary_detailed", None)
    return shaped


def chunk_level(chunk: Mapping[str, Any]) -> int:
    """How coarse a boundary this chunk ends on (see :data:`BOUNDARY_LEVELS`)."""
    if chunk.get("complete"):
        return BOUNDARY_LEVELS["completion"]
    level = BOUNDARY_LEVELS.get(str(chunk.get("coalesce_hint") or "none"), 0)
    if level < BOUNDARY_LEVELS["paragraph"] and _PARAGRAPH_END.search(str(chunk.get("chunk", ""))):
        level = BOUNDARY_LEVELS["paragraph"]
    return level


def boundary_label(chunk: Mapping[str, Any], terms: Terms) -> str | None:
    """The coarsest negotiated boundary this chunk ends on, or ``None`` if it must be held.

    A chunk that ends a sentence also ends a word, so a subscriber that asked only for
    ``word`` still gets sentence-sized chunks, labelled ``word``.
    """
    level = chunk_level(chunk)
    label = None
    for boundary_level, name in terms.boundary_levels:  # coarsest last
        if boundary_level <= level:
            label = name
    return label


def can_merge(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether *second* may be folded into *first* (both of one session, adjacent in it)."""
    kind = kind_of(first)
    if kind != kind_of(second) or first.get("session_id") != second.get("session_id"):
        return False
    if kind == "chunk":
        return (
            not first.get("complete")
            and first.get("output_id") == second.get("output_id")
            and first.get("content_type") == second.get("content_type")
            and first.get("language") == second.get("language")
            and first.get("verbosity") == second.get("verbosity")
        )
    if kind == "state":
        # Leaving awaiting_input is how every listener learns a request was resolved; keep it.
        return first.get("from_state") != "awaiting_input" and first.get("to_state") == second.get(
            "from_state"
        )
    return kind == "progress"


def merge(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any] | None:
    """*first* and *second* as one message; ``None`` when they cancel out (A→B then B→A)."""
    merged = dict(second)
    kind = kind_of(first)
    if kind == "chunk":
        merged["position"] = first["position"]
        merged["chunk"] = str(first.get("chunk", "")) + str(second.get("chunk", ""))
    elif kind == "state":
        if first["from_state"] == second["to_state"]:
            return None
        merged["from_state"] = first["from_state"]
    if _URGENCY_ORDER.get(str(first.get("urgency")), 1) > _URGENCY_ORDER.get(
        str(second.get("urgency")), 1
    ):
        merged["urgency"] = first["urgency"]
    return merged
