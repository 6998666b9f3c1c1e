"""Tools that read and edit the live notebook: state, listing, create, edit (delete and move in
:mod:`._arrange_tools`, clearing outputs in :mod:`._outputs_tools`).

Edits are reversible (each is recorded, and Undo reverts the agent's own changes where nobody
changed the cell since), so in the default approval mode they run without asking; in "ask before every change" each waits for the user, whose
confirmation shows the change line by line (:mod:`._change_preview`) and is bound to what was
shown. Each edit is a single transaction on the shared document, seen live by collaborators.
"""

from __future__ import annotations

import difflib
from typing import Literal

from ..aaep.redaction import MASK, restore_masked
from ..agent.tools import ActionPreview, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook.edit_record import CellOperation
from ..notebook.render import CellView, render_cells
from ..words import plural
from ._agent_edits import (
    in_use_refusal,
    merge_onto_current,
    open_for_change,
    plain_source,
    record,
    reload_note,
    remember,
    wait_until_free,
)
from ._change_preview import (
    cell_fingerprint,
    change_context,
    check_approved,
    named,
    placement_fingerprint,
    type_word,
    where,
)
from ._run_text import describe_kernel
from ._tool_common import chat_path, service_of, target_index

__all__ = ["create_cell", "edit_cell", "get_notebook_state", "list_notebooks"]

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
    check_approved(
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
    opened = await open_for_change(ctx, cell_id, version, doing="edit")
    nb, note, number, old, base = opened.nb, opened.note, opened.number, opened.cell, opened.base
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
    turned = f" It becomes a {type_word(becomes)} cell." if becomes else ""
    return ActionPreview(
        summary=f"Editing cell {number}.",
        terse=f"Edit cell {number}.",
        detail=f"Editing cell {number}{named(cell)}: {summary}.{turned}",
        action=f"Edit {type_word(kind)} cell {number}{named(cell)}: "
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
        summary=f"Creating a {type_word(cell_type)} cell {place}.",
        terse=f"New cell {place}.",
        action=f"Create a {type_word(cell_type)} cell {place}, with {lines}.",
        consequence="A new cell appears in the notebook; it is not run. Undo agent changes removes it.",
        extra_context={
            "change": change_context(
                "create", cell_number=index + 1, cell_type=cell_type, new=source, place=place
            ),
        },
        fingerprint=placement_fingerprint(nb, index),
    )
