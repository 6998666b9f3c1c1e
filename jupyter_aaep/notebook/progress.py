"""How far along a running cell is, read from what the cell itself reports.

Pure: no kernel, no clock of its own. :class:`ProgressTracker` is fed the IOPub messages of
one run (``feed(msg_type, content, now)``) and keeps the latest :class:`ProgressReading`:

- **text bars** in stream output: tqdm's ``\\r``-updated line on stderr
  (``" 40%|████      | 40/100 [00:02<00:03, 15.2it/s]"``), Keras' ``40/100 [===>..] - ETA: 3s``,
  and simple lines such as ``step 40/100``, ``epoch 3 of 10`` or ``40%``;
- **widgets**: ipywidgets ``IntProgress``/``FloatProgress`` state from ``comm_open`` and
  ``comm_msg`` (value, min, max, description), which is what ``tqdm.notebook`` and
  ``tqdm.auto`` draw; tqdm's text beside the bar (an ``HTML`` widget holding
  ``40/100 [00:02<00:03, 15.2it/s]``) gives its counts and time left.

Percent never goes back within one bar (a reading below the last one is ignored); a bar with
another total or description starts a new *stage* (a second loop), which may start low again.
The time left is the reporter's own estimate when it gives one (tqdm, Keras), else a linear
estimate from the rate since the bar was first seen.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["ProgressReading", "ProgressTracker", "parse_progress_text"]

_NUM = r"\d+(?:\.\d+)?[kMGT]?"
_CLOCK = r"\d+(?::\d{1,2}){0,2}"
_TQDM = re.compile(
    rf"^(?P<desc>.*?)[:\s]*(?:(?P<pct>\d{{1,3}})%\s*\|[^|]*\|)?\s*(?P<n>{_NUM})/(?P<total>{_NUM})\s*"
    rf"\[(?P<elapsed>{_CLOCK})<(?P<left>{_CLOCK}|\?)"
)
_KERAS_ETA = re.compile(r"ETA:\s*(?P<eta>(?:\d+:)?\d+(?::\d+)?)(?P<unit>s|ms|us)?\b")
_OF = re.compile(
    r"(?:^|[\s\[(:=-])(?P<word>[A-Za-z][\w ]{0,40}?)?\s*(?P<n>\d+)\s*(?:/|\bof\b)\s*(?P<total>\d+)(?![\d/.])"
)
_PERCENT = re.compile(r"(?:^|[\s:(=\[-])(?P<pct>\d{1,3}(?:\.\d+)?)\s?%")
_WIDGETS = {"IntProgressModel", "FloatProgressModel"}
_TAIL_CHARS = 8000
_TAIL_LINES = 20
"""Of a chunk of output, the characters and lines read for progress (the newest)."""


@dataclass(frozen=True)
class ProgressReading:
    """One observation of how far a run is."""

    percent: float | None = None
    current: float | None = None
    total: float | None = None
    description: str | None = None
    """What is counted ("training", "epoch"), in the reporter's words, when it says."""
    eta_seconds: float | None = None
    """Time left: the reporter's own estimate, or one from the rate (``None``: unknown)."""
    source: str = "text"
    """``text`` (a stream line) or ``widget`` (an ipywidgets progress bar)."""
    stage: int = 1
    """Counts bars: a second loop with another total starts stage 2."""


def reading_fields(reading: ProgressReading | None) -> dict[str, Any]:
    """A reading as the JSON of "How far along?" and the progress bar (rounded; ``None``
    where nothing is known), the same for a cell the agent runs and one the person runs."""
    if reading is None:
        return dict.fromkeys(("percent", "current", "total", "eta_seconds", "description"))
    return {
        "percent": None if reading.percent is None else round(reading.percent, 1),
        "current": reading.current,
        "total": reading.total,
        "eta_seconds": None if reading.eta_seconds is None else round(reading.eta_seconds),
        "description": reading.description,
    }


def _number(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(text[-1:], 1.0)
    return float(text.rstrip("kMGT")) * scale


def _clock_seconds(text: str) -> float | None:
    if not text or text == "?":
        return None
    value = 0.0
    for part in text.split(":"):
        value = value * 60 + float(part)
    return value


def _clean(text: str) -> str:
    return html.unescape(text).replace("\u2007", " ").replace("\xa0", " ")


def _description(text: str | None) -> str | None:
    if not text:
        return None
    words = re.sub(r"[^\w\s.,'()-]", " ", text)
    words = re.sub(r"\s+", " ", words).strip(" :,.-")
    return words[:80] or None


def parse_progress_text(line: str) -> ProgressReading | None:
    """One line of output as a reading, or ``None`` when it reports no progress.

    ``N/M`` needs ``N <= M`` (so dates and ratios such as ``2024/01`` are not taken for
    progress); a bare percentage must be at most 100.
    """
    text = _clean(line).strip()
    if not text or len(text) > 500:
        return None
    match = _TQDM.search(text)
    if match:
        current, total = _number(match["n"]), _number(match["total"])
        if total <= 0 or current > total:
            return None
        percent = float(match["pct"]) if match["pct"] else 100.0 * current / total
        return ProgressReading(
            percent=min(percent, 100.0),
            current=current,
            total=total,
            description=_description(match["desc"]),
            eta_seconds=_clock_seconds(match["left"]),
        )
    eta = None
    if found := _KERAS_ETA.search(text):
        eta = _clock_seconds(found["eta"])
        if eta is not None and found["unit"] in ("ms", "us"):
            eta /= 1000.0 if found["unit"] == "ms" else 1e6
    for match in _OF.finditer(text):
        current, total = float(match["n"]), float(match["total"])
        if 0 < total and current <= total:
            return ProgressReading(
                percent=100.0 * current / total,
                current=current,
                total=total,
                description=_description(match["word"] or text[: match.start("n")]),
                eta_seconds=eta,
            )
    match = _PERCENT.search(text)
    if match and float(match["pct"]) <= 100:
        return ProgressReading(
            percent=float(match["pct"]),
            description=_description(text[: match.start("pct")]),
            eta_seconds=eta,
        )
    return None


class ProgressTracker:
    """The latest progress of one run, from its IOPub messages (see the module docstring)."""

    def __init__(self) -> None:
        self._lines: dict[str, str] = {}
        self._models: dict[str, dict[str, Any]] = {}
        self._reading: ProgressReading | None = None
        self._stage = 0
        self._first: tuple[float, float] | None = None
        """(time, fraction) when the current stage was first seen, for the rate."""
        self.updated_at: float | None = None
        self.last_line: str = ""
        """The last non-empty line the run printed (for "Last output: …")."""

    @property
    def reading(self) -> ProgressReading | None:
        return self._reading

    def feed(self, msg_type: str, content: dict[str, Any], now: float) -> ProgressReading | None:
        """Take one IOPub message; returns the reading when it changed."""
        if msg_type == "stream":
            return self._stream(
                str(content.get("name", "stdout")), str(content.get("text", "")), now
            )
        if msg_type in ("comm_open", "comm_msg"):
            return self._widget(content, now)
        return None

    # -- text -------------------------------------------------------------------------------------
    def _stream(self, name: str, text: str, now: float) -> ProgressReading | None:
        # Only the end of a chunk matters (the executor joins a flood of messages into one):
        # a bar's last line, and the last line printed. Older lines are never parsed.
        if len(text) > _TAIL_CHARS:
            segments = re.split(r"[\r\n]", text[-_TAIL_CHARS:])[1:] or [""]
        else:
            segments = re.split(r"[\r\n]", self._lines.get(name, "") + text)
        self._lines[name] = segments[-1][-2000:]
        for segment in reversed(segments):
            if segment.strip():
                self.last_line = _clean(segment).strip()[:300]
                break
        found = None
        for segment in segments[: -_TAIL_LINES - 1 : -1]:
            if (found := parse_progress_text(segment)) is not None:
                break
        return self._take(found, now) if found else None

    # -- widgets ----------------------------------------------------------------------------------
    def _widget(self, content: dict[str, Any], now: float) -> ProgressReading | None:
        comm_id = str(content.get("comm_id", ""))
        data = content.get("data") or {}
        state = data.get("state") if isinstance(data, dict) else None
        if not comm_id or not isinstance(state, dict):
            return None
        model = self._models.setdefault(comm_id, {})
        model.update(state)
        if model.get("_model_name") == "HTMLModel":  # tqdm's text beside its bar
            reading = parse_progress_text(str(model.get("value", "")))
            if (
                reading is not None
                and self._reading is not None
                and self._reading.source == "widget"
            ):
                merged = replace(
                    self._reading,
                    eta_seconds=reading.eta_seconds,
                    description=self._reading.description or reading.description,
                )
                return self._take(merged, now)
            return None
        if model.get("_model_name") not in _WIDGETS or "value" not in state and "max" not in state:
            return None
        low, high = float(model.get("min", 0) or 0), float(model.get("max", 100) or 0)
        value = float(model.get("value", 0) or 0)
        if high <= low or model.get("bar_style") == "info" and high - low == 1:
            return None  # tqdm's "no total" bar: nothing to measure
        fraction = min(max((value - low) / (high - low), 0.0), 1.0)
        integral = model.get("_model_name") == "IntProgressModel" or (
            value.is_integer() and high.is_integer()
        )
        previous = self._reading
        reading = ProgressReading(
            percent=100.0 * fraction,
            current=value - low if integral else None,
            total=high - low if integral else None,
            description=_description(str(model.get("description") or ""))
            or (previous.description if previous and previous.source == "widget" else None),
            eta_seconds=previous.eta_seconds if previous and previous.source == "widget" else None,
            source="widget",
        )
        return self._take(reading, now)

    # -- one reading ------------------------------------------------------------------------------
    def _take(self, reading: ProgressReading, now: float) -> ProgressReading | None:
        last = self._reading
        new_stage = (
            last is None
            or reading.source != last.source
            or reading.total != last.total
            or (reading.total is None and (reading.description or "") != (last.description or ""))
        )
        if not new_stage and last is not None and (reading.percent or 0) < (last.percent or 0):
            return None  # never backwards within one bar
        if new_stage:
            self._stage += 1
            self._first = (now, (reading.percent or 0) / 100.0)
        reading = replace(reading, stage=self._stage)
        if reading.eta_seconds is None and reading.percent is not None and self._first is not None:
            start, fraction0 = self._first
            fraction = reading.percent / 100.0
            if now - start >= 1.0 and fraction > fraction0:
                rate = (fraction - fraction0) / (now - start)
                reading = replace(reading, eta_seconds=(1.0 - fraction) / rate)
        if reading == last:
            return None
        self._reading, self.updated_at = reading, now
        return reading
