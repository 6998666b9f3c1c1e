"""How a cell run is told: compact text for the model, one short sentence for listeners.

The model gets the cell's number and id, how long it took, its execution count and its
outputs within a budget (errors as the exception plus the last frames); small plots can go
along as image blocks so the model can look at them. Listeners hear "Cell 3 ran in 1.2 seconds
and printed 2 lines." — never the output itself, which may hold anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._sessions import KernelInfo
from .render import render_error, render_outputs
from .service import CellRun

__all__ = ["describe_kernel", "image_blocks", "run_summary", "run_text", "seconds"]

_BLOCK_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def seconds(value: float) -> str:
    """ "0.4 seconds", "12 seconds", "2 minutes 5 seconds" — for people."""
    if value < 10:
        return f"{value:.1f} seconds"
    if value < 120:
        return f"{value:.0f} seconds"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes} minutes {rest} seconds"


def describe_kernel(info: KernelInfo | None, requested: str | None = None) -> str:
    if info is None:
        wanted = f" ({requested})" if requested else ""
        return f"no kernel running; one{wanted} starts on the first run"
    return f"{info.display_name} [{info.name}], {info.execution_state}"


def _error(outputs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((o for o in outputs if o.get("output_type") == "error"), None)


def _stream_lines(outputs: Sequence[dict[str, Any]]) -> int:
    text = "".join(str(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    return len(text.splitlines())


def run_summary(run: CellRun) -> str:
    """One sentence for a screen reader about what a run did."""
    result, took = run.result, seconds(run.result.elapsed)
    error = _error(result.outputs)
    if error is not None:
        return f"Cell {run.number} failed with {error.get('ename', 'an error')} after {took}."
    parts = []
    lines = _stream_lines(result.outputs)
    if lines:
        parts.append(f"printed {lines} line{'s' if lines != 1 else ''}")
    images = sum(1 for o in result.outputs for m in (o.get("data") or {}) if m.startswith("image/"))
    if images:
        parts.append(f"showed {images} image{'s' if images != 1 else ''}")
    if any(o.get("output_type") == "execute_result" for o in result.outputs):
        parts.append("returned a value")
    what = " and ".join(parts) if parts else "had no output"
    return f"Cell {run.number} ran in {took} and {what}."


def run_text(run: CellRun, *, budget: int) -> str:
    """What the model reads after a run."""
    result = run.result
    count = f" as [{result.execution_count}]" if result.execution_count is not None else ""
    error = _error(result.outputs)
    if error is not None:
        head = f"Cell {run.number} (id {run.cell_id}) raised {error.get('ename', 'an error')} after {result.elapsed:.1f} s{count}."
    else:
        head = f"Cell {run.number} (id {run.cell_id}) ran in {result.elapsed:.1f} s{count}: {result.status}."
    notes = []
    if run.kernel.started_now:
        notes.append(f"A new {run.kernel.display_name} kernel was started for this notebook first.")
    if run.cell_deleted:
        notes.append("The cell was deleted while it ran; its outputs exist only in this message.")
    body_budget = max(500, budget - len(head) - sum(len(n) for n in notes) - 40)
    if not result.outputs:
        body = "No output."
    else:
        others = [o for o in result.outputs if o is not error]
        body = ""
        if error is not None:
            body = "Error:\n" + render_error(error, min(3000, body_budget // 2), frames=4)
            body_budget -= len(body)
        if others:
            rendered = render_outputs(others, max(300, body_budget))
            body = f"Outputs:\n{rendered}" + (f"\n{body}" if body else "")
    return "\n".join([head, *notes, body])


def image_blocks(
    outputs: Sequence[dict[str, Any]], *, max_images: int, max_chars: int
) -> list[dict[str, Any]]:
    """Small plots as Anthropic image blocks (base64), so the model can see what it drew."""
    blocks: list[dict[str, Any]] = []
    for output in outputs:
        data = output.get("data") or {}
        for mime in _BLOCK_IMAGES:
            value = data.get(mime)
            if value is None:
                continue
            text = "".join(value) if isinstance(value, list) else str(value)
            text = "".join(text.split())  # base64 from kernels may carry newlines
            if len(text) <= max_chars and len(blocks) < max_images:
                blocks.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": mime, "data": text},
                    }
                )
            break
    return blocks
