"""Who may answer a request, and what happens when they all leave (§5.8.2, §10.2)."""

from __future__ import annotations

import logging

from jupyter_aaep.aaep.broker import ReplyBroker, short_token
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_reply_token, new_session_id, new_subscription_id


def confirmation(default: str = "reject") -> dict:
    return {
        "reply_token": new_reply_token(),
        "session_id": new_session_id(),
        "timestamp": SessionClock().now(),
        "timeout_seconds": 60,
        "default_decision": default,
    }


def reply(event: dict, subscription_id: str, decision: str = "accept") -> dict:
    return {
        "type": "confirmation.reply",
        "reply_token": event["reply_token"],
        "decision": decision,
        "subscription_id": subscription_id,
        "timestamp": SessionClock().now(),
    }


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


async def test_ignored_replies_are_logged_with_the_reason_never_the_whole_token(caplog) -> None:
    broker = ReplyBroker()
    event = confirmation()
    request = broker.open_confirmation(event)
    anonymous = {
        k: v for k, v in reply(event, new_subscription_id()).items() if k != "subscription_id"
    }
    with caplog.at_level(logging.WARNING, logger="jupyter_aaep.aaep.broker"):
        assert not broker.submit(anonymous)
        assert not broker.submit({**anonymous, "subscription_id": "nope"})
    first, second = (r.getMessage() for r in caplog.records)
    assert "no subscription_id" in first and "subscription_id is malformed" in second
    assert event["reply_token"][:8] in first and event["reply_token"] not in caplog.text
    assert not request.resolved
    assert short_token(None) == "(none)" and short_token("rpl_ab") == "rpl…"
