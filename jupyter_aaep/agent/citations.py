"""Cell citations: the model cites ``[[cell:<id>]]`` or ``[[cell:<id>:<first>-<last>]]``; people
hear and read "cell 4" ("cell 4, lines 3 to 5"), never the id or the markup, and the panel gets
where each citation sits and which cell it names, as the AAEP extension ``jaaep`` on the
``output.streaming`` chunk, so it can make each one a link to the cell.

The words use the cell's number when the answer is written; the panel names the link by the
cell's number when it is shown (cells move), from the id in the extension.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..aaep.events import Extension

CITATIONS_PREFIX = "jaaep"
CITATIONS_CONTEXT = (
    "https://github.com/jupyter-aaep/jupyter-aaep/blob/main/docs/protocol.md#cell-citations"
)
"""The context URI that declares the ``jaaep`` extension (documented there)."""

_CITATION = re.compile(r"\[\[cell:([A-Za-z0-9_-]{1,64})(?::(\d{1,6})(?:-(\d{1,6}))?)?\]\]")
_OPENING = re.compile(r"\[(\[(c(e(l(l(:[A-Za-z0-9_:-]{0,80})?)?)?)?)?)?$")
"""The unfinished start of a citation at the end of a piece ("[[ce", "[[cell:ab12:3-")."""


def citation_words(number: int | None, first: int | None, last: int | None) -> str:
    """What a citation reads as: "cell 4", "cell 4, line 3", "cell 4, lines 3 to 5"."""
    if number is None:
        return "a cell that no longer exists"
    if first is None:
        return f"cell {number}"
    if last is None or last == first:
        return f"cell {number}, line {first}"
    low, high = sorted((first, last))
    return f"cell {number}, lines {low} to {high}"


class CitationRewriter:
    """Rewrites the citations of one streamed answer, piece by piece.

    A piece that ends inside a citation keeps that tail back until the next piece (or the
    final one), so no listener ever hears half of the markup."""

    def __init__(self, numbers: Mapping[str, int]) -> None:
        self.numbers = numbers
        """Cell id → its 1-based number when the answer started."""
        self._held = ""

    def __call__(self, piece: str, final: bool) -> tuple[str, tuple[Extension, ...]]:
        text = self._held + piece
        self._held = ""
        if not final:
            opening = _OPENING.search(text)
            if opening is not None:
                self._held = text[opening.start() :]
                text = text[: opening.start()]
        out: list[str] = []
        cited: list[dict[str, Any]] = []
        at = 0
        length = 0
        for match in _CITATION.finditer(text):
            before = text[at : match.start()]
            out.append(before)
            length += len(before)
            cell_id = match.group(1)
            first = int(match.group(2)) if match.group(2) else None
            last = int(match.group(3)) if match.group(3) else None
            number = self.numbers.get(cell_id)
            words = citation_words(number, first, last)
            citation: dict[str, Any] = {
                "start": length,
                "end": length + len(words),
                "cell_id": cell_id,
                "exists": number is not None,
            }
            if first is not None:
                citation["first_line"] = min(first, last or first)
                citation["last_line"] = max(first, last or first)
            cited.append(citation)
            out.append(words)
            length += len(words)
            at = match.end()
        out.append(text[at:])
        rewritten = "".join(out)
        if not cited:
            return rewritten, ()
        return rewritten, (Extension(CITATIONS_PREFIX, CITATIONS_CONTEXT, {"citations": cited}),)


def plain(text: str, numbers: Mapping[str, int] | None = None) -> str:
    """*text* with its citations as words (for text that is not streamed: summaries, stores)."""
    rewritten, _ = CitationRewriter(numbers or {})(text, True)
    return rewritten


__all__ = [
    "CITATIONS_CONTEXT",
    "CITATIONS_PREFIX",
    "CitationRewriter",
    "citation_words",
    "plain",
]
