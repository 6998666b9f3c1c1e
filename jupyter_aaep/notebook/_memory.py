"""Giving freed memory back to the system after a run with a big output.

A cell that prints tens of megabytes passes through the server as many messages and strings;
once they are freed, the C allocator keeps most of those pages for later (a 10 MB output left
the server 52 MB larger, 19 MB once they were given back: ``benchmarks/output_flood.py``).
``malloc_trim`` returns them. glibc only; elsewhere this does nothing.

Our own copy of a big output is cut too: the registry of the agent's runs
(:class:`~.running.RunningCells`) keeps each finished run, outputs included, for a later
``wait_for_cell`` or announcement. Once the run has been reported, :func:`cut_outputs` keeps the
head and tail of each long text (more than anything made of it later reads: the model's budget,
the detailed text) and says how much was left out; the notebook keeps the whole output. A cell
printing 50 MB left the server 245 MB larger, 30 MB of it this copy (``benchmarks/output_flood.py``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = [
    "BIG_OUTPUT_CHARS",
    "KEPT_CHARS",
    "TRIM_AFTER_SECONDS",
    "cut_outputs",
    "give_back_freed_memory",
    "output_chars",
    "release_later",
]

log = logging.getLogger(__name__)

BIG_OUTPUT_CHARS = 1_000_000
"""Text output from which a run is worth a trim afterwards."""
TRIM_AFTER_SECONDS = 3.0
"""How long after such a run: the tool's answer and the listeners' words are made by then."""
RELEASE_WITHIN = 600.0
"""Seconds after which a run nobody reported is cut anyway (its end was never told)."""
KEPT_CHARS = 100_000
"""Characters kept at each end of a long text in our copy of a reported run's outputs."""


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


def cut_outputs(outputs: list[dict[str, Any]], keep: int = KEPT_CHARS) -> int:
    """Cut, in place, each text of *outputs* much longer than twice *keep* to its first and last
    *keep* characters around a note saying how much was left out; returns the characters cut.
    Images and other non-text data stay whole."""
    cut = 0
    for output in outputs:
        if isinstance(output.get("text"), str):
            output["text"], removed = _cut(output["text"], keep)
            cut += removed
        data = output.get("data")
        if isinstance(data, dict):
            for mime, value in list(data.items()):
                if mime.startswith("text/") and isinstance(value, str):
                    data[mime], removed = _cut(value, keep)
                    cut += removed
    return cut


def _cut(text: str, keep: int) -> tuple[str, int]:
    if len(text) <= 2 * keep + 200:  # within the note's own length: already cut, or close
        return text, 0
    removed = len(text) - 2 * keep
    note = f"\n[… {removed:,} characters of this output are in the notebook, not repeated here …]\n"
    return text[:keep] + note + text[-keep:], removed


def release_later(outputs: list[dict[str, Any]], reported: Callable[[], bool]) -> None:
    """A few seconds after a big run, once ``reported()`` (its outcome was told: the tool's
    answer and the listeners' words are made), cut our copy of *outputs* and give the freed
    memory back. Checked again every few seconds until then, for at most ``RELEASE_WITHIN``."""
    loop = asyncio.get_running_loop()

    def release(waited: float) -> None:
        if not reported() and waited < RELEASE_WITHIN:
            loop.call_later(TRIM_AFTER_SECONDS, release, waited + TRIM_AFTER_SECONDS)
            return
        cut_outputs(outputs)
        give_back_freed_memory()

    loop.call_later(TRIM_AFTER_SECONDS, release, TRIM_AFTER_SECONDS)
