"""``NotebookService``: what the notebook tools use (``ctx.services.notebook``).

One object per Jupyter server, built from the ``ServerApp``. It joins the shared documents
(:mod:`.documents`), the kernel executor (:mod:`.executor`) and undo snapshots, and keeps the
budgets for what goes back to the model. It holds no document between calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_server.utils import ensure_async
from tornado import web

from ._cell_writer import LiveCellWriter
from ._memory import BIG_OUTPUT_CHARS, output_chars, release_later
from ._sessions import KernelInfo, NotebookKernels
from ._text_edits import version_tag
from .documents import LiveNotebook, NotebookDocuments, normalize_path
from .edit_record import AGENT, EditRecord, UndoReport, undo_records
from .errors import NotebookError
from .executor import KernelExecutor, ProgressCallback
from .progress import ProgressTracker
from .running import CellRun, RunningCell, RunningCells
from .shown import ShownSources

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

__all__ = [
    "CellRun",
    "NotebookEntry",
    "NotebookService",
    "cells_fingerprint",
    "source_fingerprint",
]

log = logging.getLogger(__name__)

READ_SOURCES_KEPT = 4000
"""Cell sources remembered by version tag (what the model read), for merging its later edits."""
COLLABORATION_EVENTS = "https://schema.jupyter.org/jupyter_collaboration/session/v1"
"""The event schema on which jupyter-collaboration's rooms say they reloaded a file ("overwrite")."""


def source_fingerprint(source: str) -> str:
    """What an approval of running *source* is bound to (SHA-256 of the exact text)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def cells_fingerprint(cells: Sequence[tuple[str, str]]) -> str:
    """The fingerprint of several ``(cell_id, source)`` pairs, in order."""
    digest = hashlib.sha256()
    for cell_id, source in cells:
        digest.update(f"{len(cell_id)}:{cell_id}{len(source)}:".encode())
        digest.update(source.encode("utf-8"))
    return digest.hexdigest()


@dataclass(frozen=True)
class NotebookEntry:
    path: str
    last_modified: str | None
    kernel: str | None
    """The running kernel's name when the notebook has a session, else ``None``."""


class NotebookService:
    """Live notebook access for the agent: documents, kernels, runs, and what the agent read and changed.

    Parameters
    ----------
    serverapp
        The running Jupyter ``ServerApp``; jupyter-collaboration must be enabled on it.
    progress_interval
        Seconds between progress reports while a cell runs.
    state_budget, run_output_budget
        Characters of text returned to the model by ``get_notebook_state`` and ``run_cell``.
    run_cell_wait_seconds
        How long ``run_cell`` waits for a cell before answering "still running" (the cell
        goes on; ``wait_for_cell`` waits more).
    progress_announce_seconds, progress_min_gap
        Pacing of a run's progress events (see :mod:`.progress_pacing`).
    """

    def __init__(
        self,
        serverapp: ServerApp,
        *,
        progress_interval: float = 5.0,
        state_budget: int = 32_000,
        run_output_budget: int = 8_000,
        max_image_chars: int = 300_000,
        max_images: int = 2,
        image_max_edge: int = 1024,
        run_cell_wait_seconds: float = 30.0,
        progress_announce_seconds: float = 60.0,
        progress_min_gap: float = 15.0,
    ) -> None:
        self.serverapp = serverapp
        self.documents = NotebookDocuments(serverapp)
        self.kernels = NotebookKernels(serverapp)
        self.executor = KernelExecutor(serverapp, progress_interval=progress_interval)
        self.state_budget = state_budget
        self.run_output_budget = run_output_budget
        self.max_image_chars = max_image_chars
        self.max_images = max_images
        self.image_max_edge = image_max_edge
        self._read_sources: OrderedDict[str, str] = OrderedDict()
        self.shown = ShownSources()
        """What each reader (the agent's chat, an outside agent) was last shown of each cell."""
        self._records: dict[str, EditRecord] = {}
        self._reloads: dict[str, int] = {}
        self._listening = False
        self.run_cell_wait_seconds = run_cell_wait_seconds
        self.runs = RunningCells(
            announce_seconds=progress_announce_seconds, min_gap=progress_min_gap
        )
        self.documents.rooms.in_use = self._in_use

    def _in_use(self, path: str) -> bool:
        """A session works on *path*, or a cell run there has not ended: keep its room."""
        return bool(self.runs.running(path)) or any(r.path == path for r in self._records.values())

    # -- documents -------------------------------------------------------------------------------
    async def open(self, path: str) -> LiveNotebook:
        """The live notebook (fetched fresh: never keep it across tool calls)."""
        return await self.documents.open(path)

    async def save(self, path: str) -> bool:
        """Put the notebook's current cells on disk now (see :meth:`NotebookDocuments.save`)."""
        return await self.documents.save(path)

    async def list_notebooks(
        self, directory: str = "", *, limit: int = 200, depth: int = 4
    ) -> list[NotebookEntry]:
        """Notebooks under *directory* (breadth first, hidden folders skipped)."""
        contents: Any = self.serverapp.contents_manager
        running: dict[str, str | None] = {}
        for session in await self.serverapp.session_manager.list_sessions():
            kernel = session.get("kernel") or {}
            running[session.get("path")] = kernel.get("name")
        found: list[NotebookEntry] = []
        queue = [(directory.strip("/"), 0)]
        while queue and len(found) < limit:
            folder, level = queue.pop(0)
            try:
                model = await ensure_async(contents.get(folder, content=True, type="directory"))
            except (web.HTTPError, OSError) as error:
                if folder == directory.strip("/"):
                    raise NotebookError(
                        f"Cannot list '{directory or '/'}': {getattr(error, 'log_message', None) or error}."
                    ) from None
                continue
            for item in sorted(model.get("content") or [], key=lambda m: m.get("path", "")):
                if item.get("name", "").startswith("."):
                    continue
                if item.get("type") == "notebook":
                    modified = item.get("last_modified")
                    found.append(
                        NotebookEntry(
                            item["path"],
                            str(modified) if modified else None,
                            running.get(item["path"]),
                        )
                    )
                elif item.get("type") == "directory" and level + 1 < depth:
                    queue.append((item["path"], level + 1))
        return found[:limit]

    # -- kernels ---------------------------------------------------------------------------------
    async def kernel(self, path: str) -> KernelInfo | None:
        """The notebook's running kernel, without starting one."""
        info = await self.kernels.kernel_for_path(
            normalize_path(path), kernelspec=None, start=False
        )
        return self._with_activity(info) if info else None

    def _with_activity(self, info: KernelInfo) -> KernelInfo:
        # The server's execution_state lags behind a queued agent run; say "busy" while ours runs.
        if self.executor.is_running_code(info.kernel_id):
            return dataclasses.replace(info, execution_state="busy")
        return info

    async def ensure_kernel(self, path: str, notebook: LiveNotebook | None = None) -> KernelInfo:
        """The notebook's kernel, started with its metadata's kernelspec when there is none."""
        notebook = notebook or await self.open(path)
        info = await self.kernels.kernel_for_path(
            notebook.path, kernelspec=notebook.kernelspec_name(), start=True
        )
        assert info is not None
        return info

    async def interrupt(self, path: str) -> KernelInfo | None:
        info = await self.kernel(path)
        if info is not None:
            await self.executor.interrupt(info.kernel_id)
        return info

    async def restart(self, path: str) -> tuple[KernelInfo, bool]:
        """Restart the notebook's kernel (starting one if needed); ``(info, restarted)``."""
        info = await self.kernel(path)
        if info is None:
            return await self.ensure_kernel(path), False
        restarted = await self.executor.restart(info.kernel_id)
        return await self.kernels.info(info.kernel_id), restarted

    # -- running ---------------------------------------------------------------------------------
    async def run_cell(
        self,
        path: str,
        cell_id: str,
        *,
        source: str,
        timeout: float,
        on_progress: ProgressCallback | None = None,
    ) -> CellRun:
        """Run *source* (the approved text of *cell_id*) in the notebook's kernel, live,
        and wait for the end (*timeout* limits both the wait for the kernel and the run)."""
        run = await self.start_cell(
            path,
            cell_id,
            source=source,
            limit=timeout,
            turn_timeout=timeout,
            on_progress=on_progress,
        )
        return await run.task

    async def start_cell(
        self,
        path: str,
        cell_id: str,
        *,
        source: str,
        limit: float | None,
        turn_timeout: float | None,
        on_progress: ProgressCallback | None = None,
        notebook: LiveNotebook | None = None,
    ) -> RunningCell:
        """Start running *source* (the approved text of *cell_id*); returns once the kernel
        started it, or once the run ended before that (``KernelBusy`` and the like are then
        raised by awaiting ``run.task``). The run goes on without anyone waiting for it.

        *limit* interrupts the code after that many seconds (``None``: never);
        *turn_timeout* gives up (nothing runs) if the kernel stays busy that long with another
        cell. Cancelling the caller while it waits here cancels the run (interrupting it).

        *notebook*: the live notebook at *path* the caller opened in the same step, with no
        ``await`` since (``run_cell`` checked the cell in it): used instead of opening it again,
        here and by the cell's writer (each open is a file check and a file-id lookup).
        """
        if notebook is None:
            notebook = await self.open(path)
        number = notebook.index_of(cell_id) + 1
        document = notebook.ynotebook
        kernel = await self.ensure_kernel(path, notebook)
        writer = LiveCellWriter(self.documents, notebook.path, cell_id, document=document)
        tracker = ProgressTracker()
        started = asyncio.Event()

        async def execute() -> CellRun:
            result = await self.executor.execute(
                kernel.kernel_id,
                source,
                writer,
                timeout=limit,
                turn_timeout=turn_timeout,
                on_progress=on_progress,
                tracker=tracker,
                started=started,
            )
            if output_chars(result.outputs) >= BIG_OUTPUT_CHARS:
                # Once the run is reported, our kept copy of its outputs is cut and the freed
                # memory given back (the notebook keeps the whole output).
                release_later(result.outputs, lambda: run.reported)
            return CellRun(
                cell_id, number, source, kernel, result, cell_deleted=writer.cell_missing
            )

        task = asyncio.ensure_future(execute())
        run = RunningCell(
            path=notebook.path,
            cell_id=cell_id,
            number=number,
            kernel=kernel,
            task=task,
            tracker=tracker,
            submitted=time.monotonic(),
            started=started,
            limit=limit,
        )
        self.runs.add(run)
        waiter = asyncio.ensure_future(started.wait())
        try:
            await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            waiter.cancel()
        if started.is_set() and run.started_at is None:
            run.started_at = time.monotonic()
        return run

    # -- what the agent read and did -------------------------------------------------------------
    def remember_read(self, source: str) -> str:
        """The version tag of *source*, kept so a later edit can be merged onto a changed cell."""
        tag = version_tag(source)
        self._read_sources[tag] = source
        self._read_sources.move_to_end(tag)
        while len(self._read_sources) > READ_SOURCES_KEPT:
            self._read_sources.popitem(last=False)
        return tag

    def remember_shown(self, reader: str, path: str, cell_id: str, source: str) -> str:
        """*reader* was shown *source* as *cell_id*'s text: the base of its next edit without a
        version (:mod:`.shown`); returns the version tag, remembered as :meth:`remember_read` does."""
        self.shown.remember(reader, path, cell_id, source)
        return self.remember_read(source)

    def read_source(self, tag: str) -> str | None:
        """The source the model read under version *tag*, if this server still knows it."""
        return self._read_sources.get(tag.strip().lower())

    def begin_record(
        self,
        chat_id: str,
        session_id: str,
        path: str,
        on_change: Callable[[EditRecord], None] | None = None,
        *,
        actor: str = AGENT,
    ) -> EditRecord:
        """Start recording what the session *session_id* of *chat_id* (worked in by *actor*:
        the agent, or an outside agent by name) does to *path*."""
        self._listen_for_reloads()
        record = EditRecord(
            normalize_path(path),
            session_id,
            on_change=on_change,
            reloads_seen=self.reloads(path),
            actor=actor,
        )
        self._records[chat_id] = record
        return record

    def end_record(self, chat_id: str) -> EditRecord | None:
        record = self._records.pop(chat_id, None)
        if record is not None:  # the room the session used may be released after a while
            self.documents.rooms.touch(record.path)
        return record

    def record_for(self, chat_id: str | None, path: str) -> EditRecord | None:
        """The running session's record, when it is about *path* (edits elsewhere are not undone)."""
        record = self._records.get(chat_id or "")
        return record if record is not None and record.path == normalize_path(path) else None

    async def undo(
        self,
        path: str,
        records: Sequence[EditRecord | dict[str, Any]],
        *,
        others: Sequence[EditRecord | dict[str, Any]] = (),
    ) -> UndoReport:
        """Revert only what *records* (live, or as stored) did, where the cells still hold what
        their session left. *others* are the other sessions' records on this notebook (kept, and
        read only to name who changed a cell since). Only the notebook is put back: what code did
        in the kernel stays done."""
        notebook = await self.open(path)
        return undo_records(notebook, _records(records), later=_records(others))

    def reloads(self, path: str) -> int:
        """How many times the room of *path* replaced its content with the file on disk."""
        return self._reloads.get(normalize_path(path), 0)

    async def lost_edits(self, record: EditRecord) -> list[str] | None:
        """After the room reloaded the file from disk: the agent's edits that are gone (``None``
        when no reload happened since the last look)."""
        seen = self.reloads(record.path)
        if seen <= record.reloads_seen:
            return None
        record.reloads_seen = seen
        notebook = await self.open(record.path)
        lost = record.missing_from(notebook.cells())
        record.lost.extend(item for item in lost if item not in record.lost)
        return lost

    def _listen_for_reloads(self) -> None:
        if self._listening:
            return
        logger = getattr(self.serverapp, "event_logger", None)
        if logger is None:
            return
        try:
            logger.add_listener(
                schema_id=COLLABORATION_EVENTS, listener=self._on_collaboration_event
            )
        except Exception as error:  # noqa: BLE001 - no reload notices, the rest works
            log.debug("cannot follow the rooms' reloads: %s", error)
            return
        self._listening = True

    async def _on_collaboration_event(
        self, logger: Any, schema_id: str, data: dict[str, Any]
    ) -> None:
        if data.get("action") == "overwrite" and data.get("path"):
            path = normalize_path(str(data["path"]))
            self._reloads[path] = self._reloads.get(path, 0) + 1

    async def close(self) -> None:
        """Release kernel clients; call from the server extension's ``stop_extension``."""
        self.documents.rooms.close()
        await self.runs.close()
        await self.executor.close()


def _records(items: Sequence[EditRecord | dict[str, Any]]) -> list[EditRecord]:
    """Live records, and stored ones read back (whole-notebook snapshots of old versions left out)."""
    live = [r if isinstance(r, EditRecord) else EditRecord.from_json(r) for r in items]
    return [r for r in live if r is not None]
