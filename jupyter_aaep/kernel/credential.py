"""This kernel's own credential for the server's kernel endpoints, held in memory only.

The server gives every kernel it starts a credential of its own in ``AAEP_KERNEL_SECRET`` (see
``server/kernel_credentials.py``). The first use moves it out of the environment: out of
``os.environ`` (so subprocesses of the kernel do not inherit it) and out of the process's
original environment block, which ``/proc/<pid>/environ`` shows to every process of the same
user. What this does not stop: a process of the same user that may read this kernel's memory
(``/proc/<pid>/mem``, a debugger) where the system allows it; see the README.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

__all__ = ["ENV_NAME", "forget", "take"]

ENV_NAME = "AAEP_KERNEL_SECRET"
_held: dict[str, str] = {}


def take(environ: Mapping[str, str] | None = None) -> str | None:
    """The credential; from *environ* when given (tests), else from this process, scrubbed once."""
    if environ is not None:
        return environ.get(ENV_NAME) or None
    if ENV_NAME in os.environ:
        value = os.environ[ENV_NAME]
        _scrub_process_environment(ENV_NAME)
        os.environ.pop(ENV_NAME, None)
        if value:
            _held["value"] = value
    return _held.get("value")


def forget() -> None:
    """Drop the held credential (the kernel then cannot call the server until it restarts)."""
    _held.clear()


def _scrub_process_environment(name: str) -> bool:
    """Overwrite ``NAME=value`` in the C environment in place, so ``/proc/<pid>/environ`` no
    longer shows the value. Whether it did; never raises (other systems keep their copy)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
        prefix = name.encode() + b"="
        index = 0
        while environ[index]:
            address = environ[index]
            entry = ctypes.string_at(address)
            if entry.startswith(prefix):
                ctypes.memset(address + len(prefix), ord("x"), len(entry) - len(prefix))
                return True
            index += 1
    except (OSError, ValueError, AttributeError):
        return False
    return False
