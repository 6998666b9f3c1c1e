"""Cells the agent started that may outlive the tool call that started them.

A long cell must never hold the agent (or a person) hostage: ``run_cell`` waits a while and
then answers "still running" while the cell goes on. A :class:`RunningCell` is that run:
its task (the executor's run, which owns the kernel's queue), what it reported so far
(:class:`~.progress.ProgressTracker`), its pacing (:class:`~.progress_pacing.ProgressPacer`)
and whoever listens to its progress *now*: the tool call waiting for it, or the chat that
announces its end once no tool waits. One listener at a time, so a run's progress is heard
once. :class:`RunningCells` keeps the runs of one server and drives their pacers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..words import duration_words
from .progress import ProgressTracker, reading_fields
from .progress_pacing import Beat, ProgressPacer, progress_phrase, value_text

if TYPE_CHECKING:
    from ._sessions import KernelInfo
    from .executor import ExecutionResult

__all__ = ["CellRun", "RunningCell", "RunningCells"]

BeatListener = Callable[["RunningCell", Beat], None]


@dataclass(frozen=True)
class CellRun:
    """One cell run: where the cell was, what ran, and what came of it."""

    cell_id: str
    number: int
    """1-based position of the cell when the run started."""
    source: str
    kernel: KernelInfo
    result: ExecutionResult
    cell_deleted: bool = False
    """The user deleted the cell during the run (the outputs are only in ``result``)."""


@dataclass(eq=False)
class RunningCell:
    """One agent run of a cell, started and perhaps still going."""

    path: str
    cell_id: str
    number: int
    kernel: KernelInfo
    task: asyncio.Task[CellRun]
    tracker: ProgressTracker
    submitted: float
    """Monotonic time the run was asked for."""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    started_at: float | None = None
    """Monotonic time the kernel started the code (``None``: still waiting for the kernel)."""
    pacer: ProgressPacer | None = None
    listener: BeatListener | None = None
    reported: bool = False
    """The outcome went to someone already (a tool's answer or an announcement): once only."""
    limit: float | None = None

    @property
    def done(self) -> bool:
        return self.task.done()

    def elapsed(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return now - (self.started_at or self.submitted)

    def progress_phrase(self) -> str:
        """ "training 40 of 100, about 3 min left" or ""."""
        return progress_phrase(self.tracker.reading)

    def value_text(self) -> str:
        return value_text(self.tracker.reading, self.elapsed())

    def status_sentence(self) -> str:
        """ "Cell 4 is still running (2 min 10 s; training 40 of 100, about 3 min left)." """
        phrase = self.progress_phrase()
        inside = duration_words(self.elapsed()) + (f"; {phrase}" if phrase else "")
        if self.started_at is None:
            return (
                f"Cell {self.number} is waiting for the kernel ({duration_words(self.elapsed())})."
            )
        return f"Cell {self.number} is still running ({inside})."

    def last_output(self) -> str:
        return self.tracker.last_line

    def describe(self) -> dict[str, Any]:
        """What "How far along?" and the progress bar need, as JSON."""
        reading = self.tracker.reading
        return {
            "cell_id": self.cell_id,
            "cell_number": self.number,
            "notebook_path": self.path,
            "running": not self.done,
            "waiting_for_kernel": self.started_at is None,
            "elapsed_seconds": round(self.elapsed(), 1),
            **reading_fields(reading),
            "value_text": self.value_text(),
            "sentence": self.status_sentence(),
            "last_output": self.last_output(),
        }


def _retrieve(task: asyncio.Task[Any]) -> None:
    """A run nobody awaits any more still ends quietly (its outcome is announced elsewhere)."""
    if not task.cancelled():
        task.exception()


class RunningCells:
    """The agent's cell runs of one server, by notebook and cell; drives their pacing."""

    tick_seconds = 0.25

    def __init__(self, *, announce_seconds: float = 60.0, min_gap: float = 15.0) -> None:
        self.announce_seconds = announce_seconds
        self.min_gap = min_gap
        self._runs: dict[tuple[str, str], RunningCell] = {}
        self._ticker: asyncio.Task[None] | None = None

    def add(self, run: RunningCell) -> None:
        """Keep *run* (the latest run of its cell replaces an earlier, finished one)."""
        self._runs[(run.path, run.cell_id)] = run
        run.task.add_done_callback(_retrieve)
        self._prune()
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.ensure_future(self._tick())

    def get(self, path: str, cell_id: str) -> RunningCell | None:
        return self._runs.get((path, cell_id))

    def running(self, path: str | None = None) -> list[RunningCell]:
        """Runs not finished yet, oldest first (all notebooks when *path* is ``None``)."""
        return [r for r in self._runs.values() if not r.done and (path is None or r.path == path)]

    def _prune(self) -> None:
        finished = [key for key, run in self._runs.items() if run.done and run.reported]
        for key in finished[: max(0, len(self._runs) - 200)]:
            del self._runs[key]

    async def _tick(self) -> None:
        """Feed each running cell's pacer; a due beat goes to the run's current listener."""
        while any(not r.done for r in self._runs.values()):
            now = time.monotonic()
            for run in list(self._runs.values()):
                if run.done:
                    continue
                if run.started_at is None and run.started.is_set():
                    run.started_at = now
                if run.started_at is None:
                    continue
                if run.pacer is None:
                    run.pacer = ProgressPacer(
                        run.started_at, announce_seconds=self.announce_seconds, min_gap=self.min_gap
                    )
                beat = run.pacer.tick(now, run.tracker.reading)
                if beat is not None and run.listener is not None:
                    run.listener(run, beat)
                    run.pacer.sent(time.monotonic())  # the gap counts from delivery
            await asyncio.sleep(self.tick_seconds)

    async def close(self) -> None:
        for run in self._runs.values():
            run.task.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ticker
