"""A smoothly refilled budget of messages per second (AAEP §5.6 backpressure).

One bucket per subscription. It starts full, holds at most ``rate`` tokens (a burst never
exceeds one second's worth) and refills continuously, so over any window of *t* seconds at
most ``rate * t + rate`` messages pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """Parameters
    ----------
    rate
        Tokens added per second; ``None`` means unlimited (``take`` always succeeds).
    clock
        Monotonic seconds; injectable for tests.
    """

    def __init__(self, rate: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.rate = rate
        self._capacity = max(1.0, float(rate)) if rate else 0.0
        self._tokens = self._capacity
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        if self.rate:
            self._tokens = min(self._capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def take(self) -> bool:
        """Spend one token if there is one."""
        if not self.rate:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def spend(self) -> None:
        """Spend a token even if there is none: the budget goes into debt, repaid by waiting.

        For messages that had to go out at once (the backlog a critical event flushes), so
        the rate still holds on average.
        """
        if self.rate:
            self._refill()
            self._tokens -= 1.0

    def wait_time(self) -> float:
        """Seconds until the next token (0 when one is available)."""
        if not self.rate:
            return 0.0
        self._refill()
        return max(0.0, (1.0 - self._tokens) / self.rate)

    def set_rate(self, rate: float | None) -> None:
        """Apply a renegotiated rate; the current budget is kept, capped at the new capacity."""
        self._refill()
        was_unlimited = not self.rate
        self.rate = rate
        self._capacity = max(1.0, float(rate)) if rate else 0.0
        self._tokens = self._capacity if was_unlimited else min(self._tokens, self._capacity)
