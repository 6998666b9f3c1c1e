"""How a cell run is told: compact text for the model, one short sentence for listeners.

The model gets the cell's number and id, how long it took, its execution count and its
outputs within a budget (errors as the exception plus the last frames); small plots can go
along as image blocks so the model can look at them. Listeners hear the outcome the way a
person would tell it (docs/NARRATION.md): "Cell 3 ran: 2.0" (the first line of what it
printed or returned), "Cell 3 failed: NameError: name 'df' is not defined"; the detailed
summary carries the whole text output, bounded, for "Hear the last output". Secrets are
masked in everything a listener gets; ids and kernel spec names are never said.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..aaep.redaction import mask_secrets
from ..notebook._figures import ImageBudget, figure_blocks
from ..notebook._sessions import KernelInfo
from ..notebook.progress import parse_progress_text
from ..notebook.render import render_error, render_outputs, strip_ansi, truncate
from ..notebook.service import CellRun
from ..words import duration_words, elapsed_words, plural

__all__ = [
    "HeardRun",
    "describe_kernel",
    "heard_run",
    "image_blocks",
    "kernel_language",
    "run_text",
]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FIRST_LINE_CHARS = 200
"""How much of a run's first output line the normal summary says."""
DETAIL_CHARS = 4000
"""How much of a run's text output the detailed summary (and "Hear the last output") carries."""


def describe_kernel(info: KernelInfo | None, requested: str | None = None) -> str:
    if info is None:
        wanted = f" ({requested})" if requested else ""
        return f"no kernel running; one{wanted} starts on the first run"
    return f"{info.display_name} [{info.name}], {info.execution_state}"


def _error(outputs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((o for o in outputs if o.get("output_type") == "error"), None)


def kernel_language(display_name: str) -> str:
    """The language people know a kernel by: "Python 3 (ipykernel)" → "Python", "R" → "R"."""
    name = re.sub(r"\s*[\(\[].*?[\)\]]", "", display_name).strip()
    name = re.sub(r"(\s+v?\d[\w.]*)+$", "", name).strip()
    return name or display_name


def _output_text(outputs: Sequence[dict[str, Any]]) -> str:
    """The text a person would read in the output area: printed text and text results."""
    parts: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(str(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            if WIDGET_VIEW in (output.get("data") or {}):
                continue  # a widget's text/plain is a stale snapshot (a progress bar at 0 %)
            value = (output.get("data") or {}).get("text/plain")
            if value is not None and not any(
                m.startswith("image/") for m in output.get("data") or {}
            ):
                parts.append(("".join(value) if isinstance(value, list) else str(value)) + "\n")
    return strip_ansi("".join(parts)).strip("\n")


SEARCHED_LINES = 500
"""Lines at each end of a run's output searched for its first line that is not progress."""


LINE_BLOCK_CHARS = 1 << 20
"""A long output's lines are made this many characters at a time (see :func:`_line_ends`)."""


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _blocks(text: str, *, backwards: bool = False) -> Iterator[str]:
    """*text* in pieces of about :data:`LINE_BLOCK_CHARS`, each cut after a newline, so that
    their lines are the lines of *text*; last piece first when *backwards*."""
    cuts = [0]
    while len(text) - cuts[-1] > LINE_BLOCK_CHARS:
        cut = text.find("\n", cuts[-1] + LINE_BLOCK_CHARS) + 1
        if cut <= 0:
            break
        cuts.append(cut)
    bounds = list(zip(cuts, [*cuts[1:], len(text)], strict=True))
    for start, end in reversed(bounds) if backwards else bounds:
        yield text[start:end]


def _line_ends(text: str, ends: int = SEARCHED_LINES) -> tuple[list[str], list[str], int]:
    """The first and the last *ends* lines of *text* that are not blank (stripped), and how many
    such lines it has. Made a block at a time: splitting a 50 MB output at once made half a
    million strings together (some 75 MB of small objects in the server at once)."""
    head: list[str] = []
    tail: deque[str] = deque(maxlen=ends)
    count = 0
    for block in _blocks(text):
        lines = _lines(block)
        count += len(lines)
        head.extend(lines[: max(0, ends - len(head))])
        tail.extend(lines)
    return head, list(tail), count


@dataclass(frozen=True)
class HeardRun:
    """What listeners hear about one run, at each verbosity."""

    normal: str
    terse: str
    detailed: str


def heard_run(run: CellRun) -> HeardRun:
    """The outcome of a run in the user's words: status, then the first line of output or the
    error line; the detailed text has the whole text output (bounded). A run whose kernel
    dropped some of its output says so."""
    heard = _heard(run)
    if run.result.complete:
        return heard
    lost = " Some of its output was lost on the way: it came faster than it could be read."
    return HeardRun(heard.normal + lost, heard.terse + " Output lost.", heard.detailed + lost)


def _heard(run: CellRun) -> HeardRun:
    result, n = run.result, run.number
    took = elapsed_words(result.elapsed) if result.elapsed >= 1 else "less than a second"
    after = f" after {took}" if result.elapsed >= 1 else ""
    error = _error(result.outputs)
    text = mask_secrets(_output_text(result.outputs))
    head, tail, count = _line_ends(text)
    images = sum(1 for o in result.outputs for m in (o.get("data") or {}) if m.startswith("image/"))
    shown = f" It showed {plural(images, 'image')}." if images else ""
    if error is not None:
        value = _lines(strip_ansi(str(error.get("evalue") or "")))
        line = mask_secrets(
            f"{error.get('ename') or 'Error'}: {value[0]}"
            if value
            else str(error.get("ename") or "an error")
        )
        line = truncate(line, FIRST_LINE_CHARS)
        printed = f" Before that it printed:\n{truncate(text, DETAIL_CHARS)}" if text else ""
        return HeardRun(
            normal=f"Cell {n} failed: {_sentence(line)}",
            terse=f"Cell {n} failed: {_sentence(truncate(line, 80))}",
            detailed=f"Cell {n} failed{after}: {_sentence(line)}{printed}",
        )
    if not count:
        what = f"showed {_images(images)}" if images else "had no output"
        return HeardRun(
            normal=f"Cell {n} ran and {what}.",
            terse=f"Cell {n}: {'no output' if not images else _images(images)}.",
            detailed=f"Cell {n} ran in {took} and {what}.",
        )
    # A loop's progress lines ("step 1/30", a tqdm bar) say nothing about the outcome: skip them.
    # Only the first other line is needed, looked for near the start and the end: a 10 MB
    # output parsed line by line took a minute.
    searched = head + tail if count > SEARCHED_LINES else head
    telling = [next((line for line in searched if parse_progress_text(line) is None), head[0])]
    first = truncate(telling[0], FIRST_LINE_CHARS)
    more = count - 1
    rest = f" Plus {plural(more, 'more line')}." if more else ""
    slow = f" after {took}" if run.result.elapsed >= 10 else ""
    return HeardRun(
        normal=f"Cell {n} ran{slow}: {_sentence(first)}{rest}{shown}",
        terse=f"Cell {n}: {_sentence(truncate(telling[0], 80))}",
        detailed=f"Cell {n} ran in {took}. Output:\n{truncate(text, DETAIL_CHARS)}{shown}",
    )


def _images(count: int) -> str:
    return plural(count, "image")


def _sentence(text: str) -> str:
    """End a spoken line with a full stop (a pause before what follows), unless it ends one."""
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


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
    if not result.complete:
        notes.append(_lost_output(result.missed, result.end_heard))
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


def _lost_output(missed: int, end_heard: bool) -> str:
    """Said when the kernel dropped some of a run's output (it came faster than it was read)."""
    why = "The cell sent output faster than it could be read, and the kernel dropped "
    if not end_heard:
        return (
            why + "the end of it: the outputs below (and in the notebook) may stop before the "
            "cell's last output. Run it again with less output if its end matters."
        )
    return (
        why + f"{plural(missed, 'output message')}: some output updates were skipped, so lines "
        "may be missing; the last line shown is the last one that arrived."
    )


def image_blocks(
    outputs: Sequence[dict[str, Any]], *, max_images: int, max_chars: int, max_edge: int = 1024
) -> tuple[list[dict[str, Any]], list[str]]:
    """Plots as Anthropic image blocks (downscaled to the budget), so the model can see what it
    drew; and a sentence for each figure that was not sent."""
    found = figure_blocks(
        outputs, ImageBudget(max_images=max_images, max_edge=max_edge, max_chars=max_chars)
    )
    return found.blocks, found.notes


def end_sentence(
    number: int | None, elapsed: float, outputs: Sequence[dict[str, Any]], *, last_line: str = ""
) -> tuple[str, bool]:
    """The one sentence that ends a long run, and whether it failed.

    "Cell 7 finished after 3 min 12 s: accuracy 0.91." (its result, else the last line it
    printed: after a long run the last line is the one that matters), "Cell 7 failed after
    40 s: ValueError: …", "Cell 7 was interrupted after 2 min.". *number* ``None``: a cell
    no longer in the notebook ("A cell").
    """
    who = f"Cell {number}" if number else "A cell"
    took = duration_words(elapsed)
    error = _error(outputs)
    if error is not None:
        name = str(error.get("ename") or "Error")
        if name == "KeyboardInterrupt":
            return f"{who} was interrupted after {took}.", False
        value = _lines(strip_ansi(str(error.get("evalue") or "")))
        line = mask_secrets(f"{name}: {value[0]}" if value else name)
        return f"{who} failed after {took}: {_sentence(truncate(line, FIRST_LINE_CHARS))}", True
    result = next((o for o in outputs if o.get("output_type") == "execute_result"), None)
    said = ""
    if result is not None:
        said = next(iter(_lines(_output_text([result]))), "")
    if not said:  # the last line printed that is not a progress bar, looked for from the end
        text = mask_secrets(_output_text(outputs)).replace("\r", "\n")
        printed = (
            line
            for block in _blocks(text, backwards=True)
            for line in reversed(_lines(block))
            if parse_progress_text(line) is None or "%|" not in line
        )
        said = next(printed, "") or mask_secrets(last_line)
    tail = f": {_sentence(truncate(said, FIRST_LINE_CHARS))}" if said else "."
    return f"{who} finished after {took}{tail}", False
