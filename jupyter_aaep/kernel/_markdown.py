"""A small, safe Markdown subset to HTML, for the live view's ``ipywidgets.HTML``.

The HTML widget puts its value into the page as it is (no sanitiser runs on it), and the text
comes from a model that may repeat anything a notebook or a file contains. So every piece of
text is escaped first and only tags built here reach the page: paragraphs, line breaks,
``**bold**``, ``*italic*``, ```code```, fenced code blocks, bullet and numbered lists, simple
pipe tables (the first row is the header) and headings (shown as bold paragraphs, so a cell
output never adds to the page's heading outline).
Links keep their text and show the address after it, as text: nothing is clickable.
"""

from __future__ import annotations

import html
import re

__all__ = ["escape", "markdown_to_html"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"
)


def escape(text: str) -> str:
    """Text as HTML text (``<``, ``>``, ``&`` and both quotes escaped)."""
    return html.escape(text, quote=True)


def _inline(text: str) -> str:
    """Escape *text*, then mark up code spans, links, bold and italic (code spans are left alone)."""
    pieces: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(text):
        pieces.append(_emphasis(escape(text[last : match.start()])))
        pieces.append(f"<code>{escape(match.group(1))}</code>")
        last = match.end()
    pieces.append(_emphasis(escape(text[last:])))
    return "".join(pieces)


def _emphasis(escaped: str) -> str:
    escaped = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", escaped)
    escaped = _BOLD.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", escaped)
    return _ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", escaped)


def _table(rows: list[str]) -> str:
    """A pipe table: the first row is the header unless the second is not a ``---`` rule."""
    cells = [
        [c.strip() for c in row.strip().strip("|").split("|")]
        for row in rows
        if not _TABLE_RULE.match(row)
    ]
    has_header = len(rows) > 1 and bool(_TABLE_RULE.match(rows[1]))
    head = ""
    if has_header:
        head = (
            "<thead><tr>"
            + "".join(f'<th scope="col">{_inline(c)}</th>' for c in cells[0])
            + "</tr></thead>"
        )
        cells = cells[1:]
    body = "".join(
        "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in cells
    )
    return f"<table>{head}<tbody>{body}</tbody></table>"


def markdown_to_html(text: str) -> str:
    """Render *text* (Markdown, possibly cut off mid-stream) as safe HTML."""
    out: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    list_tag = ""
    code: list[str] | None = None
    table: list[str] = []

    def flush_table() -> None:
        if table:
            out.append(_table(table))
            table.clear()

    def flush_paragraph() -> None:
        if paragraph:
            out.append("<p>" + "<br>".join(_inline(line.strip()) for line in paragraph) + "</p>")
            paragraph.clear()

    def flush_list() -> None:
        nonlocal list_tag
        if items:
            out.append(
                f"<{list_tag}>"
                + "".join(f"<li>{_inline(i)}</li>" for i in items)
                + f"</{list_tag}>"
            )
            items.clear()
        list_tag = ""

    for line in text.replace("\r\n", "\n").split("\n"):
        if code is None and _TABLE_ROW.match(line):
            flush_paragraph()
            flush_list()
            table.append(line)
            continue
        flush_table()
        if code is not None:
            if _FENCE.match(line):
                out.append("<pre><code>" + escape("\n".join(code)) + "</code></pre>")
                code = None
            else:
                code.append(line)
            continue
        if _FENCE.match(line):
            flush_paragraph()
            flush_list()
            code = []
            continue
        if not line.strip():
            flush_paragraph()
            flush_list()
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        numbered = _NUMBERED.match(line)
        if heading:
            flush_paragraph()
            flush_list()
            out.append(f"<p><strong>{_inline(heading.group(2))}</strong></p>")
        elif bullet or numbered:
            flush_paragraph()
            tag = "ul" if bullet else "ol"
            if list_tag and list_tag != tag:
                flush_list()
            list_tag = tag
            items.append((bullet or numbered).group(1))  # type: ignore[union-attr]
        elif items and line.startswith(("  ", "\t")):
            items[-1] += " " + line.strip()  # a list item continued on the next line
        else:
            flush_list()
            paragraph.append(line)
    flush_paragraph()
    flush_list()
    flush_table()
    if code is not None:  # an unclosed fence (still streaming): show what came so far
        out.append("<pre><code>" + escape("\n".join(code)) + "</code></pre>")
    return "".join(out)
