"""What an edit of the notebook will do, shown before it happens (edits under review).

In the "ask before every change" mode each create, edit, delete, move and clear waits for the
user; its ``awaiting.confirmation`` carries ``extra_context["change"]``: the kind of change,
the cell in the user's words ("cell 3", "after cell 2 ('Load the data')"), the old and new
source (bounded) and the line-by-line diff (:mod:`jupyter_aaep.agent.text_diff`) as marked
lines and as sentences. The approval is bound to what was shown (``fingerprint``): if the
cell or its place changed meanwhile, the tool refuses and the user is asked again.

The cell's number is inside ``change``, not at the top of ``extra_context``: there
``cell_number`` means "the cell that will run" to the panel and the kernel widget.
"""

from __future__ import annotations

from typing import Any

from ..agent.text_diff import describe_change
from ..agent.tools import StaleApproval, ToolContext
from ..notebook.documents import LiveNotebook
from ..notebook.service import cells_fingerprint, source_fingerprint

SOURCE_CHARS = 4000
"""Longest old or new source carried in a confirmation; longer ones are cut and marked."""
LABEL_CHARS = 40


def cell_label(cell: dict[str, Any]) -> str:
    """A short name of a cell for people: its first non-empty line, e.g. "'Load the data'"."""
    for line in str(cell.get("source", "")).splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return f"'{text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + '…'}'"
    return "an empty cell"


def where(nb: LiveNotebook, index: int, *, moving: str | None = None) -> str:
    """Where 0-based *index* is, in words: "at the top", "after cell 2 ('Load the data')".

    *moving* is the id of a cell being moved: it is left out when naming its neighbour.
    """
    cells = [c for c in nb.cells() if c.get("id") != moving]
    if index <= 0 or not cells:
        return "at the top" if cells else "as the first cell"
    before = cells[min(index, len(cells)) - 1]
    number = nb.index_of(str(before["id"])) + 1
    end = " (at the end)" if index >= len(cells) else ""
    return f"after cell {number} ({cell_label(before)[: LABEL_CHARS + 2]}){end}"


def placement_fingerprint(nb: LiveNotebook, index: int, *, moving: str | None = None) -> str:
    """Binds an approval of "put it here" to the neighbour it was shown after."""
    cells = [c for c in nb.cells() if c.get("id") != moving]
    anchor = str(cells[min(index, len(cells)) - 1]["id"]) if index > 0 and cells else ""
    return source_fingerprint(f"after {anchor}")


def cell_fingerprint(cell: dict[str, Any]) -> str:
    """Binds an approval to a cell's type and source as shown."""
    return cells_fingerprint([(str(cell.get("cell_type", "")), str(cell.get("source", "")))])


def outputs_fingerprint(cells: list[dict[str, Any]]) -> str:
    """Binds an approval of clearing outputs to the cells and their number of outputs."""
    return cells_fingerprint([(str(c.get("id")), str(len(c.get("outputs") or []))) for c in cells])


def change_context(
    kind: str,
    *,
    cell_number: int | None,
    cell_type: str | None,
    old: str = "",
    new: str = "",
    place: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """``extra_context["change"]`` of one edit: what, where, the sources and their diff."""
    diff = describe_change(old, new)
    change: dict[str, Any] = {
        "kind": kind,
        "cell_number": cell_number,
        "cell_type": cell_type,
        "old_source": _bounded(old),
        "new_source": _bounded(new),
        "source_truncated": max(len(old), len(new)) > SOURCE_CHARS,
        "diff": diff.to_json(),
        **more,
    }
    if place is not None:
        change["where"] = place
    return change


def _bounded(text: str) -> str:
    return text if len(text) <= SOURCE_CHARS else text[:SOURCE_CHARS] + "\n… (cut here)"


# -- approvals bound to what was shown, and the words for cells ---------------------------------


def check_approved(ctx: ToolContext, fingerprint: str, what_changed: str) -> None:
    """Refuse an approved change when the notebook moved on since the user saw it."""
    if ctx.approved_fingerprint is not None and ctx.approved_fingerprint != fingerprint:
        raise StaleApproval(
            f"{what_changed} while you were asked, so nothing was changed. Asking again with the "
            "notebook as it is now."
        )


def named(cell: dict[str, Any]) -> str:
    """A Markdown cell's first words name it (" 'Load the data'"); code is called by its number."""
    return f" {cell_label(cell)}" if cell.get("cell_type") == "markdown" else ""


def type_word(cell_type: str | None) -> str:
    return (
        "Markdown" if cell_type == "markdown" else "code" if cell_type == "code" else str(cell_type)
    )
