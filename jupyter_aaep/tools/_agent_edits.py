"""What the edit tools do around each change so the person's work is never lost.

- Record each change in the session's :class:`EditRecord` (undo reverts only those).
- Bind an edit to the version of the cell the model read: a cell changed since is merged with
  the model's change when they touch different lines, otherwise the edit is refused.
- Notice when the room reloaded the file from disk (another program wrote it) and say which of
  the agent's edits that took away.
- Before a move, look whether someone is typing in the cells it would re-create.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..agent.tools import ToolContext
from ..errors import ToolError
from ..notebook._text_edits import merge_three_way, version_tag
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ..notebook.errors import CellBusy
from ._tool_common import service_of

__all__ = [
    "busy_cells",
    "matches",
    "merge_onto_current",
    "move_around_typists",
    "plain_source",
    "record",
    "reload_note",
    "remember",
    "stale_refusal",
]

TYPING_LOOK = 0.3
"""Seconds between two looks at the cells a move would re-create: a change means someone types."""
TYPING_WAIT = 3.0
"""How long a move waits for a typist to pause before it is skipped."""


def _session_record(ctx: ToolContext, path: str) -> Any:
    """The running session's edit record (``None`` outside a session, or for a stand-in service)."""
    record_for = getattr(service_of(ctx), "record_for", None)
    return record_for(ctx.chat_id, path) if record_for is not None else None


def record(ctx: ToolContext, path: str, operation: CellOperation) -> None:
    """Add *operation* to the running session's record (nothing outside a session)."""
    edits = _session_record(ctx, path)
    if edits is not None:
        edits.add(operation)


def remember(ctx: ToolContext, source: str) -> str:
    """The version tag of *source*, remembered as read by the model (for merging its next edit)."""
    keep = getattr(service_of(ctx), "remember_read", None)
    return str(keep(source)) if keep is not None else version_tag(source)


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
    ctx: ToolContext, *, number: int, version: str, new: str, current: str
) -> str:
    """The model's change (from the version it read to *new*) applied onto *current*.

    Raises a :class:`ToolError` the model can act on when the text it read is unknown or the
    two changes touch the same lines (people hear that; a merge is heard in the edit's summary).
    """
    base = service_of(ctx).read_source(version)
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
