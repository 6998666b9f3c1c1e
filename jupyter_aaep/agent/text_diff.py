"""What a change of text does, line by line: for the eye (+/- lines) and in words, for the ear.

A confirmation of an edit under review shows both: the marked lines around each change, and
sentences a screen reader can read ("Line 3 changed from 'x = 1' to 'x = 2'. Line 5 added:
'print(x)'."). Both are bounded, so a rewrite of a long cell stays a short request; what was
left out is said ("…and 4 more changes.").

Line numbers: a changed or removed line is numbered as in the text now (where the user can
find it), an added line as in the text after the change (where it will be); a changed line
whose number moves says both ("Line 3, line 4 after the change, changed from …").
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

from ..words import plural

LineKind = Literal["context", "added", "removed"]

QUOTE_CHARS = 80
"""Longest quoted line in a sentence; longer ones are cut and end with "…"."""
LINE_CHARS = 300
"""Longest line shown in the marked lines."""


@dataclass(frozen=True)
class DiffLine:
    """One line of the marked view: unchanged context, an added line or a removed line."""

    kind: LineKind
    text: str
    old_line: int | None
    new_line: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "old_line": self.old_line,
            "new_line": self.new_line,
        }


@dataclass
class TextDiff:
    """A bounded description of how *old* becomes *new*."""

    changed: int = 0
    added: int = 0
    removed: int = 0
    lines: list[DiffLine] = field(default_factory=list)
    """Changed lines with a little context, in order; at most ``max_lines``."""
    sentences: list[str] = field(default_factory=list)
    """The changes in words, in order; the last one says how many were left out, if any."""
    truncated: bool = False
    """Whether lines or sentences were left out."""

    @property
    def summary(self) -> str:
        """E.g. "1 line changed, 2 added, 1 removed", or "No line changes"."""
        parts: list[str] = []
        for count, word in (
            (self.changed, "changed"),
            (self.added, "added"),
            (self.removed, "removed"),
        ):
            if count:
                parts.append(f"{count} {word}" if parts else f"{_lines(count)} {word}")
        return ", ".join(parts) if parts else "No line changes"

    @property
    def text(self) -> str:
        """The sentences as one paragraph."""
        return " ".join(self.sentences)

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "changed": self.changed,
            "added": self.added,
            "removed": self.removed,
            "lines": [line.to_json() for line in self.lines],
            "sentences": list(self.sentences),
            "text": self.text,
            "truncated": self.truncated,
        }


def describe_change(
    old: str, new: str, *, context: int = 2, max_lines: int = 60, max_sentences: int = 12
) -> TextDiff:
    """How *old* becomes *new*: counts, marked lines with *context* lines around each change,
    and sentences; at most *max_lines* marked lines and *max_sentences* sentences."""
    a, b = old.splitlines(), new.splitlines()
    diff = TextDiff()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    sentences: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            sentences.append(_changed(i1 + k + 1, j1 + k + 1, a[i1 + k], b[j1 + k]))
        if i1 + paired < i2:
            sentences.append(_group("removed", i1 + paired + 1, a[i1 + paired : i2]))
        if j1 + paired < j2:
            sentences.append(_group("added", j1 + paired + 1, b[j1 + paired : j2]))
        diff.changed += paired
        diff.removed += (i2 - i1) - paired
        diff.added += (j2 - j1) - paired
    if not sentences:
        sentences = ["Only the line endings change." if old != new else "The text stays the same."]
    if len(sentences) > max_sentences:
        left = len(sentences) - (max_sentences - 1)
        sentences = [
            *sentences[: max_sentences - 1],
            f"…and {plural(left, 'more change')}.",
        ]
        diff.truncated = True
    diff.sentences = sentences
    diff.lines = _marked(matcher, a, b, context)
    if len(diff.lines) > max_lines:
        diff.lines = diff.lines[:max_lines]
        diff.truncated = True
    return diff


def _marked(
    matcher: difflib.SequenceMatcher[str], a: list[str], b: list[str], context: int
) -> list[DiffLine]:
    out: list[DiffLine] = []
    for group in matcher.get_grouped_opcodes(context):
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [
                    DiffLine("context", _cut(a[i], LINE_CHARS), i + 1, j1 + (i - i1) + 1)
                    for i in range(i1, i2)
                ]
                continue
            out += [DiffLine("removed", _cut(a[i], LINE_CHARS), i + 1, None) for i in range(i1, i2)]
            out += [DiffLine("added", _cut(b[j], LINE_CHARS), None, j + 1) for j in range(j1, j2)]
    return out


def _changed(old_number: int, new_number: int, before: str, after: str) -> str:
    where = (
        f"Line {old_number}"
        if old_number == new_number
        else f"Line {old_number}, line {new_number} after the change,"
    )
    if before.strip() == after.strip() and before.strip():
        return f"{where} changed its indentation from {_indent(before)} to {_indent(after)}: {_quote(after)}."
    return f"{where} changed from {_quote(before)} to {_quote(after)}."


def _group(kind: str, first: int, texts: list[str]) -> str:
    quoted = "; ".join(_quote(t) for t in texts[:3])
    more = f"; and {len(texts) - 3} more" if len(texts) > 3 else ""
    if len(texts) == 1:
        return f"Line {first} {kind}: {quoted}."
    return f"Lines {first} to {first + len(texts) - 1} {kind}: {quoted}{more}."


def _quote(line: str) -> str:
    if not line.strip():
        return "an empty line"
    return f"'{_cut(line.strip(), QUOTE_CHARS)}'"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _indent(line: str) -> str:
    lead = line[: len(line) - len(line.lstrip())]
    if not lead:
        return "none"
    tabs, spaces = lead.count("\t"), len(lead) - lead.count("\t")
    parts = [plural(n, word) for n, word in ((spaces, "space"), (tabs, "tab")) if n]
    return " and ".join(parts)


def _lines(count: int) -> str:
    return plural(count, "line")
