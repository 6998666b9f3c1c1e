"""The kernel runtime in-process: descriptions, tool calls, variables (no kernel needed)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from jupyter_aaep.agent import tools as agent_tools
from jupyter_aaep.agent.tools import ToolResult, aaep_tool
from jupyter_aaep.kernel import runtime
from jupyter_aaep.kernel._describe import describe, run_limited

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def _empty_registry() -> Any:
    saved = dict(runtime._TOOLS)
    runtime._TOOLS.clear()
    yield
    runtime._TOOLS.clear()
    runtime._TOOLS.update(saved)


class Hangs:
    def __repr__(self) -> str:
        while True:
            pass


class Raises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


# -- describe -------------------------------------------------------------------------------------
def test_dataframe_shape_columns_and_rows() -> None:
    frame = pd.DataFrame({"region": ["north", "south", "east"], "sales": [1.5, 2.25, 3.0]})
    text = describe(frame)
    assert text.startswith("pandas DataFrame: 3 rows x 2 columns")
    assert "'region': " in text and "'sales': float64" in text
    assert "north" in text and "2.25" in text


def test_wide_long_frame_is_bounded() -> None:
    frame = pd.DataFrame(np.zeros((10_000, 200)))
    text = describe(frame, 1500)
    assert len(text) <= 1500
    assert text.startswith("pandas DataFrame: 10000 rows x 200 columns")


def test_series() -> None:
    text = describe(pd.Series([3, 1, 2], name="count"))
    assert text.startswith("pandas Series 'count': 3 values, dtype int64")


def test_ndarray_stats() -> None:
    text = describe(np.arange(12, dtype=float).reshape(3, 4))
    assert "shape (3, 4)" in text and "dtype float64" in text
    assert "min 0, max 11, mean 5.5" in text
    assert "shape (0,)" in describe(np.array([]))
    assert "min" not in describe(np.array(["a", "b"]))


def test_figure() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure()
    axes = figure.add_subplot(1, 2, 1)
    axes.plot([1, 2, 3], [3, 1, 2], label="north")
    axes.plot([1, 2, 3], [1, 1, 1])
    axes.set_title("Monthly sales")
    axes.set_xlabel("month")
    figure.add_subplot(1, 2, 2).bar(["a", "b"], [1, 2])
    text = describe(figure)
    assert text.startswith("matplotlib Figure with 2 axes")
    assert "title 'Monthly sales'" in text and "x label 'month'" in text
    assert "2 lines" in text and "labelled 'north'" in text and "2 bars" in text


def test_containers_strings_and_scalars() -> None:
    assert describe({"a": 1, "b": [1, 2]}) == "dict with 2 items: {'a': 1, 'b': [1, 2]}"
    assert describe(list(range(100))).startswith("list with 100 items: [0, 1, 2, 3, 4, 5, 6, 7, …]")
    assert describe((1,)) == "tuple with 1 item: (1)"
    text = describe("x" * 5000)
    assert text.startswith("str of 5000 characters: 'xxx") and len(text) < 400
    assert describe(42) == "int: 42"
    assert describe(None) == "NoneType: None"


def test_repr_that_raises_is_named() -> None:
    assert describe(Raises()).endswith("its repr raised RuntimeError>")
    assert "its repr raised RuntimeError" in describe([1, Raises()])


def test_repr_that_hangs_is_cut_off_and_its_thread_stopped() -> None:
    before = threading.active_count()
    started = time.monotonic()
    text = describe(Hangs())
    elapsed = time.monotonic() - started
    assert 1.9 < elapsed < 15  # cut off at 2 s; the rest is a loaded machine's slack
    assert "not described, because it took more than 2 seconds" in text
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before  # the runaway repr was interrupted


def test_run_limited_passes_results_and_errors() -> None:
    assert run_limited(lambda: 7) == 7
    with pytest.raises(ZeroDivisionError):
        run_limited(lambda: 1 / 0)


# -- tools ----------------------------------------------------------------------------------------
def test_call_tool_success_with_json_text_arguments() -> None:
    @aaep_tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    runtime.register(add)
    answer = json.loads(runtime.call_tool_json('"add"', json.dumps({"a": 40})))
    assert answer == {"ok": True, "result": 42, "summary": None}
    # plain name and a dict work too
    assert json.loads(runtime.call_tool_json("add", {"a": 1, "b": 1}))["result"] == 2


def test_call_tool_exception_has_message_and_last_frames() -> None:
    def inner(depth: int) -> None:
        if depth == 0:
            raise ValueError("region 'west' is unknown")
        inner(depth - 1)

    @aaep_tool
    def load(region: str) -> None:
        """Load one region."""
        inner(10)

    runtime.register(load)
    answer = json.loads(runtime.call_tool_json("load", '{"region": "west"}'))
    assert answer["ok"] is False
    assert answer["error"] == "ValueError: region 'west' is unknown"
    assert len(answer["traceback"]) == 5
    assert all("inner" in frame and len(frame) <= 400 for frame in answer["traceback"])
    assert not any("kernel/runtime.py" in frame for frame in answer["traceback"])


def test_call_tool_non_serialisable_results_are_described() -> None:
    @aaep_tool
    def frame() -> Any:
        """A frame."""
        return pd.DataFrame({"a": [1, 2]})

    @aaep_tool
    def thing() -> Any:
        """An object."""
        return object()

    @aaep_tool
    def nan() -> Any:
        """Not JSON."""
        return {"value": float("nan")}

    @aaep_tool
    def huge() -> Any:
        """Too long."""
        return list(range(100_000))

    for spec in (frame, thing, nan, huge):
        runtime.register(spec)
    result = json.loads(runtime.call_tool_json("frame"))
    assert result["ok"] and result["result"].startswith("pandas DataFrame: 2 rows x 1 columns")
    assert result["summary"] == "pandas DataFrame: 2 rows x 1 columns"
    assert json.loads(runtime.call_tool_json("thing"))["result"].startswith(
        "object: <object object at"
    )
    assert json.loads(runtime.call_tool_json("nan"))["result"] == "dict with 1 item: {'value': nan}"
    assert json.loads(runtime.call_tool_json("huge"))["result"].startswith("list with 100000 items")


def test_call_tool_errors_without_raising() -> None:
    unknown = json.loads(runtime.call_tool_json("missing", "{}"))
    assert unknown["ok"] is False and "no tool named 'missing'" in unknown["error"]
    assert "could not be read" in json.loads(runtime.call_tool_json("x", "[1"))["error"]
    assert "must be a JSON object" in json.loads(runtime.call_tool_json("x", "[1]"))["error"]

    @aaep_tool
    def needs(count: int) -> int:
        """Needs a count."""
        return count

    runtime.register(needs)
    bad = json.loads(runtime.call_tool_json("needs", '{"count": "three"}'))
    assert bad["ok"] is False and "Invalid input for needs" in bad["error"]


def test_tool_result_async_tool_and_context_param() -> None:
    from jupyter_aaep.agent.tools import ToolContext

    @aaep_tool
    def rich() -> ToolResult:
        """Rich."""
        return ToolResult(content="done", summary="It is done")

    @aaep_tool
    def failing() -> ToolResult:
        """Fails politely."""
        return ToolResult(content="x", is_error=True, error_message="No data for 2031")

    @aaep_tool
    async def later(x: int, ctx: ToolContext) -> dict[str, Any]:
        """Async."""
        return {"x": x, "call": ctx.tool_call_id}

    for spec in (rich, failing, later):
        runtime.register(spec)
    assert json.loads(runtime.call_tool_json("rich")) == {
        "ok": True,
        "result": "done",
        "summary": "It is done",
    }
    assert json.loads(runtime.call_tool_json("failing"))["error"] == "No data for 2031"
    assert json.loads(runtime.call_tool_json("later", '{"x": 3}', "toolu_1"))["result"] == {
        "x": 3,
        "call": "toolu_1",
    }


def test_registry_and_payload() -> None:
    @aaep_tool(risk_level="high", label="Delete rows")
    def drop(table: str) -> None:
        """Delete a table's rows."""

    runtime.register(drop)
    assert runtime.get("drop") is drop and runtime.registered() == [drop]
    assert drop.declaration() == {
        "description": "Delete a table's rows.",
        "input_schema": drop.input_schema,
        "risk_level": "high",
        "irreversible": False,
        "require_confirmation": True,
        "read_only": False,
        "label": "Delete rows",
    }
    assert runtime.remove("drop") and not runtime.remove("drop")


def test_tool_defined_hooks_run_and_a_failing_hook_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    def broken(spec: Any) -> None:
        raise RuntimeError("hook bug")

    agent_tools.TOOL_DEFINED_HOOKS[:0] = [broken, lambda spec: seen.append(spec.name)]
    try:

        @aaep_tool
        def hooked() -> None:
            """Hooked."""

        assert seen == ["hooked"] and hooked() is None
        assert "TOOL_DEFINED_HOOKS hook failed for tool hooked" in caplog.text
    finally:
        del agent_tools.TOOL_DEFINED_HOOKS[:2]


# -- variables ------------------------------------------------------------------------------------
def test_list_variables() -> None:
    @aaep_tool
    def my_tool() -> None:
        """A tool."""

    def helper(x: int) -> int:
        """Double it."""
        return 2 * x

    namespace = {
        "df": pd.DataFrame({"a": [1]}),
        "n": 3,
        "_hidden": 1,
        "np": np,
        "helper": helper,
        "my_tool": my_tool,
        "In": [],
        "Thing": Hangs,
        "odd": Hangs(),
    }
    answer = json.loads(runtime.list_variables_json(50, namespace))
    assert answer["truncated"] is False
    rows = {row["name"]: row for row in answer["variables"]}
    assert list(rows) == ["df", "n", "odd", "helper", "my_tool", "Thing"]
    assert rows["df"] == {
        "name": "df",
        "type": "DataFrame",
        "kind": "variable",
        "summary": "pandas DataFrame: 1 rows x 1 columns",
    }
    assert rows["helper"]["kind"] == "function" and "Double it" in rows["helper"]["summary"]
    assert rows["my_tool"]["summary"].startswith("kernel tool my_tool()")
    assert rows["Thing"]["kind"] == "class"
    assert "not described" in rows["odd"]["summary"]
    limited = json.loads(runtime.list_variables_json(2, namespace))
    assert limited["truncated"] is True and len(limited["variables"]) == 2


def test_inspect_variable() -> None:
    namespace = {"df": pd.DataFrame({"a": [1, 2]}), "bad": Raises()}
    answer = json.loads(runtime.inspect_variable_json('"df"', 4000, namespace))
    assert answer["name"] == "df" and answer["type"] == "DataFrame"
    assert answer["description"].startswith("pandas DataFrame: 2 rows x 1 columns")
    columns = json.loads(runtime.inspect_variable_json("df.columns", 4000, namespace))
    assert columns["type"] == "Index"
    assert (
        "no variable named 'nope'"
        in json.loads(runtime.inspect_variable_json("nope", 100, namespace))["error"]
    )
    assert (
        "not a variable name"
        in json.loads(runtime.inspect_variable_json("1+1", 100, namespace))["error"]
    )
    missing = json.loads(runtime.inspect_variable_json("df.nothing", 100, namespace))["error"]
    assert missing.startswith("Reading df.nothing failed: AttributeError")
    assert (
        "its repr raised"
        in json.loads(runtime.inspect_variable_json("bad", 100, namespace))["description"]
    )


def test_list_variables_stays_within_its_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "LISTING_SECONDS", 0.5)
    namespace = {"slow": Hangs(), "next": 1, "last": 2}
    started = time.monotonic()
    rows = json.loads(runtime.list_variables_json(10, namespace))["variables"]
    assert time.monotonic() - started < 4
    assert [row["name"] for row in rows] == ["slow", "next", "last"]
    assert "took more than 2 seconds" in rows[0]["summary"]
    assert all(
        row["summary"].startswith("not described: describing the variables before")
        for row in rows[1:]
    )
