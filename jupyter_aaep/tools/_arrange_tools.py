"""Tools that delete and move cells, never under someone's editor.

A delete waits a moment for a person typing in the cell (their cursor, or their keystrokes)
and then refuses, so their typing never lands in another cell; a move re-creates the cells no
one is typing in (:func:`._agent_edits.move_around_typists`). Both are recorded for Undo.
"""

from __future__ import annotations

from ..agent.tools import ActionPreview, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ..words import plural
from ._agent_edits import (
    in_use_refusal,
    matches,
    move_around_typists,
    open_for_change,
    plain_source,
    record,
    reload_note,
    stale_refusal,
    wait_until_free,
)
from ._change_preview import (
    cell_fingerprint,
    cell_label,
    change_context,
    check_approved,
    named,
    placement_fingerprint,
    type_word,
    where,
)
from ._tool_common import chat_path, service_of, target_index

__all__ = ["delete_cell", "move_cell"]


@aaep_tool(risk_level="medium", label="delete a cell")
async def delete_cell(ctx: ToolContext, cell_id: str, version: str | None = None) -> ToolResult:
    """Delete a cell and its outputs. The user can undo the agent's changes from the panel.

    Only a cell you have read is deleted, and not when someone changed it since you read it or
    is typing in it (the tool waits a moment for them, then refuses: ask them, or try later).

    Parameters
    ----------
    cell_id : str
        The id of the cell to delete.
    version : str, optional
        The cell's version as you read it; without it, the text you were last shown is used.
    """
    opened = await open_for_change(ctx, cell_id, version, doing="delete")
    nb, note, number, cell, base = opened.nb, opened.note, opened.number, opened.cell, opened.base
    if base != plain_source(cell):
        raise stale_refusal(ctx, number, "delete")
    nb, in_use = await wait_until_free(ctx, nb, {cell_id})
    number, cell = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    if in_use:
        raise in_use_refusal(ctx, number, "deleted", "delete")
    if plain_source(cell) != base:  # they typed, then paused: their text is not what was read
        raise stale_refusal(ctx, number, "delete")
    prev = nb.cell_ids()[number - 2] if number > 1 else None
    index, old = nb.delete_cell(cell_id)
    record(ctx, nb.path, CellOperation("delete", cell_id, before=old, index=index, prev=prev))
    return ToolResult(
        content=f"{note}Deleted cell {index + 1} (id {cell_id}, {old.get('cell_type')}). {plural(len(nb), 'cell')} remain; later cells moved up by one.",
        summary=f"Deleted cell {index + 1}.",
    )


@delete_cell.preview
async def _preview_delete(
    ctx: ToolContext, cell_id: str, version: str | None = None
) -> ActionPreview:
    nb = await service_of(ctx).open(chat_path(ctx))
    number, cell = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    source, kind = str(cell.get("source", "")), str(cell.get("cell_type", "code"))
    outputs = len(cell.get("outputs") or [])
    with_outputs = f" and its {plural(outputs, 'output')}" if outputs else ""
    return ActionPreview(
        summary=f"Deleting cell {number}.",
        terse=f"Delete cell {number}.",
        action=f"Delete {type_word(kind)} cell {number}{named(cell)}: "
        f"{plural(len(source.splitlines()), 'line')}{with_outputs}.",
        consequence="The cell disappears from the notebook; Undo agent changes brings it back.",
        extra_context={
            "cell_id": cell_id,
            "cells_in_notebook": len(nb),  # read by agent/bulk_changes.py: "most of the notebook"
            "source": source[:4000],
            "change": change_context(
                "delete", cell_number=number, cell_type=kind, old=source, outputs=outputs
            ),
        },
        fingerprint=cell_fingerprint(cell),
    )


@aaep_tool(risk_level="low", label="move a cell")
async def move_cell(
    ctx: ToolContext,
    cell_id: str,
    after_cell_id: str | None = None,
    before_cell_id: str | None = None,
    position: int | None = None,
    version: str | None = None,
) -> ToolResult:
    """Move a cell (with its outputs) to another place. Give exactly one of after_cell_id, before_cell_id or position.

    Parameters
    ----------
    cell_id : str
        The id of the cell to move.
    after_cell_id : str, optional
        Move it right after this cell.
    before_cell_id : str, optional
        Move it right before this cell.
    position : int, optional
        The 1-based number the cell should end up with.
    version : str, optional
        The cell's version as you read it; a cell someone changed since is not moved.
    """
    nb, old, target = await _move_plan(ctx, cell_id, after_cell_id, before_cell_id, position)
    note = await reload_note(ctx, nb.path)
    if not matches(version, plain_source(nb.cell(cell_id))):
        raise stale_refusal(ctx, old + 1, "move")
    check_approved(
        ctx, _move_fingerprint(nb, cell_id, old, target), "The cells around where it goes changed"
    )
    ids = nb.cell_ids()
    prev = ids[old - 1] if old else None
    nb = await move_around_typists(ctx, nb, cell_id, target)
    ids = nb.cell_ids()
    new = ids.index(cell_id)
    if new != old:
        above = ids[new - 1] if new else None
        record(
            ctx,
            nb.path,
            CellOperation(
                "move",
                cell_id,
                before={"source": plain_source(nb.cell(cell_id))},
                after={"prev": above},
                index=old,
                prev=prev,
            ),
        )
    return ToolResult(
        content=f"{note}Moved cell {old + 1} (id {cell_id}) to position {new + 1}.",
        summary=f"Moved cell {old + 1} to position {new + 1}.",
    )


@move_cell.preview
async def _preview_move(
    ctx: ToolContext,
    cell_id: str,
    after_cell_id: str | None = None,
    before_cell_id: str | None = None,
    position: int | None = None,
    version: str | None = None,
) -> ActionPreview:
    nb, old, target = await _move_plan(ctx, cell_id, after_cell_id, before_cell_id, position)
    cell = nb.cell(cell_id)
    place = where(nb, target, moving=cell_id)
    return ActionPreview(
        summary=f"Moving cell {old + 1}.",
        terse=f"Move cell {old + 1}.",
        action=f"Move cell {old + 1}{named(cell)} to position {target + 1}, {place}.",
        consequence="The cell and its outputs change place; nothing runs. Undo agent changes moves it back.",
        extra_context={
            "cell_id": cell_id,
            "change": {
                "kind": "move",
                "cell_number": old + 1,
                "cell_type": cell.get("cell_type"),
                "from_position": old + 1,
                "to_position": target + 1,
                "where": place,
                "label": cell_label(cell),
            },
        },
        fingerprint=_move_fingerprint(nb, cell_id, old, target),
    )


async def _move_plan(
    ctx: ToolContext,
    cell_id: str,
    after: str | None,
    before: str | None,
    position: int | None,
) -> tuple[LiveNotebook, int, int]:
    """The notebook, and the 0-based place of the cell now and after the move: the same for
    the preview a person approves and the move itself (the approval is bound to it)."""
    if after is None and before is None and position is None:
        raise ToolError("Say where to move the cell: after_cell_id, before_cell_id or position.")
    nb = await service_of(ctx).open(chat_path(ctx))
    old = nb.index_of(cell_id)
    target = target_index(nb, after, before, position)
    if target > old and position is None:
        target -= 1  # the anchor shifts up once the cell is taken out
    return nb, old, max(0, min(target, len(nb) - 1))


def _move_fingerprint(nb: LiveNotebook, cell_id: str, old: int, target: int) -> str:
    return placement_fingerprint(nb, target, moving=cell_id) + f":{old}"
