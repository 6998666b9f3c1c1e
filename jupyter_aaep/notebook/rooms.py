"""The collaboration rooms the agent touched, and their release once nobody needs them.

``get_document(..., create=True)`` opens a room for a notebook nobody has open. The room keeps
the whole notebook as a shared (CRDT) document, history included, in the server's memory.
jupyter-collaboration deletes a room only when its last browser disconnects, so a room that
only the agent opened, never having had a browser, stayed until the server stopped: after a
cell that printed 50 MB that was most of the memory the server kept
(``benchmarks/output_flood.py``).

:class:`OpenedRooms` is told each time the agent opens a notebook (:meth:`OpenedRooms.touch`).
After ``idle_seconds`` without a touch (by default the collaboration extension's own
``document_cleanup_delay``: a room is kept as long as a browser's would be), and once the
notebook is not in use by us (``in_use``: a session working on it, a cell run not ended), a
room nobody is connected to is saved and deleted, its file watcher with it. A room a person
is in is never released here: when they leave, jupyter-collaboration's cleaner deletes it.
The next open simply creates the room again from the saved file.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from ._memory import TRIM_AFTER_SECONDS, give_back_freed_memory
from .errors import NotebookError

__all__ = ["OpenedRooms", "room_id"]

log = logging.getLogger(__name__)

BIG_DOCUMENT_BYTES = 5_000_000
"""A released shared document from which the freed memory is worth giving back."""
FREED_WITHIN = 120.0
"""Seconds after which the memory is given back even if the released document is still alive."""


def room_id(serverapp: Any, path: str) -> str | None:
    """The room name of the notebook at *path* (``json:notebook:<file id>``), or ``None`` when
    the file-id service does not know it yet."""
    manager = serverapp.web_app.settings.get("file_id_manager")
    file_id = manager.get_id(path) if manager is not None else None
    return None if file_id is None else f"json:notebook:{file_id}"


class OpenedRooms:
    """Releases the rooms the agent opened once it has been done with them for a while."""

    def __init__(self, serverapp: Any, extension: Callable[[], Any]) -> None:
        self._serverapp = serverapp
        self._extension = extension
        self.idle_seconds: float | None = None
        """Seconds after the last touch before a release; ``None``: the collaboration
        extension's ``document_cleanup_delay`` (when that is ``None`` too, never)."""
        self.in_use: Callable[[str], bool] = lambda _path: False
        """Whether we still work on a notebook (its owner sets this)."""
        self._touched: dict[str, float] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.released: list[str] = []
        """Paths whose room was released, oldest first (the last hundred): for logs and tests."""

    def touch(self, path: str) -> None:
        """The agent opened (or stopped working on) *path*: its release waits again."""
        try:
            delay = self._delay()
            asyncio.get_running_loop()
        except (NotebookError, RuntimeError):  # no collaboration, or no loop: no room to release
            return
        if delay is None:
            return
        self._touched[path] = time.monotonic()
        if path not in self._timers:
            self._arm(path, delay)

    def watched(self) -> list[str]:
        """The paths whose room may be released later."""
        return sorted(self._touched)

    def _delay(self) -> float | None:
        if self.idle_seconds is not None:
            return max(0.0, self.idle_seconds)
        delay = getattr(self._extension(), "document_cleanup_delay", None)
        return None if delay is None else max(0.0, float(delay))

    def _arm(self, path: str, delay: float) -> None:
        old = self._timers.pop(path, None)
        if old is not None:
            old.cancel()
        self._timers[path] = asyncio.get_running_loop().call_later(delay, self._due, path)

    def _due(self, path: str) -> None:
        self._timers.pop(path, None)
        delay, touched = self._delay(), self._touched.get(path)
        if delay is None or touched is None:
            self._touched.pop(path, None)
            return
        waited = time.monotonic() - touched
        if waited < delay or self.in_use(path):
            self._arm(path, delay - waited if waited < delay else delay)
            return
        task = asyncio.ensure_future(self._release(path, touched))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, path: str, touched: float) -> None:
        try:
            released = await self.release(path, unless_touched_after=touched)
        except Exception as error:  # noqa: BLE001 - the room stays; the next touch tries again
            log.warning("Could not release the collaboration room of %s: %s", path, error)
            released = False
        if self._touched.get(path, touched) > touched or released is None:
            # opened again meanwhile, or busy saving: wait again (at least a second)
            self._arm(path, max(self._delay() or 0.0, 1.0))
        else:
            self._touched.pop(path, None)

    async def release(self, path: str, *, unless_touched_after: float | None = None) -> bool | None:
        """Save and delete the room of *path* if nobody is connected to it. ``True``: released;
        ``False``: kept (a person is in it, it is gone or going already, or its save could not
        be confirmed: nothing unsaved is ever dropped); ``None``: busy, try again later."""
        extension = self._extension()
        server = getattr(extension, "ywebsocket_server", None)
        name = room_id(self._serverapp, path)
        if server is None or name is None or not server.room_exists(name):
            return False
        async with extension._room_locks[name]:  # what a browser joining the room takes too
            room = server.rooms.get(name)
            if room is None or not _nobody_in(room):
                return False
            file = getattr(room, "_file", None)
            save = getattr(room, "_save_to_disc", None)
            if file is None or not callable(save):
                return False
            stamp = file.last_modified
            saving = save()
            if saving is None:  # the room is applying an update
                return None
            await saving
            if file.last_modified == stamp:
                log.info("Kept the room of %s: its save could not be confirmed.", path)
                return False
            touched = self._touched.get(path)
            if not _nobody_in(room) or (
                unless_touched_after is not None
                and touched is not None
                and touched > unless_touched_after
            ):
                return False if not _nobody_in(room) else None
            size = len(room.ydoc.get_update())
            await server.delete_room(room=room)
            _close_update_streams(room)
            file_id = name.split(":", 2)[2]
            loaders = extension.file_loaders
            if file_id in loaders and loaders[file_id].number_of_subscriptions == 0:
                await loaders.remove(file_id)
        self.released = [*self.released[-99:], path]
        log.info("Released the collaboration room of %s (nobody had it open).", path)
        if size >= BIG_DOCUMENT_BYTES:
            document = getattr(room, "_document", None)
            if document is not None:
                _give_back_once_freed(weakref.ref(document))
        return True

    def close(self) -> None:
        """Stop waiting (server shutdown: the collaboration extension deletes every room)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._touched.clear()
        for task in self._tasks:
            task.cancel()


def _nobody_in(room: Any) -> bool:
    """No client is connected and no browser's leaving is being cleaned up by the room's owner."""
    cleaner = getattr(room, "cleaner", None)
    return not room.clients and (cleaner is None or cleaner.done())


def _give_back_once_freed(document: weakref.ref[Any], waited: float = 0.0) -> None:
    """Give the freed memory back once the released document is really gone: a deleted room's
    tasks (its pending history writes) take a while to end and hold it until then."""
    if document() is None or waited >= FREED_WITHIN:
        give_back_freed_memory()
        return
    asyncio.get_running_loop().call_later(
        TRIM_AFTER_SECONDS, _give_back_once_freed, document, waited + TRIM_AFTER_SECONDS
    )


def _close_update_streams(room: Any) -> None:
    """Close the room's stream of updates to broadcast, which its ``stop`` leaves open (pycrdt
    0.14): else each released room warns of an unclosed stream when it is collected."""
    for name in ("_update_send_stream", "_update_receive_stream"):
        stream = getattr(room, name, None)
        close = getattr(stream, "close", None)
        if callable(close):
            close()
