"""``check_accessibility``: the agent checks the notebook the way a screen-reader user meets it.

The rules are :mod:`jupyter_aaep.notebook.accessibility` (pure, over cell dicts); this tool reads
the live notebook, runs them and tells the model each problem by cell number with how to fix it
through ordinary edits. Listeners hear the count; "hear the details" gives the list by cell
number. The Markdown cells with problems go with the result, whole when short, so the model
can edit them without another read.
"""

from __future__ import annotations

from ..agent.tools import ToolContext, ToolResult, aaep_tool
from ..notebook.accessibility import Problem, check_cells, summary_of
from ..notebook.render import truncate
from ._agent_edits import remember
from ._tool_common import chat_path, service_of

__all__ = ["NOT_CHECKED", "check_accessibility", "problems_text"]

_SOURCE_CHARS = 3000

NOT_CHECKED = (
    "Not checked: whether colour alone tells apart the series of a figure that is only an image "
    "(drawn outside this environment's kernels, so how its series were drawn is not recorded); "
    "listen to its description or ask the agent to look at it."
)
"""What a person is told the check leaves out."""

COLOUR_NOTE = (
    "Not checked: whether colour is the only thing that tells apart the series of a figure "
    "stored only as an image (no record of its colours and markers; figures drawn in this "
    "environment's kernels are checked). For such a figure with several series, look at it with "
    "view_figure and, if only colour differs, offer to change its code (markers, line styles "
    "or direct labels)."
)


def problems_text(problems: list[Problem]) -> str:
    """The problems as a person reads them, one per line (no ids)."""
    return "\n".join(f"- {p.sentence}" for p in problems)


@aaep_tool(risk_level="low", read_only=True, label="check the notebook's accessibility")
async def check_accessibility(ctx: ToolContext) -> ToolResult:
    """Check this notebook for what makes it hard to read with a screen reader, and say how to fix each problem.

    Lists problems by cell: images without alt text (Markdown and outputs), figures without a
    stored description, figures whose series differ only by colour, a missing or repeated title,
    skipped heading levels, empty headings, tables without headers, and links whose text says
    nothing ("click here", bare addresses). Nothing changes. Fixes are ordinary edits (edit_cell,
    create_cell; a figure's description is saved with set_figure_alt_text); offer to fix them,
    all at once if the person wants, and write real descriptions, never placeholders.
    """
    service = service_of(ctx)
    nb = await service.open(chat_path(ctx))
    cells = nb.cells()
    problems = check_cells(cells)
    summary = summary_of(problems)
    lines = [f"Accessibility check of {nb.path}: {summary}"]
    for problem in problems:
        where = (
            f"Cell {problem.cell} (id {problem.cell_id})"
            if problem.cell is not None
            else "Whole notebook"
        )
        lines.append(f"- {where}: {problem.what} Fix: {problem.fix}")
    shown: list[str] = []
    for number in sorted({p.cell for p in problems if p.cell is not None}):
        cell = cells[number - 1]
        if cell.get("cell_type") != "markdown":
            continue
        source = str(cell.get("source", ""))
        if len(source) <= _SOURCE_CHARS:
            version = remember(ctx, nb.path, str(cell["id"]), source)
            shown.append(f"--- cell {number} (id {cell['id']}, version {version}) ---\n{source}")
        else:
            shown.append(
                f"--- cell {number} (id {cell['id']}, cut) ---\n{truncate(source, _SOURCE_CHARS)}"
            )
    if shown:
        lines += ["", "The Markdown cells with problems, as they are now:", *shown]
    lines += ["", COLOUR_NOTE]
    if problems:
        lines.append(
            "Tell the person the problems by cell number, then offer to fix them (all at once "
            "if they want); each fix is an edit they can review and undo."
        )
    return ToolResult(
        content="\n".join(lines),
        summary=summary,
        detail=problems_text(problems) if problems else summary,
    )
