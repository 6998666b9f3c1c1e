"""Text changes that respect what others typed: minimal edits of a shared string, three-way merges.

A whole replacement of a shared ``Text`` moves every collaborator's cursor in that cell to an
edge and drops what they typed meanwhile; applying only the differing spans keeps both. The
merge puts the agent's change (from the text it read to the text it wrote) onto the text as it
is now, line by line, when the two changes touch different lines.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

__all__ = ["apply_text", "merge_three_way", "version_tag"]

TAG_LENGTH = 6


def version_tag(source: str) -> str:
    """A short tag of a cell's source: the model passes it back so an edit is bound to what it read."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:TAG_LENGTH]


def apply_text(ytext: Any, new: str) -> bool:
    """Change the shared *ytext* into *new* by inserting and deleting only the differing spans.

    pycrdt indexes ``Text`` in UTF-8 bytes, so offsets are converted; spans are applied from
    the end so earlier offsets stay valid. Returns whether anything changed.
    """
    old = str(ytext)
    if old == new:
        return False
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
        if tag == "equal":
            continue
        start = len(old[:i1].encode("utf-8"))
        if i2 > i1:
            del ytext[start : start + len(old[i1:i2].encode("utf-8"))]
        if j2 > j1:
            ytext.insert(start, new[j1:j2])
    return True


def _hunks(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """The changed spans of *base* (``start``, ``end``) and what *other* has there instead."""
    matcher = difflib.SequenceMatcher(a=base, b=other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def merge_three_way(base: str, ours: str, theirs: str) -> str | None:
    """*ours* (a change of *base*) applied onto *theirs* (another change of *base*), line by line.

    ``None`` when the two changes touch the same lines (or insert different text at the same
    place): then nobody can tell which should win. A line added right before or after lines
    the other side changed is kept, in that order.
    """
    if ours == base:
        return theirs
    if theirs == base or theirs == ours:
        return ours
    # Compare whole lines: a last line without its newline would differ from the same line with one.
    base_lines, our_lines, their_lines = (_lines(t) for t in (base, ours, theirs))
    mine, other = _hunks(base_lines, our_lines), _hunks(base_lines, their_lines)
    for a1, a2, text_a in mine:
        for b1, b2, text_b in other:
            if (a1, a2, text_a) == (b1, b2, text_b):
                continue  # both made the same change
            if a1 == a2 and b1 == b2:
                clash = a1 == b1  # two different insertions at one place: which goes first?
            elif (
                a1 == a2 or b1 == b2
            ):  # an insertion inside the other's changed lines (its edges are fine)
                point, start, end = (a1, b1, b2) if a1 == a2 else (b1, a1, a2)
                clash = start < point < end
            else:
                clash = a1 < b2 and b1 < a2
            if clash:
                return None
    edits = sorted(
        [(a1, a2, text_a) for a1, a2, text_a in mine]
        + [hunk for hunk in other if hunk not in mine],
        key=lambda h: (h[0], h[1]),
    )
    merged: list[str] = []
    cursor = 0
    for start, end, text in edits:
        merged.extend(base_lines[cursor:start])
        merged.extend(text)
        cursor = max(cursor, end)
    merged.extend(base_lines[cursor:])
    result = "".join(merged)
    # The text ends as the side that changed its ending says (the current text when neither did).
    ending = (
        ours.endswith("\n") if ours.endswith("\n") != base.endswith("\n") else theirs.endswith("\n")
    )
    return result if ending or not result.endswith("\n") else result[:-1]


def _lines(text: str) -> list[str]:
    return (text if text.endswith("\n") or not text else text + "\n").splitlines(keepends=True)
