"""Telling a notebook's chat about long cell runs nobody is waiting for.

Two kinds of run end up here:

- a cell the **agent** started that outlived its tool call ("still running"): once no tool
  call waits for it and the agent's session has ended, its progress and its end are told
  here (``follow``), unless a later ``wait_for_cell`` collects it first;
- a cell a **person** ran that takes longer than ``person_runs_after`` seconds, seen on the
  kernel's IOPub by a :class:`~jupyter_aaep.notebook.kernel_watch.KernelWatch` (that module
  says why IOPub), for every notebook that has a chat.

Each such run is told in a short AAEP session of its own in the notebook's chat (the
transcript keeps it), opened only when there is something to say: at its first milestone
(``session.started`` says it, then ``progress.updated`` at the paced rate of
:mod:`jupyter_aaep.notebook.progress_pacing`) or at its end. The end is one sentence, once:
``session.completed`` ("Cell 7 finished after 3 min 12 s: accuracy 0.91.") or, when it
failed or the kernel died, ``session.errored`` (critical, so it is said assertively).
A session opened at the end starts with the same sentence it ends with, so a listener that
does not repeat itself says it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..aaep.events import (
    EventPayload,
    Progress,
    ProgressUpdated,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    Summary,
)
from ..aaep.session import Producer, Session
from ..agent.services import LeftRunning, left_running
from ..chats.runner import ChatRunner
from ..errors import AAEPError
from ..notebook.errors import ExecutionTimeout, KernelDied
from ..notebook.kernel_watch import KernelWatch, PersonRun
from ..notebook.progress import ProgressReading, reading_fields
from ..notebook.progress_pacing import (
    Beat,
    ProgressPacer,
    progress_phrase,
    value_text,
)
from ..notebook.running import RunningCell
from ..tools._run_text import end_sentence
from ..words import duration_words

__all__ = ["AGENT_RUN", "PERSON_RUN", "LongRunNews", "how_far_along"]

AGENT_RUN = "kernel:agent-run"
"""``requested_by`` of a session that tells a cell the agent started and left running."""
PERSON_RUN = "kernel:person-run"
"""``requested_by`` of a session that tells a long cell a person ran (a panel setting may hide these)."""

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Story:
    """The chat session that tells one run, opened lazily."""

    chat_id: str
    requested_by: str
    session: Session | None = None
    ended: bool = False
    number: int | None = None
    """The cell's number (a person's run: found by its source once it started)."""
    started_by: str | None = None
    """The agent's session that left the cell running: every event of this story carries it as
    ``correlation_id``, so a client that followed that session (the ``%aaep`` view) follows on."""

    @property
    def name(self) -> str:
        return f"Cell {self.number}" if self.number else "A cell"

    def emit(self, payload: EventPayload) -> None:
        assert self.session is not None
        self.session.emit(payload, correlation_id=self.started_by)


@dataclass(eq=False)
class _Watched:
    watch: KernelWatch
    path: str
    runs: dict[int, tuple[PersonRun, ProgressPacer, _Story]] = field(default_factory=dict)


class LongRunNews:
    """See the module docstring. One per server; ``AgentServices.long_runs`` for the tools."""

    tick_seconds = 0.25
    sync_seconds = 2.0
    find_cell_seconds = 0.5
    find_cell_tries = 20

    def __init__(
        self,
        runner: ChatRunner,
        notebooks: Any,
        producer: Producer,
        *,
        person_runs_after: float = 10.0,
        announce_seconds: float = 60.0,
        min_gap: float = 15.0,
    ) -> None:
        self.runner = runner
        self.notebooks = notebooks
        self.producer = producer
        self.person_runs_after = person_runs_after
        self.announce_seconds = announce_seconds
        self.min_gap = min_gap
        self._followed: dict[RunningCell, _Story] = {}
        self._watches: dict[str, _Watched] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sync: asyncio.Task[None] | None = None
        self._synced = 0.0
        self._chats_seen: set[tuple[str, str]] = set()

    # -- the agent's runs ----------------------------------------------------------------------
    def follow(self, run: RunningCell, chat_id: str, *, started_by: str | None = None) -> None:
        """Tell *run*'s progress and end in *chat_id* whenever no tool call waits for it."""
        if run in self._followed or run.done:
            return
        story = _Story(chat_id, requested_by=AGENT_RUN, number=run.number, started_by=started_by)
        self._followed[run] = story
        self._spawn(self._follow(run, story))

    def still_running_note(self, chat_id: str) -> LeftRunning | None:
        """The agent's last words when its session ends while its cells run, with their count."""
        cells = [
            run
            for run, story in self._followed.items()
            if story.chat_id == chat_id and not run.done
        ]
        if not cells:
            return None
        return left_running([run.number for run in cells])

    def running(self, path: str | None) -> list[dict[str, Any]]:
        """What "How far along?" says: every cell running in the notebook, agent's or person's."""
        found = [
            run.describe() | {"started_by": "agent"} for run in self.notebooks.runs.running(path)
        ]
        for watched in self._watches.values():
            if path is not None and watched.path != path:
                continue
            for person, _, story in watched.runs.values():
                if person.ended_at is None:
                    found.append(self._describe_person(watched, person, story))
        return found

    async def _follow(self, run: RunningCell, story: _Story) -> None:
        def listen(_: RunningCell, beat: Beat) -> None:
            self._beat(story, f"Cell {run.number}", beat, run.tracker.reading)

        try:
            while not run.done:
                chat = self._chat(story.chat_id)
                if run.listener is None and (chat is None or not chat.running):
                    run.listener = listen
                await asyncio.wait({run.task}, timeout=self.tick_seconds)
            if run.listener is listen:
                run.listener = None
            while (
                not run.reported
                and (chat := self._chat(story.chat_id)) is not None
                and chat.running
            ):
                await asyncio.sleep(self.tick_seconds)  # the agent may still collect it
            if run.reported:
                if story.session is not None:
                    self._close(story, f"Cell {run.number} has ended.", failed=False)
                return
            run.reported = True
            sentence, failed, code = self._agent_end(run)
            if sentence is not None:
                self._close(story, sentence, failed=failed, code=code)
        finally:
            self._followed.pop(run, None)

    def _agent_end(self, run: RunningCell) -> tuple[str | None, bool, str]:
        if run.task.cancelled():
            return None, False, ""  # stopped by the person: Stop already said so
        error = run.task.exception()
        took = duration_words(run.elapsed())
        if isinstance(error, KernelDied):
            return (
                f"Cell {run.number} stopped after {took}: {_death(str(error))}",
                True,
                "KERNEL_DIED",
            )
        if isinstance(error, ExecutionTimeout):
            return f"Cell {run.number} was interrupted at its time limit, after {took}.", False, ""
        if error is not None:
            return f"Cell {run.number} stopped after {took}: {error}", True, "CELL_FAILED"
        outcome = run.task.result()
        sentence, failed = end_sentence(
            run.number,
            outcome.result.elapsed,
            outcome.result.outputs,
            last_line=run.tracker.last_line,
        )
        return sentence, failed, "CELL_FAILED"

    # -- a person's runs ---------------------------------------------------------------------
    def start(self) -> None:
        """Begin watching the kernels of notebooks that have a chat (call on the server's loop)."""
        if self.person_runs_after > 0 and self.notebooks is not None and self._sync is None:
            self._sync = asyncio.ensure_future(self._keep_watching())

    async def _keep_watching(self) -> None:
        while True:
            try:
                await self._sync_watches()
                self._tick_people()
            except Exception as error:  # noqa: BLE001 - keep watching; the log says why
                log.warning("AAEP: watching long cell runs failed once: %s", error)
            await asyncio.sleep(self.tick_seconds)

    async def _sync_watches(self) -> None:
        """Watch the kernels of the notebooks that have a chat: looked up every
        ``sync_seconds``, and at the next tick when a chat comes or goes (a person who opens
        the panel and runs a cell at once is followed from that run on)."""
        now = time.monotonic()
        chats = {(c.chat_id, c.notebook_path) for c in self.runner.chats() if c.notebook_path}
        if now - self._synced < self.sync_seconds and chats == self._chats_seen:
            return
        self._synced, self._chats_seen = now, chats
        wanted: dict[str, str] = {}
        for chat in self.runner.chats():
            if chat.notebook_path:
                info = await self.notebooks.kernel(chat.notebook_path)
                if info is not None:
                    wanted[info.kernel_id] = chat.notebook_path
        for kernel_id in list(self._watches):
            if kernel_id not in wanted:
                await self._watches.pop(kernel_id).watch.stop()
        kernels = self.notebooks.serverapp.kernel_manager
        for kernel_id, path in wanted.items():
            if kernel_id in self._watches:
                self._watches[kernel_id].path = path
                continue
            holder: list[_Watched] = []

            def on_start(run: PersonRun, h: list[_Watched] = holder) -> None:
                self._person_started(h[0], run)

            def on_end(run: PersonRun, h: list[_Watched] = holder) -> None:
                self._person_ended(h[0], run)

            watch = KernelWatch(
                kernels.get_kernel(kernel_id),
                own_sessions=self.notebooks.executor.own_sessions,
                on_start=on_start,
                on_end=on_end,
            )
            holder.append(_Watched(watch, path))
            self._watches[kernel_id] = holder[0]
            watch.start()

    def _person_started(self, watched: _Watched, run: PersonRun) -> None:
        chat = self._chat_for(watched.path)
        story = _Story(chat.chat_id if chat else "", requested_by=PERSON_RUN)
        pacer = ProgressPacer(
            run.started_at, announce_seconds=self.announce_seconds, min_gap=self.min_gap
        )
        watched.runs[id(run)] = (run, pacer, story)
        if story.chat_id:
            self._spawn(self._find_cell(watched.path, run, story))

    async def _find_cell(self, path: str, run: PersonRun, story: _Story) -> None:
        """The cell that holds the code that ran (the first match), from the live notebook.

        A person who types and runs at once can reach the kernel before their last keystrokes
        reach the server's copy of the notebook, so a miss is looked up again while the run
        goes on (every ``find_cell_seconds``, ``find_cell_tries`` times)."""
        code = run.code.strip()
        for attempt in range(self.find_cell_tries):
            if attempt:
                await asyncio.sleep(self.find_cell_seconds)
            try:
                notebook = await self.notebooks.open(path)
            except Exception as error:  # noqa: BLE001 - the run is then told as "a cell"
                log.debug("no cell number for a run in %s: %s", path, error)
                return
            for index, cell in enumerate(notebook.cells()):
                if cell.get("cell_type") == "code" and str(cell.get("source", "")).strip() == code:
                    story.number = index + 1
                    return
            if run.ended_at is not None:
                return

    def _tick_people(self) -> None:
        now = time.monotonic()
        for watched in self._watches.values():
            for run, pacer, story in watched.runs.values():
                if (
                    run.ended_at is None
                    and story.chat_id
                    and run.elapsed(now) >= self.person_runs_after
                ):
                    beat = pacer.tick(now, run.tracker.reading)
                    if beat is not None:
                        self._beat(story, story.name, beat, run.tracker.reading)
                        pacer.sent(time.monotonic())  # the gap counts from delivery

    def _person_ended(self, watched: _Watched, run: PersonRun) -> None:
        entry = watched.runs.pop(id(run), None)
        if entry is None or not entry[2].chat_id:
            return
        story = entry[2]
        if run.elapsed() < self.person_runs_after and story.session is None:
            return  # a quick cell: the person sees its output; nothing to announce
        name = story.name
        took = duration_words(run.elapsed())
        if run.ended_by in ("died", "restarted"):
            how = "the kernel died" if run.ended_by == "died" else "the kernel was restarted"
            self._close(
                story,
                f"{name} stopped after {took}: {how}, so its variables are lost.",
                failed=True,
                code="KERNEL_DIED",
            )
            return
        sentence, failed = end_sentence(
            story.number, run.elapsed(), run.outputs, last_line=run.tracker.last_line
        )
        self._close(story, sentence, failed=failed, code="CELL_FAILED")

    def _describe_person(self, watched: _Watched, run: PersonRun, story: _Story) -> dict[str, Any]:
        reading = run.tracker.reading
        phrase = progress_phrase(reading)
        name = story.name
        inside = duration_words(run.elapsed()) + (f"; {phrase}" if phrase else "")
        return {
            "cell_id": None,
            "cell_number": story.number,
            "notebook_path": watched.path,
            "running": True,
            "waiting_for_kernel": False,
            "elapsed_seconds": round(run.elapsed(), 1),
            **reading_fields(reading),
            "value_text": value_text(reading, run.elapsed()),
            "sentence": f"{name} is still running ({inside}).",
            "last_output": run.tracker.last_line,
            "started_by": "person",
        }

    # -- telling ----------------------------------------------------------------------------
    def _beat(self, story: _Story, name: str, beat: Beat, reading: ProgressReading | None) -> None:
        phrase = progress_phrase(reading)
        said = (
            f"{name}: {phrase}."
            if phrase
            else f"{name} is still running after {duration_words(beat.elapsed)}."
        )
        if story.session is None:
            if not beat.announce:
                return  # a session opens for something worth saying, not for a bar update
            if not self._open(story, said):
                return
        assert story.session is not None
        integral = reading is not None and reading.current is not None and reading.total is not None
        story.emit(
            ProgressUpdated(
                progress=Progress(
                    percent=None
                    if reading is None or reading.percent is None
                    else round(min(reading.percent, 100.0), 1),
                    step=max(1, int(reading.current))
                    if integral and reading and reading.current
                    else None,
                    total_steps=max(1, int(reading.total))
                    if integral and reading and reading.total
                    else None,
                    description=value_text(reading, beat.elapsed),
                ),
                summary=Summary(normal=said),
                eta_ms=None
                if reading is None or reading.eta_seconds is None
                else min(int(reading.eta_seconds * 1000), 86_400_000),
                urgency="normal" if beat.announce else "background",
            )
        )

    def _open(self, story: _Story, first: str) -> bool:
        chat = self._chat(story.chat_id)
        if chat is None:
            return False
        story.session = Session(chat.emitter, self.producer)
        story.emit(SessionStarted(summary=Summary(normal=first), requested_by=story.requested_by))
        return True

    def _close(
        self, story: _Story, sentence: str, *, failed: bool, code: str = "CELL_FAILED"
    ) -> None:
        if story.ended or (story.session is None and not self._open(story, sentence)):
            return
        story.ended = True
        assert story.session is not None
        if failed:
            story.emit(
                SessionErrored(
                    error_category="requires_user",
                    error_code=code,
                    summary=Summary(normal=sentence),
                    recoverable=False,
                )
            )
        else:
            story.emit(SessionCompleted(summary=Summary(normal=sentence)))

    def _chat(self, chat_id: str) -> Any:
        try:
            return self.runner.get(chat_id) if chat_id else None
        except AAEPError:
            return None

    def _chat_for(self, path: str) -> Any:
        chats = self.runner.chats(path)
        return max(chats, key=lambda c: c.updated) if chats else None

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop watching; sessions still open say why they end."""
        if self._sync is not None:
            self._sync.cancel()
        for task in list(self._tasks):
            task.cancel()
        for watched in self._watches.values():
            await watched.watch.stop()
        for story in [
            *self._followed.values(),
            *(s for w in self._watches.values() for _, _, s in w.runs.values()),
        ]:
            if story.session is not None and not story.ended:
                self._close(
                    story, "The server is stopping; this run is no longer followed.", failed=False
                )
        self._watches.clear()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(
                *self._tasks, *([self._sync] if self._sync else []), return_exceptions=True
            )


def _death(message: str) -> str:
    if "restarted" in message:
        return "the kernel was restarted, so its variables are lost."
    if "shut down" in message:
        return "the kernel was shut down."
    return "the kernel died, so its variables are lost."


def how_far_along(running: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer to *How far along?*: the running cells and one sentence for all of them."""
    if not running:
        return {"running": [], "sentence": "No cell is running in this notebook."}
    return {"running": running, "sentence": " ".join(str(run["sentence"]) for run in running)}
