"""Whether the chat store is saving, why not, and what to tell the person about it.

The store's writer thread keeps a :class:`StoreHealth` up to date: ``saving`` while writes
land, ``degraded`` with a cause while they fail and wait in memory. The cause decides the
advice, because "free disk space" is wrong for a lock and useless for a read-only file:

- ``locked``: another program holds the database (a database browser, a backup, a second
  Jupyter server on the same data directory);
- ``full``: the disk (or a quota) is full;
- ``read_only``: the file or its folder cannot be written;
- ``other``: anything else SQLite reports (the server log has its words).

Standard library only.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Literal

Cause = Literal["locked", "full", "read_only", "other"]

_BY_CODE: dict[str, Cause] = {
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_FULL": "full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_PERM": "read_only",
    "SQLITE_CANTOPEN": "read_only",
    "SQLITE_AUTH": "read_only",
}
_BY_WORDS: tuple[tuple[str, Cause], ...] = (
    ("locked", "locked"),
    ("busy", "locked"),
    ("disk is full", "full"),
    ("readonly", "read_only"),
    ("read-only", "read_only"),
    ("unable to open", "read_only"),
)

_BY_ERRNO: dict[int, Cause] = {
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
    errno.EROFS: "read_only",
    errno.EACCES: "read_only",
    errno.EPERM: "read_only",
}


def classify(error: BaseException, path: str) -> Cause:
    """The cause of a failed write, from SQLite's code and, for an I/O error, from the disk itself."""
    name = getattr(error, "sqlite_errorname", "") or ""
    base = name.split("_")[0:2]
    cause = _BY_CODE.get("_".join(base)) if base else None
    if cause is None:
        text = str(error).lower()
        cause = next((c for words, c in _BY_WORDS if words in text), None)
    if cause is None and isinstance(error, OSError):
        cause = _BY_ERRNO.get(error.errno or 0)
    if (
        cause is None or cause == "read_only"
    ):  # I/O errors: look at the disk (an immutable file, a full disk)
        seen = _look(path)
        if seen is not None:
            return seen
    return cause or "other"


def _look(path: str) -> Cause | None:
    if path == ":memory:":
        return None
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if os.statvfs(folder).f_bavail == 0:
            return "full"
    except OSError:
        pass
    for name in (path, folder):
        if os.path.exists(name) and not os.access(name, os.W_OK):
            return "read_only"
    return None


_ADVICE: dict[Cause, tuple[str, str]] = {
    "locked": (
        "another program is using the chat database",
        (
            "Close the other program (a database browser, a backup, another Jupyter server using the same "
            "data folder) if this lasts."
        ),
    ),
    "full": ("the disk is full", "Free some disk space."),
    "read_only": (
        "the chat database or its folder is read-only",
        "Make the file and its folder writable.",
    ),
    "other": ("the chat database cannot be written", "The server log says why."),
}


def advice(cause: Cause | None) -> str:
    """What to do about *cause*, as the end of a sentence (lower case)."""
    text = _ADVICE[cause or "other"][1]
    return text[0].lower() + text[1:]


@dataclass(frozen=True)
class StoreHealth:
    """One moment of the store's health; a new object at every change."""

    saving: bool = True
    cause: Cause | None = None
    detail: str = ""
    """SQLite's own words for the last failure (for the log and the detailed text)."""
    queued: int = 0
    """Writes waiting in memory."""
    dropped: int = 0
    """Event-log writes given up during this outage because the queue was full."""

    @property
    def problem(self) -> str | None:
        """Why chats are not being saved, as a sentence; ``None`` while they are."""
        if self.saving or self.cause is None:
            return None
        reason, advice = _ADVICE[self.cause]
        return (
            f"Chats are not being saved right now: {reason}. The agent keeps working and everything is saved "
            f"once the database can be written again. {advice}"
        )


def explained(cause: Cause | None) -> tuple[str, str]:
    """*cause* as a clause ("the disk is full") and what to do about it, as a sentence."""
    return _ADVICE[cause or "other"]


__all__ = ["Cause", "StoreHealth", "advice", "classify", "explained"]
