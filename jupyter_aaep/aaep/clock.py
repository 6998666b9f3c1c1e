"""Timestamps as AAEP wants them: RFC 3339, UTC, millisecond precision, non-decreasing per session."""

from __future__ import annotations

import time
from datetime import datetime, timezone


def format_timestamp(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.fffZ`` for an aware or naive-UTC datetime."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset); raises ``ValueError`` when malformed."""
    if not isinstance(value, str) or "T" not in value:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {value!r}")
    return parsed


def utc_now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def ms_to_timestamp(ms: int) -> str:
    return format_timestamp(datetime.fromtimestamp(ms / 1000, tz=timezone.utc))


class SessionClock:
    """Hands out timestamps that never go backwards, even if the wall clock does.

    The spec requires non-decreasing timestamps within a session; a wall-clock step back
    (NTP) must not produce an invalid stream, so the last value is remembered.
    """

    def __init__(self) -> None:
        self._last_ms = 0

    def now_ms(self) -> int:
        self._last_ms = max(self._last_ms, utc_now_ms())
        return self._last_ms

    def now(self) -> str:
        return ms_to_timestamp(self.now_ms())
