from __future__ import annotations

import asyncio

import pytest

from jupyter_aaep.aaep.broker import ReplyBroker
from jupyter_aaep.aaep.clock import SessionClock, ms_to_timestamp, utc_now_ms
from jupyter_aaep.aaep.ids import new_reply_token, new_session_id, new_subscription_id

SUB = new_subscription_id()


def confirmation(timeout: int = 60, default: str = "reject", session_id: str | None = None) -> dict:
    return {
        "reply_token": new_reply_token(),
        "session_id": session_id or new_session_id(),
        "timestamp": SessionClock().now(),
        "timeout_seconds": timeout,
        "default_decision": default,
    }


def clarification(**extra) -> dict:
    base = {
        "reply_token": new_reply_token(),
        "session_id": new_session_id(),
        "timestamp": SessionClock().now(),
        "timeout_seconds": 60,
    }
    base.update(extra)
    return base


def reply(event: dict, kind: str = "confirmation", **fields) -> dict:
    body = {
        "type": f"{kind}.reply",
        "reply_token": event["reply_token"],
        "subscription_id": SUB,
        "timestamp": SessionClock().now(),
    }
    body.update(fields)
    return body


async def test_first_valid_reply_wins_and_tokens_are_single_use() -> None:
    broker = ReplyBroker()
    event = confirmation()
    request = broker.open_confirmation(event)
    waiter = asyncio.ensure_future(broker.wait(request))
    assert broker.submit(reply(event, decision="accept", decided_by="user:ada"))
    assert not broker.submit(reply(event, decision="reject"))
    outcome = await waiter
    assert outcome.accepted and outcome.resolution == "reply" and outcome.decided_by == "user:ada"
    with pytest.raises(ValueError):
        broker.open_confirmation(event)  # a token is never reused


async def test_timeout_counts_from_the_event_timestamp_and_applies_the_default() -> None:
    broker = ReplyBroker()
    event = confirmation(timeout=1, default="reject")
    event["timestamp"] = ms_to_timestamp(utc_now_ms() - 900)  # emitted 0.9 s ago
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await broker.wait(broker.open_confirmation(event))
    assert outcome.resolution == "timeout" and outcome.value == "reject"
    assert loop.time() - started < 0.6


async def test_late_replies_are_ignored() -> None:
    broker = ReplyBroker()
    event = confirmation(timeout=1)
    event["timestamp"] = ms_to_timestamp(utc_now_ms() - 5000)
    broker.open_confirmation(event)
    assert not broker.submit(reply(event, decision="accept"))


async def test_session_binding_and_cancellation() -> None:
    broker = ReplyBroker()
    event = confirmation()
    request = broker.open_confirmation(event)
    assert not broker.submit(reply(event, decision="accept"), session_id=new_session_id())
    assert broker.pending(event["session_id"]) == [request]
    assert broker.cancel_session(event["session_id"]) == 1
    assert request.future.result().resolution == "cancelled"
    assert not broker.submit(reply(event, decision="accept"))


async def test_waiting_task_cancelled_resolves_as_cancelled() -> None:
    broker = ReplyBroker()
    request = broker.open_confirmation(confirmation())
    waiter = asyncio.ensure_future(broker.wait(request))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert request.resolved and broker.pending() == []


async def test_only_entitled_subscriptions_may_answer_and_closing_applies_defaults() -> None:
    broker = ReplyBroker()
    event = confirmation(default="reject")
    only = new_subscription_id()
    request = broker.open_confirmation(event, allowed_subscriptions=frozenset({only}))
    assert not broker.submit(reply(event, decision="accept"))
    assert broker.apply_defaults_for_subscription(only) == 1
    outcome = request.future.result()
    assert outcome.resolution == "unsubscribed" and outcome.value == "reject"


@pytest.mark.parametrize(
    "mutation",
    [
        {"type": "clarification.reply", "response": "x"},
        {"decision": "perhaps"},
        {"timestamp": "yesterday"},
        {"timestamp": "2026-01-01T00:00:00.1234Z"},
        {"subscription_id": "sub-1"},
        {"reply_token": "token"},
        {"extra": True},
        {"type": "something.else"},
    ],
)
async def test_malformed_confirmation_replies_are_ignored(mutation: dict) -> None:
    broker = ReplyBroker()
    event = confirmation()
    request = broker.open_confirmation(event)
    body = reply(event, decision="accept")
    body.update(mutation)
    assert not broker.submit(body)
    assert not request.resolved


async def test_clarification_kinds_and_choices() -> None:
    broker = ReplyBroker()
    multiple = clarification(
        accepted_response_kinds=["multiple_choice"],
        choices=[{"value": "a", "label": "A"}, {"value": "b", "label": "B"}],
    )
    request = broker.open_clarification(multiple)
    assert not broker.submit(reply(multiple, "clarification", response="c"))
    assert not broker.submit(reply(multiple, "clarification", response=1))
    assert broker.submit(reply(multiple, "clarification", response="b", confidence=0.9))
    assert request.future.result().value == "b"

    typed = clarification(accepted_response_kinds=["yes_no", "numeric"], default_response="no")
    request = broker.open_clarification(typed)
    assert not broker.submit(reply(typed, "clarification", response="  "))
    assert not broker.submit(reply(typed, "clarification", response="yes"))
    assert broker.submit(reply(typed, "clarification", response=True))
    numeric = clarification(accepted_response_kinds=["numeric"])
    broker.open_clarification(numeric)
    assert not broker.submit(reply(numeric, "clarification", response=False))
    assert broker.submit(reply(numeric, "clarification", response=2.5))
    free = clarification()
    broker.open_clarification(free)
    assert not broker.submit(reply(free, "clarification", response=None))
    assert not broker.submit(reply(free, "confirmation", decision="accept")), (
        "type must match the request"
    )
    assert broker.submit(reply(free, "clarification", response="Lagos"))
