"""Which chats are this server's: its root folder, its notebooks' files, their renames.

Why: one user's servers share one chat database (the Jupyter data directory's), and the same
file name exists under many folders. A chat is keyed by the server's root (its real, resolved
path) and the notebook's path under it (see :class:`~jupyter_aaep.chats.persistence.ChatPersistence`),
so a server rooted elsewhere never shows, continues or sends to the model another folder's chat.

A chat follows its notebook's renames inside the root through the contents service's own
``rename`` events (a folder's rename moves the chats of every notebook in it). A file id from
jupyter_server_fileid is used only when its manager keeps one record per file on disk (the
``LocalFileIdManager``, which also follows moves made outside Jupyter); the default
``ArbitraryFileIdManager`` records root-relative paths in one per-user database, so the same
name under two roots would share one id.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

CONTENTS_EVENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"

__all__ = [
    "CONTENTS_EVENTS",
    "RenameFollower",
    "notebook_cell_ids",
    "per_root_file_id",
    "server_root",
]


def server_root(serverapp: Any) -> str | None:
    """The server's root folder, resolved (symbolic links followed), or ``None`` without one."""
    root = getattr(serverapp, "root_dir", None)
    if not isinstance(root, str) or not root:
        return None
    return os.path.realpath(os.path.expanduser(root))


def notebook_cell_ids(root: str | None, path: str) -> set[str] | None:
    """The ids of the cells of the notebook file *path* under *root*; ``None`` when there is no
    such file inside the root or it cannot be read."""
    if root is None:
        return None
    target = os.path.realpath(os.path.join(root, path.lstrip("/")))
    if os.path.commonpath([root, target]) != root or not os.path.isfile(target):
        return None
    try:
        with open(target, encoding="utf-8") as handle:
            cells = json.load(handle).get("cells") or []
    except (OSError, ValueError, AttributeError) as error:
        log.debug("could not read the cells of %s: %s", path, error)
        return None
    return {str(cell["id"]) for cell in cells if isinstance(cell, dict) and cell.get("id")}


def per_root_file_id(web_settings: dict[str, Any]) -> Callable[[str], str | None]:
    """The notebook's file id, only from a file id manager that keeps one record per file."""

    def file_id(path: str) -> str | None:
        manager = web_settings.get("file_id_manager")
        if manager is None or type(manager).__name__ != "LocalFileIdManager":
            return None
        value = manager.index(path)
        return str(value) if value is not None else None

    return file_id


class RenameFollower:
    """Listens to the contents service's events and tells the runner of each rename."""

    def __init__(self, serverapp: Any, moved: Callable[[str, str], None]) -> None:
        self._logger = getattr(serverapp, "event_logger", None)
        self._moved = moved
        self.listening = False
        if self._logger is None:
            return
        try:
            self._logger.add_listener(schema_id=CONTENTS_EVENTS, listener=self._on_event)
        except Exception as error:  # noqa: BLE001 - chats then follow renames by file id only
            log.warning("AAEP agent: chats cannot follow renamed notebooks (%s).", error)
            return
        self.listening = True

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        if data.get("action") != "rename" or not data.get("source_path") or not data.get("path"):
            return
        old, new = str(data["source_path"]).strip("/"), str(data["path"]).strip("/")
        if old and new and old != new:
            self._moved(old, new)

    def close(self) -> None:
        if self.listening and self._logger is not None:
            try:
                self._logger.remove_listener(schema_id=CONTENTS_EVENTS, listener=self._on_event)
            except Exception as error:  # noqa: BLE001 - the server is stopping anyway
                log.debug("could not stop following renames: %s", error)
            self.listening = False
