"""Fan-out of emitted events to any number of subscribers.

``publish`` never awaits: each subscriber gets the event through a non-blocking ``deliver``
call, and a subscriber that raises or falls too far behind is dropped rather than allowed to
stall the agent loop or the other subscribers.

``publish`` is also the one gate every event passes before history and transports: an event
that could not be sent as UTF-8 JSON (a lone surrogate from a file name or kernel output, a
NaN) is repaired there and the repair logged, so one bad character can never cut a stream,
poison the replay history or differ between transports.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .wire import sanitize

log = logging.getLogger(__name__)

Event = dict[str, Any]


class Subscriber(Protocol):
    """Anything that can take an event without blocking."""

    def deliver(self, event: Event) -> None: ...


class SubscriberOverflow(Exception):
    """Raised by a subscriber whose buffer is full; the emitter then drops it."""


class Emitter:
    """Publishes events to subscribers and keeps a bounded history for replay.

    Parameters
    ----------
    history_limit
        How many recent events to keep for late subscribers (0 keeps none).
    """

    def __init__(self, *, history_limit: int = 0) -> None:
        self._subscribers: list[Subscriber] = []
        self._history: deque[Event] = deque(maxlen=history_limit or None)
        self._keep_history = history_limit > 0

    @property
    def subscribers(self) -> tuple[Subscriber, ...]:
        return tuple(self._subscribers)

    @property
    def history(self) -> list[Event]:
        return list(self._history)

    def restore_history(self, events: Iterable[Event]) -> None:
        """Put events published earlier (read back from storage) into the replay history."""
        if self._keep_history:
            self._history.extend(events)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add *subscriber*; the returned function removes it again (idempotent)."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: Event) -> None:
        event, problems = sanitize(event)
        if problems:
            log.warning(
                "AAEP event %s could not be sent as it was and was repaired (%s); this is a bug in "
                "whatever produced it",
                event.get("type") or event.get("kind"),
                "; ".join(problems[:5]),
            )
        if self._keep_history:
            self._history.append(event)
        for subscriber in tuple(self._subscribers):
            try:
                subscriber.deliver(event)
            except SubscriberOverflow:
                log.warning("AAEP subscriber %r fell behind and was disconnected", subscriber)
                self._drop(subscriber)
            except Exception:
                log.exception("AAEP subscriber %r failed and was disconnected", subscriber)
                self._drop(subscriber)

    def _drop(self, subscriber: Subscriber) -> None:
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)
        close = getattr(subscriber, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # pragma: no cover - a failing close must not stop the fan-out
                log.exception("closing AAEP subscriber %r failed", subscriber)


class ListSubscriber:
    """Collects every event in a list; the simplest subscriber, for logs and tests."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.events: list[Event] = list(events)

    def deliver(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, suffix: str) -> list[Event]:
        """Events whose type ends with *suffix* (``"tool.invoked"``)."""
        return [e for e in self.events if str(e.get("type", "")).endswith(suffix)]

    def types(self) -> list[str]:
        return [str(e.get("type", "")).removeprefix("aaep:agent.") for e in self.events]
