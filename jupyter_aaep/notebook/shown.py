"""What each reader was last shown of each cell: the base of an edit sent without a version.

A *reader* is whoever writes edits from what it read: the built-in agent's chat, or one outside
agent's MCP connection. Models leave the optional ``version`` out all the time; the server still
knows which text of the cell it showed that reader (a read, a listing, an attached cell, the
reader's own edit or new cell), so the edit is merged onto the cell as it is now, or refused
when it cannot be. Readers never share a base: what the built-in agent read says nothing about
what an outside agent saw.

Bounded by entries and by characters (the oldest go first); a reader whose base was dropped is
told to read the cell again, as after a server restart.
"""

from __future__ import annotations

from collections import OrderedDict

from .documents import normalize_path

__all__ = ["ShownSources"]

ENTRIES_KEPT = 20_000
CHARS_KEPT = 64_000_000


class ShownSources:
    """The last source of each cell shown to each reader, oldest dropped first."""

    def __init__(self, *, entries: int = ENTRIES_KEPT, chars: int = CHARS_KEPT) -> None:
        self._max_entries = entries
        self._max_chars = chars
        self._chars = 0
        self._shown: OrderedDict[tuple[str, str, str], str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._shown)

    def remember(self, reader: str, path: str, cell_id: str, source: str) -> None:
        """*reader* was shown *source* as the text of *cell_id* in *path* (or wrote it there)."""
        key = (reader, normalize_path(path), cell_id)
        old = self._shown.pop(key, None)
        if old is not None:
            self._chars -= len(old)
        self._shown[key] = source
        self._chars += len(source)
        while self._shown and (
            len(self._shown) > self._max_entries or self._chars > self._max_chars
        ):
            _, dropped = self._shown.popitem(last=False)
            self._chars -= len(dropped)

    def base(self, reader: str, path: str, cell_id: str) -> str | None:
        """The text of *cell_id* that *reader* was last shown, or ``None`` (never, or forgotten)."""
        return self._shown.get((reader, normalize_path(path), cell_id))
