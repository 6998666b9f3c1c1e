"""Tool input schemas are checked when a tool is registered, and the argument checker never
raises (issue 16: four malformed kernel tool schemas used to end the session as an internal
error when the model called the tool)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.agent.schema_from_signature import check_arguments
from jupyter_aaep.agent.tool_schema import schema_problem
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

MALFORMED = [
    # The four shapes of the issue.
    ({"type": "object", "properties": {"a": "notadict"}}, "properties/a"),
    ({"type": "object", "properties": {"a": {"anyOf": "xy"}}}, "anyOf"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": "x"}}}, "items"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": 5}, "required"),
    # More of the same family.
    ({"type": "object", "properties": {"a": {"type": "text"}}}, "type"),
    ({"type": "object", "properties": {"a": {"enum": "abc"}}}, "enum"),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
        "not among the properties",
    ),
    ({"type": "object", "properties": []}, "properties"),
    ({"type": "object", "properties": {"a": {"anyOf": []}}}, "anyOf"),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"anyOf": [{"type": 3}]}}},
        },
        "type",
    ),
    ({"type": "array"}, '"type": "object"'),
    ("not a schema", '"type": "object"'),
]


@pytest.mark.parametrize(("schema", "where"), MALFORMED)
def test_malformed_schemas_are_refused_with_a_sentence(schema: Any, where: str) -> None:
    problem = schema_problem(schema)
    assert problem is not None and where in problem, problem
    assert not problem.endswith(".") and "Traceback" not in problem


@pytest.mark.parametrize(("schema", "_"), MALFORMED)
def test_the_argument_checker_is_total(schema: Any, _: str) -> None:
    for arguments in ({"a": "x"}, {"a": [1, "x"]}, {}, [], None, {"a": None}):
        problem = check_arguments(schema if isinstance(schema, dict) else {}, arguments)
        assert problem is None or isinstance(problem, str)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {}},
        {
            "type": "object",
            "properties": {"a": {"type": ["string", "null"], "description": "A name."}},
            "required": ["a"],
        },
        {
            "type": "object",
            "properties": {
                "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "b": {"type": "array", "items": {"type": "number", "minimum": 0}},
                "c": {"enum": ["x", "y"]},
                "d": {},
                "e": True,
            },
        },
    ],
)
def test_schemas_the_checker_understands_pass(schema: dict[str, Any]) -> None:
    assert schema_problem(schema) is None
    assert check_arguments(schema, {}) in (None, "missing required argument 'a'")


def test_a_list_of_types_is_checked() -> None:
    schema = {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}
    assert check_arguments(schema, {"a": "x"}) is None
    assert check_arguments(schema, {"a": 3}) == "argument 'a' must be of type string"


def test_the_registry_refuses_a_tool_whose_schema_it_cannot_use() -> None:
    @aaep_tool
    def fine(a: int) -> int:
        """Return a."""
        return a

    broken = replace(
        fine, name="broken", input_schema={"type": "object", "properties": {"a": "notadict"}}
    )
    registry = ToolRegistry([fine])
    with pytest.raises(ValueError, match="cannot be offered to the model: .*properties/a"):
        registry.add(broken)
    assert registry.get("broken") is None and registry.get("fine") is not None


async def test_a_session_with_a_bad_tool_keeps_working(harness: Any) -> None:
    """Second line of defence: a tool whose schema slipped past registration gets an error
    result when the model calls it, and the session goes on to its answer."""

    @aaep_tool
    def lookup(a: int) -> int:
        """Look a up."""
        return a

    bad = replace(
        lookup, input_schema={"type": "object", "properties": {"a": {"anyOf": "xy"}}, "required": 5}
    )
    harness.registry._tools["lookup"] = bad  # as if registered before this check existed
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"a": 1})]), Turn(text="The tool is broken; here is why.")
    )
    result = await harness.ask("look it up")
    assert result.status == "completed"
    [outcome] = harness.last_tool_results()
    assert outcome["is_error"] and "input schema cannot be checked" in outcome["content"]


def test_a_schema_is_checked_once_per_content(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session builds a fresh registry of the same tools: the meta-schema check (the
    costly part of a session's start) runs once per schema content, and a schema changed in
    place is checked again."""
    from jupyter_aaep.agent import tool_schema

    checked: list[Any] = []
    real = tool_schema._problem

    def counting(schema: Any) -> str | None:
        checked.append(schema)
        return real(schema)

    monkeypatch.setattr(tool_schema, "_problem", counting)
    monkeypatch.setattr(tool_schema, "_checked", {})
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert schema_problem(schema) is None
    assert schema_problem(dict(schema)) is None
    assert len(checked) == 1
    schema["properties"]["a"]["type"] = "text"  # changed in place: a new key
    problem = schema_problem(schema)
    assert problem is not None and "type" in problem
    assert schema_problem(schema) == problem
    assert len(checked) == 2
    # A tuple is not a JSON list: never answered from the cache of its list twin.
    odd = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ("a",)}
    assert schema_problem(odd) is not None
    assert schema_problem(odd) is not None
    assert len(checked) == 4
