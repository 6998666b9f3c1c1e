"""JSON Schema for a tool's input, derived from its Python signature and docstring.

The model reads the descriptions, so parameter text comes from the docstring (NumPy
``Parameters`` sections or Google ``Args:`` sections) and types from the annotations.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

_SECTION = re.compile(
    r"^\s*(Parameters|Args|Arguments|Returns|Raises|Yields|Examples|Notes|See Also)\s*:?\s*$"
)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter texts."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
            current = None
            continue
        if re.match(r"^\s*-{3,}\s*$", line):
            continue
        if section is None:
            description.append(line)
            continue
        if section not in ("Parameters", "Args", "Arguments"):
            continue
        numpy = re.match(r"^(\w+)\s*:\s*(.*)$", line)
        google = re.match(r"^\s{2,}(\w+)(\s*\([^)]*\))?\s*:\s*(.*)$", line)
        if numpy and not line.startswith(" "):
            current = numpy.group(1)
            params[current] = ""
        elif google:
            current = google.group(1)
            params[current] = google.group(3).strip()
        elif current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(description).strip(), params


def json_type(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation (str, int, float, bool, list, dict, Literal, Optional)."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return json_type(get_args(annotation)[0])
    if origin is Literal:
        values = list(get_args(annotation))
        schema: dict[str, Any] = {"enum": values}
        kinds = {type(v) for v in values}
        if kinds == {str}:
            schema["type"] = "string"
        elif kinds <= {int}:
            schema["type"] = "integer"
        return schema
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return json_type(members[0])
        return {"anyOf": [json_type(m) for m in members]}
    if origin in (list, tuple, set, frozenset, typing.Sequence, typing.Iterable) or annotation in (
        list,
        tuple,
    ):
        args = get_args(annotation)
        schema = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = json_type(args[0])
        return schema
    if origin in (dict, typing.Mapping) or annotation is dict:
        return {"type": "object"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in simple:
        return {"type": simple[annotation]}
    return {}


def input_schema(
    func: Callable[..., Any], *, skip: set[str], param_docs: dict[str, str]
) -> dict[str, Any]:
    """The ``input_schema`` object for *func*, leaving out the parameters named in *skip*."""
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward references: fall back to raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if name in skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = json_type(hints.get(name, param.annotation))
        if param_docs.get(name):
            schema["description"] = param_docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif param.default is not None and isinstance(param.default, (str, int, float, bool)):
            schema["default"] = param.default
        properties[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def check_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    """A sentence saying what is wrong with *arguments*, or ``None`` when they fit. Total: a
    schema shape it does not understand is a sentence too, never an exception (registration
    refuses such schemas, see :mod:`.tool_schema`; this is the second line of defence)."""
    try:
        return _check_arguments(schema, arguments)
    except Exception as error:  # noqa: BLE001 - any shape the checker does not know
        return f"the tool's input schema cannot be checked ({type(error).__name__}); fix the tool's definition"


def _check_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    if not isinstance(arguments, dict):
        return "the input must be a JSON object"
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            return f"missing required argument '{name}'"
    for name, value in arguments.items():
        if name not in properties:
            return f"unknown argument '{name}' (expected: {', '.join(properties) or 'none'})"
        problem = _check_value(properties[name], value)
        if problem:
            return f"argument '{name}' {problem}"
    return None


def _check_value(schema: Any, value: Any) -> str | None:
    if schema is True or not schema:
        return None
    if "anyOf" in schema:
        if value is None or any(_check_value(s, value) is None for s in schema["anyOf"]):
            return None
        return "has the wrong type"
    if value is None:
        return None  # optional parameters may be passed as null
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {schema['enum']}"
    expected = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    expected_all = expected if isinstance(expected, list) else [expected]
    known = [e for e in expected_all if isinstance(e, str) and e in checks]
    if known and not any(checks[e](value) for e in known):
        return f"must be of type {' or '.join(known)}"
    if "array" in expected_all and isinstance(value, list) and "items" in schema:
        for item in value:
            problem = _check_value(schema["items"], item)
            if problem:
                return f"has an item that {problem}"
    return None
