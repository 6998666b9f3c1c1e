"""One subscriber's stream under its negotiated terms (AAEP §5.5–§5.6, Level 3).

A :class:`Subscription` is an :class:`~jupyter_aaep.aaep.emitter.Emitter` subscriber: the
emitter hands it every message without waiting (``deliver``), and the transport that serves
the subscriber pulls what may go out now (``await next()``). In between it enforces the
terms:

- **filters**: excluded types are never queued, except critical events; confirmations and
  clarifications go only to subscribers that said they can answer them (§5.8.2);
- **verbosity**: ``verbosity`` set and summaries trimmed to what the subscriber reads;
- **coalescing**: a chunk that does not end on a negotiated boundary is held and merged with
  the next one; under backpressure consecutive chunks, state changes and progress updates of
  a session are merged into one message;
- **rate**: a token bucket spends one token per non-critical message;
- **critical bypass**: errors, confirmations, clarifications and hand-offs go out at once,
  ignoring the bucket, after the messages of the *same session* queued before them (so a
  session's order never changes); other sessions keep their place. That backlog spends
  tokens it does not have (the bucket goes into debt), so the rate still holds on average.

Sequence numbers are the producer's: a subscriber whose filter or merging skipped events sees
gaps, which mean "not sent to you", not "lost".

Control messages (handshake answers, notices) jump the queue and cost no token.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .capabilities import Terms, compact_type
from .emitter import Event, SubscriberOverflow
from .events import CRITICAL_TYPES
from .ids import new_subscription_id
from .shaping import (
    Kind,
    boundary_label,
    can_merge,
    for_verbosity,
    is_event,
    kind_of_type,
    merge,
)
from .token_bucket import TokenBucket

_CONFIRMATION = "aaep:agent.awaiting.confirmation"
_CLARIFICATION = "aaep:agent.awaiting.clarification"


@dataclass
class _Item:
    message: Event
    """As this subscriber receives it (shaped to its verbosity)."""
    original: Event
    """As emitted, so a replacement subscription can take it over under its own terms."""
    session: str | None
    critical: bool
    kind: Kind


class Subscription:
    """Parameters
    ----------
    terms
        What was negotiated (or the implicit defaults).
    subscription_id
        ``sub_…``; a fresh one by default.
    max_pending
        Messages that may wait unsent before the subscriber counts as stalled; the emitter
        then drops it (``SubscriberOverflow``), which closes it.
    clock
        Monotonic seconds, for the token bucket.
    """

    def __init__(
        self,
        terms: Terms,
        *,
        subscription_id: str | None = None,
        max_pending: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.id = subscription_id or new_subscription_id()
        self.terms = terms
        self.closed = False
        self.sent = 0
        """Messages handed to the transport so far (control messages included)."""
        self._bucket = TokenBucket(terms.max_events_per_second, clock=clock)
        self._queue: list[_Item] = []
        self._control: deque[Event] = deque()
        self._max_pending = max_pending
        self._wakeup = asyncio.Event()
        self._allowed: dict[str, bool] = {}
        """The event filter's verdict per event type (asked for every event)."""
        self.on_queued: Callable[[], None] | None = None
        """Called after a message is queued: a transport may send what is ready at once, in
        the publisher's own step, rather than one loop turn later (its ``next()`` then finds
        nothing and waits again)."""

    # -- input --------------------------------------------------------------------------------
    def deliver(self, message: Event) -> None:
        """Queue one emitted message if these terms let it through; never blocks."""
        if self.closed:
            return
        item = self._admit(message)
        if item is None:
            return
        if len(self._queue) >= self._max_pending:
            raise SubscriberOverflow(f"{self._max_pending} messages unsent on {self.id}")
        self._queue.append(item)
        self._queued()

    def send_control(self, message: Event) -> None:
        """Queue a message ahead of everything else, free of the rate limit (handshake answers)."""
        self._control.append(message)
        self._queued()

    def _queued(self) -> None:
        """Let the transport send at once; wake ``next()`` only for what it left (waking a
        waiting sender that then finds nothing costs a loop step per message and subscriber)."""
        if self.on_queued is not None:
            self.on_queued()
        if self._queue or self._control:
            self._wakeup.set()

    def update_terms(self, terms: Terms) -> None:
        """Apply renegotiated terms to everything not yet sent."""
        self.terms = terms
        self._allowed.clear()
        self._bucket.set_rate(terms.max_events_per_second)
        self._wakeup.set()

    def close(self) -> None:
        """Stop sending events; control messages already queued still go out."""
        self.closed = True
        self._queue.clear()
        self._wakeup.set()

    def release(self) -> list[Event]:
        """Close, handing back the messages not yet sent (as emitted), for a successor."""
        leftovers = [item.original for item in self._queue]
        self.close()
        return leftovers

    def pending(self) -> int:
        return len(self._queue) + len(self._control)

    def _admit(self, message: Event) -> _Item | None:
        session = message.get("session_id")
        if not isinstance(session, str):
            session = None
        if not is_event(message):
            return _Item(message, message, session, False, "message")
        event_type = compact_type(str(message.get("type", "")))
        critical = event_type in CRITICAL_TYPES or message.get("urgency") == "critical"
        if event_type == _CONFIRMATION and not self.terms.supports_confirmation_reply:
            return None
        if event_type == _CLARIFICATION and not self.terms.supports_clarification_reply:
            return None
        if not critical and not self._allows(event_type):
            return None
        shaped = for_verbosity(message, self.terms.preferred_verbosity)
        return _Item(shaped, message, session, critical, kind_of_type(event_type))

    def _allows(self, event_type: str) -> bool:
        allowed = self._allowed.get(event_type)
        if allowed is None:
            if len(self._allowed) >= 256:  # types are few; a producer inventing them is not
                self._allowed.clear()
            allowed = self._allowed[event_type] = self.terms.event_filter.allows(event_type)
        return allowed

    # -- output -------------------------------------------------------------------------------
    async def next(self) -> Event | None:
        """The next message that may be sent now; ``None`` once closed. Safe to cancel."""
        while True:
            if self._control:
                self.sent += 1
                return self._control.popleft()
            if self.closed:
                return None
            message, wait = self._take()
            if message is not None:
                self.sent += 1
                return message
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), wait)
            except asyncio.TimeoutError:
                pass

    def take_ready(self) -> list[Event]:
        """Everything that may be sent right now, without waiting (for tests and flushing)."""
        out: list[Event] = []
        while True:
            if self._control:
                out.append(self._control.popleft())
                continue
            message, _ = self._take() if not self.closed else (None, None)
            if message is None:
                return out
            out.append(message)

    def _take(self) -> tuple[Event | None, float | None]:
        """Pop the next sendable message, or say how long to wait (``None``: until new input)."""
        queue = self._queue
        while queue:
            critical = next((i for i, item in enumerate(queue) if item.critical), None)
            if critical is not None:
                session = queue[critical].session
                first = next(i for i, item in enumerate(queue) if item.session == session)
                message, used, _held, label = self._coalesce(first, stop=critical)
                self._remove(used)
                if message is None:
                    continue
                if first != critical:
                    self._bucket.spend()  # the backlog goes now; later messages repay it
                return _labelled(message, label), None
            sessions: set[str | None] = set()
            for index, item in enumerate(queue):
                if item.session in sessions:
                    continue
                sessions.add(item.session)
                message, used, held, label = self._coalesce(index)
                if held:
                    continue  # this session waits for the rest of its chunk
                if message is None:
                    self._remove(used)
                    break  # the queue changed: start over
                if not self._bucket.take():
                    return None, self._bucket.wait_time()
                self._remove(used)
                return _labelled(message, label), None
            else:
                return None, None
        return None, None

    def _coalesce(
        self, start: int, *, stop: int | None = None
    ) -> tuple[Event | None, list[int], bool, str | None]:
        """The message at *start*, merged with what follows it in its session where that is due.

        Chunks are merged up to a negotiated boundary (and held until one arrives). Under a
        rate limit every message costs a token, so consecutive chunks, state changes and
        progress updates already queued are merged as far as they go; without one, messages
        go out as emitted. Returns the message (``None`` if it cancelled out), the queue
        indices it consumed, whether it must still be held, and the boundary a chunk ends on
        (``None``: none negotiated, or not a chunk).
        """
        queue = self._queue
        head = queue[start]
        greedy = self.terms.max_events_per_second is not None
        chunk = head.kind == "chunk"
        message: Event | None = head.message
        used = [start]
        legal: tuple[Event, list[int], str] | None = None
        label = boundary_label(head.message, self.terms) if chunk else None
        if label is not None:
            legal = (head.message, list(used), label)
        end = len(queue) if stop is None else stop
        for index in range(start + 1, end):
            if not greedy and (not chunk or legal is not None):
                break
            other = queue[index]
            if other.session != head.session:
                continue
            if other.critical or message is None or not can_merge(message, other.message):
                break
            message = merge(message, other.message)
            used.append(index)
            if chunk and message is not None:
                label = boundary_label(message, self.terms)
                if label is not None:
                    legal = (message, list(used), label)
        if legal is not None:
            return legal[0], legal[1], False, legal[2]
        if chunk and stop is None:
            return message, used, True, None
        return message, used, False, None

    def _remove(self, indices: list[int]) -> None:
        for index in sorted(indices, reverse=True):
            del self._queue[index]

    def describe(self) -> dict[str, Any]:
        return {
            "subscription_id": self.id,
            "honored_capabilities": self.terms.to_json(),
            "closed": self.closed,
        }


def _labelled(message: Event, label: str | None) -> Event:
    """A chunk carries the boundary it ends on as this subscriber negotiated it."""
    if label is not None and label != message.get("coalesce_hint"):
        return {**message, "coalesce_hint": label}
    return message
