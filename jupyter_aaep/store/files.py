"""The chat database's files, private to their owner whatever the process umask.

The store holds every conversation, the code the user approved and notebook snapshots, so
its folder is ``0700`` and its files ``0600``. SQLite creates the ``-wal``, ``-shm`` and
``-journal`` files later, on first use, with the *main file's* permission bits (its unix
VFS copies them and ``fchmod``s past the umask), so creating the main file ``0600`` before
SQLite opens it is what makes those private too. A store made by an older version (or under
a loose umask) is tightened at start; the caller logs one line naming what changed.

Standard library only.
"""

from __future__ import annotations

import os
import stat

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
COMPANIONS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside the database."""
CREDENTIALS_FILE = "mcp_credentials.json"
"""Outside agents' credentials (hashed), kept beside the database: the folder is still ours."""


def _tighten(path: str, mode: int) -> bool:
    """Set *path* to *mode* if it allows more than that; whether it changed anything."""
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    if current & ~mode == 0:
        return False
    os.chmod(path, current & mode)
    return True


def _create_private(path: str) -> None:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:  # another process made it between the check and the open
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def _own_folder(folder: str, path: str) -> bool:
    """Whether *folder* holds only this database (the default ``aaep/`` folder does): a folder
    shared with other files (a home directory named in ``db_path``) is not ours to close."""
    ours = {os.path.basename(path) + suffix for suffix in ("", *COMPANIONS)} | {CREDENTIALS_FILE}
    return set(os.listdir(folder)) <= ours


def prepare(path: str) -> list[str]:
    """Make the database's folder and file private (creating them); returns what was loosened before.

    An existing folder is closed only if it holds nothing but the database (see ``_own_folder``).

    Raises ``OSError`` when the folder cannot be made (the caller then keeps chats in memory).
    A file that cannot be created or changed (a read-only disk) is left to SQLite, which
    reports it when it opens the database.
    """
    tightened: list[str] = []
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=DIRECTORY_MODE, exist_ok=True)
        os.chmod(folder, DIRECTORY_MODE)  # makedirs' mode is filtered by the umask
    try:
        if _own_folder(folder, path) and _tighten(folder, DIRECTORY_MODE):
            tightened.append(folder)
        if not os.path.exists(path):
            _create_private(path)
        for name in (path, *(path + suffix for suffix in COMPANIONS)):
            if _tighten(name, FILE_MODE):
                tightened.append(name)
    except (
        OSError
    ):  # a read-only folder, file or disk: SQLite says so when it opens, the store reports it
        pass
    return tightened


def modes(path: str) -> dict[str, int]:
    """The permission bits of the database's folder and every file of it that exists (for checks)."""
    found = {os.path.dirname(os.path.abspath(path)): 0}
    found.update(
        {name: 0 for name in (path, *(path + s for s in COMPANIONS)) if os.path.exists(name)}
    )
    return {name: stat.S_IMODE(os.stat(name).st_mode) for name in found}


__all__ = ["COMPANIONS", "CREDENTIALS_FILE", "DIRECTORY_MODE", "FILE_MODE", "modes", "prepare"]
