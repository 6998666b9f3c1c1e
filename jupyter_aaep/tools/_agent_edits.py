"""What the edit tools do around each change so the person's work is never lost.

- Record each change in the session's :class:`EditRecord` (undo reverts only those).
- Base every change on the text the model read: the ``version`` it passes, else what the
  server showed this reader of the cell (:mod:`..notebook.shown`). A cell changed since is merged
  with the model's change when they touch different lines, otherwise the change is refused; a
  cell the reader never read is not replaced or deleted.
- Notice when the room reloaded the file from disk (another program wrote it) and say which of
  the agent's edits that took away.
- Before a move, look whether someone is typing in the cells it would re-create; before a
  delete, a change of type or a clear, wait a moment for them, then leave their cell alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..agent.tools import ToolContext
from ..errors import ToolError
from ..notebook._text_edits import merge_three_way, version_tag
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ..notebook.errors import CellBusy
from ._change_preview import cell_fingerprint, check_approved
from ._tool_common import chat_path, service_of

__all__ = [
    "base_of",
    "busy_cells",
    "in_use_refusal",
    "matches",
    "merge_onto_current",
    "move_around_typists",
    "plain_source",
    "reader_of",
    "record",
    "reload_note",
    "remember",
    "stale_refusal",
    "wait_until_free",
]

TYPING_LOOK = 0.3
"""Seconds between two looks at the cells a move would re-create: a change means someone types."""
TYPING_WAIT = 3.0
"""How long a move, delete, change of type or clear waits for a typist to pause before it is skipped."""
QUIET_AFTER_TYPING = 1.5
"""Seconds a cell someone was seen typing in must stay quiet before it is deleted or re-created."""


def _session_record(ctx: ToolContext, path: str) -> Any:
    """The running session's edit record (``None`` outside a session, or for a stand-in service)."""
    record_for = getattr(service_of(ctx), "record_for", None)
    return record_for(ctx.chat_id, path) if record_for is not None else None


def record(ctx: ToolContext, path: str, operation: CellOperation) -> None:
    """Add *operation* to the running session's record (nothing outside a session)."""
    edits = _session_record(ctx, path)
    if edits is not None:
        edits.add(operation)


def reader_of(ctx: ToolContext) -> str:
    """Whose reads are the base of this call's edits: an outside agent's connection, else the chat."""
    return ctx.reader or ctx.chat_id or ""


def remember(ctx: ToolContext, path: str, cell_id: str, source: str) -> str:
    """*source* was shown to the model as *cell_id*'s text (or written there by it): the base of
    its next change of that cell. Returns the version tag it can pass back."""
    return service_of(ctx).remember_shown(reader_of(ctx), path, cell_id, source)


def base_of(
    ctx: ToolContext,
    *,
    path: str,
    cell_id: str,
    number: int,
    version: str | None,
    current: str,
    doing: str,
) -> str | None:
    """The text the model's change of *cell_id* starts from: the version it passed (``None``
    when this server no longer knows that text), else what this reader was last shown.

    Raises a :class:`ToolError` the model can act on when the reader never read the cell: its
    text would replace what is there, unseen (people hear that the agent did not *doing* it).
    """
    service = service_of(ctx)
    if version is not None:
        return current if matches(version, current) else service.read_source(version)
    base = service.shown.base(reader_of(ctx), path, cell_id)
    if base is None:
        ctx.report_progress(
            f"The agent had not read cell {number} yet, so it did not {doing} it; it can read it first."
        )
        done = "deleted" if doing == "delete" else "changed"
        raise ToolError(
            f"Cell {number} was not {done}: you have not read it (or not since the server "
            "restarted), so your text could replace someone's work unseen. Read it first "
            f"(get_notebook_state with its cell_id), then {doing} it again."
        )
    return base


@dataclass(frozen=True)
class CellToChange:
    """A cell a tool is about to replace or delete, read now, with its change's base."""

    nb: LiveNotebook
    note: str
    """The sentence about another program's write (or ``""``), which starts the tool's answer."""
    number: int
    cell: dict[str, Any]
    base: str | None
    """What the model's change starts from (:func:`base_of`)."""


async def open_for_change(
    ctx: ToolContext, cell_id: str, version: str | None, *, doing: str
) -> CellToChange:
    """Open the chat's notebook for a change of *cell_id*: the cell is still the one the person
    approved, and the model read it (its base); raises a :class:`ToolError` the model can act on
    otherwise."""
    nb = await service_of(ctx).open(chat_path(ctx))
    note = await reload_note(ctx, nb.path)
    number, cell = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    check_approved(ctx, cell_fingerprint(cell), f"Cell {number} changed")
    base = base_of(
        ctx,
        path=nb.path,
        cell_id=cell_id,
        number=number,
        version=version,
        current=plain_source(cell),
        doing=doing,
    )
    return CellToChange(nb, note, number, cell, base)


def stale_refusal(ctx: ToolContext, number: int, doing: str) -> ToolError:
    """The answer when the model acts on a cell that changed since it read it (and people hear it)."""
    ctx.report_progress(
        f"Cell {number} changed while the agent was working on it, so the agent did not {doing} it."
    )
    return ToolError(
        f"Cell {number} changed since you read it (someone else edited it), so it was not changed. Read it "
        f"again (get_notebook_state with its cell_id) before you {doing} it."
    )


def merge_onto_current(
    ctx: ToolContext, *, number: int, base: str | None, new: str, current: str
) -> str:
    """The model's change (from *base*, the text it read, to *new*) applied onto *current*.

    Raises a :class:`ToolError` the model can act on when the text it read is unknown or the
    two changes touch the same lines (people hear that; a merge is heard in the edit's summary).
    """
    merged = merge_three_way(base, new, current) if base is not None else None
    if merged is None:
        ctx.report_progress(
            f"Cell {number} changed while the agent was working on it; the agent's edit "
            "was not applied, so the other change stays."
        )
        reason = (
            "your edit and the other change touch the same lines"
            if base is not None
            else "the version you read is no longer known here"
        )
        raise ToolError(
            f"Cell {number} changed since you read it and {reason}, so nothing was changed. Read it "
            "again (get_notebook_state with its cell_id) and make your edit on the current text."
        )
    return merged  # heard through the edit's own summary ("…, keeping the change someone made meanwhile.")


def matches(version: str | None, source: str) -> bool:
    """Whether the model's *version* tag (if it gave one) is the tag of *source*."""
    return version is None or version.strip().lower() == version_tag(source)


async def reload_note(ctx: ToolContext, path: str) -> str:
    """A sentence for the model (and an event for people) when another program's write to the
    file replaced the notebook since the agent last looked, naming the agent's edits it lost."""
    service = service_of(ctx)
    edits = _session_record(ctx, path)
    if edits is None:
        return ""
    lost = await service.lost_edits(edits)
    if lost is None:
        return ""
    if not lost:
        said = (
            "Another program rewrote the notebook's file and Jupyter reloaded it; none of the agent's "
            "changes were lost."
        )
    else:
        said = (
            "Another program rewrote the notebook's file and Jupyter reloaded it; these changes by the "
            f"agent are gone: {'; '.join(lost)}."
        )
    ctx.report_progress(said)
    return f"[Notice] {said} Read the notebook again before changing it.\n\n"


async def busy_cells(nb: LiveNotebook, ctx: ToolContext, cell_ids: set[str]) -> set[str]:
    """Which of *cell_ids* someone is in: their editor's cursor is there (the room's awareness),
    or their text changes between two looks (a client that publishes no cursor)."""
    service = service_of(ctx)
    first = {k: v for k, v in nb.sources().items() if k in cell_ids}
    await asyncio.sleep(TYPING_LOOK)
    nb = await service.open(nb.path)
    typing = {cell_id for cell_id, text in first.items() if nb.sources().get(cell_id, text) != text}
    try:
        cursors = await service.documents.cursors(nb.path)
    except Exception:  # noqa: BLE001 - no awareness: typing alone decides
        cursors = []
    return typing | nb.cells_with_cursors(cursors, cell_ids)


async def wait_until_free(
    ctx: ToolContext, nb: LiveNotebook, cell_ids: set[str]
) -> tuple[LiveNotebook, set[str]]:
    """Wait up to :data:`TYPING_WAIT` until nobody is in any of *cell_ids*; returns the notebook
    as it is then and the cells still in use (someone's cursor is there, or they typed there
    less than :data:`QUIET_AFTER_TYPING` seconds ago)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TYPING_WAIT
    seen: dict[str, float] = {}
    while True:
        busy = await busy_cells(nb, ctx, cell_ids)
        nb = await service_of(ctx).open(nb.path)
        now = loop.time()
        seen.update(dict.fromkeys(busy, now))
        in_use = {c for c in cell_ids if c in seen and now - seen[c] < QUIET_AFTER_TYPING}
        if not in_use or now >= deadline:
            return nb, in_use & set(nb.cell_ids())


def in_use_refusal(ctx: ToolContext, number: int, done: str, wanted: str) -> ToolError:
    """The answer when someone is in the cell the model wanted to *wanted* (people hear it)."""
    ctx.report_progress(
        f"The agent wanted to {wanted} cell {number}, but someone is typing in it, so it was left as it is."
    )
    return ToolError(
        f"Someone is typing in cell {number} right now, so it was not {done}. Ask them, or try again later."
    )


async def move_around_typists(
    ctx: ToolContext, nb: LiveNotebook, cell_id: str, target: int
) -> LiveNotebook:
    """Move *cell_id* to *target* without re-creating a cell someone is typing in.

    Waits a few seconds for a typist to pause when both the cell and the cells it passes are
    being edited; then skips the move and says so.
    """
    deadline = asyncio.get_running_loop().time() + TYPING_WAIT
    while True:
        old = nb.index_of(cell_id)
        low, high = sorted((old, max(0, min(target, len(nb) - 1))))
        involved = set(nb.cell_ids()[low : high + 1])
        busy = await busy_cells(nb, ctx, involved)
        nb = await service_of(ctx).open(nb.path)
        try:
            nb.move_cell(cell_id, target, keep_alive=busy)
            if cell_id in busy:
                ctx.report_progress(
                    f"Someone is typing in cell {old + 1}; the agent moved it without interrupting them."
                )
            return nb
        except CellBusy:
            if asyncio.get_running_loop().time() > deadline:
                ctx.report_progress(
                    f"Someone is typing in cell {old + 1} and the cells around it, so the agent "
                    "did not move it."
                )
                raise ToolError(
                    f"Cell {old + 1} was not moved: someone is typing in it and in the cells it would pass. "
                    "Try again later, or leave the order to them."
                ) from None


def plain_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source or "")
