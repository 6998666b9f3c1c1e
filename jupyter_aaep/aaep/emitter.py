"""Fan-out of emitted events to any number of subscribers.

``publish`` never awaits: each subscriber gets the event through a non-blocking ``deliver``
call, and a subscriber that raises or falls too far behind is dropped rather than allowed to
stall the agent loop or the other subscribers.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

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

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add *subscriber*; the returned function removes it again (idempotent)."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: Event) -> None:
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


class QueueSubscriber:
    """A subscriber read with ``async for``; bounded so a stalled reader is dropped, not leaked.

    Parameters
    ----------
    max_pending
        Events that may wait unread before the subscriber counts as stalled.
    """

    def __init__(self, *, max_pending: int = 10_000) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._max_pending = max_pending
        self.closed = False
        self.overflowed = False

    def deliver(self, event: Event) -> None:
        if self.closed:
            return
        if self._queue.qsize() >= self._max_pending:
            self.overflowed = True
            raise SubscriberOverflow(f"{self._max_pending} events unread")
        self._queue.put_nowait(event)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    def pending(self) -> int:
        return self._queue.qsize()

    async def get(self) -> Event | None:
        """The next event, or ``None`` once the subscriber is closed."""
        return await self._queue.get()

    def drain(self) -> list[Event]:
        """Everything delivered and not yet read, without waiting."""
        items: list[Event] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not None:
                items.append(item)
        return items

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            yield item


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
