"""Standing permissions of chat and notebook scope, in the chat store (schema version 5).

They live beside the chats they belong to, so they are private as the chats are (the store's
files are 0600) and come back after a restart. Permissions of scope ``always`` are not here:
they belong to the user, not to this server's chat database
(:mod:`jupyter_aaep.agent.grant_file`). The table itself is the store's (``GRANTS_TABLE`` in :mod:`jupyter_aaep.store.schema`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from typing import Any, Protocol

from ..agent.grants import Grant, GrantError

log = logging.getLogger(__name__)


class _Rows(Protocol):
    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...


class _Store(Protocol):
    """What is used of :class:`~jupyter_aaep.store.chat_store.ChatStore`."""

    @property
    def read(self) -> _Rows: ...

    def _submit(self, run: Callable[[sqlite3.Connection], object]) -> None: ...


class StoredGrants:
    """Reads and writes the ``grants`` table through the store's own connections."""

    def __init__(self, store: _Store) -> None:
        self.store = store

    def load(self) -> list[Grant]:
        grants = []
        for (body,) in self.store.read.rows("SELECT body FROM grants ORDER BY rowid"):
            try:
                grants.append(Grant.from_json(json.loads(body)))
            except (GrantError, ValueError, TypeError) as error:
                log.warning("AAEP chat store: a stored permission was skipped (%s)", error)
        return grants

    def save(self, grant: Grant) -> None:
        body = json.dumps(grant.to_json())
        self.store._submit(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO grants (grant_id, body) VALUES (?, ?)", (grant.id, body)
            )
        )

    def delete(self, grant_id: str) -> None:
        self.store._submit(
            lambda c: c.execute("DELETE FROM grants WHERE grant_id = ?", (grant_id,))
        )
