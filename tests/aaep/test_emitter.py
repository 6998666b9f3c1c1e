from __future__ import annotations

import logging

from jupyter_aaep.aaep.emitter import Emitter, ListSubscriber, SubscriberOverflow


class Broken:
    closed = False

    def deliver(self, event: dict) -> None:
        raise RuntimeError("boom")

    def close(self) -> None:
        self.closed = True


def test_fan_out_and_unsubscribe() -> None:
    emitter = Emitter()
    first, second = ListSubscriber(), ListSubscriber()
    unsubscribe = emitter.subscribe(first)
    emitter.subscribe(second)
    emitter.publish({"kind": "note", "n": 1})
    unsubscribe()
    unsubscribe()  # idempotent
    emitter.publish({"kind": "note", "n": 2})
    assert [e["n"] for e in first.events] == [1]
    assert [e["n"] for e in second.events] == [1, 2]
    assert emitter.subscribers == (second,)


def test_failing_subscriber_is_dropped_without_hurting_others(caplog) -> None:
    emitter = Emitter()
    broken, healthy = Broken(), ListSubscriber()
    emitter.subscribe(broken)
    emitter.subscribe(healthy)
    with caplog.at_level(logging.ERROR):
        emitter.publish({"kind": "a"})
        emitter.publish({"kind": "b"})
    assert broken.closed
    assert len(healthy.events) == 2
    assert emitter.subscribers == (healthy,)
    assert "failed and was disconnected" in caplog.text


class Bounded(ListSubscriber):
    """Holds at most two events, like a stream whose reader stopped reading."""

    closed = False

    def deliver(self, event: dict) -> None:
        if len(self.events) >= 2:
            raise SubscriberOverflow("2 events unread")
        super().deliver(event)

    def close(self) -> None:
        self.closed = True


def test_slow_subscriber_overflows_and_is_dropped(caplog) -> None:
    emitter = Emitter(history_limit=3)
    slow, fast = Bounded(), ListSubscriber()
    emitter.subscribe(slow)
    emitter.subscribe(fast)
    with caplog.at_level(logging.WARNING):
        for n in range(5):
            emitter.publish({"n": n})
    assert slow.closed and [e["n"] for e in slow.events] == [0, 1]
    assert len(fast.events) == 5
    assert emitter.subscribers == (fast,)
    assert [e["n"] for e in emitter.history] == [2, 3, 4]
    assert "fell behind" in caplog.text


def test_list_subscriber_helpers() -> None:
    sub = ListSubscriber(
        [{"type": "aaep:agent.tool.invoked"}, {"type": "aaep:agent.tool.completed"}]
    )
    assert sub.types() == ["tool.invoked", "tool.completed"]
    assert len(sub.of_type("tool.completed")) == 1
