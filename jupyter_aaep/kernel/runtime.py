"""The kernel side of kernel tools and introspection: what the server runs in a notebook's kernel.

The server calls these through its own kernel client as one ``user_expressions`` entry, e.g.
``__import__('jupyter_aaep.kernel.runtime', fromlist=['_']).call_tool_json("load_sales", "{...}")``,
and reads the returned JSON string. Each function answers in JSON and never raises: a failure is
part of the answer, so the agent gets a sentence rather than a broken expression.

The registry holds the ``@aaep_tool`` functions defined in this kernel (the magic's hook fills
it); only this process can call them, so the server keeps names and schemas, the kernel keeps
the functions.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
import traceback
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._describe import (
    DescribeTimeout,
    clip,
    describe,
    run_limited,
    safe_repr_text,
    short,
    type_name,
)

if TYPE_CHECKING:
    from ..agent.tools import ToolSpec

__all__ = [
    "call_tool_json",
    "describe",
    "get",
    "inspect_variable_json",
    "list_variables_json",
    "register",
    "registered",
    "remove",
]

MAX_RESULT_CHARS = 20_000
"""A result whose JSON is longer is summarised instead (the model reads every character)."""
LISTING_SECONDS = 8.0
"""After this long, list_variables names the remaining variables without describing them (each
description may take up to 2 s; the server gives the whole call 30 s)."""
FRAMES = 5
FRAME_CHARS = 400
_HIDDEN = {"In", "Out", "get_ipython", "exit", "quit", "open"}

_TOOLS: dict[str, ToolSpec] = {}


# -- the registry -------------------------------------------------------------------------------
def register(spec: ToolSpec) -> None:
    """Make *spec* callable by the server under its name (re-registering replaces it)."""
    _TOOLS[spec.name] = spec


def remove(name: str) -> bool:
    """Forget a tool; whether it was registered."""
    return _TOOLS.pop(name, None) is not None


def get(name: str) -> ToolSpec | None:
    return _TOOLS.get(name)


def registered() -> list[ToolSpec]:
    return list(_TOOLS.values())


# -- server -> kernel calls ---------------------------------------------------------------------
def _text(value: Any) -> str:
    """A name passed either as plain text or as a JSON string literal."""
    if isinstance(value, str) and value.startswith('"'):
        decoded = json.loads(value)
        if isinstance(decoded, str):
            return decoded
    return str(value)


def _answer(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False)


def call_tool_json(name: Any, arguments: Any = "{}", call_id: str = "") -> str:
    """Call the kernel tool *name* with *arguments* (a JSON object, as text or a dict).

    Returns ``{"ok": true, "result": <JSON value>, "summary": <str or null>}`` or
    ``{"ok": false, "error": "ExcType: message", "traceback": [last frames]}``. A result that is
    not JSON (a DataFrame, an array, a figure, any object) or is very long is described instead.
    """
    try:
        tool_name = _text(name)
        args = (
            json.loads(arguments) if isinstance(arguments, (str, bytes)) else dict(arguments or {})
        )
        if not isinstance(args, dict):
            raise TypeError("the arguments must be a JSON object")
    except (TypeError, ValueError) as error:
        return _answer(
            {"ok": False, "error": f"The call could not be read: {error}.", "traceback": []}
        )
    spec = _TOOLS.get(tool_name)
    if spec is None:
        known = ", ".join(sorted(_TOOLS)) or "none"
        return _answer(
            {
                "ok": False,
                "traceback": [],
                "error": f"The kernel has no tool named {tool_name!r} (registered here: {known}); "
                "re-run the cell that defines it, or the kernel was restarted.",
            }
        )
    try:
        spec.check(args)
        raw = _invoke(spec, args, call_id)
    except Exception as error:  # noqa: BLE001 - the user's function: its failure is the answer
        return _answer(
            {
                "ok": False,
                "error": clip(f"{type(error).__name__}: {safe_repr_text(error)}", 1000),
                "traceback": _frames(error),
            }
        )
    return _answer(_result(raw))


def _invoke(spec: ToolSpec, args: dict[str, Any], call_id: str) -> Any:
    from ..agent.tools import ToolContext

    kwargs = dict(args)
    if spec.context_param:
        kwargs[spec.context_param] = ToolContext(tool_call_id=call_id or "kernel")
    raw = spec.func(**kwargs)
    if asyncio.iscoroutine(raw):
        raw = _run_coroutine(raw)
    return raw


def _run_coroutine(coroutine: Any) -> Any:
    """Await an ``async def`` tool on a loop of its own (the kernel's loop is busy running us)."""
    import threading

    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller
            outcome["error"] = error

    thread = threading.Thread(target=work, name="aaep-kernel-tool")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _result(raw: Any) -> dict[str, Any]:
    """What the model receives for a return value: JSON when it is JSON, a description otherwise."""
    from ..agent.tools import ToolResult

    if isinstance(raw, ToolResult):
        if raw.is_error:
            return {
                "ok": False,
                "error": raw.error_message or clip(str(raw.content), 1000),
                "traceback": [],
            }
        return {"ok": True, "result": raw.content, "summary": raw.summary}
    if isinstance(raw, str):
        return {"ok": True, "result": clip(raw, MAX_RESULT_CHARS), "summary": None}
    if raw is None or isinstance(raw, (bool, int, float, dict, list, tuple)):
        try:
            text = json.dumps(raw, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):  # objects inside, NaN, cycles
            text = None
        if text is not None and len(text) <= MAX_RESULT_CHARS:
            return {"ok": True, "result": json.loads(text), "summary": None}
    description = describe(raw, MAX_RESULT_CHARS)
    return {"ok": True, "result": description, "summary": description.splitlines()[0][:200]}


def _frames(error: BaseException) -> list[str]:
    """The last frames of *error*'s traceback that are not ours, each bounded."""
    here = os.path.abspath(__file__)
    frames = [
        f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) != here
    ]
    lines = []
    for frame in frames[-FRAMES:]:
        text = f'File "{frame.filename}", line {frame.lineno}, in {frame.name}'
        if frame.line:
            text += f"\n    {frame.line.strip()}"
        lines.append(clip(text, FRAME_CHARS))
    return lines


# -- introspection -------------------------------------------------------------------------------
def _namespace(namespace: Mapping[str, Any] | None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The user's namespace and the names IPython put there itself."""
    if namespace is not None:
        return namespace, {}
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the kernel always has IPython
        return {}, {}
    shell = get_ipython()
    if shell is None:
        return {}, {}
    return shell.user_ns, getattr(shell, "user_ns_hidden", {})


def _kind(value: Any) -> str:
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or _is_tool(value):
        return "function"
    if isinstance(value, type):
        return "class"
    return "variable"


def _is_tool(value: Any) -> bool:
    from ..agent.tools import ToolSpec

    return isinstance(value, ToolSpec)


def list_variables_json(limit: Any = 50, namespace: Mapping[str, Any] | None = None) -> str:
    """The user's variables, then functions and classes: ``{"variables": [...], "truncated"}``.

    Modules, ``_``-names and IPython's own names are left out; each entry has ``name``,
    ``type``, ``kind`` (variable, function, class) and a one-line ``summary``.
    """
    try:
        most = max(int(limit), 1)
    except (TypeError, ValueError):
        most = 50
    values, hidden = _namespace(namespace)
    entries: dict[str, list[tuple[str, Any]]] = {"variable": [], "function": [], "class": []}
    for name, value in list(values.items()):
        if name.startswith("_") or name in _HIDDEN or isinstance(value, types.ModuleType):
            continue
        if name in hidden and hidden[name] is value:  # put there by IPython, not by the user
            continue
        entries[_kind(value)].append((name, value))
    ordered = entries["variable"] + entries["function"] + entries["class"]
    shown = []
    deadline = time.monotonic() + LISTING_SECONDS
    for name, value in ordered[:most]:
        summary = (
            short(value)
            if time.monotonic() < deadline
            else (
                "not described: describing the variables before it took too long (inspect_variable describes it)"
            )
        )
        shown.append(
            {"name": name, "type": type_name(value), "kind": _kind(value), "summary": summary}
        )
    return _answer({"variables": shown, "truncated": len(ordered) > most})


def inspect_variable_json(
    name: Any, max_chars: Any = 4000, namespace: Mapping[str, Any] | None = None
) -> str:
    """``{"name", "type", "description"}`` of one variable (``df`` or ``df.columns``), or ``{"error"}``."""
    try:
        wanted = _text(name).strip()
        limit = max(int(max_chars), 200)
    except (TypeError, ValueError) as error:
        return _answer({"error": f"The request could not be read: {error}."})
    found, value = lookup(wanted, namespace)
    if not found:
        return _answer({"error": value})
    return _answer(
        {"name": wanted, "type": type_name(value), "description": describe(value, limit)}
    )


def lookup(name: str, namespace: Mapping[str, Any] | None = None) -> tuple[bool, Any]:
    """``(True, value)`` for a variable or dotted attribute path, else ``(False, reason)``."""
    values, _hidden = _namespace(namespace)
    head, *rest = name.split(".")
    if not head.isidentifier() or not all(part.isidentifier() for part in rest):
        return False, f"{name!r} is not a variable name (use a name like df, or df.columns)."
    if head not in values:
        return False, (
            f"There is no variable named {head!r} in the kernel; run the cell that defines "
            "it first (list_variables shows the names that exist)."
        )
    value = values[head]
    for depth, part in enumerate(rest):
        path = ".".join([head, *rest[: depth + 1]])
        try:
            value = run_limited(functools.partial(getattr, value, part))
        except DescribeTimeout:
            return False, f"Reading {path} took more than 2 seconds; it was stopped."
        except Exception as error:  # noqa: BLE001 - a property is user code
            return False, f"Reading {path} failed: {type(error).__name__}: {safe_repr_text(error)}"
    return True, value
