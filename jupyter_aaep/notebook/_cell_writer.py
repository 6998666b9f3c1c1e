"""Writing one run's outputs into its shared cell, live, as kernel messages arrive.

A private part of the documents layer: it reaches the notebook only through
:meth:`NotebookDocuments.open` (re-fetched every second during long runs, since rooms can be
dropped and re-created) and edits the shared cell with small CRDT operations, so the browser
sees stream text grow in place instead of whole outputs being replaced.

A cell can print tens of thousands of messages a second (a tqdm bar at full speed): every
change of the shared document is a transaction, an update sent to every collaborator and
stored, and a restart of the room's autosave countdown. So the edits are folded together
(:func:`~._outputs.merge_ops`) and written at most every ``flush_seconds`` (a bar needs its
last line per tenth of a second, not every one), and while a run keeps changing the cell the
notebook is saved every ``save_seconds`` (the room's autosave waits for a quiet second that
such a run never leaves).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._outputs import (
    AppendOutput,
    CellOutputs,
    ClearOutputs,
    OutputOp,
    ReplaceOutput,
    StreamEdit,
    merge_ops,
)
from .documents import reset_outputs

if TYPE_CHECKING:
    from jupyter_ydoc import YNotebook
    from pycrdt import Array, Map, Text

    from .documents import NotebookDocuments
else:
    try:
        from pycrdt import Array, Map, Text
    except ImportError:  # without jupyter-collaboration every call stops at a clear ToolError first
        Array = Map = Text = None

__all__ = ["LiveCellWriter", "youtput"]

_now = time.monotonic
"""The writer's clock; tests move it by hand."""

log = logging.getLogger(__name__)


class LiveCellWriter:
    """Writes one run's outputs into its shared cell as kernel messages arrive.

    Implements the executor's ``RunSink``. Keeps a plain mirror of the outputs
    (:class:`CellOutputs`): if the room was dropped and re-created during a long run, or the
    shared outputs no longer look as expected, the cell is rebuilt from the mirror. Outputs
    someone cleared during the run (the agent's ``clear_outputs``, a person's Clear) stay
    cleared: the mirror starts again, and only what comes after shows in the cell.
    """

    refresh_seconds = 1.0
    flush_seconds = 0.1
    """Edits are written at most this often (the last ones at the run's end)."""
    save_seconds = 10.0
    """While the run keeps changing the cell, the notebook is saved this often."""

    def __init__(
        self,
        documents: NotebookDocuments,
        path: str,
        cell_id: str,
        *,
        document: YNotebook | None = None,
    ) -> None:
        self._documents = documents
        self._path = path
        self.cell_id = cell_id
        self.model = CellOutputs()
        self._cleared: list[dict[str, Any]] = []
        """Outputs of this run someone cleared from the cell: still the run's, never shown again."""
        # *document*: the shared notebook the caller has just opened. Kept as if this writer had
        # fetched it now (re-fetched after ``refresh_seconds`` like any other), so a short run
        # does not open the room a second time to clear its cell.
        self._doc: YNotebook | None = document
        self._fetched = _now() if document is not None else 0.0
        self._index: int | None = None
        self._resync = False
        self._written = 0
        """How many outputs the shared cell held after this writer's last write."""
        self.cell_missing = False
        self._pending: list[OutputOp] = []
        self._flushed = 0.0
        self._saved = _now()
        self._kept_for_displays = False

    # -- RunSink -------------------------------------------------------------------------------
    def outputs(self) -> list[dict[str, Any]]:
        return self._cleared + self.model.outputs()

    @property
    def display_ids(self) -> set[str]:
        return self.model.display_ids

    def keep_for_displays(self) -> None:
        """The run is over and this writer stays only to show later updates of its display ids
        (a progress display a background thread updates), until the cell runs again: drop its
        copies of the outputs (a run that printed 50 MB beside such a display kept them all).
        From now on an update is written in place, where the cell still has the display at its
        place, or not at all: the mirror can no longer rebuild the cell. Nor does it hold on to
        the shared notebook between updates (that kept a released room's document alive)."""
        self._cleared = []
        self.model.keep_displays_only()
        self._kept_for_displays = True
        self._doc = None

    async def begin(self) -> None:
        """Clear the cell's outputs (the same array) and mark it running, in one transaction."""
        ycell = await self._ycell()
        if ycell is None or self._doc is None:
            return
        with self._doc.ydoc.transaction():
            reset_outputs(ycell)
            ycell["execution_state"] = "running"
            metadata = ycell.get("metadata")
            if isinstance(metadata, Map):
                metadata["trusted"] = (
                    True  # outputs the user's session produced, as JupyterLab marks them
                )
        self._resync = False

    @property
    def pending(self) -> bool:
        """Edits wait for the next :meth:`flush`."""
        return bool(self._pending)

    async def handle(self, msg_type: str, content: dict[str, Any]) -> None:
        if self._written:
            await self._notice_clear()
        for op in self.model.handle(msg_type, content):
            merge_ops(self._pending, op)
        if self._pending and _now() - self._flushed >= self.flush_seconds:
            await self.flush()

    async def flush(self) -> None:
        """Write the waiting edits now, in one transaction; save when a save is due."""
        now = _now()
        self._flushed = now
        if self._pending and self._written:
            await self._notice_clear()  # a clear since the last write drops what waits
        if not self._pending:
            return
        ops, self._pending = self._pending, []
        await self._apply(ops)
        if now - self._saved >= self.save_seconds:
            self._saved = now
            try:
                await self._documents.save(self._path)
            except Exception as error:  # noqa: BLE001 - the autosave after the run still comes
                log.warning("Cannot save %s during the run: %s", self._path, error)

    async def finish(self, execution_count: int | None) -> None:
        """Set the execution count and the idle state together, as JupyterLab expects."""
        if self._written:
            await self._notice_clear()
        ops, self._pending = self._pending, []
        ycell = await self._ycell()
        if ycell is None or self._doc is None:
            return
        with self._doc.ydoc.transaction():
            youtputs = ycell.get("outputs")
            if (
                self._resync
                or not isinstance(youtputs, Array)
                or not all(_apply_op(youtputs, op) for op in ops)
            ):
                self._rewrite(ycell)
            ycell["execution_count"] = execution_count
            ycell["execution_state"] = "idle"

    # -- internals -----------------------------------------------------------------------------
    async def _notice_clear(self) -> None:
        """The shared cell has no outputs any more, in the same room, after this writer wrote
        some: someone cleared them. Start the mirror again so they are not written back."""
        ycell = await self._ycell()
        if ycell is None or self._resync:
            return
        youtputs = ycell.get("outputs")
        if isinstance(youtputs, Array) and len(youtputs) == 0:
            self._written = 0
            self._cleared.extend(self.model.outputs())
            count = self.model.execution_count
            self.model = CellOutputs()
            self.model.execution_count = count
            # Edits still waiting were made against the outputs that were cleared: applied now,
            # their failure would write the whole old copy back. Output from here on shows.
            self._pending.clear()

    async def _ycell(self) -> Any | None:
        now = _now()
        if self._doc is None or now - self._fetched >= self.refresh_seconds:
            try:
                document = (await self._documents.open(self._path)).ynotebook
            except Exception as error:  # noqa: BLE001 - a failed write must never abort the run
                # Keep running: the mirror still has every output and is written back later.
                log.warning("Cannot reach the shared notebook %s: %s", self._path, error)
                return None
            if self._doc is not None and document is not self._doc:
                self._resync, self._index = True, None
            self._doc, self._fetched = document, now
        ycells = self._doc.ycells
        if (
            self._index is None
            or self._index >= len(ycells)
            or ycells[self._index].get("id") != self.cell_id
        ):
            self._index = next(
                (i for i, c in enumerate(ycells) if c.get("id") == self.cell_id), None
            )
        self.cell_missing = self._index is None
        return None if self._index is None else ycells[self._index]

    async def _apply(self, ops: Sequence[OutputOp]) -> None:
        ycell = await self._ycell()
        if ycell is None or self._doc is None:
            return
        with self._doc.ydoc.transaction():
            youtputs = ycell.get("outputs")
            if self._kept_for_displays:
                if not isinstance(youtputs, Array) or not all(_apply_op(youtputs, o) for o in ops):
                    log.info("A display update of %s was not shown: the cell changed.", self._path)
                self._resync, self._doc = False, None
                return
            if self._resync or not isinstance(youtputs, Array):
                self._rewrite(ycell)
                return
            for op in ops:
                if not _apply_op(youtputs, op):
                    self._rewrite(ycell)
                    return
            self._written = len(youtputs)

    def _rewrite(self, ycell: Any) -> None:
        youtputs = ycell.get("outputs")
        if not isinstance(youtputs, Array):
            ycell["outputs"] = youtputs = Array()
        youtputs.clear()
        youtputs.extend([youtput(o) for o in self.model.outputs()])
        self._resync = False
        self._written = len(youtputs)


def youtput(output: dict[str, Any]) -> Map[Any]:
    """A shared output; stream text is a ``Text`` so it can grow in place."""
    output = copy.deepcopy(output)
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        output["text"] = Text("".join(text) if isinstance(text, list) else str(text))
    return Map(output)


def _apply_op(youtputs: Array[Any], op: OutputOp) -> bool:
    """Apply one edit; ``False`` when the shared outputs are not what the mirror expects."""
    if isinstance(op, ClearOutputs):
        youtputs.clear()
        return True
    if isinstance(op, AppendOutput):
        if len(youtputs) != op.index:
            return False
        youtputs.append(youtput(op.output))
        return True
    if op.index >= len(youtputs):
        return False
    yout = youtputs[op.index]
    if isinstance(op, StreamEdit):
        ytext = yout.get("text") if isinstance(yout, Map) else None
        if (
            yout.get("output_type") != "stream"
            or not isinstance(ytext, Text)
            or len(ytext) < op.keep_bytes
        ):
            return False
        if len(ytext) > op.keep_bytes:
            del ytext[op.keep_bytes :]
        if op.text:
            ytext += op.text
        return True
    assert isinstance(op, ReplaceOutput)
    if not isinstance(yout, Map) or yout.get("output_type") not in (
        "display_data",
        "execute_result",
    ):
        return False
    yout["data"] = op.data
    yout["metadata"] = op.metadata
    return True
