"""``view_figure``: the agent looks at a figure a cell already shows, without running anything.

Used to describe a plot for a screen-reader user ("Describe this figure" in the panel): the
model gets the cell's code, its text outputs and the figure itself as an image block, within
the same budget as ``run_cell`` (downscaled, a bounded number).
"""

from __future__ import annotations

from typing import Any

from ..agent.tools import ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook._alt_text import figure_fingerprint
from ..notebook._figures import MODEL_IMAGE_TYPES, ImageBudget, figure_blocks
from ..notebook.figure_data import MAIDR_MIME, describe_data
from ..notebook.render import describe_image, render_outputs, truncate
from ..words import plural
from ._agent_edits import reader_of
from ._tool_common import chat_path, service_of

__all__ = [
    "FIGURE_TYPES",
    "figure_fingerprint",
    "figure_outputs",
    "looked_at",
    "remember_figure",
    "view_figure",
]

FIGURE_TYPES = (*MODEL_IMAGE_TYPES, "image/svg+xml")
"""Output mime types that hold a figure."""


def figure_outputs(outputs: list[dict[str, Any]]) -> list[int]:
    """Indexes of the outputs that hold a figure."""
    return [
        i for i, o in enumerate(outputs) if any(m in (o.get("data") or {}) for m in FIGURE_TYPES)
    ]


def _key(cell_id: str, index: int) -> str:
    return f"\0figure {cell_id} {index}"  # never a cell id: kept apart from the cells' sources


def remember_figure(ctx: ToolContext, path: str, cell_id: str, index: int, output: Any) -> None:
    """The model was shown this figure: a description it writes next is of this picture."""
    service_of(ctx).shown.remember(
        reader_of(ctx), path, _key(cell_id, index), figure_fingerprint(output)
    )


def looked_at(ctx: ToolContext, path: str, cell_id: str, index: int) -> str | None:
    """The fingerprint of the figure the model last looked at there (``None``: never)."""
    return service_of(ctx).shown.base(reader_of(ctx), path, _key(cell_id, index))


@aaep_tool(risk_level="low", read_only=True, label="look at a figure")
async def view_figure(
    ctx: ToolContext, cell_id: str, output_index: int | None = None
) -> ToolResult:
    """Look at the figure (plot or image) a cell's output shows, with the cell's code and text outputs. Nothing runs.

    Use it to read or describe a chart that is already in the notebook.

    Parameters
    ----------
    cell_id : str
        The id of the cell whose output holds the figure.
    output_index : int, optional
        Which output (0-based) when the cell shows several figures; by default all of them, up to the limit.
    """
    service = service_of(ctx)
    nb = await service.open(chat_path(ctx))
    cell = nb.cell(cell_id)
    number = nb.index_of(cell_id) + 1
    outputs = list(cell.get("outputs") or [])
    shown = figure_outputs(outputs)
    if not shown:
        raise ToolError(
            f"Cell {number} shows no figure. Run it first, or name the cell that draws the plot."
        )
    if output_index is not None:
        if output_index not in shown:
            raise ToolError(
                f"Output {output_index} of cell {number} is not a figure; its figures are outputs "
                f"{', '.join(map(str, shown))}."
            )
        picked = [output_index]
    else:
        picked = shown
    chosen = [outputs[i] for i in picked]
    found = figure_blocks(
        chosen,
        ImageBudget(
            max_images=max(1, service.max_images),
            max_edge=service.image_max_edge,
            max_chars=service.max_image_chars,
        ),
    )
    source = truncate(str(cell.get("source", "")), 6000)
    others = [o for o in outputs if not any(m in (o.get("data") or {}) for m in FIGURE_TYPES)]
    head = (
        f"Cell {number} (id {cell_id}) shows {plural(len(shown), 'figure')} "
        f"(outputs {', '.join(map(str, shown))})."
    )
    sizes = []
    for i in shown[:8]:
        mime = next(m for m in FIGURE_TYPES if m in outputs[i]["data"])
        sizes.append(f"Output {i}: {describe_image(mime, outputs[i]['data'][mime])}")
        if outputs[i] in chosen and MAIDR_MIME in outputs[i]["data"]:
            # maidr's values beside the image: the description can state them exactly.
            sizes.append(describe_data(outputs[i]["data"][MAIDR_MIME], limit=6000))
        alt = ((outputs[i].get("metadata") or {}).get(mime) or {}).get("alt")
        if i in picked and isinstance(alt, str) and alt.strip():
            sizes.append(f"Its alt text now: {truncate(alt, 1000)}")
    text = [head, *sizes, "Code:", source]
    if others:
        text += ["Other outputs:", render_outputs(others, 3000)]
    text += found.notes
    if found.downscaled:
        text.append(
            "The figure was downscaled to fit the size limit; small labels may be hard to read."
        )
    text.append(
        "After describing a figure for the user, save the description as its alt text with "
        "set_figure_alt_text (this cell and its output index), so screen readers and everyone the "
        "notebook reaches get it; not when the request says the user saves it themselves."
    )
    for i in picked:
        remember_figure(ctx, nb.path, cell_id, i, outputs[i])
    figures = len(found.blocks)
    summary = (
        f"Looked at the figure in cell {number}."
        if figures == 1
        else f"Looked at {figures} figures in cell {number}."
        if figures
        else f"Could not look at the figure in cell {number}."
    )
    content: Any = (
        [{"type": "text", "text": "\n".join(text)}, *found.blocks]
        if found.blocks
        else "\n".join(text)
    )
    return ToolResult(content=content, summary=summary)
