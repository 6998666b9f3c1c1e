from __future__ import annotations

import asyncio
import logging

import pytest

from jupyter_aaep.aaep.emitter import Emitter, ListSubscriber, QueueSubscriber


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


async def test_slow_queue_subscriber_overflows_and_is_dropped(caplog) -> None:
    emitter = Emitter(history_limit=3)
    slow, fast = QueueSubscriber(max_pending=2), QueueSubscriber()
    emitter.subscribe(slow)
    emitter.subscribe(fast)
    with caplog.at_level(logging.WARNING):
        for n in range(5):
            emitter.publish({"n": n})
    assert slow.overflowed and slow.closed
    assert fast.pending() == 5
    assert [e["n"] for e in emitter.history] == [2, 3, 4]
    assert "fell behind" in caplog.text
    assert [e["n"] for e in slow.drain()] == [0, 1]
    slow.deliver({"n": 99})  # closed subscribers ignore deliveries
    assert slow.drain() == []


async def test_queue_subscriber_iterates_until_closed() -> None:
    sub = QueueSubscriber()
    sub.deliver({"n": 1})
    assert (await sub.get()) == {"n": 1}
    sub.deliver({"n": 2})

    async def closer() -> None:
        await asyncio.sleep(0.01)
        sub.close()

    task = asyncio.ensure_future(closer())
    seen = [e["n"] async for e in sub]
    await task
    assert seen == [2]
    sub.close()  # closing twice is harmless


def test_list_subscriber_helpers() -> None:
    sub = ListSubscriber([{"type": "aaep:agent.tool.invoked"}, {"type": "aaep:agent.tool.completed"}])
    assert sub.types() == ["tool.invoked", "tool.completed"]
    assert len(sub.of_type("tool.completed")) == 1
