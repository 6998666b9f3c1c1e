"""What one agent session did to a notebook, cell by cell, and how to take back only that.

Undo must never touch anyone else's work, a person's or another agent's: it reverts one
session's operations, each only where the cell still holds what that session left there, never
deletes a cell the session did not create, and names every cell it kept because someone changed
it afterwards (the agent whose later record touched it, or someone else). Each record is its
own: undoing one session leaves every other session's record, so each can still be undone. The
record is plain JSON so it is stored with the chat (and read back at recovery, to check the
edits reached the file on disk).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._alt_text import figure_fingerprint, output_alt, write_alt
from .documents import LiveNotebook

__all__ = ["CellOperation", "EditRecord", "UndoReport", "missing_from_file", "undo_records"]

OperationKind = Literal["create", "edit", "delete", "move", "clear", "alt_text"]
AGENT = "The agent"
"""The built-in agent's name in sentences (as :class:`~jupyter_aaep.aaep.session.Session` says it)."""


@dataclass
class CellOperation:
    """One change the agent made to one cell, with what it found and what it left."""

    kind: OperationKind
    cell_id: str
    before: dict[str, Any] = field(default_factory=dict)
    """What the cell was: ``source``/``cell_type`` (edit), the whole cell (delete), outputs
    (clear), a figure's earlier ``alt`` with its ``output_index`` and ``mime`` (alt_text)."""
    after: dict[str, Any] = field(default_factory=dict)
    """What the agent left: ``source``/``cell_type`` (create, edit); ``prev`` (move); the
    ``alt`` it wrote and the ``figure`` it described (alt_text)."""
    index: int = 0
    """0-based position before the change (delete, move) or after it (create)."""
    prev: str | None = None
    """The id of the cell just above it before the change (delete, move); ``None`` at the top."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "cell_id": self.cell_id,
            "before": self.before,
            "after": self.after,
            "index": self.index,
            "prev": self.prev,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> CellOperation:
        return cls(
            kind=body["kind"],
            cell_id=str(body["cell_id"]),
            before=dict(body.get("before") or {}),
            after=dict(body.get("after") or {}),
            index=int(body.get("index") or 0),
            prev=body.get("prev"),
        )


@dataclass
class EditRecord:
    """The operations of one session on one notebook, oldest first."""

    path: str
    session_id: str
    operations: list[CellOperation] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    actor: str = AGENT
    """Who worked in the session, as people hear it: "The agent" or an outside agent's name."""
    reloads_seen: int = 0
    """How many times the room had reloaded the file from disk when the agent last looked."""
    lost: list[str] = field(default_factory=list)
    """The agent's edits that a reload of the file took away (found by the notebook service)."""
    on_change: Callable[[EditRecord], None] | None = field(default=None, repr=False, compare=False)
    """Called after each recorded operation (the runner stores the record and saves the notebook)."""

    @property
    def empty(self) -> bool:
        return not self.operations

    def add(self, operation: CellOperation) -> None:
        self.operations.append(operation)
        if self.on_change is not None:
            self.on_change(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "operations",
            "path": self.path,
            "session_id": self.session_id,
            "started": self.started,
            "actor": self.actor,
            "operations": [op.to_json() for op in self.operations],
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> EditRecord | None:
        """The record stored in *body*, or ``None`` for a whole-notebook snapshot of older versions."""
        if body.get("kind") != "operations":
            return None
        return cls(
            path=str(body.get("path") or ""),
            session_id=str(body.get("session_id") or ""),
            operations=[CellOperation.from_json(op) for op in body.get("operations") or []],
            started=float(body.get("started") or 0.0),
            actor=str(body.get("actor") or AGENT),
        )

    def touches(self, cell_id: str) -> bool:
        return any(op.cell_id == cell_id for op in self.operations)

    def left_behind(self) -> dict[str, dict[str, Any] | None]:
        """Per cell the agent touched, what it left: ``{"source", "cell_type"}``, or ``None`` (deleted)."""
        state: dict[str, dict[str, Any] | None] = {}
        for op in self.operations:
            if op.kind in ("create", "edit"):
                state[op.cell_id] = {
                    "source": op.after.get("source", ""),
                    "cell_type": op.after.get("cell_type"),
                }
            elif op.kind == "delete":
                state[op.cell_id] = None
            elif op.cell_id not in state:  # moved or cleared: its text is what it was
                state[op.cell_id] = {"source": op.before.get("source"), "cell_type": None}
        return state

    def missing_from(self, cells: Sequence[dict[str, Any]]) -> list[str]:
        """Sentences naming the agent's changes that *cells* (e.g. the file on disk) do not hold."""
        by_id = {str(c.get("id")): c for c in cells}
        missing = []
        for cell_id, left in self.left_behind().items():
            cell = by_id.get(cell_id)
            created = any(op.kind == "create" and op.cell_id == cell_id for op in self.operations)
            if left is None:
                if cell is not None:
                    missing.append(f"the deletion of the cell that began {_quote(cell)}")
            elif cell is None:
                if created:
                    missing.append(f"the new cell {_quote(left)}")
            elif left.get("source") is not None and _text(cell.get("source")) != left["source"]:
                missing.append(f"the edit of the cell that now begins {_quote(cell)}")
        ids = [str(c.get("id")) for c in cells]
        moves = {op.cell_id: op for op in self.operations if op.kind == "move"}
        for cell_id, op in moves.items():
            if cell_id in ids and self.left_behind().get(cell_id) is not None:
                at = ids.index(cell_id)
                if (ids[at - 1] if at else None) != op.after.get("prev"):
                    missing.append(f"the move of the cell that begins {_quote(by_id[cell_id])}")
        clears = {op.cell_id: op for op in self.operations if op.kind == "clear"}
        for cell_id, op in clears.items():
            cell = by_id.get(cell_id)
            if cell is not None and _still_holds_cleared_outputs(cell, op):
                missing.append(f"the cleared outputs of the cell that begins {_quote(cell)}")
        return missing


def _still_holds_cleared_outputs(cell: dict[str, Any], op: CellOperation) -> bool:
    """Whether *cell* still has the outputs the agent cleared: the same execution count and as
    many outputs (a run since gives a new count, so new outputs are not taken for old ones)."""
    outputs = cell.get("outputs") or []
    if not outputs and cell.get("execution_count") is None:
        return False
    return cell.get("execution_count") == op.before.get("execution_count") and len(outputs) == len(
        op.before.get("outputs") or []
    )


@dataclass
class UndoReport:
    """What an undo did: counts for the panel and one sentence per cell it kept."""

    removed: int = 0
    """Cells the agent added, taken out."""
    added: int = 0
    """Cells the agent deleted, put back."""
    restored: int = 0
    """Cells the agent edited, moved or cleared (or whose figure it described), put back."""
    kept: list[str] = field(default_factory=list)


def undo_records(
    nb: LiveNotebook, records: Sequence[EditRecord], *, later: Sequence[EditRecord] = ()
) -> UndoReport:
    """Revert the operations of *records* (newest last), latest first, in one transaction.

    An operation is reverted only where the cell still holds what its session left; a cell
    changed since is kept and named, and so are that session's earlier operations on it. *later*
    are the records of sessions that started after them (any agent's, any chat of the notebook):
    a kept cell one of them touched is said to be that agent's work.
    """
    report = UndoReport()
    kept: set[str] = set()
    with nb.transaction():
        for record in reversed(records):
            for op in reversed(record.operations):
                if op.cell_id in kept:
                    continue
                why = _moved_on(nb, op, record, later) or _undo_one(nb, op, report)
                if why is not None:
                    kept.add(op.cell_id)
                    number = nb.index_of(op.cell_id) + 1 if op.cell_id in nb.cell_ids() else None
                    cell = f"Cell {number}" if number else "A cell"
                    how = "where it is" if why == "moved" else "as it is"
                    report.kept.append(
                        f"{cell} was kept {how}: {_changed_by(op.cell_id, why, record, later)}."
                    )
    return report


def _moved_on(
    nb: LiveNotebook, op: CellOperation, record: EditRecord, later: Sequence[EditRecord]
) -> str | None:
    """Why a cell the session created is kept: a later session (another agent's, or its own
    agent's in a later request) worked on it since, even if only to move or clear it, so
    deleting it would take that work back too. ``None`` for any other operation."""
    if op.kind != "create" or op.cell_id not in nb.cell_ids():
        return None
    for other in later:
        if (
            other.session_id != record.session_id
            and other.started >= record.started
            and other.touches(op.cell_id)
        ):
            return "changed"
    return None


def _changed_by(cell_id: str, verb: str, record: EditRecord, later: Sequence[EditRecord]) -> str:
    """Who *verb* (changed, moved…) *cell_id* after *record*'s session: the latest later session
    that touched it ("Claude Code changed it after this request"), else someone (a person, a program)."""
    for other in sorted(later, key=lambda r: r.started, reverse=True):
        if other.session_id == record.session_id or other.started < record.started:
            continue
        if other.touches(cell_id):
            if other.actor == AGENT:
                return f"the agent {verb} it in a later request"
            return f"{other.actor} {verb} it after this request"
    return f"someone {verb} it after this request"


def _undo_one(nb: LiveNotebook, op: CellOperation, report: UndoReport) -> str | None:
    """Revert *op*; ``None`` when done (or nothing was left to revert), else what someone did to
    the cell since (the verb of the sentence that names it: "changed", "moved", "changed or ran")."""
    present = op.cell_id in nb.cell_ids()
    if op.kind == "delete":
        if not present:
            ids = nb.cell_ids()
            index = (
                ids.index(op.prev) + 1
                if op.prev in ids
                else 0
                if op.prev is None
                else min(op.index, len(ids))
            )
            nb.insert_existing(index, op.before)
            report.added += 1
        return None
    if not present:
        return None  # someone deleted it since: nothing of the agent's is left to take back
    cell = nb.cell(op.cell_id)
    source, cell_type = _text(cell.get("source")), cell.get("cell_type")
    if op.kind in ("create", "edit"):
        if (
            source != op.after.get("source")
            or (op.after.get("cell_type") or cell_type) != cell_type
        ):
            return "changed"
        if op.kind == "create":
            nb.delete_cell(op.cell_id)
            report.removed += 1
        else:
            before_type = op.before.get("cell_type") or cell_type
            if before_type != cell_type:
                nb.change_type(
                    op.cell_id,
                    before_type,  # type: ignore[arg-type]  # a cell type read from the record
                    str(op.before.get("source", "")),
                )
            else:
                nb.set_source(op.cell_id, str(op.before.get("source", "")))
            report.restored += 1
        return None
    if op.kind == "move":
        ids = nb.cell_ids()
        position = ids.index(op.cell_id)
        if (ids[position - 1] if position else None) != op.after.get("prev"):
            return "moved"
        without = [i for i in ids if i != op.cell_id]
        target = (
            without.index(op.prev) + 1 if op.prev in without else 0 if op.prev is None else op.index
        )
        nb.move_cell(op.cell_id, target)
        report.restored += 1
        return None
    if op.kind == "alt_text":
        return _undo_alt_text(nb, op, report)
    if op.kind == "clear":
        if cell.get("outputs") or source != op.before.get("source"):
            return "changed or ran"
        nb.restore_outputs(
            op.cell_id, op.before.get("outputs") or [], op.before.get("execution_count")
        )
        report.restored += 1
    return None


def _undo_alt_text(nb: LiveNotebook, op: CellOperation, report: UndoReport) -> str | None:
    """Give the figure its earlier alt text back, if it still shows the picture the agent
    described with the text the agent wrote."""
    outputs = list(nb.cell(op.cell_id).get("outputs") or [])
    index, mime = int(op.before.get("output_index") or 0), str(op.before.get("mime"))
    if index >= len(outputs) or figure_fingerprint(outputs[index]) != op.after.get("figure"):
        return "changed or ran"
    if output_alt(outputs[index], mime) != op.after.get("alt"):
        return "changed"
    before = op.before.get("alt")
    write_alt(nb, op.cell_id, index, mime, before if isinstance(before, str) else None)
    report.restored += 1
    return None


def missing_from_file(root_dir: str, body: dict[str, Any]) -> list[str] | None:
    """The stored record *body*'s edits that the notebook file under *root_dir* lacks; ``None``
    when the file cannot be read (then nobody can say the work is kept)."""
    record = EditRecord.from_json(body)
    if record is None or not record.path:
        return None
    try:
        import nbformat

        notebook = nbformat.read(str(Path(root_dir) / record.path), as_version=4)  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - missing, unreadable or half-written: not checked
        return None
    return record.missing_from([dict(cell) for cell in notebook.cells])


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def _quote(cell: dict[str, Any]) -> str:
    first = next(
        (line.strip() for line in _text(cell.get("source")).splitlines() if line.strip()), ""
    )
    return f"'{first[:40]}…'" if len(first) > 40 else f"'{first}'" if first else "(empty)"
