"""``GET chats/{id}/usage``: what the panel reads again when a session ends, without the transcript.

The panel used to read the whole chat (every event so far) at each session's end just to move its
usage meter; this answer carries the usage and the three facts a session's end changes.
"""

from __future__ import annotations

import pytest
from server_helpers import of_type

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

pytestmark = pytest.mark.shared_server


async def test_the_usage_answer_matches_the_chat_and_carries_no_transcript(
    api, new_chat, sse, fake_model: FakeAnthropic
) -> None:
    fake_model.add(Turn(text="Hello."))
    chat_id = await new_chat("usage.ipynb")
    status, before, _ = await api("chats", chat_id, "usage")
    assert status == 200, before
    assert before["usage"]["requests"] == 0
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "Hi"}
        )
        assert status == 202
        await stream.until(of_type("session.completed"), timeout=20)
    _, after, _ = await api("chats", chat_id, "usage")
    _, view, _ = await api("chats", chat_id)
    assert after["usage"]["requests"] >= 1 and after["usage"]["output_tokens"] > 0, after
    assert after["usage"] == view["usage"]
    for key in ("can_continue", "undoable_sessions", "title"):
        assert after[key] == view[key], key
    assert after["title"] == "Hi"
    assert set(after) == {"chat_id", "usage", "can_continue", "undoable_sessions", "title"}


async def test_an_unknown_chat_has_no_usage(api) -> None:
    status, body, _ = await api("chats", "chat_doesnotexist", "usage")
    assert status == 404, body
    assert body["message"]
