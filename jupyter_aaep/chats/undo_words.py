"""The sentence a person hears after Undo: what was put back, whose changes, which cells were kept.

Kept apart from the runner so the words of one concept live together (the runner only calls
:func:`undo_summary`); no Jupyter imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..words import plural

__all__ = ["actor_of", "undo_summary"]


def _cells(count: int) -> str:
    return plural(count, "cell")


def actor_of(record: Any) -> str:
    """Who worked in the session of *record* (live or as stored), as a sentence names them."""
    actor = record.get("actor") if isinstance(record, dict) else getattr(record, "actor", None)
    return "the agent" if not actor or actor == "The agent" else str(actor)


def undo_summary(
    path: str,
    *,
    removed: int,
    added: int,
    restored: int,
    kept: Sequence[str] | None = None,
    actor: str = "the agent",
) -> str:
    """What an undo did, naming only what happened, and each cell it kept.

    *removed* cells were added by *actor* (the agent, or an outside agent by name), *added* ones
    are cells it had deleted (put back), *restored* ones it had changed, moved or cleared; *kept*
    says, per cell, why it was left.
    """
    parts = [
        text
        for count, text in (
            (removed, f"removed {_cells(removed)} {actor} added"),
            (added, f"put back {_cells(added)} {actor} deleted"),
            (restored, f"restored {_cells(restored)} {actor} changed"),
        )
        if count
    ]
    notes = " ".join(kept or [])
    if not parts:
        if notes:
            return f"Nothing was undone in {path}: {notes[0].lower()}{notes[1:]}"
        return f"Nothing to undo: {path} already holds none of {_possessive(actor)} changes."
    said = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"Undid {_possessive(actor)} changes to {path}: {said}." + (f" {notes}" if notes else "")


def _possessive(actor: str) -> str:
    return f"{actor}'" if actor.endswith("s") else f"{actor}'s"
