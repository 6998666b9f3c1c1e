"""Tools that read and edit the live notebook: state, listing, create, edit, delete, move, clear.

Edits are reversible (each is recorded, and Undo reverts the agent's own changes where nobody
changed the cell since), so in the default approval mode they run without asking; in "ask before every change" each waits for the user, whose
confirmation shows the change line by line (:mod:`._change_preview`) and is bound to what was
shown. Each edit is a single transaction on the shared document, seen live by collaborators.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from ..aaep.redaction import MASK, restore_masked
from ..agent.tools import ActionPreview, StaleApproval, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ..notebook.render import CellView, render_cells
from ..notebook.service import NotebookService
from ..words import plural
from ._agent_edits import (
    base_of,
    in_use_refusal,
    matches,
    merge_onto_current,
    move_around_typists,
    plain_source,
    record,
    reload_note,
    remember,
    stale_refusal,
    wait_until_free,
)
from ._change_preview import (
    cell_fingerprint,
    cell_label,
    change_context,
    outputs_fingerprint,
    placement_fingerprint,
    where,
)
from ._run_text import describe_kernel
from ._tool_common import chat_path, service_of, target_index

__all__ = [
    "clear_outputs",
    "create_cell",
    "delete_cell",
    "edit_cell",
    "get_notebook_state",
    "list_notebooks",
    "move_cell",
]

# -- reading ------------------------------------------------------------------------------------


@aaep_tool(risk_level="low", read_only=True, label="read the notebook")
async def get_notebook_state(
    ctx: ToolContext,
    cell_ids: list[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    include_outputs: bool = True,
    notebook_path: str | None = None,
) -> ToolResult:
    """Read the notebook: every cell's number, id, type and source, its outputs, and the kernel state.

    Call this before changing a notebook you have not read in this conversation, and again after
    the user may have edited it: edit_cell and delete_cell only change a cell you have read, and
    merge your change with anyone else's made since (or refuse it when both touch the same lines).
    Each cell shows a version you may pass to them. Long sources and outputs are cut with a
    marker; read specific cells with cell_ids to see them in full. Images are described, not shown.

    Parameters
    ----------
    cell_ids : list of str, optional
        List of cell ids to read (others are left out); gives each more room.
    start : int, optional
        First cell number to include (1-based), with end for a range.
    end : int, optional
        Last cell number to include (1-based, inclusive).
    include_outputs : bool
        Set false to see only sources (smaller).
    notebook_path : str, optional
        Another notebook to read (relative to the Jupyter root); defaults to this chat's notebook.
    """
    service = service_of(ctx)
    note = await reload_note(ctx, chat_path(ctx)) if notebook_path is None else ""
    nb = await service.open(chat_path(ctx, notebook_path))
    views = [CellView.from_cell(i + 1, c) for i, c in enumerate(nb.cells())]
    total, code = len(views), sum(v.cell_type == "code" for v in views)
    if cell_ids:
        for cell_id in cell_ids:
            nb.index_of(cell_id)
        views = [v for v in views if v.id in set(cell_ids)]
    if start is not None or end is not None:
        views = [v for v in views if (start or 1) <= v.number <= (end or total)]
    kernel = await service.kernel(nb.path)
    title = (
        f"# {nb.path}: {plural(total, 'cell')} ({code} code, {total - code} other); "
        f"kernel: {describe_kernel(kernel, nb.kernelspec_name())}"
    )
    if len(views) != total:
        title += f"\n(showing {len(views)} of {total} cells)"
    text = render_cells(
        views, title=title, budget=service.state_budget, include_outputs=include_outputs
    )
    for view in views:
        remember(ctx, nb.path, view.id, view.source)
    state = kernel.execution_state if kernel else "not started"
    return ToolResult(
        content=note + text, summary=f"Read the notebook: {plural(total, 'cell')}, kernel {state}."
    )


@aaep_tool(risk_level="low", read_only=True, label="list notebooks")
async def list_notebooks(ctx: ToolContext, directory: str = "") -> ToolResult:
    """List the notebooks under a folder of the Jupyter root, and which have a running kernel.

    Parameters
    ----------
    directory : str
        Folder relative to the Jupyter root; "" is the root itself.
    """
    entries = await service_of(ctx).list_notebooks(directory)
    lines = [f"{e.path}" + (f"  (kernel {e.kernel} running)" if e.kernel else "") for e in entries]
    where = directory or "the root folder"
    text = "\n".join(lines) if lines else f"No notebooks in {where}."
    return ToolResult(content=text, summary=f"Found {plural(len(entries), 'notebook')} in {where}.")


# -- editing ------------------------------------------------------------------------------------


@aaep_tool(risk_level="low", label="create a cell")
async def create_cell(
    ctx: ToolContext,
    source: str,
    cell_type: Literal["code", "markdown"] = "code",
    after_cell_id: str | None = None,
    before_cell_id: str | None = None,
    position: int | None = None,
) -> ToolResult:
    """Add a new cell (it is not run). Give at most one of after_cell_id, before_cell_id or position; by default the cell goes at the end.

    Parameters
    ----------
    source : str
        The cell's full text.
    cell_type : {'code', 'markdown'}
        "code" or "markdown".
    after_cell_id : str, optional
        Put the new cell right after this cell.
    before_cell_id : str, optional
        Put the new cell right before this cell.
    position : int, optional
        The 1-based number the new cell should get.
    """
    _refuse_mask(source)
    nb = await service_of(ctx).open(chat_path(ctx))
    index = target_index(nb, after_cell_id, before_cell_id, position)
    _check_approved(
        ctx, placement_fingerprint(nb, index), "The cells around where the new cell goes changed"
    )
    note = await reload_note(ctx, nb.path)
    cell = nb.insert_cell(index, cell_type=cell_type, source=source)
    number = nb.index_of(cell["id"]) + 1
    record(
        ctx,
        nb.path,
        CellOperation(
            "create", cell["id"], after={"source": source, "cell_type": cell_type}, index=number - 1
        ),
    )
    version = remember(ctx, nb.path, cell["id"], source)
    where = f"after cell {number - 1}" if number > 1 else "at the top"
    return ToolResult(
        content=f"{note}Created {cell_type} cell {number} (id {cell['id']}), {where}. "
        f"The notebook now has {plural(len(nb), 'cell')}. The new cell's version is {version}.",
        summary=f"Created {cell_type} cell {number}, {where}.",
    )


@aaep_tool(risk_level="low", label="edit a cell")
async def edit_cell(
    ctx: ToolContext,
    cell_id: str,
    source: str,
    cell_type: Literal["code", "markdown"] | None = None,
    version: str | None = None,
) -> ToolResult:
    """Replace a cell's whole source (and optionally change it between code and markdown). The cell is not run.

    Read the cell first (get_notebook_state): a cell you have not read is not changed. If someone
    changed the cell since you read it, your change is merged with theirs when the two touch
    different lines, and refused otherwise (then read the cell again). Changing the type of a cell
    someone is typing in waits a moment, then is refused.

    Parameters
    ----------
    cell_id : str
        The id of the cell to change.
    source : str
        The complete new text of the cell (not a diff).
    cell_type : {'code', 'markdown'}
        "code" or "markdown" to change the cell's type; leave out to keep it.
    version : str, optional
        The cell's version as you read it (from get_notebook_state or the result of your last
        edit); without it, the text you were last shown of the cell is used.
    """
    service = service_of(ctx)
    nb = await service.open(chat_path(ctx))
    note = await reload_note(ctx, nb.path)
    number = nb.index_of(cell_id) + 1
    old = nb.cell(cell_id)
    _check_approved(ctx, cell_fingerprint(old), f"Cell {number} changed")
    base = base_of(
        ctx,
        path=nb.path,
        cell_id=cell_id,
        number=number,
        version=version,
        current=plain_source(old),
        doing="edit",
    )
    retyped = cell_type is not None and cell_type != old.get("cell_type")
    if retyped:  # a new type re-creates the cell: never under someone's editor
        nb, in_use = await wait_until_free(ctx, nb, {cell_id})
        if in_use:
            raise in_use_refusal(ctx, number, "changed", "change the type of")
        number, old = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    current = plain_source(old)
    source = _with_secrets_restored(source, base if base is not None else current, number)
    merged = False
    if base != current:
        source = merge_onto_current(ctx, number=number, base=base, new=source, current=current)
        merged = source != current
    kind = str(old.get("cell_type", "code"))
    if retyped and cell_type is not None:
        nb.change_type(cell_id, cell_type, source)
        kind = cell_type
    else:
        nb.set_source(cell_id, source)
    if source != current or kind != old.get(
        "cell_type"
    ):  # an edit that changed nothing has nothing to undo
        record(
            ctx,
            nb.path,
            CellOperation(
                "edit",
                cell_id,
                before={"source": current, "cell_type": old.get("cell_type")},
                after={"source": source, "cell_type": kind},
                index=number - 1,
            ),
        )
    tag = remember(ctx, nb.path, cell_id, source)
    lines = len(source.splitlines())
    stale = (
        " Its outputs are from the previous version until it runs again."
        if old.get("outputs")
        else ""
    )
    if merged:
        return ToolResult(
            content=f"{note}Cell {number} (id {cell_id}) had changed since you read it; your change was merged "
            f"with the other one. It now reads (version {tag}):\n{source}{stale}",
            summary=f"Edited cell {number}, keeping the change someone made meanwhile.",
        )
    return ToolResult(
        content=f"{note}Cell {number} (id {cell_id}) now has {plural(lines, 'line')}; its version is {tag}.{stale}",
        summary=f"Edited cell {number}.",
    )


def _with_secrets_restored(source: str, old_source: str, number: int) -> str:
    """The model read the cell with its secrets masked; write the user's values back, not the mask."""
    try:
        return restore_masked(source, old_source)
    except ValueError as error:
        raise ToolError(
            f"Cell {number} not changed: {error} Keep each {MASK} exactly where it was, or ask "
            "the user to type the secret into the cell themselves."
        ) from error


def _refuse_mask(source: str) -> None:
    if MASK in source:
        raise ToolError(
            f"The new cell contains {MASK}, the placeholder for a secret you were not shown. Write "
            "the cell without it (read the value from an environment variable or ask the user to "
            "type it in)."
        )


@edit_cell.preview
async def _preview_edit(
    ctx: ToolContext,
    cell_id: str,
    source: str,
    cell_type: str | None = None,
    version: str | None = None,
) -> ActionPreview:
    nb = await service_of(ctx).open(chat_path(ctx))
    number, cell = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    old = str(cell.get("source", ""))
    new = _with_secrets_restored(source, old, number)
    kind = str(cell.get("cell_type", "code"))
    becomes = cell_type if cell_type is not None and cell_type != kind else None
    change = change_context(
        "edit", cell_number=number, cell_type=kind, old=old, new=new, new_cell_type=becomes
    )
    summary = change["diff"]["summary"]
    turned = f" It becomes a {_type_word(becomes)} cell." if becomes else ""
    return ActionPreview(
        summary=f"Editing cell {number}.",
        terse=f"Edit cell {number}.",
        detail=f"Editing cell {number}{_named(cell)}: {summary}.{turned}",
        action=f"Edit {_type_word(kind)} cell {number}{_named(cell)}: "
        f"{summary.lower() if summary.startswith('No') else summary}.{turned}",
        consequence="The cell's text changes; the cell is not run. Undo agent changes puts it back.",
        extra_context={
            "cell_id": cell_id,
            "change": change,
            "diff": "".join(
                difflib.unified_diff(old.splitlines(True), new.splitlines(True), "before", "after")
            )[:4000],
        },
        fingerprint=cell_fingerprint(cell),
    )


@create_cell.preview
async def _preview_create(
    ctx: ToolContext,
    source: str,
    cell_type: str = "code",
    after_cell_id: str | None = None,
    before_cell_id: str | None = None,
    position: int | None = None,
) -> ActionPreview:
    _refuse_mask(source)
    nb = await service_of(ctx).open(chat_path(ctx))
    index = target_index(nb, after_cell_id, before_cell_id, position)
    place = where(nb, index)
    lines = plural(len(source.splitlines()), "line")
    return ActionPreview(
        summary=f"Creating a {_type_word(cell_type)} cell {place}.",
        terse=f"New cell {place}.",
        action=f"Create a {_type_word(cell_type)} cell {place}, with {lines}.",
        consequence="A new cell appears in the notebook; it is not run. Undo agent changes removes it.",
        extra_context={
            "change": change_context(
                "create", cell_number=index + 1, cell_type=cell_type, new=source, place=place
            ),
        },
        fingerprint=placement_fingerprint(nb, index),
    )


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
    nb = await service_of(ctx).open(chat_path(ctx))
    note = await reload_note(ctx, nb.path)
    number, cell = nb.index_of(cell_id) + 1, nb.cell(cell_id)
    _check_approved(ctx, cell_fingerprint(cell), f"Cell {number} changed")
    base = base_of(
        ctx,
        path=nb.path,
        cell_id=cell_id,
        number=number,
        version=version,
        current=plain_source(cell),
        doing="delete",
    )
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
        action=f"Delete {_type_word(kind)} cell {number}{_named(cell)}: "
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
    if after_cell_id is None and before_cell_id is None and position is None:
        raise ToolError("Say where to move the cell: after_cell_id, before_cell_id or position.")
    nb = await service_of(ctx).open(chat_path(ctx))
    note = await reload_note(ctx, nb.path)
    old = nb.index_of(cell_id)
    if not matches(version, plain_source(nb.cell(cell_id))):
        raise stale_refusal(ctx, old + 1, "move")
    target = target_index(nb, after_cell_id, before_cell_id, position)
    if target > old and position is None:
        target -= 1  # the anchor shifts up once the cell is taken out
    _check_approved(
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


@aaep_tool(risk_level="low", label="clear outputs")
async def clear_outputs(ctx: ToolContext, cell_ids: list[str] | None = None) -> ToolResult:
    """Clear the outputs and execution counts of some code cells, or of all of them.

    A cell someone is typing in is left as it is (the tool waits a moment for them first). A
    cell still running shows the outputs it produces after the clear.

    Parameters
    ----------
    cell_ids : list of str, optional
        Ids of the cells to clear; leave out to clear every code cell.
    """
    service = service_of(ctx)
    nb = await service.open(chat_path(ctx))
    _check_approved(
        ctx, outputs_fingerprint(_clear_targets(nb, cell_ids)), "The cells' outputs changed"
    )
    wanted = [str(c["id"]) for c in _clear_targets(nb, cell_ids)]
    numbers = {cell_id: nb.index_of(cell_id) + 1 for cell_id in wanted}
    nb, in_use = await wait_until_free(ctx, nb, set(wanted))
    present = set(nb.cell_ids())
    free = [c for c in wanted if c in present and c not in in_use]
    if in_use and not free:
        busy = sorted(numbers[c] for c in in_use)
        if len(busy) == 1:
            raise in_use_refusal(ctx, busy[0], "cleared", "clear the outputs of")
        ctx.report_progress(
            f"The agent wanted to clear the outputs of {_cell_list(busy)}, but someone is typing "
            "in them, so they were left as they are."
        )
        raise ToolError(
            f"Someone is typing in {_cell_list(busy)} right now, so they were not cleared. Ask "
            "them, or try again later."
        )
    before = {
        str(c["id"]): c
        for c in _clear_targets(nb, free)
        if c.get("outputs") or c.get("execution_count")
    }
    cleared = nb.clear_outputs(free)
    for cell_id, cell in before.items():
        record(
            ctx,
            nb.path,
            CellOperation(
                "clear",
                cell_id,
                before={
                    "source": plain_source(cell),
                    "outputs": cell.get("outputs") or [],
                    "execution_count": cell.get("execution_count"),
                },
            ),
        )
    which = "all code cells" if cell_ids is None and not in_use else plural(len(cleared), "cell")
    after = _still_running(service, nb, cleared) + _left_in_use(ctx, nb, sorted(in_use))
    return ToolResult(
        content=f"Cleared the outputs of {which} ({len(cleared)}).{after}",
        summary=f"Cleared the outputs of {which}.{after}",
    )


def _still_running(service: NotebookService, nb: LiveNotebook, cell_ids: list[str]) -> str:
    """Sentences for the cleared cells that are still running: their next outputs will show."""
    said = ""
    for cell_id in cell_ids:
        run = service.runs.get(nb.path, cell_id)
        running = (run is not None and not run.done) or nb.cell(cell_id).get(
            "execution_state"
        ) == "running"
        if running:
            said += (
                f" Cell {nb.index_of(cell_id) + 1} is still running: its next outputs will show."
            )
    return said


def _left_in_use(ctx: ToolContext, nb: LiveNotebook, cell_ids: list[str]) -> str:
    """The sentence for the cells a clear left alone because someone is typing in them."""
    if not cell_ids:
        return ""
    numbers = [nb.index_of(c) + 1 for c in cell_ids]
    ctx.report_progress(
        f"The agent wanted to clear the outputs of {_cell_list(numbers)} too, but someone is typing "
        "there, so it was left as it is."
    )
    return (
        f" Someone is typing in {_cell_list(numbers)} right now, so "
        f"{'its' if len(numbers) == 1 else 'their'} outputs were not cleared. "
        "Ask them, or try again later."
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
    if after_cell_id is None and before_cell_id is None and position is None:
        raise ToolError("Say where to move the cell: after_cell_id, before_cell_id or position.")
    nb = await service_of(ctx).open(chat_path(ctx))
    old, cell = nb.index_of(cell_id), nb.cell(cell_id)
    target = target_index(nb, after_cell_id, before_cell_id, position)
    if target > old and position is None:
        target -= 1
    target = max(0, min(target, len(nb) - 1))
    place = where(nb, target, moving=cell_id)
    return ActionPreview(
        summary=f"Moving cell {old + 1}.",
        terse=f"Move cell {old + 1}.",
        action=f"Move cell {old + 1}{_named(cell)} to position {target + 1}, {place}.",
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


@clear_outputs.preview
async def _preview_clear(ctx: ToolContext, cell_ids: list[str] | None = None) -> ActionPreview:
    nb = await service_of(ctx).open(chat_path(ctx))
    targets = _clear_targets(nb, cell_ids)
    numbers = [nb.index_of(str(c["id"])) + 1 for c in targets]
    with_outputs = [n for n, c in zip(numbers, targets) if c.get("outputs")]
    outputs = sum(len(c.get("outputs") or []) for c in targets)
    which = "every code cell" if cell_ids is None else _cell_list(numbers)
    return ActionPreview(
        summary=f"Clearing the outputs of {which}.",
        terse="Clear outputs.",
        action=f"Clear the outputs of {which}: {plural(outputs, 'output')} in "
        f"{plural(len(with_outputs), 'cell')}.",
        consequence="The outputs disappear until the cells run again; Undo agent changes puts them back.",
        extra_context={
            "change": {
                "kind": "clear_outputs",
                "all": cell_ids is None,  # read by agent/bulk_changes.py: always asks
                "cell_numbers": numbers[:200],
                "cells_with_outputs": with_outputs[:200],
                "outputs": outputs,
            },
        },
        fingerprint=outputs_fingerprint(targets),
    )


# -- approvals bound to what was shown ----------------------------------------------------------


def _check_approved(ctx: ToolContext, fingerprint: str, what_changed: str) -> None:
    """Refuse an approved change when the notebook moved on since the user saw it."""
    if ctx.approved_fingerprint is not None and ctx.approved_fingerprint != fingerprint:
        raise StaleApproval(
            f"{what_changed} while you were asked, so nothing was changed. Asking again with the "
            "notebook as it is now."
        )


def _move_fingerprint(nb: LiveNotebook, cell_id: str, old: int, target: int) -> str:
    return placement_fingerprint(nb, target, moving=cell_id) + f":{old}"


def _clear_targets(nb: LiveNotebook, cell_ids: list[str] | None) -> list[dict[str, Any]]:
    if cell_ids is not None:
        for cell_id in cell_ids:
            nb.index_of(cell_id)
    wanted = set(cell_ids) if cell_ids is not None else None
    return [
        c
        for c in nb.cells()
        if c.get("cell_type") == "code" and (wanted is None or c.get("id") in wanted)
    ]


def _cell_list(numbers: list[int]) -> str:
    if not numbers:
        return "no cells"
    if len(numbers) == 1:
        return f"cell {numbers[0]}"
    shown = ", ".join(str(n) for n in numbers[:10]) + (" …" if len(numbers) > 10 else "")
    return f"cells {shown}"


def _named(cell: dict[str, Any]) -> str:
    """A Markdown cell's first words name it (" 'Load the data'"); code is called by its number."""
    return f" {cell_label(cell)}" if cell.get("cell_type") == "markdown" else ""


def _type_word(cell_type: str | None) -> str:
    return (
        "Markdown" if cell_type == "markdown" else "code" if cell_type == "code" else str(cell_type)
    )
