"""Counts and durations in the words people hear: the one home for plurals and times.

Announcements are read aloud, so "1 cells", "2 minutes 0 seconds" or "125.0 seconds" are heard
as mistakes. Every layer words counts and durations through here, the protocol checker in
``aaep/`` included: the module imports nothing.
"""

from __future__ import annotations


def noun(count: float, word: str, many: str | None = None) -> str:
    """*word* as it follows *count*: ``"cell"`` for 1, ``"cells"`` (or *many*) otherwise."""
    return word if count == 1 else many or word + "s"


def plural(count: int, word: str, many: str | None = None, *, thousands: bool = False) -> str:
    """``"1 cell"``, ``"3 cells"``, ``"2 analyses"`` (*many* given), ``"12,400 tokens"``
    (*thousands*: the count with thousands separators)."""
    shown = f"{count:,}" if thousands else str(count)
    return f"{shown} {noun(count, word, many)}"


def duration_words(seconds: float, *, short: bool = True) -> str:
    """A duration rounded to the second: ``"40 s"``, ``"2 min 10 s"``, ``"1 h 5 min"``, or
    with ``short=False`` ``"1 minute 10 seconds"``; ``"less than a second"`` under half a one.
    Past an hour the seconds no longer matter."""
    if seconds < 0.5:
        return "less than a second"
    hours, rest = divmod(max(round(seconds), 1), 3600)
    minutes, secs = divmod(rest, 60)
    units = (("hour", "h", hours), ("minute", "min", minutes), ("second", "s", secs))
    parts = [
        f"{value} {abbreviation}" if short else plural(value, unit)
        for unit, abbreviation, value in units
        if value
    ]
    if hours:
        parts = parts[:2] if minutes else parts[:1]
    return " ".join(parts)


def elapsed_words(seconds: float) -> str:
    """How long something took, to the tenth under ten seconds (where a tenth is news):
    ``"0.4 seconds"``, ``"12 seconds"``, ``"95 seconds"``, ``"2 minutes 5 seconds"``."""
    if seconds < 10:
        return f"{seconds:.1f} seconds"
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    return duration_words(seconds, short=False)


__all__ = ["duration_words", "elapsed_words", "noun", "plural"]
