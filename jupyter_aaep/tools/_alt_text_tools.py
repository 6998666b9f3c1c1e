"""A figure's description kept as its alt text: the agent's ``set_figure_alt_text`` tool and the
one function that stores it, also used by the panel's *Save as alt text* (``figure_alt_text``).

The description goes into the output's ``metadata[mime]["alt"]``, where nbconvert's HTML export
and our image renderer read it, so every reader of the saved ``.ipynb`` gets it. It is a change
to the notebook, so the tool is classified as the other edits are (not read-only: it waits for
the person in "Ask before every change"; Undo agent changes puts the earlier alt text back), and
its confirmation names the cell and quotes the text.

A description belongs to one picture. When the model looked at the figure with ``view_figure``,
the figure's fingerprint is remembered; if the cell ran again and drew another picture since, the
description is refused instead of being stored on a figure it does not describe.
"""

from __future__ import annotations

from ..agent.tools import ActionPreview, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook._alt_text import figure_fingerprint, figure_mime, output_alt, write_alt
from ..notebook.documents import LiveNotebook
from ..notebook.edit_record import CellOperation
from ._agent_edits import record
from ._change_preview import check_approved
from ._figure_tools import figure_outputs, looked_at, remember_figure
from ._tool_common import chat_path, service_of

__all__ = ["clean_alt_text", "set_alt_text", "set_figure_alt_text"]

_QUOTED = 200


def _quoted(text: str) -> str:
    return f"“{text if len(text) <= _QUOTED else text[: _QUOTED - 1] + '…'}”"


def clean_alt_text(text: str) -> str:
    """*text* on one line (alt text is read as one run of words), or a :class:`ToolError`."""
    cleaned = " ".join(str(text).split())
    if not cleaned:
        raise ToolError(
            "The description is empty; write what the figure shows in sentences, then save it."
        )
    return cleaned


def _chosen(nb: LiveNotebook, cell_id: str, output_index: int | None) -> tuple[int, int, str]:
    """``(cell number, output index, mime)`` of the figure to describe, or a :class:`ToolError`."""
    number = nb.index_of(cell_id) + 1
    cell = nb.cell(cell_id)
    if cell.get("cell_type") != "code":
        raise ToolError(
            f"Cell {number} is not a code cell, so it shows no figure; name the cell that draws it."
        )
    outputs = list(cell.get("outputs") or [])
    shown = figure_outputs(outputs)
    if not shown:
        raise ToolError(
            f"Cell {number} shows no figure (it has not run, or ran again without drawing one); "
            "run it, look at the figure, then save its description."
        )
    chosen = shown[0] if output_index is None else output_index
    if chosen not in shown:
        raise ToolError(
            f"Output {chosen} of cell {number} is not a figure; its figures are outputs "
            f"{', '.join(map(str, shown))}."
        )
    return number, chosen, str(figure_mime(outputs[chosen]))


def set_alt_text(
    nb: LiveNotebook, cell_id: str, output_index: int | None, alt_text: str
) -> tuple[int, int, str]:
    """Store *alt_text* as the alt text of a figure output (its first figure by default):
    ``metadata[mime]["alt"]``, where nbconvert's HTML export reads it for the ``<img alt>``.
    Returns ``(cell number, output index, mime)``."""
    text = clean_alt_text(alt_text)
    number, chosen, mime = _chosen(nb, cell_id, output_index)
    write_alt(nb, cell_id, chosen, mime, text)
    return number, chosen, mime


def _check_same_picture(ctx: ToolContext, nb: LiveNotebook, cell_id: str, index: int) -> None:
    looked = looked_at(ctx, nb.path, cell_id, index)
    if looked is not None and looked != _figure_state(nb, cell_id, index):
        number = nb.index_of(cell_id) + 1
        raise ToolError(
            f"The figure in cell {number} changed since you looked at it (the cell ran again), "
            "so the description was not saved; look at it again with view_figure first."
        )


def _figure_state(nb: LiveNotebook, cell_id: str, index: int) -> str:
    return figure_fingerprint(list(nb.cell(cell_id).get("outputs") or [])[index])


@aaep_tool(risk_level="low", label="save a figure's description")
async def set_figure_alt_text(
    ctx: ToolContext, cell_id: str, alt_text: str, output_index: int | None = None
) -> ToolResult:
    """Save a description of a figure as its alt text, kept with the figure in the notebook file.

    Screen readers read it for the image, and it stays with the notebook when it is saved,
    shared or exported. Call it after describing a figure (look at it first with view_figure),
    with the description itself: plain sentences, no Markdown, never a placeholder. It replaces
    the figure's earlier alt text; running the cell again draws a new figure without it.

    Parameters
    ----------
    cell_id : str
        The id of the cell whose output shows the figure.
    alt_text : str
        The description, in plain sentences (what the chart shows, its axes, trend and extremes).
    output_index : int, optional
        Which output (0-based) when the cell shows several figures; by default its first figure.
    """
    text = clean_alt_text(alt_text)
    nb = await service_of(ctx).open(chat_path(ctx))
    number, index, mime = _chosen(nb, cell_id, output_index)
    check_approved(ctx, _figure_state(nb, cell_id, index), f"The figure in cell {number} changed")
    _check_same_picture(ctx, nb, cell_id, index)
    before = output_alt(list(nb.cell(cell_id)["outputs"])[index], mime)
    number, index, mime = set_alt_text(nb, cell_id, index, text)
    if before != text:  # Undo agent changes puts the earlier alt text (or none) back
        record(
            ctx,
            nb.path,
            CellOperation(
                "alt_text",
                cell_id,
                before={"alt": before, "output_index": index, "mime": mime},
                after={"alt": text, "figure": _figure_state(nb, cell_id, index)},
                index=number - 1,
            ),
        )
    remember_figure(ctx, nb.path, cell_id, index, list(nb.cell(cell_id)["outputs"])[index])
    which = (
        f" (output {index})" if len(figure_outputs(list(nb.cell(cell_id)["outputs"]))) > 1 else ""
    )
    return ToolResult(
        content=f"Saved the description as the alt text of the figure in cell {number}{which} "
        f"({mime}); it is kept with the figure in the notebook.",
        summary=f"Saved a description of the figure in cell {number} as its alt text.",
    )


@set_figure_alt_text.preview
async def _preview_alt_text(
    ctx: ToolContext, cell_id: str, alt_text: str, output_index: int | None = None
) -> ActionPreview:
    text = clean_alt_text(alt_text)
    nb = await service_of(ctx).open(chat_path(ctx))
    number, index, mime = _chosen(nb, cell_id, output_index)
    before = " ".join((output_alt(nb.cell(cell_id)["outputs"][index], mime) or "").split())
    replacing = f", replacing its alt text {_quoted(before)}" if before and before != text else ""
    return ActionPreview(
        summary=f"Saving a description of the figure in cell {number} as its alt text.",
        terse=f"Alt text for cell {number}.",
        action=f"Save this description as the alt text of the figure in cell {number}"
        f"{replacing}: {_quoted(text)}",
        consequence="The description is kept with the figure in the notebook, where screen "
        "readers read it; running the cell again replaces the figure and its description. Undo "
        "agent changes puts the earlier alt text back.",
        extra_context={
            "cell_id": cell_id,
            "change": {"kind": "alt_text", "cell_number": number, "output_index": index},
        },
        fingerprint=_figure_state(nb, cell_id, index),
    )
