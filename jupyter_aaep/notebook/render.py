"""Compact text views of notebooks and outputs for the model, within a character budget.

The raw ``.ipynb`` JSON is far too expensive to send every turn (base64 plots, HTML tables),
so the model gets plain text: one header per cell with its number and id, the source, and
outputs reduced to what matters — text as text, images as a short description, errors as the
exception line plus the last frames. When the budget is tight every cell keeps its header (so
the model can always address any cell by id) and sources and outputs are cut with visible
markers, fairly: short pieces stay whole and the long ones share what is left.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from ..words import plural
from ._text_edits import version_tag
from .figure_data import MAIDR_MIME, describe_data

__all__ = [
    "CellView",
    "describe_image",
    "render_cells",
    "render_error",
    "render_outputs",
    "strip_ansi",
    "truncate",
]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
_TEXT_PREFERENCE = ("text/plain", "text/markdown", "text/latex", "application/json")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
_MARKER = "[… {n} characters cut …]"


def strip_ansi(text: str) -> str:
    """*text* without terminal colour codes (tracebacks are full of them)."""
    return _ANSI.sub("", text)


def truncate(text: str, limit: int, *, keep_tail: float = 0.35) -> str:
    """*text* cut to about *limit* characters, keeping its head and tail around a marker."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return _MARKER.format(n=len(text))
    tail = int(limit * keep_tail)
    head = limit - tail
    # Prefer cutting at line ends when one is close, so code stays readable.
    cut = text.rfind("\n", 0, head)
    if cut > head * 0.5:
        head = cut + 1
    start = text.find("\n", len(text) - tail)
    if tail and 0 <= start and len(text) - start > tail * 0.5:
        tail = len(text) - start - 1
    cut_count = len(text) - head - tail
    middle = _MARKER.format(n=cut_count)
    return (
        text[:head] + middle + ("\n" if tail else "") + (text[len(text) - tail :] if tail else "")
    )


def _cut_cost(length: int, cap: int) -> int:
    """Characters a piece of *length* takes once cut at *cap* (the marker included)."""
    return length if length <= cap else cap + len(_MARKER) + 8


# -- images -----------------------------------------------------------------------------------


def _image_dimensions(mime: str, raw: bytes) -> tuple[int, int] | None:
    if mime == "image/png" and raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return int(width), int(height)
    if mime == "image/gif" and raw[:4] == b"GIF8" and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return int(width), int(height)
    if mime == "image/jpeg":
        i = 2
        while i + 9 < len(raw):
            if raw[i] != 0xFF:
                return None
            marker, size = raw[i + 1], struct.unpack(">H", raw[i + 2 : i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
                return int(width), int(height)
            i += 2 + size
    return None


def _size(nbytes: int) -> str:
    return (
        f"{nbytes} B"
        if nbytes < 1024
        else f"{nbytes / 1024:.0f} KB"
        if nbytes < 1024**2
        else f"{nbytes / 1024**2:.1f} MB"
    )


def describe_image(mime: str, value: Any) -> str:
    """ "image/png 640×480, 23 KB" — what a plot is, without its bytes."""
    text = "".join(value) if isinstance(value, list) else str(value)
    if mime == "image/svg+xml":
        return f"{mime}, {_size(len(text.encode()))}"
    try:
        raw = base64.b64decode(text[:65536] + "=" * (-len(text[:65536]) % 4), validate=False)
    except (ValueError, TypeError):
        raw = b""
    dims = _image_dimensions(mime, raw)
    nbytes = len(text) * 3 // 4
    return f"{mime} {dims[0]}×{dims[1]}, {_size(nbytes)}" if dims else f"{mime}, {_size(nbytes)}"


# -- outputs ----------------------------------------------------------------------------------


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("tr", "br", "p", "div", "li", "h1", "h2", "h3"):
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _html_text(markup: str) -> str:
    parser = _TextOnly()
    parser.feed(markup)
    text = html.unescape("".join(parser.parts))
    return re.sub(r"\n\s*\n+", "\n", text).strip()


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _mime_bundle(data: dict[str, Any], limit: int) -> str:
    """The most useful text of a mime bundle, with images and other types described."""
    notes = [f"[{describe_image(m, data[m])}]" for m in _IMAGE_TYPES if m in data]
    if MAIDR_MIME in data:  # the figure's values, so a description can state them exactly
        notes.append(describe_data(data[MAIDR_MIME], limit=min(limit, 1500)))
    if "application/vnd.jupyter.widget-view+json" in data:
        model = data["application/vnd.jupyter.widget-view+json"]
        model_id = model.get("model_id", "?") if isinstance(model, dict) else "?"
        notes.append(f"[interactive widget {model_id}]")
    text = None
    for mime in _TEXT_PREFERENCE:
        if mime in data:
            value = data[mime]
            text = (
                json.dumps(value, ensure_ascii=False)
                if mime == "application/json"
                else _join(value)
            )
            break
    if text is None and "text/html" in data:
        text = "(html as text) " + _html_text(_join(data["text/html"]))
    others = [
        m
        for m in data
        if m not in _IMAGE_TYPES
        and m != "text/plain"
        and m != MAIDR_MIME
        and not m.startswith("application/vnd.jupyter.widget")
    ]
    if others and text is not None and "text/plain" in data:
        notes.append(
            "[also " + ", ".join(f"{m} {_size(len(_join(data[m])))}" for m in others[:4]) + "]"
        )
    parts = notes + ([truncate(strip_ansi(text), limit)] if text else [])
    return "\n".join(parts) if parts else "[no displayable data]"


def render_error(output: dict[str, Any], limit: int = 2000, *, frames: int = 3) -> str:
    """ "ValueError: bad value" plus the last *frames* traceback entries, ANSI stripped."""
    head = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".strip()
    entries = [strip_ansi(_join(line)).rstrip() for line in output.get("traceback", []) or []]
    entries = [e for e in entries if e and not set(e) <= set("-")]
    # ipykernel's last entry repeats "ename: evalue"; the frames are what precede it.
    if entries and entries[-1].strip().endswith(head.split("\n")[0][-60:]):
        entries = entries[:-1]
    body = "\n".join(entries[-frames:])
    text = head + ("\nTraceback (last frames):\n" + body if body else "")
    return truncate(text, limit, keep_tail=0.7)


def render_output(output: dict[str, Any], limit: int = 4000) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"[{output.get('name', 'stdout')}]\n" + truncate(
            strip_ansi(_join(output.get("text", ""))), limit
        )
    if kind == "error":
        return "[error] " + render_error(output, limit)
    label = "[result]" if kind == "execute_result" else "[display]"
    return label + "\n" + _mime_bundle(output.get("data", {}) or {}, limit)


def render_outputs(outputs: Sequence[dict[str, Any]], limit: int) -> str:
    """All outputs of a cell as text of about *limit* characters at most."""
    if not outputs:
        return ""
    per_item = max(200, limit // max(1, len(outputs)))
    text = "\n".join(render_output(o, max(per_item, 4000)) for o in outputs)
    return truncate(text, limit, keep_tail=0.5)


# -- notebooks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellView:
    """One cell as the renderer needs it (a plain snapshot of the shared cell)."""

    number: int
    """1-based position in the notebook, as people count cells."""
    id: str
    cell_type: str
    source: str
    outputs: tuple[dict[str, Any], ...] = ()
    execution_count: int | None = None
    running: bool = False
    version: str = ""
    """A short tag of the source; the model passes it back so its edit is bound to what it read."""

    @classmethod
    def from_cell(cls, number: int, cell: dict[str, Any]) -> CellView:
        count = cell.get("execution_count")
        return cls(
            number=number,
            id=str(cell.get("id", "")),
            cell_type=str(cell.get("cell_type", "code")),
            source=_join(cell.get("source", "")),
            outputs=tuple(cell.get("outputs") or ()),
            execution_count=int(count) if isinstance(count, (int, float)) else None,
            running=cell.get("execution_state") == "running",
            version=version_tag(_join(cell.get("source", ""))),
        )

    def header(self) -> str:
        parts = [
            f"## cell {self.number} · id {self.id} · version {self.version} · {self.cell_type}"
        ]
        if self.cell_type == "code":
            if self.running:
                parts.append("running")
            elif self.execution_count is not None:
                parts.append(f"ran as [{self.execution_count}]")
            elif not self.outputs:
                parts.append("not run")
            if self.outputs:
                parts.append(plural(len(self.outputs), "output"))
        return " · ".join(parts)


def render_cells(
    cells: Sequence[CellView],
    *,
    title: str,
    budget: int,
    include_outputs: bool = True,
    footer: str = "",
) -> str:
    """*cells* as text within *budget* characters, every cell's header (and id) included."""
    headers = [c.header() for c in cells]
    fixed = len(title) + len(footer) + sum(len(h) + 2 for h in headers) + 2
    sources = [c.source for c in cells]
    outputs = [
        render_outputs(c.outputs, 40_000) if include_outputs and c.outputs else "" for c in cells
    ]
    room = budget - fixed - 400  # markers, separators and the truncation note
    if room < len(cells) * 8:
        return _index_only(cells, title=title, budget=budget, footer=footer)
    # Sources matter more than outputs: outputs are capped at half the source cap.
    cap = _shrink_to_fit(sources, outputs, room)
    cut = False
    blocks = [title]
    for cell, header, source, output in zip(cells, headers, sources, outputs):
        block = [header]
        if source:
            shown = truncate(source, cap)
            cut |= shown != source
            block.append(shown)
        if output:
            shown = truncate(output, cap // 2, keep_tail=0.5)
            cut |= shown != output
            block.append("→ outputs:\n" + shown)
        blocks.append("\n".join(block))
    if cut:
        blocks.append(
            "(Some sources or outputs were cut to fit; call get_notebook_state with cell_ids=[...] "
            "to read those cells in full.)"
        )
    if footer:
        blocks.append(footer)
    return "\n\n".join(blocks)


def _shrink_to_fit(sources: Sequence[str], outputs: Sequence[str], room: int) -> int:
    """The largest cap such that sources cut at it and outputs at half of it fit *room*.

    Short pieces stay whole and the long ones share what is left (a binary search on the cap).
    """

    def cost(cap: int) -> int:
        return sum(_cut_cost(len(s), cap) for s in sources if s) + sum(
            _cut_cost(len(o), cap // 2) + 14 for o in outputs if o
        )

    high = max([len(s) for s in sources] + [2 * len(o) for o in outputs] + [0])
    if cost(high) <= room:
        return high
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        if cost(mid) <= room:
            low = mid
        else:
            high = mid - 1
    return low


def _index_only(cells: Sequence[CellView], *, title: str, budget: int, footer: str) -> str:
    """When even headers barely fit: one short line per cell, then a note."""
    lines = [
        title,
        "(Too many cells to show sources; this is an index. Read cells with cell_ids=[...] or start/end.)",
    ]
    used = sum(len(line) + 1 for line in lines) + len(footer) + 120
    for shown, cell in enumerate(cells):
        line = f"{cell.number}. {cell.id} {cell.cell_type}"
        if used + len(line) + 1 > budget:
            lines.append(
                f"… and {len(cells) - shown} more cells (from cell {cell.number}); pass start={cell.number} to see them."
            )
            break
        lines.append(line)
        used += len(line) + 1
    if footer:
        lines.append(footer)
    return "\n".join(lines)
