"""A message sent while the agent is paused inside an approval replaces the waiting request, as
it does when not paused; a message while paused between steps stays guidance."""

from __future__ import annotations

import pytest
from server_helpers import of_type, types

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server


async def test_a_message_while_paused_in_a_confirmation_replaces_the_request(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()

    def post(body: dict):
        return api("chats", chat_id, "messages", method="POST", body=body)

    fake_model.add(
        Turn(tool_uses=[ToolUse("delete_record", {"record_id": "7"})]), Turn(text="Listed them.")
    )
    async with sse(chat_id) as stream:
        _, started, _ = await post({"kind": "user_input", "text": "delete record 7"})
        await stream.until(of_type("awaiting.confirmation"))
        _, body, _ = await post({"kind": "control", "action": "pause"})
        assert body["paused"] is True
        await stream.until(lambda m: m.get("to_state") == "paused")

        status, body, _ = await post({"kind": "user_input", "text": "list the records instead"})
        assert status == 202 and "as_guidance" not in body, body
        assert body["session_id"] != started["session_id"]
        after = await stream.until(of_type("session.completed"))
    cancelled = after[0]
    assert (
        cancelled["type"].endswith("session.cancelled")
        and cancelled["session_id"] == started["session_id"]
    )
    assert cancelled["cancellation_reason"] == "superseded_by_new_request"
    assert cancelled["summary_normal"].startswith("Your new message replaced this request.")
    assert "tool.invoked" not in types(after)
    assert (
        types(after)[1] == "session.started"
        and after[1]["request_text"] == "list the records instead"
    )
    _, view, _ = await api("chats", chat_id)
    assert view["pending_requests"] == [] and view["paused"] is False and view["status"] == "idle"
    assert view["guidance"] == [], "it was a new request, not guidance"


async def test_a_message_while_paused_between_steps_is_guidance(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()

    def post(body: dict):
        return api("chats", chat_id, "messages", method="POST", body=body)

    fake_model.add(
        Turn(text="Reading. More text follows here", text_chunk_size=4, stall_after_chunks=3),
        Turn(text="Kept it short."),
    )
    async with sse(chat_id) as stream:
        _, started, _ = await post({"kind": "user_input", "text": "read it"})
        await stream.until(of_type("output.streaming"))
        await post({"kind": "control", "action": "pause"})
        fake_model.release()
        await stream.until(lambda m: m.get("to_state") == "paused")
        status, body, _ = await post({"kind": "user_input", "text": "keep it short"})
        assert (
            status == 202
            and body["as_guidance"] is True
            and body["session_id"] == started["session_id"]
        )
        receipt = await stream.until(of_type("progress.updated"))
        assert (
            receipt[-1]["summary_normal"]
            == "Guidance received: keep it short. It applies when you resume."
        )
        await post({"kind": "control", "action": "resume"})
        after = await stream.until(of_type("session.completed"))
    assert "session.cancelled" not in types(after)
