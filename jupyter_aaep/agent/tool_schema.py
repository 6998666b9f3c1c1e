"""Is a tool's input schema one the agent can use? Checked once, when the tool is registered.

Why here and not at call time: a schema the model cannot read, or that the argument checker
(:func:`.schema_from_signature.check_arguments`) does not understand, used to surface only when
the model called the tool, as an internal error that ended the session. So a schema must be
valid JSON Schema (the 2020-12 meta-schema, through ``jsonschema``) *and* inside the subset the
checker reads: an object with ``properties`` (each a schema), ``required`` naming some of
them, and per value ``type`` (one of the JSON types, or a list of them), ``enum`` (a list),
``anyOf`` (a list of schemas) and ``items`` (a schema). Other keywords (``description``,
``default``, ``minimum``, ``format``…) are allowed: the model reads them, the checker ignores
them. Each problem is one sentence naming where it is.

The answer is remembered per schema *content* (its canonical JSON): every session builds a
fresh registry of the same tools, and the meta-schema check cost 19 ms a tool (0.36 s of each
session's start with the built-in tools, measured by ``benchmarks/agent_speed.py``). A schema
changed in place is a different key, so it is checked again.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["schema_problem"]

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
MAX_DEPTH = 16


def schema_problem(schema: Any) -> str | None:
    """A sentence saying what is wrong with *schema*, or ``None`` when it can be used."""
    try:
        key = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON: checked each time
        return _problem(schema)
    if key in _checked:
        return _checked[key]
    problem = _problem(schema)
    if json.loads(key) == schema:  # plain JSON values only (a tuple is not a list here)
        if len(_checked) >= _REMEMBER:
            _checked.pop(next(iter(_checked)))
        _checked[key] = problem
    return problem


_REMEMBER = 1024
_checked: dict[str, str | None] = {}
"""Answers by the schema's canonical JSON, oldest first."""


def _problem(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'the input schema must be a JSON Schema object with "type": "object"'
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
    except ImportError:  # pragma: no cover - a dependency; the subset check still runs
        pass
    else:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as error:
            where = "/".join(str(p) for p in error.absolute_path) or "the top level"
            return f"the input schema is not valid JSON Schema at {where}: {_short(error.message)}"
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return "properties must be an object mapping each argument name to its schema"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        return "required must be a list of argument names"
    unknown = [n for n in required if n not in properties]
    if unknown:
        return f"required names {unknown} that are not among the properties"
    for name, value in properties.items():
        problem = _value_problem(value, f"properties/{name}", 0)
        if problem:
            return problem
    return None


def _value_problem(schema: Any, where: str, depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return f"{where} is nested too deeply (more than {MAX_DEPTH} levels)"
    if schema is True or schema == {}:
        return None
    if not isinstance(schema, dict):
        return f"{where} must be a schema (an object), not {type(schema).__name__}"
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if any(k not in JSON_TYPES for k in kinds):
        return f"{where} has type {kind!r}; use one of {', '.join(sorted(JSON_TYPES))}"
    if "enum" in schema and not isinstance(schema["enum"], list):
        return f"{where}/enum must be a list of the allowed values"
    if "anyOf" in schema:
        options = schema["anyOf"]
        if not isinstance(options, list) or not options:
            return f"{where}/anyOf must be a non-empty list of schemas"
        for index, option in enumerate(options):
            problem = _value_problem(option, f"{where}/anyOf/{index}", depth + 1)
            if problem:
                return problem
    if "items" in schema:
        problem = _value_problem(schema["items"], f"{where}/items", depth + 1)
        if problem:
            return problem
    return None


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
