"""Giving freed memory back to the system after a run with a big output.

A cell that prints tens of megabytes passes through the server as many messages and strings;
once they are freed, the C allocator keeps most of those pages for later (a 10 MB output left
the server 52 MB larger, 19 MB once they were given back: ``benchmarks/output_flood.py``).
``malloc_trim`` returns them. glibc only; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import cache
from typing import Any

__all__ = ["BIG_OUTPUT_CHARS", "TRIM_AFTER_SECONDS", "give_back_freed_memory", "output_chars"]

log = logging.getLogger(__name__)

BIG_OUTPUT_CHARS = 1_000_000
"""Text output from which a run is worth a trim afterwards."""
TRIM_AFTER_SECONDS = 3.0
"""How long after such a run: the tool's answer and the listeners' words are made by then."""


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def give_back_freed_memory() -> bool:
    """Return the allocator's free pages to the system; ``False`` where that is not possible."""
    libc = _libc()
    if libc is None:
        return False
    try:
        libc.malloc_trim(0)
    except OSError as error:  # pragma: no cover - a libc without it was ruled out above
        log.debug("malloc_trim failed: %s", error)
        return False
    return True


def output_chars(outputs: list[dict[str, Any]]) -> int:
    """Characters of text in *outputs* (stream text and text results), to decide on a trim."""
    total = 0
    for output in outputs:
        text = output.get("text")
        if isinstance(text, str):
            total += len(text)
        for value in (output.get("data") or {}).values():
            if isinstance(value, str):
                total += len(value)
    return total
