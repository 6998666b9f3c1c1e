"""Which stored chats belong to this server: one chat database, many server roots.

Why: one user's servers share one chat database (the Jupyter data directory's) and the same file
name exists under many folders, so a chat belongs to the server's root (its resolved folder) and
the notebook's path under it. A chat made under another root is never listed, loaded (so never
continued or sent to the model) nor recovered here.

Chats stored before chats had a root (schema 3) are offered only under a root whose notebook at
that path holds a cell the chat's agent created, by its cell id: ids are random per creation, so
an untouched copy of the notebook in another folder does not match, while the folder the agent
worked in does. The first such root adopts the chat for good. The others stay in the database,
unlisted: nothing tells which folder they came from, and a guess could hand one folder's
conversation to another (a copy made *after* the agent's work matches too: the first of those
folders to open it adopts it; its conversation is about that same content).

Standard library only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .chat_store import ChatStore, StoredChat

log = logging.getLogger(__name__)

CellIds = Callable[[str], "set[str] | None"]
"""``notebook path -> the ids of the cells its file under the server's root holds`` (``None``:
no such file, or it cannot be read)."""

__all__ = ["CellIds", "RootedChats"]


class RootedChats:
    """The chats of one server root in a shared :class:`ChatStore` (``root=None``: all of them)."""

    def __init__(self, store: ChatStore, root: str | None, cell_ids: CellIds | None) -> None:
        self._store = store
        self.root = root
        self.cell_ids = cell_ids
        self._adopted: set[str] = set()
        """Older chats this root adopted (their root is being written)."""
        self._not_adopted: dict[str, set[str]] = {}
        """Per notebook path, the older chats its file gave no evidence for when last read."""

    def list_chats(
        self,
        notebook_path: str | None,
        *,
        file_id: str | None,
        before: tuple[str, str] | None,
        limit: int,
    ) -> list[StoredChat]:
        """This root's stored chats (of *notebook_path*, or all), newest first."""
        if notebook_path:
            self._adopt(notebook_path)
        return self._store.read.list_chats(
            notebook_path=notebook_path,
            file_id=file_id,
            before=before,
            limit=limit,
            root=self.root,
            adopted=self._adopted,
        )

    def ours(self, stored: StoredChat) -> bool:
        """Whether *stored* belongs to this server's root (always, without a root)."""
        return self.root is None or stored.root == self.root or stored.chat_id in self._adopted

    def _adopt(self, notebook_path: str) -> None:
        """Adopt the older chats of *notebook_path* whose agent created a cell this root's file
        holds (see the module docstring)."""
        if self.root is None or self.cell_ids is None:
            return
        waiting = [
            c for c in self._store.read.unrooted_chats(notebook_path) if c not in self._adopted
        ]
        if not waiting or self._not_adopted.get(notebook_path) == set(waiting):
            return  # looked already: the file is read once per server, not at every listing
        self._not_adopted[notebook_path] = set(waiting)
        held = self.cell_ids(notebook_path)
        if not held:
            return
        for chat_id in waiting:
            created = {
                str(op.get("cell_id"))
                for body in self._store.read.snapshots(chat_id).values()
                if body.get("kind") == "operations"
                for op in body.get("operations") or []
                if op.get("kind") == "create"
            }
            if created & held:
                self._adopted.add(chat_id)
                self._store.set_root(chat_id, self.root)
                log.info(
                    "AAEP chat store: a chat of %s stored by an earlier version now belongs to %s "
                    "(the notebook there holds a cell its agent created).",
                    notebook_path,
                    self.root,
                )

    def unrooted_note(self) -> str | None:
        """A line for the log at start: how many older chats wait for a root, and why."""
        if self.root is None:
            return None
        count = self._store.read.count_unrooted()
        if not count:
            return None
        return (
            f"AAEP chat store: {count} chat(s) stored by an earlier version name no server folder; "
            "each is offered only under the folder whose notebook holds a cell its agent created, "
            "the others stay in the database unlisted (so no chat is shown for another folder's notebook)."
        )
