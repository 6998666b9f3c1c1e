"""``view_figure``: the agent looks at a figure a cell already shows, without running anything.

Used to describe a plot for a screen-reader user ("Describe this figure" in the panel): the
model gets the cell's code, its text outputs and the figure itself as an image block, within
the same budget as ``run_cell`` (downscaled, a bounded number).
"""

from __future__ import annotations

from typing import Any

from ..agent.tools import ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook._figures import MODEL_IMAGE_TYPES, ImageBudget, figure_blocks
from ..notebook.figure_data import MAIDR_MIME, describe_data
from ..notebook.render import describe_image, render_outputs, truncate
from ..words import plural
from ._tool_common import chat_path, service_of

__all__ = ["figure_outputs", "set_alt_text", "view_figure"]

_FIGURE_TYPES = (*MODEL_IMAGE_TYPES, "image/svg+xml")


def figure_outputs(outputs: list[dict[str, Any]]) -> list[int]:
    """Indexes of the outputs that hold a figure."""
    return [
        i for i, o in enumerate(outputs) if any(m in (o.get("data") or {}) for m in _FIGURE_TYPES)
    ]


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
        chosen = [outputs[output_index]]
    else:
        chosen = [outputs[i] for i in shown]
    found = figure_blocks(
        chosen,
        ImageBudget(
            max_images=max(1, service.max_images),
            max_edge=service.image_max_edge,
            max_chars=service.max_image_chars,
        ),
    )
    source = truncate(str(cell.get("source", "")), 6000)
    others = [o for o in outputs if not any(m in (o.get("data") or {}) for m in _FIGURE_TYPES)]
    head = (
        f"Cell {number} (id {cell_id}) shows {plural(len(shown), 'figure')} "
        f"(outputs {', '.join(map(str, shown))})."
    )
    sizes = []
    for i in shown[:8]:
        mime = next(m for m in _FIGURE_TYPES if m in outputs[i]["data"])
        sizes.append(f"Output {i}: {describe_image(mime, outputs[i]['data'][mime])}")
        if outputs[i] in chosen and MAIDR_MIME in outputs[i]["data"]:
            # maidr's values beside the image: the description can state them exactly.
            sizes.append(describe_data(outputs[i]["data"][MAIDR_MIME], limit=6000))
    text = [head, *sizes, "Code:", source]
    if others:
        text += ["Other outputs:", render_outputs(others, 3000)]
    text += found.notes
    if found.downscaled:
        text.append(
            "The figure was downscaled to fit the size limit; small labels may be hard to read."
        )
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


def set_alt_text(
    nb: Any, cell_id: str, output_index: int | None, alt_text: str
) -> tuple[int, int, str]:
    """Store *alt_text* as the alt text of a figure output: ``metadata[mime]["alt"]``, where
    nbconvert's HTML export reads it for the ``<img alt>``. Returns ``(cell number, output
    index, mime)``. The output is replaced as a whole, so open notebooks pick the change up."""
    from pycrdt import Map

    index = nb.index_of(cell_id)
    ycell = nb.ynotebook.ycells[index]
    outputs = [dict(o) for o in (nb.cell(cell_id).get("outputs") or [])]
    shown = figure_outputs(outputs)
    if not shown:
        raise ToolError(
            f"Cell {index + 1} shows no figure any more; run it again, then describe it."
        )
    chosen = shown[0] if output_index is None else output_index
    if chosen not in shown:
        raise ToolError(
            f"Output {chosen} of cell {index + 1} is not a figure; its figures are outputs "
            f"{', '.join(map(str, shown))}."
        )
    output = outputs[chosen]
    mime = next(m for m in _FIGURE_TYPES if m in (output.get("data") or {}))
    metadata = dict(output.get("metadata") or {})
    metadata[mime] = {**dict(metadata.get(mime) or {}), "alt": alt_text}
    replaced = {**output, "metadata": metadata}
    youtputs = ycell.get("outputs")
    with nb.transaction():
        del youtputs[chosen]
        youtputs.insert(chosen, Map(replaced))
    return index + 1, chosen, mime
