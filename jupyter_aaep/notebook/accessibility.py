"""The accessibility rules a notebook is checked against, over plain nbformat cell dicts.

The checks follow what screen-reader users meet in published notebooks (Potluri et al.;
jupyterlab-a11y-checker's rule list was the inspiration, none of its code): images without alt
text, figures without a description, a missing or repeated title, skipped heading levels, empty
headings, tables without headers, and links whose text says nothing. Each :class:`Problem`
names its cell by number (people count cells; ids are for the model's edits) and says both what
is wrong, for a person, and how to fix it, for the agent.

*Colour as the only way to tell series apart* is checked where the notebook records how the
series were drawn: a kernel of this environment sends each matplotlib or seaborn figure's series
styles (colour, marker, line style, hatch, direct labels) with it (:mod:`._colour_rule`). A
figure that is only an image (drawn elsewhere, or by another library) cannot be judged; the
agent is told to look at such figures itself (``view_figure``).

Pure Python: no Jupyter imports, so the rules are tested on their own and any host can run them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..figure_mime import MAIDR_MIME
from ..words import plural
from ._colour_rule import colour_only
from ._markdown_scan import (
    Image,
    Link,
    Table,
    headings,
    html_images,
    html_tables,
    images,
    links,
    tables,
)

__all__ = [
    "FIGURE_TYPES",
    "RULES",
    "VAGUE_LINK_TEXT",
    "Problem",
    "Rule",
    "check_cells",
    "summary_of",
]

Rule = Literal[
    "title-missing",
    "title-repeated",
    "heading-order",
    "heading-empty",
    "image-alt",
    "figure-description",
    "colour-only",
    "table-headers",
    "link-text",
]

RULES: dict[Rule, str] = {
    "title-missing": "The notebook has a title: one level-1 heading.",
    "title-repeated": "The notebook has only one title (level-1 heading).",
    "heading-order": "Heading levels go down one at a time (no level skipped).",
    "heading-empty": "Every heading has text.",
    "image-alt": "Every image in a Markdown cell or an HTML output has alt text.",
    "figure-description": "Every figure a cell shows has a stored description (alt text).",
    "colour-only": "A figure's series differ by more than colour (marker, line style, hatch or a label).",
    "table-headers": "Every table has column headers.",
    "link-text": "Every link's text says where it leads (not 'click here' or a bare address).",
}
"""Each rule in one sentence, in the order problems are listed within a cell."""

FIGURE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
"""Output mime types that are figures (as the figure tools count them)."""

VAGUE_LINK_TEXT = frozenset(
    {
        "click here",
        "click",
        "here",
        "link",
        "this link",
        "this",
        "more",
        "read more",
        "learn more",
        "more info",
        "more information",
        "info",
        "details",
        "go",
        "go here",
        "see here",
        "this page",
        "page",
        "website",
        "url",
        "source",
    }
)
"""Link texts that say nothing about where the link leads, compared in lower case."""

_VAGUE_ALT = frozenset(
    {"image", "img", "picture", "pic", "photo", "figure", "fig", "chart", "graph", "plot"}
)
_QUOTE_CHARS = 60


@dataclass(frozen=True)
class Problem:
    """One thing a screen-reader user would trip over, and where."""

    rule: Rule
    cell: int | None
    """The 1-based cell number, or ``None`` for the notebook as a whole (no title)."""
    cell_id: str | None
    what: str
    """What is wrong, in a person's words, without the cell number: "The image chart.png has no alt text."."""
    fix: str
    """How to fix it, for the agent: which edit, in which form."""

    @property
    def sentence(self) -> str:
        """The problem as a person hears it in a list: "Cell 3: …"."""
        return f"Cell {self.cell}: {self.what}" if self.cell is not None else self.what


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f"“{text[:_QUOTE_CHARS]}…”" if len(text) > _QUOTE_CHARS else f"“{text}”"


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source or "")


def _level_words(levels: Iterable[int]) -> str:
    shown = [str(level) for level in levels]
    if len(shown) == 1:
        return f"level {shown[0]}"
    return f"levels {', '.join(shown[:-1])} and {shown[-1]}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _image_name(image: Image) -> str:
    if image.source.startswith("data:"):
        return "an embedded image"
    name = image.source.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
    return f"the image {name}" if name else "an image"


def _image_problem(image: Image) -> str | None:
    """Why the image's alt text fails, or ``None`` when it is fine."""
    if image.decorative:
        return None
    alt = " ".join((image.alt or "").split())
    if not alt:
        return _sentence(f"{_image_name(image)} has no alt text.")
    base = image.source.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
    if alt.lower() in _VAGUE_ALT or (
        base and alt.lower() in (base.lower(), base.rsplit(".", 1)[0].lower())
    ):
        return _sentence(f"{_image_name(image)} has alt text that says nothing ({_quote(alt)}).")
    return None


def _image_fix(image: Image, number: int) -> str:
    if image.html:
        return (
            f"Edit cell {number}: give the <img> an alt attribute that says what the image shows "
            '(alt="" only if it is pure decoration).'
        )
    return (
        f"Edit cell {number}: write what the image shows between the brackets, "
        f"![A description of what it shows]({image.source or '…'})."
    )


def _link_problem(link: Link) -> str | None:
    text = " ".join(link.text.split())
    words = text.lower().strip(" .:!?»›→>")
    if not words:
        return "A link has no text, so it is read as its address or not at all."
    if (
        link.bare
        or words.startswith(("http://", "https://", "www."))
        or words == link.target.lower()
    ):
        return f"The link {_quote(text)} is a bare address; its text should say where it leads."
    if words in VAGUE_LINK_TEXT:
        return f"The link {_quote(text)} says nothing about where it leads."
    return None


def _table_problem(table: Table, *, output: bool = False) -> str | None:
    if any(cell.strip() for cell in table.header):
        return None
    where = "The table in its output" if output else "A table"
    return f"{where} has no column headers, so a screen reader cannot name its columns."


def _markdown_problems(number: int, cell_id: str | None, source: str) -> list[Problem]:
    found: list[Problem] = []
    for image in images(source):
        what = _image_problem(image)
        if what:
            found.append(Problem("image-alt", number, cell_id, what, _image_fix(image, number)))
    for table in tables(source):
        what = _table_problem(table)
        if what:
            fix = (
                f"Edit cell {number}: use <th> cells (in a <thead>) for the column names."
                if table.html
                else f"Edit cell {number}: put the column names in the table's first row, above the |---| line."
            )
            found.append(Problem("table-headers", number, cell_id, what, fix))
    for link in links(source):
        what = _link_problem(link)
        if what:
            fix = (
                f"Edit cell {number}: make the link's text say where it leads, "
                f"[the page's subject]({link.target or '…'})."
            )
            found.append(Problem("link-text", number, cell_id, what, fix))
    return found


def _output_problems(number: int, cell_id: str | None, outputs: list[Any]) -> list[Problem]:
    found: list[Problem] = []
    for index, output in enumerate(outputs):
        if not isinstance(output, Mapping):
            continue
        data = output.get("data") or {}
        metadata = output.get("metadata") or {}
        figure = next((mime for mime in FIGURE_TYPES if mime in data), None)
        if figure is not None:
            meta = metadata.get(figure) if isinstance(metadata, Mapping) else None
            alt = meta.get("alt") if isinstance(meta, Mapping) else None
            if not (isinstance(alt, str) and alt.strip()):
                found.append(
                    Problem(
                        "figure-description",
                        number,
                        cell_id,
                        f"Its figure (output {index + 1}) has no description.",
                        f"Look at it with view_figure (cell {number}, output_index {index}), "
                        "write a description a screen-reader user can use, and save it as the "
                        f"figure's alt text with set_figure_alt_text (cell {number}, "
                        f"output_index {index}).",
                    )
                )
            for group in colour_only(data.get(MAIDR_MIME)):
                found.append(
                    Problem(
                        "colour-only",
                        number,
                        cell_id,
                        f"In its figure (output {index + 1}), {group.what}.",
                        f"Change the code of cell {number}: {group.how}; then run it again.",
                    )
                )
            continue
        html = data.get("text/html")
        if html is None:
            continue
        html_text = "".join(html) if isinstance(html, list) else str(html)
        fix = f"Change the code of cell {number} that makes this output, then run it again."
        for _, image in html_images(html_text):
            what = _image_problem(image)
            if what:
                found.append(Problem("image-alt", number, cell_id, f"In its output: {what}", fix))
        for _, table in html_tables(html_text):
            what = _table_problem(table, output=True)
            if what:
                found.append(Problem("table-headers", number, cell_id, what, fix))
    return found


def check_cells(cells: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Every problem of a notebook's cells (nbformat dicts), by cell, in the order of :data:`RULES`."""
    found: list[Problem] = []
    title: int | None = None
    previous_level = 0
    for position, cell in enumerate(cells):
        number = position + 1
        cell_id = str(cell["id"]) if cell.get("id") else None
        kind = cell.get("cell_type")
        if kind == "markdown":
            for heading in headings(_source(cell)):
                if not heading.text:
                    found.append(
                        Problem(
                            "heading-empty",
                            number,
                            cell_id,
                            f"A level-{heading.level} heading is empty.",
                            f"Edit cell {number}: write the heading's text, or delete the empty heading line.",
                        )
                    )
                    continue
                if heading.level == 1:
                    if title is None:
                        title = number
                    else:
                        found.append(
                            Problem(
                                "title-repeated",
                                number,
                                cell_id,
                                f"The heading {_quote(heading.text)} is a second title; the "
                                f"notebook's title is in cell {title}.",
                                f"Edit cell {number}: make it a level-2 heading (## …), or merge "
                                "the titles into one.",
                            )
                        )
                elif heading.level > previous_level + 1:
                    skipped = range(previous_level + 1, heading.level)
                    after = (
                        f"after a level-{previous_level} heading"
                        if previous_level
                        else "as the notebook's first heading"
                    )
                    found.append(
                        Problem(
                            "heading-order",
                            number,
                            cell_id,
                            f"The heading {_quote(heading.text)} is level {heading.level} "
                            f"{after}, skipping {_level_words(skipped)}.",
                            f"Edit cell {number}: make it level {previous_level + 1} "
                            f"({'#' * (previous_level + 1)} …), or add the missing heading above it.",
                        )
                    )
                previous_level = heading.level
            found += _markdown_problems(number, cell_id, _source(cell))
        elif kind == "code":
            found += _output_problems(number, cell_id, list(cell.get("outputs") or []))
    if title is None and cells:
        found.insert(
            0,
            Problem(
                "title-missing",
                None,
                None,
                "The notebook has no title (a level-1 heading).",
                "Create a Markdown cell at the top (position 1) with '# ' and a title that says "
                "what the notebook is about.",
            ),
        )
    order = list(RULES)
    return sorted(
        found,
        key=lambda p: (p.cell if p.cell is not None else 0, order.index(p.rule)),
    )


def summary_of(problems: list[Problem]) -> str:
    """One sentence for a listener: how many problems, in how many cells."""
    if not problems:
        return "No accessibility problems found."
    cells = {p.cell for p in problems if p.cell is not None}
    where = f" in {plural(len(cells), 'cell')}" if cells else ""
    return f"Found {plural(len(problems), 'accessibility problem')}{where}."
