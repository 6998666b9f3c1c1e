"""Tools that run code and control the kernel: run_cell, run_all_cells, interrupt, restart.

Running code cannot be undone, so these ask first. The approval is bound to the exact source
the person saw (the preview's ``fingerprint``); if the cell changed since, the call raises
:class:`StaleApproval` before anything runs, and the loop asks again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..agent.tools import ActionPreview, StaleApproval, ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..notebook.documents import LiveNotebook, normalize_path
from ..notebook.errors import ExecutionTimeout, KernelBusy, KernelDied
from ..notebook.render import render_outputs, strip_ansi, truncate
from ..notebook.running import RunningCell
from ..notebook.service import CellRun, NotebookService, cells_fingerprint, source_fingerprint
from ..words import duration_words, plural
from ._cell_wait import still_running, wait_on
from ._run_text import heard_run, image_blocks, kernel_language, run_text
from ._tool_common import MISSING, chat_path, service_of
from .code_risk import risk_level_for, scan, scan_cells

__all__ = ["interrupt_kernel", "restart_kernel", "run_all_cells", "run_cell", "wait_for_cell"]

CODE_CONSEQUENCE = "It can change variables and files; Undo cannot reverse what code did."
"""What a person approving code to run is told happens (one cell or many)."""

# -- running ------------------------------------------------------------------------------------


def _waiting(ctx: ToolContext, label: str) -> Callable[[float, bool], None]:
    """Said while the run waits for the kernel (busy with a cell someone else started)."""

    def report(elapsed: float, waiting: bool) -> None:
        if waiting:
            ctx.report_progress(f"{label} is waiting: the kernel is busy with another cell.")

    return report


def _limit(timeout_seconds: float | None) -> float | None:
    return (
        None
        if timeout_seconds is None or timeout_seconds <= 0
        else min(max(timeout_seconds, 1), 24 * 3600)
    )


async def _start(
    ctx: ToolContext,
    service: NotebookService,
    path: str,
    cell_id: str,
    source: str,
    number: int,
    limit: float | None,
    window: float,
    notebook: LiveNotebook | None = None,
) -> RunningCell:
    """Start the run; gives up (nothing runs) if the kernel stays busy beyond the window.

    *notebook*: the live notebook just opened to check the cell, with no ``await`` since
    (saves opening it again); ``None`` opens it afresh (a later cell of ``run_all_cells``)."""
    turn = max(1.0, min(window, limit) if limit is not None else window)
    try:
        run = await service.start_cell(
            path,
            cell_id,
            source=source,
            limit=limit,
            turn_timeout=turn,
            on_progress=_waiting(ctx, f"Cell {number}"),
            notebook=notebook,
        )
    except (ExecutionTimeout, KernelBusy, KernelDied) as error:
        raise type(error)(f"Cell {number} (id {cell_id}): {error}") from None
    return run


def finished_result(service: NotebookService, run: CellRun) -> ToolResult:
    """The model's text (with small plots) and the listeners' sentence for a run that ended."""
    text = run_text(run, budget=service.run_output_budget)
    images, notes = image_blocks(
        run.result.outputs,
        max_images=service.max_images,
        max_chars=service.max_image_chars,
        max_edge=service.image_max_edge,
    )
    if notes:
        text = "\n".join([text, *notes])
    content: Any = [{"type": "text", "text": text}, *images] if images else text
    # A cell that raised is a failed step (the model still reads the traceback in *content*).
    failure = _error_line(run.result.outputs)
    if failure is None and run.result.status == "error":
        failure = f"Cell {run.number} ended with an error status and no error output."
    heard = heard_run(run)
    return ToolResult(
        content=content,
        summary=heard.normal,
        terse=heard.terse,
        detail=heard.detailed,
        is_error=failure is not None,
        error_message=failure,
    )


@aaep_tool(risk_level="medium", irreversible=True, label="run a cell")
async def run_cell(
    ctx: ToolContext, cell_id: str, timeout_seconds: float | None = None
) -> ToolResult:
    """Run a code cell in the notebook's kernel and return its outputs (they also appear in the notebook).

    The user usually approves the exact code first. Variables persist in the kernel, as when the user runs the cell.
    A cell that takes long is not stopped: after a while you get "still running" with its progress and last output,
    and it goes on; call wait_for_cell to wait for its end, interrupt_kernel to stop it.

    Parameters
    ----------
    cell_id : str
        The id of the code cell to run.
    timeout_seconds : float, optional
        Interrupt the cell if it runs longer than this many seconds. Leave it out for no limit
        (training and other long work); only set it when the user asks for a limit.
    """
    service, path = service_of(ctx), chat_path(ctx)
    nb = await service.open(path)
    cell = nb.cell(cell_id)
    number, source = nb.index_of(cell_id) + 1, str(cell.get("source", ""))
    if ctx.approved_fingerprint is not None and ctx.approved_fingerprint != source_fingerprint(
        source
    ):
        raise StaleApproval(
            f"Cell {number} changed after it was approved; it was not run. Ask again with the current code."
        )
    if cell.get("cell_type") != "code":
        raise ToolError(
            f"Cell {number} is a {cell.get('cell_type')} cell; only code cells can run."
        )
    if not source.strip():
        return ToolResult(
            content=f"Cell {number} (id {cell_id}) is empty; nothing ran.",
            summary=f"Cell {number} is empty.",
        )
    window = service.run_cell_wait_seconds
    running = await _start(
        ctx, service, path, cell_id, source, number, _limit(timeout_seconds), window, nb
    )
    # The window counts from when the kernel started the code (not the kernel's own start-up).
    run = await wait_on(ctx, running, window - running.elapsed())
    return still_running(running) if run is None else finished_result(service, run)


@run_cell.preview
async def _preview_run_cell(
    ctx: ToolContext, cell_id: str, timeout_seconds: float | None = None
) -> ActionPreview:
    try:
        service = service_of(ctx)
        nb = await service.open(chat_path(ctx))
        number, source = nb.index_of(cell_id) + 1, str(nb.cell(cell_id).get("source", ""))
        kernel = await service.kernel(nb.path)
    except ToolError:
        return ActionPreview(
            summary="Running a cell.",
            terse="Run a cell.",
            fingerprint=MISSING,
            action="Run a cell that is no longer in the notebook.",
        )
    # The other cells' imports tell what names in this one mean (``import subprocess as sp``).
    others = [
        str(c.get("source", ""))
        for c in nb.cells()
        if c.get("cell_type") == "code" and c.get("id") != cell_id
    ]
    findings = scan(source, context=others)
    # In the user's words: the cell's number, its length and the kernel's language (never an
    # id or a kernel spec name like "Python 3 (ipykernel)").
    lines = len(source.splitlines()) or 1
    kernel_name = f"the {kernel_language(kernel.display_name)} kernel" if kernel else "a new kernel"
    return ActionPreview(
        summary=f"Running cell {number}.",
        terse=f"Run cell {number}.",
        action=f"Run cell {number}, {plural(lines, 'line')} of code, in {kernel_name}.",
        consequence=CODE_CONSEQUENCE,
        extra_context={"cell_id": cell_id, "cell_number": number, "code": source},
        fingerprint=source_fingerprint(source),
        risk_level=risk_level_for(findings) if findings else None,
        risk_flags=tuple(f.reason for f in findings),
    )


def _code_cells(
    nb: LiveNotebook, from_cell_id: str | None, to_cell_id: str | None
) -> list[tuple[int, str, str]]:
    first = nb.index_of(from_cell_id) if from_cell_id else 0
    last = nb.index_of(to_cell_id) if to_cell_id else len(nb) - 1
    return [
        (i + 1, str(c["id"]), str(c.get("source", "")))
        for i, c in enumerate(nb.cells())
        if first <= i <= last and c.get("cell_type") == "code" and str(c.get("source", "")).strip()
    ]


@aaep_tool(risk_level="medium", irreversible=True, label="run all cells")
async def run_all_cells(
    ctx: ToolContext,
    from_cell_id: str | None = None,
    to_cell_id: str | None = None,
    timeout_seconds: float | None = None,
) -> ToolResult:
    """Run the notebook's code cells in order, top to bottom, stopping at the first error.

    A long cell is not stopped: after a while you get "still running" for it, and the cells
    after it have not run yet; wait for it with wait_for_cell, then run the rest from the next cell.

    Parameters
    ----------
    from_cell_id : str, optional
        Start at this cell instead of the first one.
    to_cell_id : str, optional
        Stop after this cell instead of the last one.
    timeout_seconds : float, optional
        A time limit for each cell (a cell over it is interrupted and the run stops). Leave it out for no limit.
    """
    service, path = service_of(ctx), chat_path(ctx)
    cells = _code_cells(await service.open(path), from_cell_id, to_cell_id)
    if ctx.approved_fingerprint is not None and ctx.approved_fingerprint != cells_fingerprint(
        [(c, s) for _, c, s in cells]
    ):
        raise StaleApproval("The cells changed after the run was approved; nothing ran. Ask again.")
    lines: list[str] = []
    last: CellRun | None = None
    budget = service.run_cell_wait_seconds
    """Seconds of running the cells may use before the answer is "still running"."""
    for step, (number, cell_id, source) in enumerate(cells, 1):
        ctx.report_progress(
            f"Running cell {number} ({step} of {len(cells)}).", step=step, total_steps=len(cells)
        )
        try:
            running = await _start(
                ctx,
                service,
                path,
                cell_id,
                source,
                number,
                _limit(timeout_seconds),
                service.run_cell_wait_seconds,
            )
            last = await wait_on(ctx, running, budget - running.elapsed())
        except ToolError as error:
            lines.append(f"cell {number} (id {cell_id}): stopped: {error}")
            raise type(error)("\n".join(["Ran until a cell failed:", *lines])) from None
        if last is None:
            rest = [n for n, _, _ in cells[step:]]
            waiting = still_running(running)
            after = (
                f" Cells {rest[0]} to {rest[-1]} have not run yet"
                if len(rest) > 1
                else f" Cell {rest[0]} has not run yet"
                if rest
                else ""
            )
            next_id = cells[step][1] if step < len(cells) else None
            listing = truncate("\n".join(lines), service.run_output_budget // 2, keep_tail=0.7)
            resume = (
                f": when it ends, call run_all_cells with from_cell_id={next_id!r}."
                if next_id
                else "."
            )
            return ToolResult(
                content="\n".join(
                    part for part in [listing, str(waiting.content) + after + resume] if part
                ),
                summary=f"Ran {plural(step - 1, 'cell')}; {running.status_sentence()[0].lower()}{running.status_sentence()[1:]}",
                terse=waiting.terse,
            )
        budget = max(0.0, budget - last.result.elapsed)
        status = "error" if last.result.status == "error" else "ok"
        lines.append(
            f"cell {number} (id {cell_id}) [{last.result.execution_count}] {status}, {last.result.elapsed:.1f} s"
        )
        if status == "error":
            detail = run_text(last, budget=service.run_output_budget // 2)
            listing = truncate("\n".join(lines), service.run_output_budget // 2, keep_tail=0.7)
            failure = _error_line(last.result.outputs) or "an error"
            heard = heard_run(last)
            return ToolResult(
                content="\n".join([listing, f"Stopped at cell {number}.", detail]),
                summary=f"Ran {plural(step, 'cell')}, stopped at the error. {heard.normal}",
                terse=heard.terse,
                detail=heard.detailed,
                is_error=True,
                error_message=f"Cell {number}: {failure}",
            )
    if last is None:
        return ToolResult(
            content="There are no code cells to run.", summary="No code cells to run."
        )
    listing = truncate("\n".join(lines), service.run_output_budget // 2, keep_tail=0.7)
    outputs = render_outputs(last.result.outputs, service.run_output_budget // 2) or "none"
    heard = heard_run(last)
    return ToolResult(
        content=f"{listing}\nLast cell's outputs:\n{outputs}",
        summary=f"Ran {plural(len(cells), 'cell')} without errors. {heard.normal}",
        terse=f"Ran {plural(len(cells), 'cell')}. {heard.terse}",
        detail=f"Ran {plural(len(cells), 'cell')} without errors. {heard.detailed}",
    )


def _error_line(outputs: list[dict[str, Any]]) -> str | None:
    """ "NameError: name 'df' is not defined" for a run that raised, else ``None``."""
    error = next((o for o in outputs if o.get("output_type") == "error"), None)
    if error is None:
        return None
    name = str(error.get("ename") or "Error")
    lines = strip_ansi(str(error.get("evalue") or "")).strip().splitlines()
    return truncate(f"{name}: {lines[0]}" if lines else name, 300)


@run_all_cells.preview
async def _preview_run_all(
    ctx: ToolContext,
    from_cell_id: str | None = None,
    to_cell_id: str | None = None,
    timeout_seconds: float | None = None,
) -> ActionPreview:
    try:
        cells = _code_cells(await service_of(ctx).open(chat_path(ctx)), from_cell_id, to_cell_id)
    except ToolError:
        return ActionPreview(summary="Running cells.", terse="Run cells.", fingerprint=MISSING)
    findings = scan_cells(s for _, _, s in cells)
    span = f"cells {cells[0][0]} to {cells[-1][0]}" if cells else "no cells"
    return ActionPreview(
        summary=f"Running {plural(len(cells), 'code cell')}, {span}.",
        terse=f"Run {plural(len(cells), 'cell')}.",
        action=f"Run {plural(len(cells), 'code cell')} in order ({span}), stopping at the first error.",
        consequence=CODE_CONSEQUENCE,
        # Shown with the confirmation; very long notebooks are cut with a visible marker.
        extra_context={
            "cells": [
                {
                    "cell_number": n,
                    "cell_id": c,
                    "code": truncate(s, max(500, 20_000 // len(cells))),
                }
                for n, c, s in cells
            ]
        },
        fingerprint=cells_fingerprint([(c, s) for _, c, s in cells]),
        risk_level=risk_level_for(findings) if findings else None,
        risk_flags=tuple(f.reason for f in findings),
    )


@aaep_tool(risk_level="low", label="wait for a cell")
async def wait_for_cell(ctx: ToolContext, cell_id: str, timeout_seconds: float = 60) -> ToolResult:
    """Wait for a cell you started that is still running; returns its outputs when it ends.

    Use after run_cell or run_all_cells answered "still running". If the cell is still running
    after timeout_seconds you get its progress and last output again, and it keeps running.

    Parameters
    ----------
    cell_id : str
        The id of the running cell.
    timeout_seconds : float
        How long to wait at most (up to an hour); waiting never stops the cell.
    """
    service, path = service_of(ctx), chat_path(ctx)
    nb = await service.open(path)
    running = service.runs.get(nb.path, cell_id)
    number = nb.index_of(cell_id) + 1 if cell_id in {str(c.get("id")) for c in nb.cells()} else None
    if running is None:
        where = f"Cell {number}" if number else "That cell"
        news = ctx.services.long_runs
        theirs = [
            r
            for r in (news.running(nb.path) if news is not None else [])
            if r.get("started_by") == "person" and number and r.get("cell_number") == number
        ]
        if theirs:
            return ToolResult(
                content=f"{theirs[0]['sentence']} The person started it in the notebook, so you cannot wait "
                "for it here; the user hears when it ends. Call get_notebook_state later for its outputs.",
                summary=str(theirs[0]["sentence"]),
            )
        return ToolResult(
            content=f"{where} (id {cell_id}) is not running and was not started by you; nothing to wait for. "
            "Read its outputs with get_notebook_state.",
            summary=f"{where} is not running.",
        )
    if running.done and running.reported:
        outcome = running.task.result() if running.task.exception() is None else None
        if outcome is None:
            return ToolResult(
                content=f"Cell {running.number} already ended; its failure was reported before.",
                summary=f"Cell {running.number} already ended.",
            )
        return finished_result(service, outcome)
    run = await wait_on(ctx, running, min(max(timeout_seconds, 0), 3600))
    return still_running(running) if run is None else finished_result(service, run)


# -- kernel control ------------------------------------------------------------------------------


@aaep_tool(risk_level="medium", label="interrupt the kernel")
async def interrupt_kernel(ctx: ToolContext) -> ToolResult:
    """Interrupt the notebook's kernel (like the stop button): the running code gets KeyboardInterrupt; variables are kept."""
    service = service_of(ctx)
    nb_path = normalize_path(chat_path(ctx))
    # The agent's own long cells nobody waits for: say which one stopped (the waiting call says it otherwise).
    running = [run for run in service.runs.running(nb_path) if run.listener is None]
    info = await service.interrupt(chat_path(ctx))
    if info is None:
        return ToolResult(
            content="The notebook has no running kernel.", summary="No kernel to interrupt."
        )
    stopped = []
    for run in running:  # the agent's own long cells: say which one stopped, once
        await asyncio.wait({run.task}, timeout=5)
        if run.task.done():
            run.reported = True
            stopped.append(f"Cell {run.number} stopped after {duration_words(run.elapsed())}.")
    said = " ".join(["Interrupted the kernel.", *stopped])
    return ToolResult(
        content=f"Interrupted the {info.display_name} kernel. {' '.join(stopped)}".strip(),
        summary=said,
    )


@aaep_tool(risk_level="high", irreversible=True, label="restart the kernel")
async def restart_kernel(ctx: ToolContext) -> ToolResult:
    """Restart the notebook's kernel. All variables and imports are lost; cells must be run again. Use when the kernel is stuck or dead."""
    info, restarted = await service_of(ctx).restart(chat_path(ctx))
    what = (
        f"Restarted the {info.display_name} kernel."
        if restarted
        else f"The {info.display_name} kernel had just restarted on its own; it is running again."
    )
    return ToolResult(
        content=f"{what} Variables are gone; run the setup cells again.",
        summary="Restarted the kernel." if restarted else "The kernel is running again.",
    )


@restart_kernel.preview
async def _preview_restart(ctx: ToolContext) -> ActionPreview:
    return ActionPreview(
        summary="Restarting the kernel.",
        terse="Restart the kernel.",
        action="Restart this notebook's kernel.",
        consequence="All variables, imports and loaded data in the kernel are lost; cells must be run again.",
    )
