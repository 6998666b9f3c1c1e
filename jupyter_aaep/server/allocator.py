"""glibc's allocator set, at the extension's load, to give a big output's memory back.

A cell that prints tens of megabytes passes through the server as many big strings and
buffers, made on several threads (ZMQ's, the store's writer, the default executor). With
glibc's defaults each thread may get an arena of its own, and the size from which a block gets
a mapping of its own rises to that of each big block freed (up to 32 MB), so later big blocks
land in the arenas and stay there, partly used, after they are freed: ``malloc_trim`` (which
:mod:`jupyter_aaep.notebook._memory` calls after such a run) cannot return a page that still
holds one live byte. The environment variables ``MALLOC_ARENA_MAX`` and
``MALLOC_MMAP_THRESHOLD_`` fix both, but people starting ``jupyter lab`` themselves rarely set
them; ``mallopt`` sets the same two values from inside the process.

Is that ours to do in a process we share with jupyter_server and its other extensions? The two
settings change where memory comes from, never what any code sees, and only for blocks
allocated afterwards; ``scripts/start`` has run the whole server with ``MALLOC_ARENA_MAX=2``
all along. Their costs are small for a server like this one: with fewer arenas, threads that
allocate at the same instant wait for each other (jupyter_server does its work on one event
loop thread); a block of a megabyte or more costs a system call to map and one to unmap. So it
is on by default, logged, limited to Linux with glibc, skipped for a value the person set in
the environment (or ``GLIBC_TUNABLES``), and ``c.AAEPExtension.tune_memory_allocator = False``
turns it off. Set at load, before the threads that carry a big output (kernels' clients, the
store's writer) start: an arena made earlier is kept, a new one only within the limit.

Measured (``benchmarks/output_flood.py``, a 50 MB output, one run each): before this, Python's
objects and glibc's in-use total were back at their level soon after the run while the
resident memory stayed up to 150 MB higher until ``malloc_trim``; with it, up to 66 MB (the
open room's 50 MB document included), and the freed blocks were back with the system as soon
as the document was gone (docs/configuration.md, Memory after a big output).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping

__all__ = ["ARENA_MAX", "MMAP_THRESHOLD", "tune_allocator"]

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameters (``malloc.h``)."""
ARENA_MAX = 2
"""Malloc arenas the process may use (``MALLOC_ARENA_MAX=2``, as ``scripts/start`` sets)."""
MMAP_THRESHOLD = 1 << 20
"""Blocks from this size get a mapping of their own, returned to the system when freed."""
_SAID = {
    M_ARENA_MAX: f"at most {ARENA_MAX} malloc arenas",
    M_MMAP_THRESHOLD: f"blocks of {MMAP_THRESHOLD >> 20} MB or more mapped on their own",
}


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt`` from the C library this process already runs on (no library search:
    ``ctypes.util.find_library`` would run ``ldconfig`` at every server start)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc's own: musl's mallopt does nothing  # noqa: B018
    except (OSError, AttributeError):
        return None
    return getattr(libc, "mallopt", None)


def tune_allocator(environ: Mapping[str, str] = os.environ) -> str | None:
    """Set both values where the environment left them; a sentence for the log saying what was
    set, or ``None`` where nothing was (not glibc, or the environment chose both already)."""
    mallopt = _mallopt()
    if mallopt is None:
        return None
    tunables = environ.get("GLIBC_TUNABLES", "")
    settings = (
        ("MALLOC_ARENA_MAX", "arena_max", M_ARENA_MAX, ARENA_MAX),
        ("MALLOC_MMAP_THRESHOLD_", "mmap_threshold", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    )
    done = [
        _SAID[param]
        for variable, tunable, param, value in settings
        if variable not in environ and tunable not in tunables and mallopt(param, value) == 1
    ]
    if not done:
        return None
    return "memory allocator set to give memory back after big outputs: " + " and ".join(done)
