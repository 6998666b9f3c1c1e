"""The accessibility rules on plain cell dicts: every rule with cases it must flag and must not.

Each case is a notebook that has a title (so only the rule under test speaks) unless the title
is what is tested. What a person hears names cells by number, never by id.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_aaep.figure_mime import MAIDR_MIME
from jupyter_aaep.notebook import _markdown_scan as scan
from jupyter_aaep.notebook.accessibility import RULES, Problem, check_cells, summary_of

pytestmark = pytest.mark.shared_server

TITLE = {"id": "t", "cell_type": "markdown", "source": "# Weather report"}
PNG = "iVBORw0KGgo="


def md(source: str, cell_id: str = "m") -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "markdown", "source": source}


def code(
    outputs: list[dict[str, Any]], cell_id: str = "c", source: str = "plot()"
) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "code", "source": source, "outputs": outputs}


def figure(alt: str | None = None, mime: str = "image/png") -> dict[str, Any]:
    metadata = {mime: {"alt": alt}} if alt is not None else {}
    return {
        "output_type": "display_data",
        "data": {mime: PNG, "text/plain": "<Figure>"},
        "metadata": metadata,
    }


def html_output(html: str) -> dict[str, Any]:
    return {"output_type": "execute_result", "data": {"text/html": html}, "metadata": {}}


def found(*cells: dict[str, Any], rule: str | None = None) -> list[Problem]:
    problems = check_cells([TITLE, *cells])
    return [p for p in problems if rule is None or p.rule == rule]


# -- images in Markdown ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "![](chart.png)",
        "Look: ![  ](images/chart.png) here",
        '![](chart.png "A title is not alt text")',
        "![image](photo.jpg)",
        "![chart](chart.png)",  # the file's name says nothing
        "![][logo]\n\n[logo]: logo.png",
        '<img src="chart.png">',
        '<IMG SRC="chart.png" width=300 />',
        "<img src='data:image/png;base64,AAAA'>",
    ],
)
def test_images_without_alt_text_are_named_by_cell(source: str) -> None:
    problems = found(md(source), rule="image-alt")
    assert len(problems) == 1, problems
    assert problems[0].cell == 2 and problems[0].cell_id == "m"
    assert problems[0].sentence.startswith("Cell 2: ")
    assert "alt" in problems[0].what


@pytest.mark.parametrize(
    "source",
    [
        "![Bar chart of rainfall by month, wettest in March](chart.png)",
        '<img src="chart.png" alt="Rainfall by month">',
        '<img src="divider.png" alt="">',  # decoration, said so on purpose
        '<img src="x.png" role="presentation">',
        '<img src="x.png" aria-hidden="true">',
        '<img src="x.png" aria-label="Company logo">',
        "```\n![](in-a-code-block.png)\n```",
        "Use `![](x.png)` to add an image.",
        "<!-- ![](commented-out.png) -->",
        "    ![](indented-code.png)",
    ],
)
def test_images_with_alt_text_or_not_content_pass(source: str) -> None:
    assert found(md(source), rule="image-alt") == []


def test_the_fix_for_a_markdown_image_is_alt_text_in_the_brackets() -> None:
    (problem,) = found(md("![](plots/rain.png)"), rule="image-alt")
    assert "![A description of what it shows](plots/rain.png)" in problem.fix
    assert "Edit cell 2" in problem.fix
    (html,) = found(md('<img src="a.png">'), rule="image-alt")
    assert "alt attribute" in html.fix


def test_file_names_keep_their_case() -> None:
    (problem,) = found(md("![](Rain_Chart.PNG)"), rule="image-alt")
    assert problem.what == "The image Rain_Chart.PNG has no alt text."


def test_several_images_in_one_cell_are_each_listed() -> None:
    problems = found(md("![](a.png) and ![Rain](b.png) and <img src='c.png'>"), rule="image-alt")
    assert [p.what for p in problems] == [
        "The image a.png has no alt text.",
        "The image c.png has no alt text.",
    ]


# -- figures in outputs ------------------------------------------------------------------------


@pytest.mark.parametrize("mime", ["image/png", "image/jpeg", "image/svg+xml"])
def test_a_figure_without_a_stored_description_is_named(mime: str) -> None:
    (problem,) = found(
        code([{"output_type": "stream", "text": "hi"}, figure(mime=mime)]),
        rule="figure-description",
    )
    assert problem.cell == 2 and problem.what == "Its figure (output 2) has no description."
    assert "view_figure" in problem.fix and "output_index 1" in problem.fix


@pytest.mark.parametrize("alt", ["", "   "])
def test_an_empty_stored_description_counts_as_none(alt: str) -> None:
    assert len(found(code([figure(alt)]), rule="figure-description")) == 1


def test_a_figure_with_its_description_passes() -> None:
    assert found(code([figure("Line chart of temperature, rising from 12 to 17")])) == []


def test_a_markdown_cell_with_outputs_is_not_read_for_figures() -> None:
    cell = {**md("Some text"), "outputs": [figure()]}
    assert found(cell) == []


# -- colour as the only difference between series ----------------------------------------------


def series(color: str, kind: str = "line", **style: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "label": style.pop("label", None),
        "color": color,
        "marker": style.pop("marker", "none"),
        "linestyle": style.pop("linestyle", "-" if kind == "line" else "none"),
        "hatch": style.pop("hatch", ""),
        "labelled_directly": style.pop("labelled_directly", False),
    }


def styled(*axes: list[dict[str, Any]], legend: bool = True) -> dict[str, Any]:
    """A described figure whose bundle records how its series are drawn."""
    out = figure("A chart with its description")
    out["data"][MAIDR_MIME] = {
        "version": 1,
        "explorable": True,
        "maidr": {},
        "styles": {
            "version": 1,
            "legend": False,
            "axes": [{"legend": legend, "texts": 0, "series": a} for a in axes],
        },
    }
    return out


def test_two_lines_that_differ_only_by_colour_are_named_with_what_to_change() -> None:
    lines = [series("#1f77b4", label="North"), series("#ff7f0e", label="South")]
    (problem,) = found(code([styled(lines)]), rule="colour-only")
    assert problem.cell == 2 and problem.sentence == (
        "Cell 2: In its figure (output 1), 2 lines (“North”, “South”) differ only by colour."
    )
    assert problem.fix == (
        "Change the code of cell 2: give each line its own marker or line style (marker='o', "
        "linestyle='--'), or label the lines directly (ax.annotate beside each line); then run "
        "it again."
    )


@pytest.mark.parametrize(
    "other",
    [
        series("#ff7f0e", marker="s"),  # its own marker
        series("#ff7f0e", linestyle="--"),  # its own line style
        series("#ff7f0e", labelled_directly=True, label="South"),  # labelled beside the line
        series("#1f77b4"),  # the same colour: not told apart by colour
    ],
)
def test_lines_told_apart_by_more_than_colour_pass(other: dict[str, Any]) -> None:
    assert found(code([styled([series("#1f77b4"), other])]), rule="colour-only") == []


def test_series_of_each_kind_and_subplot_are_compared_among_themselves() -> None:
    # A line and bars of another colour are different kinds of mark; one series per subplot.
    mixed = [series("#1f77b4"), series("#ff7f0e", kind="bar")]
    assert found(code([styled(mixed, [series("#2ca02c")])]), rule="colour-only") == []
    bars = [series("#1f77b4", kind="bar"), series("#ff7f0e", kind="bar")]
    (problem,) = found(code([styled([series("#1f77b4")], bars)]), rule="colour-only")
    assert (
        problem.what == "In its figure (output 1), 2 bar series in subplot 2 differ only by colour."
    )
    assert "hatch='//'" in problem.fix
    hatched = [series("#1f77b4", kind="bar", hatch="//"), series("#ff7f0e", kind="bar", hatch="..")]
    assert found(code([styled(hatched)]), rule="colour-only") == []


def test_a_legend_does_not_make_colour_enough() -> None:
    lines = [series("#1f77b4", label="a"), series("#ff7f0e", label="b")]
    assert len(found(code([styled(lines, legend=True)]), rule="colour-only")) == 1


@pytest.mark.parametrize(
    "bundle",
    [
        None,  # only an image: nothing is known, nothing is claimed
        {"version": 1, "explorable": True, "maidr": {}},
        {"version": 1, "styles": "garbage"},
        {"version": 1, "styles": {"axes": [None, {"series": "x"}, {"series": [None, 3]}]}},
    ],
)
def test_figures_without_style_facts_are_not_judged(bundle: Any) -> None:
    out = figure("A chart")
    if bundle is not None:
        out["data"][MAIDR_MIME] = bundle
    assert found(code([out])) == []


def test_images_and_tables_in_html_outputs() -> None:
    cell = code([html_output('<img src="x.png"><table><tr><td>1</td></tr></table>')])
    problems = found(cell)
    assert [p.rule for p in problems] == ["image-alt", "table-headers"]
    assert problems[0].what.startswith("In its output: ")
    assert all("Change the code of cell 2" in p.fix for p in problems)
    frame = (
        "<table><thead><tr><th></th><th>rain</th></tr></thead><tr><th>0</th><td>3</td></tr></table>"
    )
    assert found(code([html_output(frame)])) == []  # a DataFrame's table has headers


# -- title ----------------------------------------------------------------------------------


def test_a_notebook_without_a_level_one_heading_has_no_title() -> None:
    problems = check_cells([md("## Data"), code([])])
    assert problems[0].rule == "title-missing" and problems[0].cell is None
    assert problems[0].sentence == "The notebook has no title (a level-1 heading)."
    assert "position 1" in problems[0].fix


@pytest.mark.parametrize(
    "source", ["# Weather", "Weather\n=======", "<h1>Weather</h1>", "# Weather #"]
)
def test_any_form_of_level_one_heading_is_a_title(source: str) -> None:
    assert [p for p in check_cells([md(source)]) if p.rule == "title-missing"] == []


def test_a_hash_in_a_code_cell_or_fence_is_no_title() -> None:
    cells = [code([], source="# a comment"), md("```\n# not a heading\n```\n#hashtag")]
    assert [p.rule for p in check_cells(cells)] == ["title-missing"]


def test_an_empty_notebook_has_nothing_to_report() -> None:
    assert check_cells([]) == []
    assert summary_of([]) == "No accessibility problems found."


def test_a_second_title_is_named_with_the_first() -> None:
    problems = found(md("## Data"), md("# Results", "r"), rule="title-repeated")
    assert len(problems) == 1 and problems[0].cell == 3
    assert "second title" in problems[0].what and "cell 1" in problems[0].what
    same_cell = [p for p in check_cells([md("# One\n\n# Two")]) if p.rule == "title-repeated"]
    assert len(same_cell) == 1 and "“Two”" in same_cell[0].what and "cell 1" in same_cell[0].what


# -- heading order ------------------------------------------------------------------------------


def test_a_title_less_level_three_heading_skips_two_levels() -> None:
    problems = check_cells([md("### Results")])
    assert [p.rule for p in problems] == ["title-missing", "heading-order"]
    assert problems[1].what == (
        "The heading “Results” is level 3 as the notebook's first heading, skipping levels 1 and 2."
    )
    assert "make it level 1 (# …)" in problems[1].fix


def test_a_skip_after_a_heading_names_the_missing_level() -> None:
    (problem,) = found(md("#### Details"), rule="heading-order")
    assert problem.what.endswith("after a level-1 heading, skipping levels 2 and 3.")
    (one,) = found(md("## A\n\n#### B"), rule="heading-order")
    assert "skipping level 3." in one.what


@pytest.mark.parametrize(
    "sources",
    [
        ["## Data", "### Cleaning", "## Results", "### Plots"],
        ["## A\n### B\n#### C", "## D"],  # going back up any number of levels is fine
        ["Data\n----", "### Details"],
        ["<h2>Data</h2>", "<h3>More</h3>"],
    ],
)
def test_headings_that_go_down_one_level_at_a_time_pass(sources: list[str]) -> None:
    cells = [md(s, f"m{i}") for i, s in enumerate(sources)]
    assert found(*cells, rule="heading-order") == []


def test_heading_order_runs_across_cells_and_mixed_markup() -> None:
    problems = found(md("## Data", "a"), md("<h4>Deep</h4>", "b"), rule="heading-order")
    assert [p.cell for p in problems] == [3]


# -- empty headings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source", ["##", "## ", "### ###", "<h2> </h2>", "## ![](x.png)", "## **  **"]
)
def test_empty_headings(source: str) -> None:
    problems = found(md(source), rule="heading-empty")
    assert len(problems) == 1 and problems[0].cell == 2
    assert "heading is empty" in problems[0].what


def test_an_empty_heading_is_not_also_a_skipped_level() -> None:
    assert [p.rule for p in found(md("####"))] == ["heading-empty"]


@pytest.mark.parametrize("source", ["## Results", "## ![Rain chart](x.png)", "## `code`name"])
def test_headings_with_text_are_not_empty(source: str) -> None:
    assert found(md(source), rule="heading-empty") == []


# -- tables ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "| | |\n|---|---|\n| 1 | 2 |",
        "|   |   |\n| :-- | --: |\n| a | b |",
        "<table><tr><td>1</td><td>2</td></tr></table>",
        "<table><tr><th> </th></tr><tr><td>1</td></tr></table>",
    ],
)
def test_tables_without_headers(source: str) -> None:
    problems = found(md(source), rule="table-headers")
    assert len(problems) == 1 and problems[0].cell == 2


@pytest.mark.parametrize(
    "source",
    [
        "| City | Rain |\n|---|---|\n| Oslo | 3 |",
        "City | Rain\n--- | ---\nOslo | 3",
        "|    | rain |\n|---:|-----:|\n|  0 |    3 |",  # pandas' to_markdown: an index column
        "<table><thead><tr><th>City</th></tr></thead><tr><td>Oslo</td></tr></table>",
        "a | b is not a table without a delimiter row",
        "```\n| | |\n|---|---|\n```",
    ],
)
def test_tables_with_headers_or_no_table_pass(source: str) -> None:
    assert found(md(source), rule="table-headers") == []


def test_the_table_fix_matches_its_kind() -> None:
    (markdown,) = found(md("| | |\n|---|---|"), rule="table-headers")
    assert "first row" in markdown.fix
    (html,) = found(md("<table><tr><td>1</td></tr></table>"), rule="table-headers")
    assert "<th>" in html.fix


# -- links --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("For the data [click here](https://example.org/data).", "says nothing"),
        ("[Here](https://example.org)", "says nothing"),
        ("[link](https://example.org)", "says nothing"),
        ("[Read more…](https://example.org)".replace("…", ""), "says nothing"),
        ('<a href="https://example.org">click here</a>', "says nothing"),
        ("[here][ref]\n\n[ref]: https://example.org", "says nothing"),
        ("Data: https://example.org/data.csv", "bare address"),
        ("Data at www.example.org today", "bare address"),
        ("<https://example.org>", "bare address"),
        ("[https://example.org](https://example.org)", "bare address"),
        ("[](https://example.org)", "no text"),
    ],
)
def test_links_whose_text_says_nothing(source: str, said: str) -> None:
    problems = found(md(source), rule="link-text")
    assert len(problems) == 1, problems
    assert problems[0].cell == 2 and said in problems[0].what
    assert "Edit cell 2" in problems[0].fix


def test_a_bare_address_is_quoted_without_its_trailing_full_stop() -> None:
    (problem,) = found(md("See https://example.org/data."), rule="link-text")
    assert "“https://example.org/data”" in problem.what


@pytest.mark.parametrize(
    "source",
    [
        "[The 2023 temperature readings](https://example.org/data)",
        '<a href="https://example.org">The weather service</a>',
        '<a href="https://example.org" aria-label="The weather service">here</a>',
        "Run `curl https://example.org` to fetch it.",
        "```\nhttps://example.org\n```",
        '<img src="https://example.org/x.png" alt="A map of rainfall">',
        "[![Rain map](map.png)](https://example.org/map)",
        "Somewhere here is a word, and a link word too.",
    ],
)
def test_links_that_say_where_they_lead_pass(source: str) -> None:
    assert found(md(source), rule="link-text") == []


# -- the whole check ---------------------------------------------------------------------------


def test_problems_come_by_cell_then_rule_and_never_name_ids() -> None:
    cells = [
        md(
            "![](a.png)\n\n### Results\n\n[click here](https://x.org)\n\n| | |\n|---|---|",
            "first-id",
        ),
        code([figure()], "second-id"),
    ]
    problems = check_cells(cells)
    assert [(p.cell, p.rule) for p in problems] == [
        (None, "title-missing"),
        (1, "heading-order"),
        (1, "image-alt"),
        (1, "table-headers"),
        (1, "link-text"),
        (2, "figure-description"),
    ]
    for problem in problems:
        assert "first-id" not in problem.sentence and "second-id" not in problem.sentence
    assert summary_of(problems) == "Found 6 accessibility problems in 2 cells."
    assert summary_of(problems[:1]) == "Found 1 accessibility problem."


def test_list_sources_and_odd_cells_are_read() -> None:
    cells = [
        {"id": "a", "cell_type": "markdown", "source": ["# Title\n", "![](x.png)"]},
        {"cell_type": "raw", "source": "![](raw-is-not-rendered.png)"},
        {"id": "b", "cell_type": "code", "source": "", "outputs": ["not a dict", {"data": None}]},
    ]
    problems = check_cells(cells)
    assert [(p.cell, p.rule) for p in problems] == [(1, "image-alt")]


def test_every_rule_has_a_sentence() -> None:
    assert set(RULES) == {
        "title-missing",
        "title-repeated",
        "heading-order",
        "heading-empty",
        "image-alt",
        "figure-description",
        "colour-only",
        "table-headers",
        "link-text",
    }


# -- the scanner's own edges ------------------------------------------------------------------


def test_setext_underline_after_a_table_row_is_not_a_heading() -> None:
    assert scan.headings("a | b\n---") == []
    assert scan.headings("Title\n===") == [scan.Heading(1, "Title")]


def test_plain_text_reads_as_a_screen_reader_would() -> None:
    assert (
        scan.plain_text("**Bold** [the data](x) ![a chart](y) <b>tag</b>")
        == "Bold the data a chart tag"
    )
