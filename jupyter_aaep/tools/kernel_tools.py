"""The kernel-tool bridge: notebook functions as agent tools, and running the kernel runtime.

A function decorated with ``@aaep_tool`` in a notebook becomes a tool of that notebook's chats:
the kernel sends its name, description, schema and risk metadata (``PUT aaep/v1/kernel/tools/…``)
and keeps the function. :class:`KernelToolRegistry` holds those descriptions per kernel; a chat's
:class:`LiveToolRegistry` looks them up at every model turn, so a tool defined while the agent
works is offered at its next turn. A kernel restart or shutdown drops its tools (checked against
the kernel's process on every look-up, so no event can be missed).

Calling one runs ``jupyter_aaep.kernel.runtime.call_tool_json(...)`` in that kernel through the
server's own kernel client (:meth:`KernelExecutor.evaluate`: silent, queued behind a running
cell), never the user's client; the inspection tools (:mod:`.kernel_inspection`) run the
runtime's introspection the same way. The answer is JSON inside a Python string literal (the ``text/plain``
of a ``user_expressions`` entry).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..aaep.ids import TOOL_NAME
from ..aaep.redaction import mask_secrets, redact_arguments
from ..agent.tool_schema import schema_problem
from ..agent.tools import (
    ActionPreview,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolSpec,
)
from ..errors import RequestError, ToolError
from ..notebook.service import NotebookService
from ..words import duration_words

__all__ = [
    "KernelTool",
    "KernelToolRegistry",
    "LiveToolRegistry",
    "parse_answer",
    "run_in_kernel",
    "runtime_expression",
    "service_of",
]

RUNTIME = "__import__('jupyter_aaep.kernel.runtime', fromlist=['_'])"
"""How the server reaches the kernel-side runtime (an expression: no import in the user's namespace)."""
TOOL_TIMEOUT = 300.0
"""Seconds a kernel tool may run before the kernel is interrupted."""
INSPECT_TIMEOUT = 30.0
"""Seconds list_variables / inspect_variable may take (each repr is cut at 2 s in the kernel)."""
RESULT_CHARS = 20_000
"""Most characters of a kernel tool's result given to the model."""
MAX_TOOLS_PER_KERNEL = 64
MAX_DESCRIPTION = 4_000
MAX_SCHEMA_BYTES = 32_000
MISSING_PACKAGE = (
    "the notebook's kernel does not have jupyter_aaep installed; install it in the kernel's "
    "environment (pip install jupyter-aaep in the environment the kernel runs in) and restart the "
    "kernel, or switch the notebook to a kernel of the server's environment."
)


# -- running the runtime in the kernel ----------------------------------------------------------
def runtime_expression(function: str, *arguments: Any) -> str:
    """``RUNTIME.function(a, b)`` with each argument a Python literal (strings as JSON text)."""
    literals = [
        repr(json.dumps(a, ensure_ascii=False)) if isinstance(a, (str, dict)) else repr(a)
        for a in arguments
    ]
    return f"{RUNTIME}.{function}({', '.join(literals)})"


def service_of(ctx: ToolContext) -> NotebookService:
    service = ctx.services.notebook
    if not isinstance(service, NotebookService):
        raise ToolError("Kernel tools are not available here (the server has no notebook service).")
    return service


def _seconds(value: float) -> str:
    return duration_words(value, short=False) if value >= 2 else "a moment"


async def run_in_kernel(
    ctx: ToolContext, kernel_id: str, expression: str, *, what: str, timeout: float
) -> Any:
    """Evaluate one runtime *expression* in the kernel and return its parsed JSON answer.

    Progress ("waiting for the kernel") goes to the session while the kernel is busy with a
    cell; failures are :class:`ToolError` sentences naming *what* was being done.
    """

    def progress(elapsed: float, waiting: bool) -> None:
        if waiting:
            ctx.report_progress(
                f"Waiting for the kernel to {what}: it is busy running another cell."
            )
        else:
            ctx.report_progress(
                f"Still waiting for the kernel to {what} after {_seconds(elapsed)}."
            )

    answers = await service_of(ctx).executor.evaluate(
        kernel_id, {"aaep": expression}, timeout=timeout, on_progress=progress
    )
    return parse_answer(answers.get("aaep") or {}, what=what)


def parse_answer(entry: dict[str, Any], *, what: str) -> Any:
    """The JSON inside one ``user_expressions`` entry, or a ToolError that says what went wrong."""
    if entry.get("status") != "ok":
        name, value = str(entry.get("ename", "")), str(entry.get("evalue", ""))
        if name in ("ModuleNotFoundError", "ImportError") and "jupyter_aaep" in value:
            raise ToolError(f"Could not {what}: {MISSING_PACKAGE}")
        if name == "KeyboardInterrupt":
            raise ToolError(f"Could not {what}: the kernel was interrupted before it finished.")
        if not name:
            raise ToolError(
                f"Could not {what}: the kernel gave no answer. Try again; restart the kernel if it persists."
            )
        raise ToolError(
            f"Could not {what}: the kernel answered {name}: {mask_secrets(value)[:500]}."
        )
    text = str((entry.get("data") or {}).get("text/plain", ""))
    try:
        value = ast.literal_eval(text)
        return json.loads(value) if isinstance(value, str) else value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ToolError(
            f"Could not {what}: the kernel's answer was not the JSON text expected ({text[:120]!r}…). "
            "The kernel may run another version of jupyter_aaep than the server; install the same one."
        ) from None


# -- kernel tools ---------------------------------------------------------------------------------
@dataclass
class KernelTool(ToolSpec):
    """A tool whose function lives in a notebook's kernel; calling it runs it there."""

    kernel_id: str = ""
    timeout: float = TOOL_TIMEOUT

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ToolError(
            f"{self.name} runs in the notebook's kernel; the server can only call it through the agent."
        )

    def call_text(self, arguments: dict[str, Any]) -> str:
        """The call as people read it: ``load_sales(region='north')`` (secrets masked)."""
        shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        return mask_secrets(f"{self.name}({shown})")

    async def describe(self, ctx: ToolContext, arguments: dict[str, Any]) -> ActionPreview:
        redacted = redact_arguments(arguments).summary()
        call = self.call_text(arguments)
        label = self.human_label()
        return ActionPreview(
            summary=f"Calling the notebook function {self.name}.",
            terse=f"Call {self.name}.",
            detail=f"Calling {label}, a function defined in the notebook's kernel, with {redacted}.",
            action=f"Run the notebook's own function {call} in its kernel.",
            consequence="It runs code defined in your notebook, with your kernel's variables and access; "
            "what it does cannot be undone by the agent.",
            extra_context={"code": call, "function": self.name, "kernel_tool": True},
            args_summary=redacted,
        )

    async def call(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        expression = (
            runtime_expression("call_tool_json", self.name, arguments)[:-1]
            + f", {ctx.tool_call_id!r})"
        )
        answer = await run_in_kernel(
            ctx, self.kernel_id, expression, what=f"run {self.name}", timeout=self.timeout
        )
        if not isinstance(answer, dict):
            raise ToolError(f"Could not run {self.name}: the kernel's answer was not an object.")
        if answer.get("ok") is not True:
            error = str(answer.get("error") or "it failed without a message")
            frames = [str(f) for f in answer.get("traceback") or []][-5:]
            text = f"{self.name} raised {error}"
            if frames:
                text += "\nLast frames (most recent call last):\n" + "\n".join(frames)
            return ToolResult(
                content=text,
                summary=f"{self.human_label().capitalize()} failed: {error[:200]}",
                is_error=True,
                error_message=f"{self.name} raised {error[:300]}",
            )
        result, summary = answer.get("result"), answer.get("summary")
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        if len(content) > RESULT_CHARS:
            content = (
                content[:RESULT_CHARS] + f"\n[… cut: the result has {len(content):,} characters.]"
            )
        heard = (
            f"{self.name} returned {summary}"
            if summary
            else f"{self.name} returned {_short(content)}"
        )
        return ToolResult(content=content, summary=heard[:300])


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:79] + "…"


@dataclass
class _KernelEntry:
    kernel_id: str
    notebook_path: str
    token: Any
    tools: dict[str, KernelTool] = field(default_factory=dict)


def _bool(body: dict[str, Any], key: str, default: bool | None) -> bool | None:
    value = body.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise RequestError(400, f"{key} must be true or false, not {value!r}.")
    return value


def tool_from_body(name: str, body: dict[str, Any], kernel_id: str) -> KernelTool:
    """A :class:`KernelTool` from a ``PUT`` body; RequestError 400 saying what is wrong."""
    if not TOOL_NAME.match(name) or len(name) > 64 or "." in name:
        raise RequestError(
            400, f"The tool name {name!r} must be letters, digits, '_' or '-' (at most 64)."
        )
    description = body.get("description")
    if not isinstance(description, str) or not description.strip():
        raise RequestError(400, f"Tool {name} needs a description: give the function a docstring.")
    schema = body.get("input_schema", {"type": "object", "properties": {}})
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise RequestError(
            400, f'The input_schema of {name} must be a JSON Schema object with "type": "object".'
        )
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise RequestError(
            400, f"The input_schema of {name} is larger than {MAX_SCHEMA_BYTES:,} bytes."
        )
    problem = schema_problem(schema)
    if problem:
        raise RequestError(
            400,
            f"Tool {name} was not registered: {problem}. Fix the function's type hints "
            "(or the schema you gave) and run the cell again.",
        )
    risk = body.get("risk_level", "low")
    if risk not in ("low", "medium", "high"):
        raise RequestError(400, f"risk_level must be low, medium or high, not {risk!r}.")
    irreversible = bool(_bool(body, "irreversible", False))
    confirm = _bool(body, "require_confirmation", None)
    label = body.get("label")
    if label is not None and (not isinstance(label, str) or len(label) > 80):
        raise RequestError(400, "label must be a short text (at most 80 characters) or null.")
    return KernelTool(
        name=name,
        description=description.strip()[:MAX_DESCRIPTION],
        input_schema=schema,
        func=_never_called,
        risk_level=risk,
        irreversible=irreversible,
        require_confirmation=irreversible or risk == "high" if confirm is None else confirm,
        read_only=bool(_bool(body, "read_only", False)),
        label=label or None,
        kernel_id=kernel_id,
    )


def _never_called(**_: Any) -> Any:  # pragma: no cover - KernelTool.call replaces it
    raise ToolError("A kernel tool runs in the kernel.")


class KernelToolRegistry:
    """The kernel tools of every notebook kernel on this server, by kernel.

    Parameters
    ----------
    process_token
        ``kernel_id -> token or None``: identifies the kernel's current process (``None`` when
        the kernel is gone); a kernel's tools are dropped as soon as it no longer matches.
    reserved
        The names of the built-in tools, which a kernel tool may not take.
    """

    def __init__(
        self, process_token: Callable[[str], Any], reserved: Callable[[], Iterable[str]]
    ) -> None:
        self._process_token = process_token
        self._reserved = reserved
        self._kernels: dict[str, _KernelEntry] = {}

    def _live(self, kernel_id: str) -> _KernelEntry | None:
        entry = self._kernels.get(kernel_id)
        if entry is not None and self._process_token(kernel_id) != entry.token:
            del self._kernels[kernel_id]  # restarted or shut down: its functions are gone
            return None
        return entry

    def put(
        self, kernel_id: str, notebook_path: str, name: str, body: dict[str, Any]
    ) -> KernelTool:
        """Register (or replace) a tool of *kernel_id*; RequestError 400/409 when it cannot be."""
        if name in set(self._reserved()):
            raise RequestError(
                409,
                f"{name} is the name of a built-in tool of the agent; give your function "
                "another name (or @aaep_tool(name=...)).",
            )
        tool = tool_from_body(name, body, kernel_id)
        token = self._process_token(kernel_id)
        if token is None:
            raise RequestError(409, "That kernel is no longer running.")
        entry = self._live(kernel_id)
        if entry is None:
            entry = self._kernels[kernel_id] = _KernelEntry(kernel_id, notebook_path, token)
        entry.notebook_path = notebook_path
        if name not in entry.tools and len(entry.tools) >= MAX_TOOLS_PER_KERNEL:
            raise RequestError(
                409,
                f"This kernel already has {MAX_TOOLS_PER_KERNEL} tools; remove some with "
                "%aaep tools --remove NAME first.",
            )
        entry.tools[name] = tool
        return tool

    def remove(self, kernel_id: str, name: str) -> bool:
        entry = self._live(kernel_id)
        return entry is not None and entry.tools.pop(name, None) is not None

    def drop_kernel(self, kernel_id: str) -> None:
        self._kernels.pop(kernel_id, None)

    def of_kernel(self, kernel_id: str) -> list[KernelTool]:
        entry = self._live(kernel_id)
        return list(entry.tools.values()) if entry is not None else []

    def for_notebook(self, path: str | None) -> list[KernelTool]:
        """The tools of the kernels this notebook's kernels registered (normally one kernel)."""
        if not path:
            return []
        found: list[KernelTool] = []
        for kernel_id in [k for k, e in self._kernels.items() if e.notebook_path == path]:
            found.extend(self.of_kernel(kernel_id))
        return found

    def registry(
        self, builtin: Iterable[ToolSpec], notebook_path: Callable[[], str | None]
    ) -> LiveToolRegistry:
        """One chat's registry: the built-in tools, then this notebook's kernel tools of the moment."""
        return LiveToolRegistry(builtin, lambda: self.for_notebook(notebook_path()))


class LiveToolRegistry(ToolRegistry):
    """A registry whose extra tools are looked up at each use (kernel tools come and go mid-session).

    Built-in tools win a name clash (the registry refuses such kernel tools anyway).
    """

    def __init__(self, tools: Iterable[ToolSpec], extra: Callable[[], Iterable[ToolSpec]]) -> None:
        super().__init__(tools)
        self._extra = extra

    def _current(self) -> dict[str, ToolSpec]:
        merged = dict(self._tools)
        for tool in self._extra():
            merged.setdefault(tool.name, tool)
        return merged

    def get(self, name: str) -> ToolSpec | None:
        return self._current().get(name)

    def names(self) -> list[str]:
        return list(self._current())

    def __contains__(self, name: object) -> bool:
        return name in self._current()

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(list(self._current().values()))

    def __len__(self) -> int:
        return len(self._current())

    def model_tools(self, *, cache: bool = True) -> list[dict[str, Any]]:
        tools = [tool.model_schema() for tool in self._current().values()]
        if cache and tools:
            tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
        return tools
