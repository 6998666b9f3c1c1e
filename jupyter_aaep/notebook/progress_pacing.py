"""When a long run's progress is worth an event, and the words for it.

Rate limiting lives here, on the server, once for every listener: a run's progress becomes at
most one ``progress.updated`` per ``min_gap`` seconds (15), whatever the cell prints. Each
event says whether it is an *announcement* at normal verbosity (``announce``: the milestones
25/50/75 % of a bar, or one per ``announce_seconds`` when no percent is known) or only an
update for the progress bar and detailed listeners. The events carry that as their urgency
(``normal`` vs ``background``), so a listener needs no clock of its own:

- terse: progress is never spoken (the end of the run is);
- normal: the ``normal``-urgency ones (at most 3 milestones per bar);
- detailed: every one (never more often than one per ``min_gap``).

:func:`heard` is that rule as code; the panel and the ``%aaep`` view follow it.
Pure: the caller passes the clock, at each tick and again once a beat's event went out
(:meth:`ProgressPacer.sent`): the gap counts from when listeners got the last event, not
from when it was due, so a server that stalls while one event goes out (a long garbage
collection, a process descheduled on a loaded machine) cannot bring the next one closer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..words import duration_words
from .progress import ProgressReading

__all__ = [
    "MILESTONES",
    "Beat",
    "ProgressPacer",
    "heard",
    "progress_phrase",
    "value_text",
]

MILESTONES = (25, 50, 75)
MIN_GAP_SECONDS = 15.0
"""Never two progress events of one run closer than this."""


@dataclass(frozen=True)
class Beat:
    """A progress event to send now."""

    reading: ProgressReading | None
    elapsed: float
    announce: bool
    """Spoken at normal verbosity (a milestone, or the periodic update without percent)."""
    milestone: int | None = None


class ProgressPacer:
    """Decides which moments of one run become progress events (see the module docstring)."""

    def __init__(
        self, started_at: float, *, announce_seconds: float = 60.0, min_gap: float = MIN_GAP_SECONDS
    ) -> None:
        self.started_at = started_at
        self.announce_seconds = max(announce_seconds, min_gap)
        self.min_gap = min_gap
        self._last_emit = started_at
        self._last_announce = started_at
        self._last_reading: ProgressReading | None = None
        self._last_announced = False
        self._milestone = 0
        self._stage = 0

    def tick(self, now: float, reading: ProgressReading | None) -> Beat | None:
        """Call often (every poll); returns a :class:`Beat` when an event is due."""
        if now - self._last_emit < self.min_gap:
            return None
        elapsed = now - self.started_at
        if reading is not None and reading.stage != self._stage:
            self._stage, self._milestone = reading.stage, 0
        if reading is not None and reading.percent is not None:
            reached = max((m for m in MILESTONES if reading.percent >= m), default=0)
            if reached > self._milestone:
                self._milestone = reached
                return self._emit(now, reading, elapsed, announce=True, milestone=reached)
        elif now - self._last_announce >= self.announce_seconds:
            return self._emit(now, reading, elapsed, announce=True)
        if reading != self._last_reading or reading is None or reading.percent is None:
            return self._emit(now, reading, elapsed, announce=False)
        return None

    def sent(self, at: float) -> None:
        """The last beat's event reached its listeners at *at* (after its tick's *now* when the
        server was slow to make and deliver it): the next beat waits the gap from here."""
        if at > self._last_emit:
            self._last_emit = at
            if self._last_announced:
                self._last_announce = at

    def _emit(
        self,
        now: float,
        reading: ProgressReading | None,
        elapsed: float,
        *,
        announce: bool,
        milestone: int | None = None,
    ) -> Beat:
        self._last_emit, self._last_reading, self._last_announced = now, reading, announce
        if announce:
            self._last_announce = now
        return Beat(reading, elapsed, announce, milestone)


def heard(beat: Beat, verbosity: str) -> bool:
    """Whether a listener at *verbosity* hears this progress event."""
    if verbosity == "terse":
        return False
    return beat.announce if verbosity == "normal" else True


# -- words --------------------------------------------------------------------------------------


def _left(eta: float, *, short: bool) -> str:
    if eta < 1:
        return "almost done"
    # Rounded as people estimate: to 5 s under a minute, to minutes above.
    rounded = max(5.0, round(eta / 5) * 5) if eta < 60 else round(eta / 60) * 60
    return f"about {duration_words(rounded, short=short)} left"


def _count(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{value:,.0f}"


def progress_phrase(reading: ProgressReading | None, *, short: bool = True) -> str:
    """ "training 40 of 100, about 3 min left", "45 %", "" when nothing is known."""
    if reading is None:
        return ""
    if reading.current is not None and reading.total is not None:
        amount = f"{_count(reading.current)} of {_count(reading.total)}"
    elif reading.percent is not None:
        amount = f"{reading.percent:.0f} %"
    else:
        return ""
    what = f"{reading.description} " if reading.description else ""
    left = f", {_left(reading.eta_seconds, short=short)}" if reading.eta_seconds is not None else ""
    return f"{what}{amount}{left}"


def value_text(reading: ProgressReading | None, elapsed: float) -> str:
    """The progress bar's ``aria-valuetext``: "40 of 100, about 3 minutes left"; without a
    count, the time it has run ("running for 2 minutes 10 seconds")."""
    phrase = progress_phrase(reading, short=False)
    return phrase or f"running for {duration_words(elapsed, short=False)}"
