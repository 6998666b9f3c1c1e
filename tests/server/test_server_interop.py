"""What the AAEP project's own subscriber tools need from the server (issue #9).

The tools (``aaep-listen``, ``aaep-capture``) read ``{endpoint}/events``, post replies to
``{endpoint}/messages`` without a ``subscription_id``, and show any non-AAEP message as an
unknown event. The real tools run against a real server in ``tests/interop``; these tests pin
the server side of the contract in-process.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from server_helpers import of_type, types

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server


def tool_reply(event: dict, decision: str = "accept", **extra) -> dict:
    """A reply as ``aaep-listen --auto-accept`` sends it: no ``subscription_id``."""
    body = {
        "type": "confirmation.reply",
        "reply_token": event["reply_token"],
        "decision": decision,
        "timestamp": SessionClock().now(),
    }
    body.update(extra)
    return body


async def start_booking(api, chat_id, fake_model, stream) -> dict:
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "B", "when": "noon"})]),
        Turn(text="Booked."),
    )
    status, _, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
    )
    assert status == 202
    return (await stream.until(of_type("awaiting.confirmation")))[-1]


@pytest.mark.parametrize("aaep_config", [{"conformance_input_ack": True}])
async def test_the_conformance_switch_brings_back_the_acknowledgement(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="Hello."))
    async with sse(chat_id) as stream, sse(None) as everything:
        _, body, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "hi"}
        )
        messages = await stream.until(of_type("session.completed"))
        first = await everything.next()
    ack = {"kind": "user_input.accepted", "session_id": body["session_id"], "chat_id": chat_id}
    assert messages[0] == ack and first == ack
    assert types(messages[1:2]) == ["session.started"]


async def test_a_reply_without_subscription_id_on_the_chat_endpoint_counts(
    api, new_chat, fake_model, sse, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="jupyter_aaep")
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        confirmation = await start_booking(api, chat_id, fake_model, stream)
        status, body, _ = await api(
            "chats", chat_id, "messages", method="POST", body=tool_reply(confirmation)
        )
        assert status == 204 and body is None
        after = await stream.until(of_type("session.completed"))
    assert types(after)[:3] == ["state.changed", "tool.invoked", "tool.completed"]
    assert after[2]["status"] == "success"
    attributed = [r.getMessage() for r in caplog.records if "attributed to sub_" in r.getMessage()]
    assert len(attributed) == 1 and chat_id in attributed[0]
    assert confirmation["reply_token"] not in caplog.text, "the log never holds a whole reply token"


async def test_appendix_b_messages_is_the_replies_endpoint(
    api, new_chat, fake_model, sse, caplog
) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        confirmation = await start_booking(api, chat_id, fake_model, stream)
        # Without a subscription_id, off the chat's own endpoint: ignored, 204, and logged with the reason.
        with caplog.at_level(logging.WARNING, logger="jupyter_aaep"):
            status, _, _ = await api("messages", method="POST", body=tool_reply(confirmation))
        assert status == 204
        ignored = [
            r
            for r in caplog.records
            if r.levelno == logging.WARNING and "no subscription_id" in r.getMessage()
        ]
        assert len(ignored) == 1 and confirmation["reply_token"] not in ignored[0].getMessage()
        assert confirmation["reply_token"][:8] in ignored[0].getMessage()
        _, view, _ = await api("chats", chat_id)
        assert len(view["pending_requests"]) == 1
        status, _, _ = await api(
            "messages",
            method="POST",
            body=tool_reply(confirmation, "reject", subscription_id=new_subscription_id()),
        )
        assert status == 204
        after = await stream.until(of_type("session.completed"))
    assert after[0]["from_state"] == "awaiting_input" and "tool.invoked" not in types(after)
    status, body, _ = await api(
        "messages", method="POST", body={"kind": "user_input", "text": "hi"}
    )
    assert status == 400 and "Send user_input to a chat" in body["message"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jupyter_aaep"):
        status, _, _ = await api("messages", method="POST", body=tool_reply(confirmation))
    assert status == 204 and "no open request has that token" in caplog.text


@pytest.mark.parametrize("aaep_config", [{"require_reply_sender": True}])
async def test_strict_sender_check_attributes_only_to_the_one_subscriber(
    api, new_chat, fake_model, sse, caplog
) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        async with sse(chat_id) as second:
            confirmation = await start_booking(api, chat_id, fake_model, stream)
            await second.until(of_type("awaiting.confirmation"))
            with caplog.at_level(logging.WARNING, logger="jupyter_aaep"):
                status, _, _ = await api(
                    "chats", chat_id, "messages", method="POST", body=tool_reply(confirmation)
                )
            assert (
                status == 204 and "2 subscriptions of this chat could have sent it" in caplog.text
            )
            _, view, _ = await api("chats", chat_id)
            assert len(view["pending_requests"]) == 1, "ambiguous sender: ignored"
        # The second subscriber left; the one that is left is the sender.
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=tool_reply(confirmation)
        )
        assert status == 204
        after = await stream.until(of_type("session.completed"))
    assert "tool.invoked" in types(after)


async def test_user_input_over_the_socket_is_answered_with_its_session_id(
    new_chat, ws, fake_model
) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id, subprotocols=["aaep.v1"])
    fake_model.add(Turn(text="Hi."))
    await connection.write_message(json.dumps({"kind": "user_input", "text": "hello"}))
    answer = json.loads(await asyncio.wait_for(connection.read_message(), 5))
    assert answer["kind"] == "user_input.accepted" and answer["status"] == 202
    assert answer["chat_id"] == chat_id and answer["session_id"].startswith("sess_")
    started = json.loads(await asyncio.wait_for(connection.read_message(), 5))
    assert (
        started["type"] == "aaep:agent.session.started"
        and started["session_id"] == answer["session_id"]
    )
    while started.get("type") != "aaep:agent.session.completed":
        started = json.loads(await asyncio.wait_for(connection.read_message(), 5))
    connection.close()
