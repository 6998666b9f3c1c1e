"""What a Markdown cell holds that a screen-reader user meets: headings, images, links, tables.

Pure Python (regular expressions, no Markdown library, no Jupyter), enough of CommonMark and
GitHub's tables to find what the accessibility rules check (:mod:`.accessibility`), with HTML
mixed in the way notebooks mix it. Code (fenced blocks, indented blocks and inline code spans)
and HTML comments are never read as content: a ``# comment`` in a code fence is not a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Heading",
    "Image",
    "Link",
    "Table",
    "attributes",
    "headings",
    "html_images",
    "html_tables",
    "images",
    "links",
    "plain_text",
    "prose",
    "tables",
]


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    """The heading as read aloud: markup removed, images by their alt text."""


@dataclass(frozen=True)
class Image:
    alt: str | None
    """The alt text; ``None`` when an ``<img>`` has no ``alt`` attribute at all."""
    source: str
    html: bool
    decorative: bool = False
    """An ``<img>`` marked as decoration (``alt=""``, ``role="presentation"``, ``aria-hidden``)."""


@dataclass(frozen=True)
class Link:
    text: str
    """The link's accessible name: its text without markup (an ``aria-label`` wins in HTML)."""
    target: str
    bare: bool = False
    """A web address written as is, which JupyterLab turns into a link named by the address."""


@dataclass(frozen=True)
class Table:
    header: list[str]
    """The header cells' text (empty strings for empty cells); ``[]`` when there is no header."""
    html: bool


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+.*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_HTML_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.DOTALL | re.IGNORECASE)
_MD_IMAGE = re.compile(r"!\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+[^)]*)?\)")
_MD_REF_IMAGE = re.compile(r"!\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[([^\]]*)\]")
_IMG_TAG = re.compile(r"<img\b([^>]*)>", re.IGNORECASE)
_MD_LINK = re.compile(
    r"(?<![!\\])\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+[^)]*)?\)"
)
_MD_REF_LINK = re.compile(r"(?<![!\\\]])\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[([^\]]*)\]")
_AUTOLINK = re.compile(r"<((?:https?|ftp)://[^\s<>]+|mailto:[^\s<>]+)>", re.IGNORECASE)
_HTML_LINK = re.compile(r"<a\b([^>]*)>(.*?)</a\s*>", re.DOTALL | re.IGNORECASE)
_BARE_URL = re.compile(r"(?<![\w/\"'=(<])((?:https?://|www\.)[^\s<>\"')\]]+)", re.IGNORECASE)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_ATTRIBUTE = re.compile(r"([a-zA-Z_:][\w:.-]*)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+))?")
_TABLE = re.compile(r"<table\b[^>]*>(.*?)</table\s*>", re.DOTALL | re.IGNORECASE)
_DELIMITER_ROW = re.compile(r"^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_HEADER_CELL = re.compile(r"<th\b[^>]*>(.*?)</th\s*>", re.DOTALL | re.IGNORECASE)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)")


def _blank_out(match: re.Match[str]) -> str:
    """Keep line breaks (so line-based reading still works), drop the content."""
    return "\n" * match.group(0).count("\n")


def prose(source: str) -> str:
    """*source* without code (fenced, indented and inline) and HTML comments."""
    lines: list[str] = []
    fence: str | None = None
    previous_blank = True
    for line in source.splitlines():
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            lines.append("")
            continue
        if opener:
            fence = opener.group(1)
            lines.append("")
            continue
        if previous_blank and (line.startswith(("    ", "\t"))) and line.strip():
            lines.append("")  # an indented code block (it starts after a blank line)
            continue
        previous_blank = not line.strip()
        # "[ref]: https://…" defines a reference; it is not shown, so it is not content.
        lines.append("" if _REFERENCE_DEFINITION.match(line) else line)
    text = "\n".join(lines)
    text = _COMMENT.sub(_blank_out, text)
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def plain_text(markup: str) -> str:
    """Text as a screen reader says it: images by their alt, links by their text, no tags."""
    text = _MD_IMAGE.sub(lambda m: m.group(1), markup)
    text = _MD_REF_IMAGE.sub(lambda m: m.group(1), text)
    text = _IMG_TAG.sub(lambda m: attributes(m.group(1)).get("alt") or "", text)
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _MD_REF_LINK.sub(lambda m: m.group(1), text)
    text = _TAG.sub(" ", text)
    text = _EMPHASIS.sub("", text)
    return " ".join(text.replace("\\", "").split())


def attributes(inside: str) -> dict[str, str]:
    """The attributes of an HTML tag (``inside`` is what follows the tag name), names lowercased."""
    found: dict[str, str] = {}
    for name, value in _ATTRIBUTE.findall(inside.strip().rstrip("/")):
        if value[:1] in ("'", '"'):
            value = value[1:-1]
        found.setdefault(name.lower(), value)
    return found


def headings(source: str) -> list[Heading]:
    """The headings of a Markdown cell in order: ``#`` lines, underlined lines, ``<h1>``…``<h6>``."""
    text = prose(source)
    found: list[tuple[int, Heading]] = []  # (position, heading) to keep the order of the text
    lines = text.split("\n")
    offset = 0
    paragraph: list[str] = []
    for line in lines:
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        if atx:
            content = _ATX_CLOSING.sub("", (atx.group(2) or "").strip())
            found.append((offset, Heading(len(atx.group(1)), plain_text(content))))
            paragraph = []
        elif setext and paragraph and not _is_table_row(paragraph[-1]):
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append((offset, Heading(level, plain_text(" ".join(paragraph)))))
            paragraph = []
        elif line.strip() and not _HTML_HEADING.search(line):
            paragraph.append(line)
        else:
            paragraph = []
        offset += len(line) + 1
    for match in _HTML_HEADING.finditer(text):
        found.append((match.start(), Heading(int(match.group(1)), plain_text(match.group(2)))))
    return [heading for _, heading in sorted(found, key=lambda pair: pair[0])]


def _is_table_row(line: str) -> bool:
    return "|" in line


def images(source: str) -> list[Image]:
    """Markdown images (``![alt](src)``, ``![alt][ref]``) and ``<img>`` tags, in order."""
    text = prose(source)
    found: list[tuple[int, Image]] = []
    for match in _MD_IMAGE.finditer(text):
        found.append((match.start(), Image(match.group(1), match.group(2), html=False)))
    for match in _MD_REF_IMAGE.finditer(text):
        found.append((match.start(), Image(match.group(1), match.group(2), html=False)))
    found += html_images(text)
    return [image for _, image in sorted(found, key=lambda pair: pair[0])]


def html_images(html: str) -> list[tuple[int, Image]]:
    """The ``<img>`` tags of *html*, with their positions."""
    found = []
    for match in _IMG_TAG.finditer(html):
        attrs = attributes(match.group(1))
        label = attrs.get("aria-label") or attrs.get("title")
        alt = attrs.get("alt", label)
        decorative = (
            ("alt" in attrs and not attrs["alt"].strip() and not label)
            or attrs.get("role", "").lower() in ("presentation", "none")
            or attrs.get("aria-hidden", "").lower() == "true"
        )
        found.append(
            (match.start(), Image(alt, attrs.get("src", ""), html=True, decorative=decorative))
        )
    return found


def links(source: str) -> list[Link]:
    """Every link of a Markdown cell in order: Markdown, ``<…>``, ``<a>`` and bare web addresses."""
    text = prose(source)
    found: list[tuple[int, Link]] = []
    for match in _MD_LINK.finditer(text):
        found.append((match.start(), Link(plain_text(match.group(1)), match.group(2))))
    for match in _MD_REF_LINK.finditer(text):
        found.append((match.start(), Link(plain_text(match.group(1)), match.group(2))))
    for match in _AUTOLINK.finditer(text):
        found.append((match.start(), Link(match.group(1), match.group(1), bare=True)))
    for match in _HTML_LINK.finditer(text):
        attrs = attributes(match.group(1))
        name = attrs.get("aria-label") or plain_text(match.group(2))
        found.append((match.start(), Link(name, attrs.get("href", ""))))
    # What is left once every written link and tag is gone: addresses typed as plain text.
    rest = text
    for pattern in (_MD_IMAGE, _MD_REF_IMAGE, _MD_LINK, _MD_REF_LINK, _AUTOLINK, _HTML_LINK, _TAG):
        rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)
    for match in _BARE_URL.finditer(rest):
        address = match.group(1).rstrip(".,;:!?")
        found.append((match.start(), Link(address, address, bare=True)))
    return [link for _, link in sorted(found, key=lambda pair: pair[0])]


def tables(source: str) -> list[Table]:
    """The tables of a Markdown cell: GitHub pipe tables and HTML ``<table>``, in order."""
    text = prose(source)
    found: list[tuple[int, Table]] = []
    lines = text.split("\n")
    offset = 0
    for index, line in enumerate(lines):
        if (
            index > 0
            and "|" in line
            and _DELIMITER_ROW.match(line)
            and "|" in lines[index - 1]
            and not _DELIMITER_ROW.match(lines[index - 1])
        ):
            header = _pipe_cells(lines[index - 1])
            found.append((offset - len(lines[index - 1]) - 1, Table(header, html=False)))
        offset += len(line) + 1
    found += html_tables(text)
    return [table for _, table in sorted(found, key=lambda pair: pair[0])]


def html_tables(html: str) -> list[tuple[int, Table]]:
    """The ``<table>`` elements of *html*, each with its ``<th>`` cells' text."""
    return [
        (m.start(), Table([plain_text(c) for c in _HEADER_CELL.findall(m.group(1))], html=True))
        for m in _TABLE.finditer(html)
    ]


def _pipe_cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner.removeprefix("|")
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [plain_text(cell) for cell in re.split(r"(?<!\\)\|", inner)]
