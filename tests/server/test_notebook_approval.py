"""The notebook view's road to an approval: the request read by id, the reply from the browser.

The ``%aaep`` view's Approve and Reject are drawn by the labextension from
``GET /aaep/v1/chats/{chat}/requests/{event_id}`` and answer with a ``confirmation.reply``
marked ``"via": "notebook"`` on the chat's ``messages`` endpoint; listeners then hear
"Approved from the notebook." (issue 25). Chromium presses the real button in
``tests/e2e/test_e2e_notebook_approve.py``.
"""

from __future__ import annotations

import json

from conftest import read_frame
from test_server_socket import frames_until, request

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.server.notebook_approval import reply_origin
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


async def _waiting(api, new_chat, ws, fake_model):  # type: ignore[no-untyped-def]
    """A chat whose agent waits for approval, with a subscriber that can answer it."""
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "F", "when": "today"})]),
        Turn(text="Booked."),
    )
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(json.dumps(request({"supports_confirmation_reply": True})))
    assert (await read_frame(socket))["type"] == "subscription.accepted"
    await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
    )
    frames = await frames_until(
        socket, lambda f: str(f.get("type")).endswith("awaiting.confirmation")
    )
    return chat_id, socket, frames[-1]


def _reply(confirmation: dict, **extra: str) -> dict:
    return {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "decision": "accept",
        "timestamp": SessionClock().now(),
        **extra,
    }


async def test_a_reply_from_the_notebook_view_is_heard_as_such(
    api, new_chat, ws, fake_model
) -> None:
    chat_id, socket, confirmation = await _waiting(api, new_chat, ws, fake_model)
    status, found, _ = await api("chats", chat_id, "requests", confirmation["event_id"])
    assert status == 200
    assert found == {
        "request_id": confirmation["event_id"],
        "kind": "confirmation",
        "open": True,
        "outcome": None,
        "event": confirmation,
    }

    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body=_reply(confirmation, via="notebook")
    )
    assert status == 204, body
    after = await frames_until(socket, lambda f: f.get("from_state") == "awaiting_input")
    assert after[-1]["summary_normal"] == "Approved from the notebook."
    status, found, _ = await api("chats", chat_id, "requests", confirmation["event_id"])
    assert (found["open"], found["outcome"]) == (False, "Approved from the notebook.")
    await frames_until(socket, lambda f: str(f.get("type")).endswith("session.completed"))
    socket.close()


async def test_a_reply_without_the_marker_is_not_credited_to_the_notebook(
    api, new_chat, ws, fake_model
) -> None:
    chat_id, socket, confirmation = await _waiting(api, new_chat, ws, fake_model)
    status, _, _ = await api("chats", chat_id, "messages", method="POST", body=_reply(confirmation))
    assert status == 204
    after = await frames_until(socket, lambda f: f.get("from_state") == "awaiting_input")
    assert after[-1]["summary_normal"] != "Approved from the notebook."
    await frames_until(socket, lambda f: str(f.get("type")).endswith("session.completed"))
    socket.close()


async def test_an_unknown_request_is_a_404_with_a_sentence(api, new_chat) -> None:
    chat_id = await new_chat()
    status, body, _ = await api("chats", chat_id, "requests", "evt_nothere")
    assert status == 404 and "side panel" in body["message"]
    status, _, _ = await api("chats", "chat_nope", "requests", "evt_nothere")
    assert status == 404


def test_the_origin_is_decided_by_the_marker_alone_and_the_marker_is_taken_off() -> None:
    reply = {"type": "confirmation.reply", "reply_token": "rpl_x", "via": "notebook"}
    assert reply_origin(reply) == (
        {"type": "confirmation.reply", "reply_token": "rpl_x"},
        "notebook",
    )
    assert reply_origin({**reply, "via": "kernel"})[1] == "panel"
    assert reply_origin({"type": "confirmation.reply"}) == ({"type": "confirmation.reply"}, "panel")
