"""Real faults of a chat database for tests: another process's lock, a full disk, a read-only file.

Each is the real thing on a real SQLite file: a second process holding an ``EXCLUSIVE``
transaction, a small tmpfs filled to the last block (needs root: ``mount``), and an
immutable file (``chattr +i``, which stops root too). ``skip_reason`` says why a fault
cannot be made on this machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


class ForeignLock:
    """Another process holding the database in an EXCLUSIVE transaction until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def release(self) -> float:
        """Let go; returns the monotonic time at which the lock was certainly released."""
        self.proc.communicate("go\n", timeout=10)  # closes both pipes
        return time.monotonic()


class SmallDisk:
    """A tmpfs of *size* mounted at *where*, which :meth:`fill` fills and :meth:`free` empties."""

    def __init__(self, where: Path, size: str = "4m") -> None:
        self.where = where
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
            check=True,
            capture_output=True,
        )
        self.filler = where / "filler"

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 65536)
        except OSError:
            pass
        try:
            while True:
                os.write(fd, b"\0" * 512)
        except OSError:
            pass
        finally:
            os.close(fd)

    def free(self) -> float:
        self.filler.unlink()
        return time.monotonic()

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.where)], check=False, capture_output=True)


def immutable(path: Path, on: bool) -> float:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True, capture_output=True)
    return time.monotonic()


def skip_reason(kind: str, folder: Path) -> str | None:
    """Why the fault *kind* cannot be made here (``None``: it can)."""
    if kind == "full":
        if os.geteuid() != 0 or shutil.which("mount") is None:
            return "a full disk is played by a small tmpfs, which needs root and mount"
        probe = folder / "probe-mount"
        try:
            SmallDisk(probe, "64k").unmount()
        except subprocess.CalledProcessError:
            return "this machine does not allow mounting a tmpfs"
    if kind == "read_only":
        if shutil.which("chattr") is None:
            return "a read-only file is played with chattr +i, which is missing"
        probe = folder / "probe-immutable"
        probe.touch()
        try:
            immutable(probe, True)
            immutable(probe, False)
        except subprocess.CalledProcessError:
            return "this file system or user cannot make a file immutable (chattr +i)"
    return None
