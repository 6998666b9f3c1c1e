"""Waiting for a cell the agent started, but never for long: the agent does not block on it.

``run_cell`` and ``wait_for_cell`` wait at most a window (``run_cell_wait_seconds``); while
they wait, the run's paced progress (:mod:`jupyter_aaep.notebook.progress_pacing`) goes out as
``progress.updated`` events of the agent's session. When the window passes, the model reads
"Cell 4 is still running (2 min 10 s; training 40 of 100, about 3 min left). Last output: …",
the cell goes on, and the run is handed to the chat's follower (``services.long_runs``),
which announces its end if no later tool call collects it first.
"""

from __future__ import annotations

import asyncio

from ..agent.tools import ToolContext, ToolResult
from ..notebook.errors import ExecutionTimeout, KernelBusy, KernelDied
from ..notebook.progress_pacing import Beat
from ..notebook.render import truncate
from ..notebook.running import BeatListener, RunningCell
from ..notebook.service import CellRun
from ..words import duration_words

__all__ = ["beat_sentence", "hand_over", "still_running", "wait_on"]


def beat_sentence(run: RunningCell, beat: Beat) -> str:
    """What a listener hears for one progress beat: "Cell 4: training 40 of 100, about 3 min
    left." or, with nothing to count, "Cell 4 is still running after 2 min."."""
    phrase = run.progress_phrase()
    if phrase:
        return f"Cell {run.number}: {phrase}."
    return f"Cell {run.number} is still running after {duration_words(beat.elapsed)}."


def progress_reporter(ctx: ToolContext) -> BeatListener:
    def report(run: RunningCell, beat: Beat) -> None:
        reading = beat.reading
        integral = reading is not None and reading.current is not None and reading.total is not None
        ctx.report_progress(
            run.value_text(),
            percent=None
            if reading is None or reading.percent is None
            else round(min(reading.percent, 100.0), 1),
            step=max(1, int(reading.current)) if integral and reading and reading.current else None,
            total_steps=max(1, int(reading.total))
            if integral and reading and reading.total
            else None,
            eta_seconds=None if reading is None else reading.eta_seconds,
            announce=beat.announce,
            summary=beat_sentence(run, beat),
        )

    return report


async def wait_on(ctx: ToolContext, run: RunningCell, seconds: float) -> CellRun | None:
    """The run's outcome if it ends within *seconds*, else ``None`` (it goes on, handed over).

    Errors of the run (time limit, busy kernel, death) are raised with the cell's number.
    Cancelling the caller (Stop) cancels the run, which interrupts the kernel.
    """
    listener = progress_reporter(ctx)
    run.listener = listener
    try:
        await asyncio.wait({run.task}, timeout=max(0.0, seconds))
    except asyncio.CancelledError:
        run.task.cancel()
        await asyncio.gather(run.task, return_exceptions=True)
        raise
    finally:
        if run.listener is listener:
            run.listener = None
    if not run.task.done():
        hand_over(ctx, run)
        return None
    run.reported = True
    try:
        return run.task.result()
    except (ExecutionTimeout, KernelBusy, KernelDied) as error:
        raise type(error)(f"Cell {run.number} (id {run.cell_id}): {error}") from None


def hand_over(ctx: ToolContext, run: RunningCell) -> None:
    """Nobody waits for *run* now: the chat's follower announces its end."""
    follower = ctx.services.long_runs
    if follower is not None and ctx.chat_id is not None:
        follower.follow(run, ctx.chat_id, started_by=ctx.session_id)


def still_running(run: RunningCell) -> ToolResult:
    """The answer when the window passed and the cell goes on."""
    last = run.last_output()
    said = f" Last output: {truncate(last, 300)}" if last else " No output yet."
    return ToolResult(
        content=(
            f"{run.status_sentence()}{said}\n"
            f"It keeps running (cell id {run.cell_id}); nothing interrupts it"
            + (f" before its time limit of {run.limit:g} seconds" if run.limit else "")
            + ". Call wait_for_cell to wait for its end and get its outputs, or interrupt_kernel to "
            "stop it. Other cells of this notebook cannot run until it ends. If you end your turn "
            "now, tell the user it is still running: they will hear when it finishes."
        ),
        summary=run.status_sentence(),
        terse=f"Cell {run.number} still running.",
    )
