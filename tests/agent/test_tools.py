from __future__ import annotations

import asyncio
from typing import Literal, Optional

import pytest

from jupyter_aaep import ToolContext, ToolError, ToolResult, aaep_tool
from jupyter_aaep.agent.schema_from_signature import check_arguments, json_type, parse_docstring
from jupyter_aaep.agent.tools import ToolRegistry, as_result, make_tool


def test_numpy_and_google_docstrings() -> None:
    numpy = """Summary line.

    More text.

    Parameters
    ----------
    a : int
        First
        continued.
    b : str
        Second.

    Returns
    -------
    str
        Ignored.
    """
    assert parse_docstring(numpy) == (
        "Summary line.\n\nMore text.",
        {"a": "First continued.", "b": "Second."},
    )
    google = """Do it.

    Args:
        x (int): The x.
        y: The y.
    """
    assert parse_docstring(google) == ("Do it.", {"x": "The x.", "y": "The y."})
    assert parse_docstring(None) == ("", {})


def test_json_types() -> None:
    assert json_type(Optional[int]) == {"type": "integer"}  # noqa: UP045 - the old spelling must work too
    assert json_type(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert json_type(Literal[1, 2]) == {"enum": [1, 2], "type": "integer"}
    assert json_type(dict[str, int]) == {"type": "object"}
    assert json_type(tuple[int, ...]) == {"type": "array", "items": {"type": "integer"}}
    assert json_type(object) == {}


def test_decorator_with_and_without_parentheses() -> None:
    @aaep_tool
    def plain(x: int) -> int:
        """Double x."""
        return 2 * x

    @aaep_tool(name="renamed", description="Custom.", risk_level="high", read_only=True)
    async def fancy(ctx: ToolContext, flag: bool = False, names: list[str] | None = None) -> str:
        return "ok"

    assert plain(3) == 6, "decorated functions stay callable"
    assert plain.model_schema()["input_schema"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
    }
    assert not plain.require_confirmation and plain.default_decision == "reject", (
        "silence never applies a change, even a low-risk one"
    )
    assert fancy.name == "renamed" and fancy.description == "Custom."
    assert fancy.require_confirmation and fancy.default_decision == "reject"
    assert "ctx" not in fancy.input_schema["properties"]
    assert fancy.input_schema["properties"]["flag"] == {"type": "boolean", "default": False}
    assert asyncio.run(fancy.call(ToolContext(tool_call_id="call_1"), {})).content == "ok"
    assert asyncio.run(plain.call(ToolContext(tool_call_id="call_1"), {"x": 2})).content == "4"


def test_invalid_declarations() -> None:
    def nodoc(x: int) -> None:
        pass

    with pytest.raises(ValueError, match="description"):
        make_tool(nodoc)
    with pytest.raises(ValueError, match="risk_level"):
        make_tool(nodoc, description="d", risk_level="extreme")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool name"):
        make_tool(nodoc, description="d", name="bad name")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ([], "must be a JSON object"),
        ({}, "missing required argument 'n'"),
        ({"n": "1"}, "argument 'n' must be of type integer"),
        ({"n": True}, "argument 'n' must be of type integer"),
        ({"n": 1, "zzz": 1}, "unknown argument 'zzz'"),
        ({"n": 1, "mode": "x"}, "must be one of"),
        ({"n": 1, "tags": ["a", 2]}, "has an item that must be of type string"),
        ({"n": 1, "either": [1]}, "has the wrong type"),
        ({"n": 1, "either": None, "tags": None, "ratio": 2, "opts": {}}, None),
    ],
)
def test_argument_checking(arguments, problem) -> None:
    def f(
        n: int,
        mode: Literal["a", "b"] = "a",
        tags: list[str] | None = None,
        either: int | str | None = None,
        ratio: float = 1.0,
        opts: dict | None = None,
    ) -> None:
        """F."""

    schema = make_tool(f).input_schema
    result = check_arguments(schema, arguments)
    assert (result is None) if problem is None else (problem in result)


def test_results_and_registry() -> None:
    assert as_result(None).content == "Done."
    assert as_result({"a": 1}).content == '{"a": 1}'
    blocks = [{"type": "text", "text": "hi"}]
    assert as_result(blocks).content == blocks
    assert as_result(ToolResult("x", is_error=True)).is_error

    @aaep_tool
    def one() -> str:
        """One."""
        return "1"

    registry = ToolRegistry([one])
    with pytest.raises(ValueError):
        registry.add(one)
    registry.add(one, replace=True)
    with pytest.raises(TypeError):
        registry.add(lambda: 1)  # type: ignore[arg-type]
    assert "one" in registry and len(registry) == 1 and registry.names() == ["one"]
    assert registry.get("one") is one
    assert registry.model_tools(cache=False) == [one.model_schema()]
    registry.remove("one")
    assert registry.model_tools() == [] and list(registry) == []


async def test_context_without_host_services() -> None:
    ctx = ToolContext(tool_call_id="call_1")
    with pytest.raises(ToolError):
        await ctx.ask("?")
    with pytest.raises(ToolError):
        await ctx.request_handoff("why")
    ctx.report_progress("nothing happens")
