"""Cell citations in the ``%aaep`` view: the words the server wrote ("cell 4") become real links.

The server rewrites each ``[[cell:…]]`` of an answer into words and says, in the ``jaaep``
extension of the ``output.streaming`` chunk, where they sit and which cell they name
(:mod:`jupyter_aaep.agent.citations`). Here each one becomes an ``<a href>`` (a tab stop that
Enter follows) carrying the cell's id in ``data-`` attributes; the labextension follows a click
on it to the cell (``notebookCitations.ts``, the panel's own navigator). The kernel only writes
markup: it cannot move the person's focus, and a link whose cell is gone stays plain words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._markdown import escape, markdown_to_html

__all__ = ["ViewCitation", "citations_of", "cited_html"]

CITATION_HREF = "#aaep-cell-citation"
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HOLD, _HOLD_END = "\ue000", "\ue001"
"""Private-use characters that hold a citation's place through the Markdown rendering."""
_HELD = re.compile(f"{_HOLD}(\\d+){_HOLD_END}")


@dataclass(frozen=True)
class ViewCitation:
    """One citation; offsets in the answer's whole text."""

    start: int
    end: int
    cell_id: str
    exists: bool
    first_line: int | None = None
    last_line: int | None = None


def citations_of(event: dict[str, Any], base: int) -> list[ViewCitation]:
    """The citations a chunk carries, made absolute with *base* (the answer's length so far)."""
    extensions = event.get("extensions")
    ours = extensions.get("jaaep") if isinstance(extensions, dict) else None
    listed = ours.get("citations") if isinstance(ours, dict) else None
    found = []
    for raw in listed if isinstance(listed, list) else []:
        if not isinstance(raw, dict):
            continue
        start, end, cell = raw.get("start"), raw.get("end"), raw.get("cell_id")
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(cell, str)):
            continue
        if start < 0 or end < start or not _CELL_ID.fullmatch(cell):
            continue
        lines = [raw.get(k) for k in ("first_line", "last_line")]
        first, last = (n if isinstance(n, int) and n > 0 else None for n in lines)
        found.append(
            ViewCitation(
                base + start, base + end, cell, raw.get("exists") is not False, first, last
            )
        )
    return found


def _link(citation: ViewCitation, words: str) -> str:
    if not citation.exists:
        return escape(words)  # "a cell that no longer exists": nothing to go to
    lines = ""
    if citation.first_line is not None:
        last = citation.last_line or citation.first_line
        lines = f' data-aaep-first-line="{citation.first_line}" data-aaep-last-line="{last}"'
    return (
        f'<a href="{CITATION_HREF}" class="jp-AAEPView-citation" '
        f'data-aaep-cell-id="{escape(citation.cell_id)}"{lines}>{escape(words)}</a>'
    )


def cited_html(text: str, citations: list[ViewCitation]) -> str:
    """*text* (Markdown) as the view's safe HTML, each citation a link to its cell."""
    text = text.replace(_HOLD, "\ufffd").replace(_HOLD_END, "\ufffd")  # same length: offsets hold
    pieces: list[str] = []
    links: list[str] = []
    at = 0
    for citation in sorted(citations, key=lambda c: c.start):
        if citation.start < at or citation.end > len(text):
            continue  # overlapping, or not all of it has arrived yet
        pieces.append(text[at : citation.start])
        pieces.append(f"{_HOLD}{len(links)}{_HOLD_END}")
        links.append(_link(citation, text[citation.start : citation.end]))
        at = citation.end
    pieces.append(text[at:])
    return _HELD.sub(lambda m: links[int(m.group(1))], markdown_to_html("".join(pieces)))
