"""The offline demo model picks the next step like a real model would.

The notebook states it reads are rendered by the real ``render_cells`` (the text
``get_notebook_state`` returns), and the code cells it writes are executed here, so a change
on either side that breaks the demo shows up in these tests.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_aaep.notebook.render import CellView, render_cells
from jupyter_aaep.testing._demo_notebook import code_facts, parse_state
from jupyter_aaep.testing.demo_model import CLARIFY_CHOICES, demo_model, intent_of

REPO = Path(__file__).resolve().parents[2]


def convo(request: str, *steps: tuple[str, str, bool]) -> SimpleNamespace:
    """A request followed by (tool name, result text, is_error) rounds."""
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": request}]}]
    for number, (name, text, error) in enumerate(steps):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{number}", "name": name, "input": {}}
                ],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": text}
        if error:
            result["is_error"] = True
        messages.append({"role": "user", "content": [result]})
    return SimpleNamespace(body={"messages": messages})


def state(cells: list[dict[str, Any]], path: str = "work.ipynb") -> tuple[str, str, bool]:
    """The ``get_notebook_state`` result for *cells*, in the tool's real format."""
    views = [CellView.from_cell(i + 1, {"id": f"c{i + 1}", **c}) for i, c in enumerate(cells)]
    code = sum(v.cell_type == "code" for v in views)
    title = f"# {path}: {len(views)} cell{'s' if len(views) != 1 else ''} ({code} code, {len(views) - code} other); kernel: Python 3 [python3], idle"
    return ("get_notebook_state", render_cells(views, title=title, budget=20_000), False)


def code(
    source: str, outputs: list[dict[str, Any]] | None = None, count: int | None = None
) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "source": source,
        "outputs": outputs or [],
        "execution_count": count,
    }


def error(ename: str, evalue: str) -> dict[str, Any]:
    return {
        "output_type": "error",
        "ename": ename,
        "evalue": evalue,
        "traceback": [f"{ename}: {evalue}"],
    }


DEMO_CELLS = json.loads((REPO / "notebooks" / "demo.ipynb").read_text(encoding="utf-8"))["cells"]
STATE = state(DEMO_CELLS, "demo.ipynb")
FRAME_STATE = state(
    [
        code("import pandas as pd\n\nweather = pd.read_csv('weather.csv')"),
        code("weather['month'] = weather.date.str[:7]"),
    ]
)
EMPTY_STATE = state([{"cell_type": "markdown", "source": "# Notes\n\nNothing here yet."}])


def tools(turn) -> list[str]:
    return [use.name for use in turn.tool_uses]


def new_source(turn) -> str:
    assert tools(turn) == ["create_cell"], turn
    return turn.tool_uses[0].input["source"]


def run_cell_code(source: str, namespace: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a cell the demo model wrote, as the kernel would (without matplotlib), and return
    what it printed."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "<demo cell>", "exec"), namespace)  # noqa: S102 - the cell under test
    return printed.getvalue()


# -- the original three recipes -------------------------------------------------------------------


def test_reads_first_then_acts_on_keywords() -> None:
    assert tools(demo_model(convo("convert to fahrenheit"))) == ["get_notebook_state"]
    turn = demo_model(convo("convert to fahrenheit", STATE))
    assert tools(turn) == ["create_cell"] and "fahrenheit" in turn.tool_uses[0].input["source"]
    turn = demo_model(convo("summarise the readings", STATE))
    assert turn.tool_uses[0].input["cell_type"] == "markdown"
    assert "21.5 °C on Monday" in turn.tool_uses[0].input["source"]
    assert tools(demo_model(convo("ask me a question", STATE))) == ["ask_user"]
    help_turn = demo_model(convo("what can you do", STATE))
    assert "3 cells" in help_turn.text and "offline demo model" in help_turn.text


def test_creates_runs_recovers_and_reports() -> None:
    created = ("create_cell", "Created code cell 4 (id abc123), after cell 3.", False)
    run = demo_model(convo("convert", STATE, created))
    assert tools(run) == ["run_cell"] and run.tool_uses[0].input == {"cell_id": "abc123"}
    failed = (
        "run_cell",
        "Cell 4 (id abc123) raised NameError after 0.1 s as [1].\nError:\nNameError: name 'temperatures' is not defined",
        True,
    )
    assert tools(demo_model(convo("convert", STATE, created, failed))) == ["run_all_cells"]
    all_ran = (
        "run_all_cells",
        "cell 2 ok\nLast cell's outputs:\n[stdout] Temperatures in Fahrenheit: [70.7]",
        False,
    )
    final = demo_model(convo("convert", STATE, created, failed, all_ran))
    assert final.tool_uses == [] and "Temperatures in Fahrenheit: [70.7]" in final.text
    again = (
        "run_all_cells",
        "Ran until a cell failed:\ncell 2 raised NameError\nStopped at cell 2.",
        True,
    )
    assert "failed" in demo_model(convo("convert", STATE, created, failed, again)).text


def test_a_failed_run_reported_without_is_error_is_still_a_failure() -> None:
    """Older servers marked a cell that raised as a successful tool call."""
    created = ("create_cell", "Created code cell 4 (id abc123), after cell 3.", False)
    failed = (
        "run_cell",
        "Cell 4 (id abc123) raised NameError: name 'temperatures' is not defined",
        False,
    )
    assert tools(demo_model(convo("convert", STATE, created, failed))) == ["run_all_cells"]


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (("run_cell", "The user declined: run_cell was not run.", True), "did not do that"),
        (("run_cell", "Kernel died.", True), "That step failed: Kernel died."),
        (("create_cell", "Created markdown cell 5 (id m1).", False), "markdown cell"),
        (("ask_user", "The user answered: Celsius", False), "Celsius it is"),
        (("run_cell", "Cell 4 ran in 0.1 s.\n[stdout] 3", False), "Done. Cell 4 ran"),
        (
            (
                "run_cell",
                "Cell 4 (id a) ran in 0.2 s as [3]: ok.\nOutputs:\n[stdout]\nMean: 4",
                False,
            ),
            "It shows: Mean: 4",
        ),
        (
            (
                "run_cell",
                "Cell 4 (id a) ran in 0.2 s as [3]: ok.\nOutputs:\n[display]\n[image/png 640×480, 23 KB]",
                False,
            ),
            "a chart",
        ),
    ],
)
def test_answers_after_each_kind_of_result(result, expected) -> None:
    assert expected in demo_model(convo("anything", STATE, result)).text


def test_answers_say_cells_as_a_person_would() -> None:
    """No id, execution count, 0.0 s timing or a figure's repr in what the person reads."""
    result = (
        "run_cell",
        (
            "Cell 8 (id 8d4acacd) ran in 0.0 s as [6]: ok.\nOutputs:\n[stdout]\nMean: 4\n"
            "[execute_result]\n<Figure size 640x480 with 1 Axes>"
        ),
        False,
    )
    said = demo_model(convo("anything", STATE, result)).text
    assert said == "Done. Cell 8 ran without errors. It shows: Mean: 4"
    failed = ("run_cell", "Cell 4 (id abc123) raised NameError after 0.1 s as [1].", True)
    assert "id abc123" not in demo_model(convo("anything", STATE, failed)).text


def test_results_merged_into_a_new_request_belong_to_the_old_one() -> None:
    request = SimpleNamespace(
        body={
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": "x"},
                        {"type": "text", "text": "hello"},
                    ],
                },
            ]
        }
    )
    assert tools(demo_model(request)) == ["get_notebook_state"]
    assert tools(demo_model(SimpleNamespace(body={"messages": []}))) == ["get_notebook_state"]


# -- what a newcomer tries first --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_text", "intent"),
    [
        ("Explain this notebook", "explain"),
        ("what does this do?", "explain"),
        ("plot the temperatures", "plot"),
        ("Load the data and show the first rows", "head"),
        ("summarise the dataframe", "describe"),
        ("fix the error", "fix"),
        ("help me plot humidity", "plot"),
        ("help", "help"),
        ("What is the warmest day?", "question"),
        ("make it nicer", None),
        ("go ahead and download it", None),
    ],
)
def test_requests_map_to_recipes(request_text: str, intent: str | None) -> None:
    assert intent_of(request_text) == intent


def test_explains_every_cell_from_what_it_read() -> None:
    turn = demo_model(convo("Explain this notebook", STATE))
    assert turn.tool_uses == []
    text = turn.text
    assert "demo.ipynb: 3 cells, 2 of them code" in text
    assert "Cell 1 is text: “Weekly climate readings”." in text
    assert (
        "Cell 2 (code, has not run yet) imports statistics and sets readings, temperatures and humidity."
        in text
    )
    assert (
        "Cell 3 (code, has not run yet) uses statistics, temperatures and humidity from other cells and prints results."
        in text
    )
    assert "offline demo model" in text


def test_explain_mentions_outputs_errors_and_dataframes() -> None:
    view = state(
        [
            code(
                "import pandas as pd\nsales = pd.read_csv('sales.csv')\ndef total(x):\n    return x.sum()",
                count=1,
            ),
            code(
                "print(total(sales.amount))",
                [{"output_type": "stream", "name": "stdout", "text": "1234.5\n"}],
                2,
            ),
            code("ratio = 1 / 0", [error("ZeroDivisionError", "division by zero")], 3),
        ]
    )
    text = demo_model(convo("what does this notebook do", view)).text
    assert (
        "Cell 1 (code, ran) imports pd, reads sales.csv, builds the dataframe sales and defines the function total."
        in text
    )
    assert "Its output starts with: 1234.5" in text
    assert "Its last run failed with ZeroDivisionError: division by zero." in text
    assert "Cell 3 shows an error; ask me to *fix the error*." in text


def test_plots_the_list_the_request_names_and_the_cell_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    turn = demo_model(convo("plot the humidity", STATE))
    source = new_source(turn)
    assert "humidity" in turn.text and "values = list(humidity)" in source
    printed = run_cell_code(source, {"humidity": [40, 42, 45, 41, 39]}, monkeypatch)
    lines = printed.splitlines()
    assert lines[0] == "humidity (install matplotlib for a picture):"
    assert len(lines) == 6 and lines[3].endswith("#" * 30) and lines[5].endswith(" #")
    assert "values = list(temperatures)" in new_source(demo_model(convo("plot the data", STATE)))


def test_plot_uses_matplotlib_when_the_kernel_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    pyplot = types.ModuleType("matplotlib.pyplot")
    for name in ("plot", "title", "xlabel", "ylabel", "show"):
        setattr(pyplot, name, lambda *a, _n=name, **k: calls.append(_n))
    package = types.ModuleType("matplotlib")
    package.pyplot = pyplot  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", package)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    source = new_source(demo_model(convo("plot the temperatures", STATE)))
    exec(source, {"temperatures": [21.5, 24.0]})  # noqa: S102 - the cell under test
    assert calls == ["plot", "title", "xlabel", "ylabel", "show"]


class FakeFrame:
    """Just enough of a pandas DataFrame for the cells the demo model writes."""

    def __init__(self, columns: dict[str, list[float]]) -> None:
        self.data = columns
        self.columns = list(columns)

    def select_dtypes(self, kind: str) -> FakeFrame:
        return FakeFrame(
            {k: v for k, v in self.data.items() if all(isinstance(x, (int, float)) for x in v)}
        )

    def __getitem__(self, names: list[str]) -> FakeFrame:
        return FakeFrame({k: self.data[k] for k in names})

    def to_string(self) -> str:
        return " ".join(self.columns)


def test_plots_a_dataframe_by_the_columns_named(monkeypatch: pytest.MonkeyPatch) -> None:
    source = new_source(demo_model(convo("plot the temperature of the weather", FRAME_STATE)))
    frame = FakeFrame({"temperature": [1.0, 2.0], "rain": [0.0, 3.0], "city": ["a", "b"]})  # type: ignore[list-item]
    printed = run_cell_code(source, {"weather": frame}, monkeypatch)
    assert printed.splitlines()[-1] == "temperature"
    everything = new_source(demo_model(convo("draw a chart", FRAME_STATE)))
    assert (
        run_cell_code(everything, {"weather": frame}, monkeypatch).splitlines()[-1]
        == "temperature rain"
    )


def test_plots_sample_numbers_when_the_notebook_has_no_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    turn = demo_model(convo("plot something", EMPTY_STATE))
    assert "no dataframe or list of numbers" in turn.text
    printed = run_cell_code(new_source(turn), {}, monkeypatch)
    assert printed.startswith("sample values") and len(printed.splitlines()) == 9


def test_shows_the_first_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (
        new_source(demo_model(convo("load the data and show the first rows", FRAME_STATE)))
        == "weather.head()"
    )
    source = new_source(demo_model(convo("Load the data and show the first rows", STATE)))
    printed = run_cell_code(source, {"readings": {d: (20, 40) for d in "ABCDEFG"}}, monkeypatch)
    assert printed.splitlines() == [f"('{d}', (20, 40))" for d in "ABCDE"]
    from_file = new_source(
        demo_model(convo("load data/sales.csv and show the first rows", EMPTY_STATE))
    )
    assert from_file == "import pandas as pd\n\ndf = pd.read_csv('data/sales.csv')\ndf.head()"
    nothing = demo_model(convo("show the first rows", EMPTY_STATE))
    assert (
        nothing.tool_uses == []
        and "load sales.csv" in nothing.text
        and "offline demo model" in nothing.text
    )


def test_summarises_a_dataframe_or_the_lists_of_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (
        new_source(demo_model(convo("summarise the dataframe", FRAME_STATE)))
        == "weather.describe()"
    )
    source = new_source(demo_model(convo("summary statistics please", STATE)))
    printed = run_cell_code(
        source, {"temperatures": [21.5, 24.0], "humidity": [40, 42]}, monkeypatch
    )
    assert printed.splitlines() == [
        "temperatures: 2 values, mean 22.75, from 21.5 to 24.0",
        "humidity: 2 values, mean 41.00, from 40 to 42",
    ]
    outline = demo_model(convo("summarise", EMPTY_STATE)).tool_uses[0].input
    assert outline["cell_type"] == "markdown" and "Cell 1 is text: “Notes”." in outline["source"]


def test_fixes_a_name_error_by_running_the_cells_it_needs() -> None:
    cells = [
        *DEMO_CELLS[:2],
        code(
            DEMO_CELLS[2]["source"], [error("NameError", "name 'temperatures' is not defined")], 1
        ),
    ]
    turn = demo_model(convo("fix the error", state(cells, "demo.ipynb")))
    assert tools(turn) == ["run_all_cells"]
    assert (
        "Cell 3 failed with NameError: name 'temperatures' is not defined. temperatures is defined in cell 2"
        in turn.text
    )


def test_fixes_a_misspelt_name_and_runs_the_cell() -> None:
    cells = [
        code("temperatures = [21.5, 24.0]", count=1),
        code(
            "print(max(temperature))", [error("NameError", "name 'temperature' is not defined")], 2
        ),
    ]
    steps = [state(cells)]
    turn = demo_model(convo("fix the error", *steps))
    assert tools(turn) == ["edit_cell"]
    assert turn.tool_uses[0].input == {"cell_id": "c2", "source": "print(max(temperatures))"}
    edited = ("edit_cell", "Cell 2 (id c2) now has 1 line.", False)
    assert demo_model(convo("fix the error", *steps, edited)).tool_uses[0].input == {
        "cell_id": "c2"
    }


@pytest.mark.parametrize(
    ("ename", "evalue", "expected"),
    [
        ("NameError", "name 'zzz' is not defined", "No cell in the notebook sets zzz"),
        ("ModuleNotFoundError", "No module named 'seaborn'", "%pip install seaborn"),
        ("ZeroDivisionError", "division by zero", "Read the traceback"),
    ],
)
def test_explains_errors_it_cannot_fix(ename: str, evalue: str, expected: str) -> None:
    cells = [code("x = 1", count=1), code("broken()", [error(ename, evalue)], 2)]
    turn = demo_model(convo("the cell is broken, please fix it", state(cells)))
    assert turn.tool_uses == []
    assert f"Cell 2 failed with {ename}: {evalue}." in turn.text and expected in turn.text
    assert "offline demo model" in turn.text


def test_fix_without_a_failed_cell_says_so() -> None:
    turn = demo_model(convo("fix the error", STATE))
    assert turn.tool_uses == [] and "none of them shows an error" in turn.text


def test_a_free_question_gets_a_clarification_and_the_answer_is_acted_on() -> None:
    turn = demo_model(convo("What is the warmest day?", STATE))
    assert tools(turn) == ["ask_user"] and turn.tool_uses[0].input["choices"] == CLARIFY_CHOICES
    assert "offline demo model" in turn.text
    answered = ("ask_user", "The user answered: Plot the data", False)
    follow = demo_model(convo("What is the warmest day?", STATE, answered))
    assert "values = list(temperatures)" in new_source(follow)
    explained = demo_model(
        convo("Why?", STATE, ("ask_user", "The user answered: Explain this notebook", False))
    )
    assert "Cell 2 (code, has not run yet)" in explained.text


def test_anything_else_gets_an_honest_answer_with_what_it_can_do() -> None:
    turn = demo_model(convo("make it nicer", STATE))
    assert turn.tool_uses == []
    assert "I am the offline demo model, a scripted stand-in for Claude" in turn.text
    for recipe in (
        "explain this notebook",
        "plot the data",
        "show the first rows",
        "summarise the dataframe",
        "fix the error",
    ):
        assert recipe in turn.text
    assert "it has 3 cells" in turn.text


def test_reading_the_state_back() -> None:
    view = parse_state(STATE[1])
    assert (
        view.path == "demo.ipynb" and view.total == 3 and view.kernel == "Python 3 [python3], idle"
    )
    assert [(c.number, c.id, c.cell_type, c.status) for c in view.cells] == [
        (1, "fcd109bb", "markdown", ""),
        (2, "fb119298", "code", "not run"),
        (3, "246e7258", "code", "not run"),
    ]
    assert view.cells[1].source == "".join(DEMO_CELLS[1]["source"])
    assert parse_state("something else").cells == ()


def test_code_facts_survive_magics_and_syntax_errors() -> None:
    facts = code_facts(
        "%matplotlib inline\nimport numpy as np\nxs = np.linspace(0, 1)\nys = [1, 2, -3]\nplt.plot(xs, ys)"
    )
    assert facts.imports == ("np",) and facts.sequences == ("ys",) and facts.plots
    broken = code_facts("import os\nvalue = (\n")
    assert not broken.parsed and broken.imports == ("os",) and broken.defines == ("value",)


def test_follows_references_to_an_unchanged_earlier_result() -> None:
    """The agent sends a result identical to one already in the conversation (the notebook read
    again, unchanged) as a one-line reference; the demo model reads the original."""
    first = convo("Explain this notebook", STATE)
    messages = first.body["messages"]
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Explained."}]})
    messages.append(
        {"role": "user", "content": [{"type": "text", "text": "plot the temperatures"}]}
    )
    messages.append(
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_again", "name": "get_notebook_state", "input": {}}
            ],
        }
    )
    reference = (
        "[Unchanged: identical to the earlier result of get_notebook_state (call toolu_0), "
        "which is above in this conversation.]"
    )
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_again", "content": reference}
            ],
        }
    )
    assert "values = list(temperatures)" in new_source(demo_model(first))


def test_a_run_result_is_told_without_its_notes() -> None:
    ran = (
        "run_cell",
        (
            "Cell 4 (id a) ran in 0.2 s as [1]: ok.\nA new Python 3 kernel was started for this notebook first.\n"
            "Outputs:\n[stdout]\nMean: 4"
        ),
        False,
    )
    text = demo_model(convo("anything", STATE, ran)).text
    assert "It shows: Mean: 4" in text and "kernel was started" not in text


def test_the_demo_model_describes_a_figure_from_its_code_and_says_it_cannot_see() -> None:
    from jupyter_aaep.testing.demo_model import describe_figure

    asked = "Describe the figure in cell 2.\n\n<describe_figure>\nDescribe the figure shown by the cell with id plot, output 1"
    assert describe_figure("Plot the temperatures", []) is None
    look = describe_figure(asked, [])
    assert look is not None and [(t.name, t.input) for t in look.tool_uses] == [
        ("view_figure", {"cell_id": "plot"})
    ]
    seen = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {
                "type": "text",
                "text": (
                    "Cell 2 (id plot) shows 1 figure (outputs 1).\nOutput 1: image/png 640×400, 12 KB\nCode:\n"
                    "ax.plot(days, temps)\nax.set_xlabel('day')\nplt.ylabel(\"degrees\")\nplt.title('The week')"
                ),
            }
        ],
    }
    said = describe_figure(asked, [seen])
    assert said is not None and said.text.startswith(
        "A chart drawn by the code of this cell, 640 by 400 pixels, titled 'The week'. "
        "The x axis shows day; the y axis shows degrees."
    )
    assert "cannot see images" in said.text
    failed = describe_figure(
        asked, [{**seen, "is_error": True, "content": "Cell 2 shows no figure."}]
    )
    assert (
        failed is not None
        and failed.text == "I could not look at the figure: Cell 2 shows no figure."
    )
