"""The read-only kernel tools: ``list_variables`` and ``inspect_variable``.

They let the agent see what the notebook's kernel holds without asking the user to approve a
cell that prints it. Both run the kernel runtime's own introspection (type-aware, bounded
descriptions; a ``__repr__`` that hangs or raises is cut off after 2 s) through the server's
kernel client, silently, never through the user's client and never as a notebook cell.
"""

from __future__ import annotations

import re

from ..agent.tools import ToolContext, ToolResult, ToolSpec, aaep_tool
from ..errors import ToolError
from ..words import plural
from .kernel_tools import INSPECT_TIMEOUT, run_in_kernel, runtime_expression, service_of

__all__ = ["inspect_variable", "kernel_inspection_tools", "list_variables"]


async def _notebook_kernel(ctx: ToolContext) -> str | None:
    path = ctx.notebook_path
    if not path:
        raise ToolError("This chat is not attached to a notebook; open one in JupyterLab first.")
    info = await service_of(ctx).kernel(path)
    return info.kernel_id if info is not None else None


_NO_KERNEL = (
    "The notebook has no running kernel, so it has no variables yet. Running a cell starts "
    "one (run_cell), or the user can start it in JupyterLab."
)


@aaep_tool(risk_level="low", read_only=True, label="list variables")
async def list_variables(ctx: ToolContext, limit: int = 50) -> ToolResult:
    """List the variables in the notebook's kernel: name, type and a one-line summary (shape, length, columns, value).

    Use it before writing code that uses data already loaded: see what exists instead of guessing
    or running a cell to print it. It needs no approval and runs nothing of the notebook; modules,
    _-names and IPython's own names are left out, functions and classes come last.

    Parameters
    ----------
    limit : int
        The most variables to list, 1 to 200.
    """
    kernel_id = await _notebook_kernel(ctx)
    if kernel_id is None:
        return ToolResult(content=_NO_KERNEL, summary="The notebook has no running kernel.")
    answer = await run_in_kernel(
        ctx,
        kernel_id,
        runtime_expression("list_variables_json", min(max(limit, 1), 200)),
        what="list the variables",
        timeout=INSPECT_TIMEOUT,
    )
    entries = answer.get("variables") if isinstance(answer, dict) else None
    if not isinstance(entries, list):
        raise ToolError("Could not list the variables: the kernel's answer had no variables list.")
    if not entries:
        return ToolResult(
            content="The kernel has no user variables yet.",
            summary="No variables in the kernel yet.",
        )
    lines = [
        f"{e.get('name')} ({e.get('type')}{', ' + str(e['kind']) if e.get('kind') not in (None, 'variable') else ''})"
        f": {e.get('summary', '')}"
        for e in entries
        if isinstance(e, dict)
    ]
    if answer.get("truncated"):
        lines.append(f"[… only the first {len(entries)} are listed; raise limit to see more.]")
    count = len(entries)
    said = f"Listed {plural(count, 'variable')} in the kernel"
    names = ", ".join(str(e.get("name")) for e in entries[:8] if isinstance(e, dict))
    return ToolResult(
        content="\n".join(lines), summary=f"{said}: {names}{', …' if count > 8 else ''}."
    )


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@aaep_tool(risk_level="low", read_only=True, label="inspect a variable")
async def inspect_variable(ctx: ToolContext, name: str, max_chars: int = 4000) -> ToolResult:
    """Describe one variable of the notebook's kernel: its type and, by type, shape, columns with dtypes and a few rows (DataFrame), dtype and statistics (array), length and first items (list, dict, str), or its value.

    Use it to learn a variable's structure before writing code that uses it; it needs no approval
    and runs nothing of the notebook. A slow or failing __repr__ is cut off after 2 seconds.

    Parameters
    ----------
    name : str
        The variable's name, or a dotted attribute path such as df.columns.
    max_chars : int
        The most characters of description, 200 to 20000.
    """
    if not _NAME.match(name or ""):
        raise ToolError(f"{name!r} is not a variable name; give a name such as df, or df.columns.")
    kernel_id = await _notebook_kernel(ctx)
    if kernel_id is None:
        raise ToolError(_NO_KERNEL)
    expression = runtime_expression("inspect_variable_json", name, min(max(max_chars, 200), 20_000))
    answer = await run_in_kernel(
        ctx, kernel_id, expression, what=f"inspect {name}", timeout=INSPECT_TIMEOUT
    )
    if not isinstance(answer, dict):
        raise ToolError(f"Could not inspect {name}: the kernel's answer was not an object.")
    if "error" in answer:
        raise ToolError(str(answer["error"]))
    description = str(answer.get("description", ""))
    kind = answer.get("type", "value")
    return ToolResult(
        content=f"{name} ({kind}):\n{description}", summary=f"Inspected {name}, a {kind}."
    )


def kernel_inspection_tools() -> list[ToolSpec]:
    """The read-only kernel tools every notebook chat offers."""
    return [list_variables, inspect_variable]
