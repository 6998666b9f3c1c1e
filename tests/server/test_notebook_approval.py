"""The notebook view's road to an approval: the request read by id, the reply from the browser.

The ``%aaep`` view's Approve and Reject are drawn by the labextension from
``GET /aaep/v1/chats/{chat}/requests/{event_id}`` and answer with a ``confirmation.reply``
marked ``"via": "notebook"`` on the chat's ``messages`` endpoint; listeners then hear
"Approved from the notebook." (issue 25). Chromium presses the real button in
``tests/e2e/test_e2e_notebook_approve.py``.
"""

from __future__ import annotations

import json

import pytest
from conftest import read_frame
from server_helpers import PANEL_HANDSHAKE
from test_server_socket import frames_until

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server


async def _waiting(api, new_chat, ws, fake_model):  # type: ignore[no-untyped-def]
    """A chat whose agent waits for approval, with a subscriber that can answer it."""
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "F", "when": "today"})]),
        Turn(text="Booked."),
    )
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    # The page's stream, as the panel opens it (the notebook view sends its replies with its key).
    await socket.write_message(json.dumps(PANEL_HANDSHAKE))
    assert (await read_frame(socket))["type"] == "subscription.accepted"
    key = (await read_frame(socket))["stream_key"]
    await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
    )
    frames = await frames_until(
        socket, lambda f: str(f.get("type")).endswith("awaiting.confirmation")
    )
    return chat_id, socket, frames[-1], key


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
    chat_id, socket, confirmation, key = await _waiting(api, new_chat, ws, fake_model)
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
        "chats",
        chat_id,
        "messages",
        method="POST",
        body=_reply(confirmation, via="notebook", stream_key=key),
    )
    assert status == 204, body
    after = await frames_until(socket, lambda f: f.get("from_state") == "awaiting_input")
    assert after[-1]["summary_normal"] == "Approved from the notebook."
    status, found, _ = await api("chats", chat_id, "requests", confirmation["event_id"])
    assert (found["open"], found["outcome"]) == (False, "Approved from the notebook.")
    await frames_until(socket, lambda f: str(f.get("type")).endswith("session.completed"))
    socket.close()


async def test_the_marker_without_the_page_s_key_is_not_credited_to_the_notebook(
    api, new_chat, ws, fake_model
) -> None:
    """Anything holding the Jupyter token can write ``via: notebook``; without a key of one of
    the page's streams it is named as a program, never as the notebook."""
    chat_id, socket, confirmation, _ = await _waiting(api, new_chat, ws, fake_model)
    status, _, _ = await api(
        "chats", chat_id, "messages", method="POST", body=_reply(confirmation, via="notebook")
    )
    assert status == 204
    after = await frames_until(socket, lambda f: f.get("from_state") == "awaiting_input")
    assert after[-1]["summary_normal"] == "Approved by a program using your Jupyter login."
    await frames_until(socket, lambda f: str(f.get("type")).endswith("session.completed"))
    socket.close()


async def test_an_unknown_request_is_a_404_with_a_sentence(api, new_chat) -> None:
    chat_id = await new_chat()
    status, body, _ = await api("chats", chat_id, "requests", "evt_nothere")
    assert status == 404 and "side panel" in body["message"]
    status, _, _ = await api("chats", "chat_nope", "requests", "evt_nothere")
    assert status == 404
