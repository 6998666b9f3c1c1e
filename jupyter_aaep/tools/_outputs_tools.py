"""The tool that clears cells' outputs: never in a cell someone is typing in, and honest
about a cell that is still running (its next outputs show; the cleared ones stay cleared).
"""

from __future__ import annotations

from typing import Any

from ..agent.tools import ActionPreview, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ..notebook.service import NotebookService
from ..words import plural
from ._agent_edits import in_use_refusal, plain_source, record, wait_until_free
from ._change_preview import check_approved, outputs_fingerprint
from ._tool_common import chat_path, service_of

__all__ = ["clear_outputs"]


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
    check_approved(
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
