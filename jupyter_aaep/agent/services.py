"""The collaborators the host hands the agent, each named and typed by what the agent calls.

The agent layer knows nothing of Jupyter, so it cannot name the notebook service or the
server's follower of long cell runs; it names instead the few methods it calls on them
(:class:`NotebookEdits`, :class:`CellRunFollower`). The server builds one frozen
:class:`AgentServices` when it starts; the runner passes it to every session, and every tool
call gets it as ``ToolContext.services``. A missing collaborator is ``None`` (a server without
jupyter-collaboration has no notebook service): callers check, and say so in a sentence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..aaep.events import Extension
from .plan import PlanFiles
from .rules import RulesProvider

__all__ = [
    "LEFT_RUNNING_CONTEXT",
    "LEFT_RUNNING_PREFIX",
    "AgentServices",
    "CellRunFollower",
    "LeftRunning",
    "NotebookEdits",
    "SessionEdits",
    "UndoOutcome",
    "cells_left_running",
    "left_running",
    "left_running_sentence",
]


class SessionEdits(Protocol):
    """A session's record of what it changed in its notebook (the notebook service's own
    type); the runner keeps it for undo and stores its JSON."""

    @property
    def session_id(self) -> str: ...

    @property
    def lost(self) -> Sequence[str]:
        """The agent's edits another program's write took away (filled by ``lost_edits``)."""
        ...

    def to_json(self) -> dict[str, Any]: ...


class UndoOutcome(Protocol):
    """What an undo did, in counts of cells, for the sentence the user hears."""

    @property
    def removed(self) -> int: ...

    @property
    def added(self) -> int: ...

    @property
    def restored(self) -> int: ...

    @property
    def kept(self) -> Sequence[str]:
        """Cells someone changed since the agent did, so they were kept as they are."""
        ...


class NotebookEdits(Protocol):
    """What the runner calls on the notebook service: record a session's edits, save them,
    find the ones lost, undo them. Records are the service's own objects; the runner only
    hands them back (so their parameters are typed loosely)."""

    async def save(self, path: str) -> bool:
        """Put the notebook's cells on disk now; ``False`` when they may not be there yet."""
        ...

    def begin_record(
        self,
        chat_id: str,
        session_id: str,
        path: str,
        on_change: Callable[[Any], None] | None = None,
        *,
        actor: str = ...,
    ) -> SessionEdits | None:
        """Start recording the session's edits (*actor*: who works in it, as people hear it);
        ``None`` when this service records none."""
        ...

    def end_record(self, chat_id: str) -> object: ...

    async def lost_edits(self, record: Any) -> object:
        """Fill ``record.lost`` with the edits a reload from disk took away."""
        ...

    async def undo(
        self, path: str, records: Sequence[Any], *, others: Sequence[Any] = ...
    ) -> UndoOutcome:
        """Revert what *records* did; *others* (other sessions' records) only name who changed a
        cell since."""
        ...


LEFT_RUNNING = "still running; you will hear when"
"""How a session's last words say that a cell it started still runs ("Cell 4 is still running;
you will hear when it ends."): the words for people; the count travels as data beside them."""

LEFT_RUNNING_PREFIX = "jaaep_cells"
LEFT_RUNNING_CONTEXT = (
    "https://github.com/jupyter-aaep/jupyter-aaep/blob/main/docs/protocol.md#cells-left-running"
)
"""The context URI that declares the ``jaaep_cells`` extension of ``session.completed``:
``{"left_running": N}``, the cells the session leaves running (documented there)."""


@dataclass(frozen=True)
class LeftRunning:
    """The cells a session leaves running at its end: the sentence its last words say, and
    their count as data, which the ``%aaep`` view reads to follow each one to its end."""

    sentence: str
    cells: int

    def extension(self) -> Extension:
        """The count as the ``jaaep_cells`` extension of the session's ``session.completed``."""
        return Extension(LEFT_RUNNING_PREFIX, LEFT_RUNNING_CONTEXT, {"left_running": self.cells})


def left_running_sentence(numbers: Sequence[int | None]) -> str:
    """The last words' sentence about the cells still running: every one named, so a listener
    knows how many ends to wait for ("Cell 4 and cell 6 are still running; …")."""
    names = [f"cell {n}" if n else "a cell" for n in numbers]
    listed = names[-1] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    verb, end = ("is", "it ends") if len(names) == 1 else ("are", "they end")
    return f"{listed[0].upper()}{listed[1:]} {verb} {LEFT_RUNNING} {end}."


def left_running(numbers: Sequence[int | None]) -> LeftRunning:
    """The sentence and the count for the cells numbered *numbers* (``None``: no number)."""
    return LeftRunning(left_running_sentence(numbers), len(numbers))


def cells_left_running(event: Mapping[str, Any]) -> int:
    """How many cells a ``session.completed`` event says its session left running (0: none),
    read from its ``jaaep_cells`` extension."""
    extensions = event.get("extensions")
    ours = extensions.get(LEFT_RUNNING_PREFIX) if isinstance(extensions, Mapping) else None
    count = ours.get("left_running") if isinstance(ours, Mapping) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


class CellRunFollower(Protocol):
    """The host's follower of cells that run longer than a tool call waits for them."""

    def follow(self, run: Any, chat_id: str, *, started_by: str | None = None) -> None:
        """Announce *run*'s progress and end in the chat (a running cell of the notebook layer),
        in a session correlated with *started_by*, the session that left it running."""
        ...

    def still_running_note(self, chat_id: str) -> LeftRunning | None:
        """The cells a session leaves running as it ends (sentence and count), or ``None``."""
        ...

    def running(self, path: str | None) -> list[dict[str, Any]]:
        """Every cell running in the notebook at *path*, the agent's or the person's."""
        ...


@dataclass(frozen=True)
class AgentServices:
    """The collaborators of the agent and its tools; ``None`` where the host has none."""

    notebook: NotebookEdits | None = None
    """The live notebooks: the notebook tools narrow it to the notebook layer's service."""
    long_runs: CellRunFollower | None = None
    """Announces the ends of cells that outlast a tool call."""
    rules: RulesProvider | None = None
    """Reads the rules files that apply to a notebook (``agent/rules.py``)."""
    cell_numbers: Callable[[str], Awaitable[Mapping[str, int]]] | None = None
    """A notebook's cell ids → their numbers now, for the answer's cell citations."""
    plans: PlanFiles | None = None
    """Where plan mode writes the plan a person may edit (under the server root)."""
