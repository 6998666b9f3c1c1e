"""Helpers shared by the live-notebook tests (a module with a unique name: see conftest)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nbformat
from jupyter_ydoc import YNotebook


class Progress(list[str]):
    """Records what listeners hear of each progress report (the summary, else the description)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    def __call__(self, description: str, **options: Any) -> None:
        self.calls.append({"description": description, **options})
        self.append(options.get("summary") or description)


def write_notebook(
    root: Path, path: str, cells: list[dict[str, Any]], *, kernelspec: str | None = "python3"
) -> str:
    """Write a notebook with the given cells (each needs an ``id``); returns *path*."""
    nb = nbformat.v4.new_notebook()
    for spec in cells:
        maker = (
            nbformat.v4.new_code_cell
            if spec.get("cell_type", "code") == "code"
            else nbformat.v4.new_markdown_cell
        )
        cell = maker(spec.get("source", ""))
        cell["id"] = spec["id"]
        if "outputs" in spec:
            cell["outputs"] = [nbformat.from_dict(o) for o in spec["outputs"]]
        nb.cells.append(cell)
    if kernelspec:
        nb.metadata["kernelspec"] = {
            "name": kernelspec,
            "display_name": kernelspec,
            "language": "python",
        }
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(nb))
    return path


async def wait_for(
    condition: Callable[[], Any], *, timeout: float = 10.0, what: str = "a condition"
) -> Any:
    """Poll *condition* until it is truthy (returns its value) or fail after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


def cell_by_id(doc: YNotebook, cell_id: str) -> dict[str, Any] | None:
    for ycell in doc.ycells:
        if ycell.get("id") == cell_id:
            return dict(ycell.to_py())
    return None


def on_server_loop(test: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """Run an async test on the Jupyter server's own event loop.

    pytest-jupyter serves HTTP on ``jp_asyncio_loop``, while pytest-asyncio (``asyncio_mode =
    "auto"``) would run ``async def`` tests on a loop of its own, where the server never
    answers. The decorated test is a plain function (so pytest-asyncio leaves it alone) that
    runs the coroutine on the server's loop.
    """
    signature = inspect.signature(test)
    extra = "jp_asyncio_loop" not in signature.parameters

    def run(*args: Any, **kwargs: Any) -> Any:
        loop = kwargs.pop("jp_asyncio_loop") if extra else kwargs["jp_asyncio_loop"]
        return loop.run_until_complete(test(*args, **kwargs))

    run.__name__, run.__qualname__, run.__doc__, run.__module__ = (
        test.__name__,
        test.__qualname__,
        test.__doc__,
        test.__module__,
    )
    parameters = list(signature.parameters.values())
    if extra:
        parameters.append(inspect.Parameter("jp_asyncio_loop", inspect.Parameter.KEYWORD_ONLY))
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return run
