"""The live notebook: the only module that touches jupyter-collaboration's shared documents.

Every edit goes through the room's shared ``YNotebook`` obtained with the public
``get_document(..., copy=False, create=True)`` of the ``jupyter_server_ydoc`` extension, so the
browser sees it live and the room's autosave is the only writer of the ``.ipynb`` file. A
closed notebook works too: ``create=True`` opens a room that loads it and autosaves it.

Documents are fetched again for every tool call and never cached across calls, because rooms
are dropped some time after the last browser leaves; a long run re-fetches every second (see
``_cell_writer.LiveCellWriter``). Cells are addressed by ``id``; each logical edit is one transaction.
Callers get plain dicts back, never CRDT objects.

Reads use the live document directly rather than a fork: a read is one synchronous step on
the server loop (nothing can interleave), and a fork would copy the whole document each time.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from uuid import uuid4

from jupyter_server.utils import ensure_async
from tornado import web

from ._text_edits import apply_text
from .errors import CellBusy, CellNotFound, CollaborationUnavailable, NotebookNotFound
from .rooms import OpenedRooms, room_id

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp
    from jupyter_ydoc import YNotebook
    from pycrdt import Array, Assoc, Map, StickyIndex, Text
else:
    try:
        from pycrdt import Array, Assoc, Map, StickyIndex, Text
    except ImportError:  # without jupyter-collaboration every call stops at a clear ToolError first
        Array = Assoc = Map = StickyIndex = Text = None

__all__ = ["LiveNotebook", "NotebookDocuments", "RestoreReport", "normalize_path", "plain_cell"]

EXTENSION_KEY = "jupyter_server_ydoc"
"""Where jupyter-collaboration registers its ``YDocExtension`` in ``web_app.settings``."""

HOW_TO_ENABLE = (
    "Install it with `pip install jupyter-collaboration` (version 5 or later) and make sure the "
    "`jupyter_server_ydoc` server extension is enabled (`jupyter server extension enable "
    "jupyter_server_ydoc`), then restart Jupyter."
)

CellType = Literal["code", "markdown", "raw"]


class NotebookDocuments:
    """Opens live notebooks through jupyter-collaboration; holds no document between calls
    (:attr:`rooms` releases the rooms only the agent opened, once it is done with them)."""

    def __init__(self, serverapp: ServerApp) -> None:
        self._serverapp = serverapp
        self.rooms = OpenedRooms(serverapp, self._extension)

    def _extension(self) -> Any:
        extension = self._serverapp.web_app.settings.get(EXTENSION_KEY)
        if extension is None or not hasattr(extension, "get_document"):
            raise CollaborationUnavailable(
                "Real-time collaboration (jupyter-collaboration) is not available on this Jupyter "
                "server, and the agent only edits notebooks through it so that your open notebook "
                f"never conflicts with its changes. {HOW_TO_ENABLE}"
            )
        if getattr(extension, "disable_rtc", False):
            raise CollaborationUnavailable(
                "Real-time collaboration is turned off (YDocExtension.disable_rtc is True), so the "
                "agent cannot edit notebooks safely. Remove that setting and restart Jupyter."
            )
        return extension

    @property
    def available(self) -> bool:
        try:
            self._extension()
        except CollaborationUnavailable:
            return False
        return True

    async def open(self, path: str) -> LiveNotebook:
        """The live shared notebook at *path* (opening its room if nobody has it open)."""
        extension = self._extension()
        path = normalize_path(path)
        if not path.endswith(".ipynb"):
            raise NotebookNotFound(f"'{path}' is not a notebook (notebooks end in .ipynb).")
        contents: Any = self._serverapp.contents_manager
        try:
            exists = await ensure_async(contents.file_exists(path))
        except (web.HTTPError, OSError, ValueError):  # e.g. a path outside the root
            exists = False
        if not exists:
            raise NotebookNotFound(
                f"There is no notebook at '{path}'. Use list_notebooks to see what exists."
            )
        document = await extension.get_document(
            path=path, content_type="notebook", file_format="json", copy=False, create=True
        )
        if document is None:
            raise CollaborationUnavailable(f"Could not open the shared document for '{path}'.")
        self.rooms.touch(path)
        return LiveNotebook(path, document)

    async def cursors(self, path: str) -> list[dict[str, Any]]:
        """The text cursors other clients show in the room of *path* (JupyterLab publishes each
        editor's ``cursors`` in the room's awareness, as Yjs relative positions); ``[]`` when
        there is no room or no way to read it."""
        room = await self._room(path)
        awareness = getattr(room, "awareness", None)
        states = getattr(awareness, "states", None)
        if not isinstance(states, dict):
            return []
        own = getattr(awareness, "client_id", None)
        found: list[dict[str, Any]] = []
        for client, state in states.items():
            if client == own or not isinstance(state, dict):
                continue
            for cursor in state.get("cursors") or []:
                if isinstance(cursor, dict):
                    found.extend(
                        p for p in (cursor.get("anchor"), cursor.get("head")) if isinstance(p, dict)
                    )
        return found

    async def _room(self, path: str) -> Any:
        """The notebook's open collaboration room, or ``None``."""
        try:
            extension = self._extension()
        except CollaborationUnavailable:
            return None
        server = getattr(extension, "ywebsocket_server", None)
        name = room_id(self._serverapp, normalize_path(path))
        if server is None or name is None or not server.room_exists(name):
            return None
        return await server.get_room(name)

    async def save(self, path: str) -> bool:
        """Write the shared notebook at *path* to disk now, without the room's autosave delay.

        The room saves on a debounce (``document_save_delay``), so an edit the agent reported
        as done could be lost if the server stopped within that second. jupyter-collaboration
        has no public "save now" call; this uses the room's manual-save path (what a client's
        save request triggers). Returns True when the notebook is on disk as the agent left it
        (saved now, or no shared document holds unsaved edits: no collaboration, no room), and
        False when edits may still be waiting for the autosave (the room is busy or this
        version has no manual-save path).
        """
        room = await self._room(path)
        if room is None:
            return True  # no collaboration or no room: no shared document holds unsaved edits
        save_now = getattr(room, "_save_to_disc", None)
        if not callable(save_now):
            return False
        task = save_now()
        if task is None:  # the room is applying an update; its autosave follows it
            return False
        await task
        return True


def normalize_path(path: str) -> str:
    """A notebook path as sessions and the contents manager know it (relative, no leading /)."""
    return path.strip().lstrip("/")


def reset_outputs(ycell: Any) -> None:
    """Empty a shared cell's outputs in place (clients keep observing the same array)."""
    outputs = ycell.get("outputs")
    if isinstance(outputs, Array):
        outputs.clear()
    else:
        ycell["outputs"] = Array()
    ycell["execution_count"] = None


@dataclass(frozen=True)
class RestoreReport:
    """What :meth:`LiveNotebook.restore_cells` changed."""

    removed: int
    added: int
    restored: int
    unchanged: int


class LiveNotebook:
    """Cell-level operations on one shared notebook, by cell id; plain dicts in and out."""

    def __init__(self, path: str, ynotebook: YNotebook) -> None:
        self.path = path
        self._doc = ynotebook

    @property
    def ynotebook(self) -> YNotebook:
        return self._doc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group edits so collaborators see them as one change."""
        with self._doc.ydoc.transaction():
            yield

    # -- reading -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._doc.ycells)

    def cells(self) -> list[dict[str, Any]]:
        return [plain_cell(ycell) for ycell in self._doc.ycells]

    def cell_ids(self) -> list[str]:
        return [str(ycell.get("id", "")) for ycell in self._doc.ycells]

    def index_of(self, cell_id: str) -> int:
        """The 0-based position of *cell_id*; :class:`CellNotFound` with a hint otherwise."""
        for index, ycell in enumerate(self._doc.ycells):
            if ycell.get("id") == cell_id:
                return index
        ids = self.cell_ids()
        shown = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
        raise CellNotFound(
            f"No cell has the id '{cell_id}' in {self.path} (it may have been deleted). "
            f"Current cell ids: {shown or 'none'}. Call get_notebook_state to see the cells."
        )

    def cell(self, cell_id: str) -> dict[str, Any]:
        return plain_cell(self._doc.ycells[self.index_of(cell_id)])

    def metadata(self) -> dict[str, Any]:
        meta = self._ymeta().to_py() or {}
        return dict(meta.get("metadata") or {})

    def _ymeta(self) -> Map[Any]:
        # "meta" is the documented YNotebook schema key (nbformat, nbformat_minor, metadata).
        meta: Map[Any] = self._doc.ydoc.get("meta", type=Map)
        return meta

    def kernelspec_name(self) -> str | None:
        """The kernel this notebook asks for, or ``None`` (then the server default is used)."""
        spec = self.metadata().get("kernelspec") or {}
        name = spec.get("name") if isinstance(spec, dict) else None
        return str(name) if name else None

    # -- editing -------------------------------------------------------------------------------
    def insert_cell(self, index: int, *, cell_type: CellType, source: str) -> dict[str, Any]:
        """Insert a new cell at 0-based *index*; returns it (with its new id)."""
        cell = new_cell(cell_type, source, cell_id=self._fresh_id())
        with self.transaction():
            self._upgrade_for_ids()
            self._doc.ycells.insert(max(0, min(index, len(self))), self._doc.create_ycell(cell))
        return cell

    def set_source(self, cell_id: str, source: str) -> dict[str, Any]:
        """Change the source of *cell_id* by its differing spans only; returns the old cell.

        Only the spans that differ are inserted or deleted in the shared text, so what a
        collaborator types elsewhere in the cell, and their cursor, survive.
        """
        index = self.index_of(cell_id)
        ycell = self._doc.ycells[index]
        old = plain_cell(ycell)
        with self.transaction():
            ysource = ycell.get("source")
            if hasattr(ysource, "insert") and not isinstance(ysource, str):
                apply_text(ysource, source)
            else:  # a cell created without a shared text (never by JupyterLab): set it whole
                self._doc.set_cell(index, source=source)
        return old

    def change_type(self, cell_id: str, cell_type: CellType, source: str) -> dict[str, Any]:
        """Turn *cell_id* into a *cell_type* cell (same id and position); returns the old cell."""
        index = self.index_of(cell_id)
        old = plain_cell(self._doc.ycells[index])
        cell = new_cell(cell_type, source, cell_id=cell_id)
        if isinstance(old.get("metadata"), dict):
            cell["metadata"] = {k: v for k, v in old["metadata"].items() if k != "trusted"}
        with self.transaction():
            self._doc.set_cell(index, cell)
        return old

    def delete_cell(self, cell_id: str) -> tuple[int, dict[str, Any]]:
        """Delete *cell_id*; returns its former 0-based position and content."""
        index = self.index_of(cell_id)
        old = plain_cell(self._doc.ycells[index])
        with self.transaction():
            del self._doc.ycells[index]
        return index, old

    def insert_existing(self, index: int, cell: dict[str, Any]) -> None:
        """Put back a cell (its id, source, outputs and metadata) at 0-based *index*."""
        with self.transaction():
            self._doc.ycells.insert(
                max(0, min(index, len(self))), self._doc.create_ycell(_for_ycell(cell))
            )

    def restore_outputs(
        self, cell_id: str, outputs: Sequence[dict[str, Any]], execution_count: Any
    ) -> None:
        """Give *cell_id* back the outputs it had (after they were cleared)."""
        index = self.index_of(cell_id)
        with self.transaction():
            ycell = self._doc.ycells[index]
            # jupyter_ydoc's own converter (stream text as shared text, as JupyterLab expects).
            youtputs = self._doc._create_youtputs(list(outputs))
            if isinstance(ycell.get("outputs"), Array):
                ycell["outputs"].clear()
                ycell["outputs"].extend(youtputs)
            else:
                ycell["outputs"] = Array(youtputs)
            ycell["execution_count"] = execution_count

    def move_cell(self, cell_id: str, index: int, *, keep_alive: Collection[str] = ()) -> int:
        """Move *cell_id* so it ends at 0-based *index*; returns where it was.

        Shared arrays have no move that JupyterLab's Yjs understands, so a move re-creates
        cells. By default the moved cell is re-created; when it is in *keep_alive* (someone is
        typing in it) the cells it passes are re-created instead, so the shared text their
        editor is bound to survives. Raises :class:`CellBusy` when both are being edited.
        """
        old_index = self.index_of(cell_id)
        target = max(0, min(index, len(self) - 1))
        if target == old_index:
            return old_index
        ycells = self._doc.ycells
        passed = (
            range(old_index + 1, target + 1) if target > old_index else range(target, old_index)
        )
        passed_ids = {str(ycells[k].get("id")) for k in passed}
        if cell_id not in keep_alive:
            cell = plain_cell(ycells[old_index])
            with self.transaction():
                del ycells[old_index]
                ycells.insert(target, self._doc.create_ycell(_for_ycell(cell)))
            return old_index
        if passed_ids & set(keep_alive):
            raise CellBusy("Someone is typing in this cell and in a cell it would pass.")
        moving = [plain_cell(ycells[k]) for k in passed]
        with self.transaction():
            del ycells[passed.start : passed.stop]
            at = old_index if target > old_index else target + 1
            for offset, cell in enumerate(moving):
                ycells.insert(at + offset, self._doc.create_ycell(_for_ycell(cell)))
        return old_index

    def cells_with_cursors(
        self, positions: Sequence[dict[str, Any]], among: Collection[str]
    ) -> set[str]:
        """Which of the cells *among* hold one of *positions* (Yjs relative positions, as in
        the room's awareness): someone's editor is in them even if they are not typing."""
        wanted = {_position_key(p) for p in positions} - {None}
        if not wanted:
            return set()
        found = set()
        for ycell in self._doc.ycells:
            cell_id = str(ycell.get("id", ""))
            if cell_id not in among or not isinstance(ycell.get("source"), Text):
                continue
            if wanted & _text_positions(ycell["source"]):
                found.add(cell_id)
        return found

    def sources(self) -> dict[str, str]:
        """Each cell's source by id (cheap: no outputs), to notice typing between two looks."""
        return {
            str(ycell.get("id", "")): str(ycell.get("source", "")) for ycell in self._doc.ycells
        }

    def clear_outputs(self, cell_ids: Sequence[str] | None = None) -> list[str]:
        """Clear outputs and execution counts; returns the ids of the code cells cleared."""
        targets = set(cell_ids) if cell_ids is not None else None
        if targets is not None:
            for cell_id in targets:
                self.index_of(cell_id)  # raise for unknown ids before changing anything
        cleared = []
        with self.transaction():
            for ycell in self._doc.ycells:
                if ycell.get("cell_type") != "code" or (
                    targets is not None and ycell.get("id") not in targets
                ):
                    continue
                reset_outputs(ycell)
                cleared.append(str(ycell.get("id")))
        return cleared

    def restore_cells(self, cells: Sequence[dict[str, Any]]) -> RestoreReport:
        """Make the cells equal to *cells* (a snapshot) in one transaction.

        Cells whose id and content already match are left alone, so a collaborator's cursor in
        an untouched cell does not jump; the rest are removed, re-created or put back.
        """
        wanted = [copy.deepcopy(c) for c in cells]
        wanted_ids = [str(c.get("id", "")) for c in wanted]
        current = {str(c.get("id")): c for c in self.cells()}
        keep = {c["id"] for c in wanted if c.get("id") in current and _same(current[c["id"]], c)}
        removed = sum(1 for cid in current if cid not in wanted_ids)
        added = sum(1 for cid in wanted_ids if cid not in current)
        with self.transaction():
            ycells = self._doc.ycells
            seen: set[str] = set()
            index = 0
            while index < len(ycells):  # drop everything that is not kept as it is
                cid = str(ycells[index].get("id"))
                if cid in keep and cid not in seen:
                    seen.add(cid)
                    index += 1
                else:
                    del ycells[index]
            for index, cell in enumerate(wanted):
                if index < len(ycells) and ycells[index].get("id") == cell.get("id"):
                    continue
                if cell.get("id") in keep:  # a kept cell that is out of order
                    for later in range(index + 1, len(ycells)):
                        if ycells[later].get("id") == cell.get("id"):
                            del ycells[later]
                            break
                ycells.insert(index, self._doc.create_ycell(_for_ycell(cell)))
            del ycells[len(wanted) :]
        return RestoreReport(
            removed=removed,
            added=added,
            restored=len(wanted) - len(keep) - added,
            unchanged=len(keep),
        )

    def _fresh_id(self) -> str:
        existing = set(self.cell_ids())
        while True:
            candidate = uuid4().hex[:8]
            if candidate not in existing:
                return candidate

    def _upgrade_for_ids(self) -> None:
        """Notebooks older than format 4.5 lose cell ids on save; upgrade so ids stay stable."""
        ymeta = self._ymeta()
        if int(ymeta.get("nbformat", 4) or 4) == 4 and int(ymeta.get("nbformat_minor", 5) or 0) < 5:
            ymeta["nbformat_minor"] = 5


def _position_key(position: dict[str, Any]) -> tuple[str, int, int] | None:
    """A relative position as ``("item"|"type", client, clock)``."""
    for kind in ("item", "type"):
        ident = position.get(kind)
        if (
            isinstance(ident, dict)
            and isinstance(ident.get("client"), int)
            and isinstance(ident.get("clock"), int)
        ):
            return kind, ident["client"], ident["clock"]
    return None


def _text_positions(ytext: Any) -> set[tuple[str, int, int] | None]:
    """Every relative position inside a shared text: its characters' ids and its own id."""
    keys: set[tuple[str, int, int] | None] = set()
    try:
        keys.add(_position_key(StickyIndex.new(ytext, 0, Assoc.BEFORE).to_json()))
        for index in range(len(ytext)):
            keys.add(_position_key(StickyIndex.new(ytext, index, Assoc.AFTER).to_json()))
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
    return keys


def plain_cell(ycell: Any) -> dict[str, Any]:
    """A shared cell as a plain nbformat-like dict (``execution_state`` included)."""
    cell = ycell.to_py() or {}
    count = cell.get("execution_count")
    if isinstance(count, float):
        cell["execution_count"] = int(count)
    for output in cell.get("outputs") or []:
        if isinstance(output, dict) and isinstance(output.get("execution_count"), float):
            output["execution_count"] = int(output["execution_count"])
    return dict(cell)


def new_cell(cell_type: CellType, source: str, *, cell_id: str) -> dict[str, Any]:
    cell: dict[str, Any] = {"id": cell_id, "cell_type": cell_type, "source": source, "metadata": {}}
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _for_ycell(cell: dict[str, Any]) -> dict[str, Any]:
    cell = {k: v for k, v in cell.items() if k != "execution_state"}
    cell.setdefault("metadata", {})
    return cell


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    strip = ("execution_state",)
    return {k: v for k, v in a.items() if k not in strip} == {
        k: v for k, v in b.items() if k not in strip
    }
