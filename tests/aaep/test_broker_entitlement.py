"""Who may answer a request, and what happens when they all leave (§5.8.2, §10.2)."""

from __future__ import annotations

from jupyter_aaep.aaep.broker import ReplyBroker
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_reply_token, new_session_id, new_subscription_id


def confirmation(default: str = "reject") -> dict:
    return {"reply_token": new_reply_token(), "session_id": new_session_id(), "timestamp": SessionClock().now(),
            "timeout_seconds": 60, "default_decision": default}


def reply(event: dict, subscription_id: str, decision: str = "accept") -> dict:
    return {"type": "confirmation.reply", "reply_token": event["reply_token"], "decision": decision,
            "subscription_id": subscription_id, "timestamp": SessionClock().now()}


async def test_the_hook_decides_who_may_answer() -> None:
    panel, magic = new_subscription_id(), new_subscription_id()
    asked: list[str] = []

    def entitled(event: dict, kind: str) -> frozenset[str]:
        asked.append(kind)
        return frozenset({panel, magic})

    broker = ReplyBroker(entitled=entitled)
    event = confirmation()
    request = broker.open_confirmation(event)
    assert asked == ["confirmation"] and request.allowed_subscriptions == {panel, magic}
    assert not broker.submit(reply(event, new_subscription_id()))
    assert broker.apply_defaults_for_subscription(panel) == 0, "the magic can still answer"
    assert not broker.submit(reply(event, panel)), "a closed subscription can no longer answer"
    assert broker.apply_defaults_for_subscription(magic) == 1
    outcome = request.future.result()
    assert outcome.resolution == "unsubscribed" and outcome.value == "reject"


async def test_nobody_to_answer_means_the_default_at_once() -> None:
    broker = ReplyBroker(entitled=lambda event, kind: frozenset())
    event = confirmation(default="accept")
    request = broker.open_confirmation(event)
    outcome = await broker.wait(request)
    assert outcome.value == "accept" and outcome.decided_by == "auto:no_subscriber"
    assert broker.pending() == []


async def test_without_the_sender_check_any_reply_counts_until_everyone_left() -> None:
    only = new_subscription_id()
    broker = ReplyBroker(entitled=lambda event, kind: frozenset({only}), check_sender=False)
    first, second = confirmation(), confirmation()
    broker.open_confirmation(first)
    pending = broker.open_confirmation(second)
    assert broker.submit(reply(first, new_subscription_id()))
    assert broker.apply_defaults_for_subscription(only) == 1
    assert pending.future.result().resolution == "unsubscribed"


async def test_explicit_allowed_subscriptions_win_over_the_hook() -> None:
    named = new_subscription_id()
    broker = ReplyBroker(entitled=lambda event, kind: frozenset())
    request = broker.open_confirmation(confirmation(), allowed_subscriptions=frozenset({named}))
    assert not request.resolved and request.allowed_subscriptions == {named}
