"""The stream limits of ``StreamHub``: per client, idlest first, and never refusing the new one."""

from __future__ import annotations

import time

import pytest

from jupyter_aaep.aaep.session import Producer
from jupyter_aaep.server.streams import StreamHub, client_key

pytestmark = pytest.mark.shared_server


def hub(**limits: int) -> StreamHub:
    def no_chats(chat_id: str):
        raise AssertionError("these tests only use streams of every chat")

    return StreamHub(producer=Producer(), chat_lookup=no_chats, **limits)


def test_client_key_is_user_at_address_and_token_bearers_are_one_client() -> None:
    class User:
        username = "ada"

    assert client_key(User(), "10.0.0.2") == "ada@10.0.0.2"
    assert client_key(User(), "10.0.0.2", token_authenticated=True) == "token@10.0.0.2"
    assert client_key(None, None) == "anonymous@unknown"


def test_a_client_over_its_limit_loses_its_idlest_stream_and_others_are_untouched() -> None:
    streams = hub(max_streams_per_client=2)
    ended: list[tuple[str, int]] = []
    a1 = streams.open_stream(None, transport="sse", client="a")
    a2 = streams.open_stream(None, transport="websocket", client="a")
    b1 = streams.open_stream(None, transport="sse", client="b")
    for stream in (a1, a2, b1):
        stream.on_end = lambda code, reason, s=stream: ended.append((s.stream_id, code))
    a1.touch()  # a1 was used after a2 opened: a2 is now the idlest
    time.sleep(0.001)
    a3 = streams.open_stream(None, transport="sse", client="a")
    assert a2.closed and not a1.closed and not a3.closed and not b1.closed
    assert ended == [(a2.stream_id, 4000)]
    notice = a2.subscription.take_ready()
    assert notice[0]["type"] == "subscription.close" and notice[0]["reason_code"] == "stream_limit"
    assert "more than 2 AAEP streams" in notice[0]["reason_message"]
    assert [s.stream_id for s in streams.streams_of("a")] == [a1.stream_id, a3.stream_id]
    assert streams.streams_of("b") == [b1]


def test_at_the_server_limit_the_heaviest_client_gives_way() -> None:
    streams = hub(max_streams=3, max_streams_per_client=3)
    greedy = [streams.open_stream(None, transport="sse", client="greedy") for _ in range(3)]
    newcomer = streams.open_stream(None, transport="sse", client="newcomer")
    assert greedy[0].closed and not any(s.closed for s in greedy[1:]) and not newcomer.closed
    assert "at most 3 AAEP streams" in greedy[0].subscription.take_ready()[0]["reason_message"]


def test_a_message_naming_a_subscription_counts_as_activity() -> None:
    streams = hub(max_streams_per_client=2)
    first = streams.open_stream(None, transport="sse", client="a")
    streams.open_stream(None, transport="sse", client="a")
    time.sleep(0.001)
    streams.touch_subscription(first.subscription.id)
    streams.touch_subscription(["not", "an", "id"])  # ignored
    streams.open_stream(None, transport="sse", client="a")
    assert not first.closed


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        hub(max_streams_per_client=0)
