"""Every message kind, POSTed to {chat}/messages or sent on the chat's WebSocket (the ``send``
fixture runs a test over both: one answer shape), and POST /aaep/v1/replies; events read over SSE."""

from __future__ import annotations

import json

import pytest
from conftest import read_frame
from server_helpers import of_type, types, wait_until

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ErrorReply, ToolUse, Turn

pytestmark = pytest.mark.shared_server


def reply(event: dict, value, **extra) -> dict:
    confirmation = event["type"].endswith("confirmation")
    body = {
        "type": "confirmation.reply" if confirmation else "clarification.reply",
        "reply_token": event["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        ("decision" if confirmation else "response"): value,
    }
    body.update(extra)
    return body


async def test_user_input_answers_the_session_id_and_the_stream_holds_aaep_events_only(
    send, new_chat, fake_model, sse, aaep_schema_validator
) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="The mean is 4.2. It excludes blanks."))
    async with sse(chat_id) as stream:
        status, body = await send(chat_id, {"kind": "user_input", "text": "What is the mean?"})
        assert (
            status == 202 and body["session_id"].startswith("sess_") and body["chat_id"] == chat_id
        )
        assert body["kind"] == "user_input.accepted"
        messages = await stream.until(of_type("session.completed"))
    assert types(messages) == [
        "session.started",
        "state.changed",
        "state.changed",
        "output.streaming",
        "output.streaming",
        "session.completed",
    ]
    assert messages[0]["session_id"] == body["session_id"]
    for frame in stream.frames:
        if "@context" in frame.data:
            assert frame.event == "aaep.event" and frame.id == frame.data["event_id"]
            aaep_schema_validator.validate(frame.data)
        else:
            assert frame.event is None and frame.id is None
    assert all("@context" in frame.data for frame in stream.frames), (
        "nothing but AAEP events by default"
    )
    assert stream.response_headers["content-type"].startswith("text/event-stream")
    assert stream.response_headers["cache-control"] == "no-cache"
    assert "content-encoding" not in stream.response_headers


async def test_a_message_while_working_is_guidance_and_bad_input_400(
    send, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="slow " * 30, stall_after_chunks=1))
    async with sse(chat_id) as stream:
        await send(chat_id, {"kind": "user_input", "text": "talk"})
        await stream.until(lambda m: m.get("to_state") == "writing_output")
        status, body = await send(chat_id, {"kind": "user_input", "text": "more"})
        assert (
            status == 202 and body["as_guidance"] is True and body["guidance_id"].startswith("gd_")
        ), body
        assert body["kind"] == "user_input.accepted"
        for bad, fragment in [
            ({"kind": "user_input"}, "needs 'text' as a string"),
            ({"kind": "user_input", "text": 3}, "it is a int"),
            ({"kind": "user_input", "text": "  "}, "non-empty"),
            ({"kind": "user_input", "text": "x", "extra": 1}, "Unexpected field"),
            ({"kind": "dance"}, "Unknown message kind"),
            ({"type": "subscription.dance"}, "Unknown message type"),
            ({"hello": "there"}, "Say what the message is"),
            ({"kind": "user_input", "type": "x"}, "either a kind or a type"),
            (
                {
                    "@context": "https://aaep-protocol.org/context/v1",
                    "type": "aaep:agent.session.started",
                },
                "does not accept AAEP events",
            ),
            ({"kind": "guidance"}, "needs 'text'"),
            ({"kind": "guidance", "text": "x", "resume": "yes"}, "'resume' as true or false"),
            (
                {"kind": "guidance", "text": "x", "settings": {"approval_mode": "never"}},
                "it must be one of: ask (Ask before running code), ask_all",
            ),
            ({"kind": "guidance", "text": "x", "settings": {"max_turns": 0}}, "from 1 to 500"),
            ({"kind": "guidance", "text": "x", "settings": {"speed": 2}}, "Unexpected field"),
            ({"kind": "control", "action": "explode"}, "Unknown control action"),
            ({"kind": "approval_mode", "mode": "always"}, "approval mode must be one of"),
        ]:
            status, body = await send(chat_id, bad)
            assert status == 400, bad
            assert fragment in body["message"], (bad, body)
        status, body = await send(chat_id, {"kind": "control", "action": "revert"})
        assert status == 409 and "Stop it before undoing" in body["message"]
        status, body = await send(chat_id, {"kind": "control", "action": "stop"})
        assert status == 202 and body["stopped"] is True
        assert body["kind"] == "control.accepted" and body["action"] == "stop"
        await stream.until(of_type("session.cancelled"))
    fake_model.release()
    status, body = await send(chat_id, {"kind": "control", "action": "stop"})
    assert status == 202 and body["stopped"] is False
    status, body = await send(
        chat_id, {"kind": "control", "action": "revert", "session_id": "sess_unknown"}
    )
    assert status == 400 and "nothing to undo" in body["message"]


async def test_confirmation_reply_accept_runs_the_tool(send, new_chat, fake_model, sse) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "Room C", "when": "noon"})]),
        Turn(text="Booked."),
    )
    async with sse(chat_id) as stream:
        await send(chat_id, {"kind": "user_input", "text": "book it"})
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        assert (
            confirmation["risk_level"] == "medium" and confirmation["default_decision"] == "reject"
        )
        assert confirmation["timeout_seconds"] == 180
        status, body = await send(chat_id, reply(confirmation, "accept"))
        assert status == 204 and body is None
        # A duplicate, a forged token and garbage are ignored, and still answered 204.
        for ignored in (
            reply(confirmation, "reject"),
            reply({**confirmation, "reply_token": "rpl_forged"}, "accept"),
            {"type": "confirmation.reply"},
            {"type": "clarification.reply", "reply_token": 5},
        ):
            status, _ = await send(chat_id, ignored)
            assert status == 204
        after = await stream.until(of_type("session.completed"))
    assert types(after)[:3] == ["state.changed", "tool.invoked", "tool.completed"]
    assert after[0]["from_state"] == "awaiting_input" and after[2]["status"] == "success"


async def test_clarification_and_global_replies_endpoint(api, new_chat, fake_model, sse) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("ask_user", {"question": "Which city?"})]),
        Turn(text="Lagos it is."),
    )
    async with sse(chat_id) as stream:
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "weather?"},
        )
        question = (await stream.until(of_type("awaiting.clarification")))[-1]
        status, _, _ = await api("replies", method="POST", body=reply(question, "Lagos"))
        assert status == 204
        after = await stream.until(of_type("session.completed"))
    assert after[0]["from_state"] == "awaiting_input"
    assert "Lagos" in str(fake_model.requests[-1].body["messages"][-1])
    status, _, _ = await api(
        "replies", method="POST", body={"type": "confirmation.reply", "reply_token": "rpl_x"}
    )
    assert status == 204
    status, body, _ = await api("replies", method="POST", body={"kind": "user_input", "text": "hi"})
    assert status == 400 and "Send user_input to a chat" in body["message"]


async def test_a_new_message_supersedes_a_session_waiting_for_the_user(
    send, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("delete_record", {"record_id": "12345"})]),
        Turn(text="Something else, then."),
    )
    async with sse(chat_id) as stream:
        await send(chat_id, {"kind": "user_input", "text": "delete"})
        first = (await stream.until(of_type("awaiting.confirmation")))[-1]
        assert first["timeout_seconds"] == 300
        status, body = await send(chat_id, {"kind": "user_input", "text": "never mind"})
        assert status == 202
        after = await stream.until(lambda m: m.get("type", "").endswith("session.completed"))
    assert (
        after[0]["type"].endswith("session.cancelled")
        and after[0]["session_id"] == first["session_id"]
    )
    assert after[0]["cancellation_reason"] == "superseded_by_new_request"
    assert "tool.invoked" not in types(after)
    assert all(m["session_id"] == body["session_id"] for m in after[1:])
    assert types(after)[1] == "session.started"


async def test_approval_mode_auto_answers_for_the_user(
    api, send, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    status, body = await send(chat_id, {"kind": "approval_mode", "mode": "auto"})
    assert status == 200 and body == {
        "kind": "approval_mode.accepted",
        "chat_id": chat_id,
        "approval_mode": "auto",
    }
    fake_model.add(
        Turn(tool_uses=[ToolUse("send_email", {"to": "a@b.c", "subject": "Hi", "body": "Hello"})]),
        Turn(text="Sent."),
    )
    async with sse(chat_id) as stream:
        await send(chat_id, {"kind": "user_input", "text": "email"})
        messages = await stream.until(of_type("session.completed"))
    assert "tool.invoked" in types(messages) and "awaiting.confirmation" in types(messages)
    _, view, _ = await api("chats", chat_id)
    assert view["approval_mode"] == "auto"


async def test_model_errors_end_the_session_not_the_request(
    send, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(ErrorReply(400, "invalid_request_error", "bad"))
    async with sse(chat_id) as stream:
        status, _ = await send(chat_id, {"kind": "user_input", "text": "x"})
        assert status == 202
        errored = (await stream.until(of_type("session.errored")))[-1]
    assert errored["urgency"] == "critical" and errored["error_code"] == "MODEL_BAD_REQUEST"


@pytest.mark.parametrize("aaep_config", [{"require_reply_sender": True}])
async def test_strict_sender_check_ignores_replies_from_strangers(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "D", "when": "now"})]),
        Turn(text="No."),
    )
    async with sse(chat_id) as stream:
        handshake = {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "panel",
            "capabilities": {"supports_confirmation_reply": True},
        }
        status, accepted, _ = await api("chats", chat_id, "messages", method="POST", body=handshake)
        assert status == 201 and (await stream.next())["type"] == "subscription.accepted"
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
        )
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        await api("chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept"))
        _, view, _ = await api("chats", chat_id)
        assert len(view["pending_requests"]) == 1, "a reply from an unknown subscription is ignored"
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body=reply(confirmation, "reject", subscription_id=accepted["subscription_id"]),
        )
        after = await stream.until(of_type("session.completed"))
    assert after[0]["from_state"] == "awaiting_input" and "tool.invoked" not in types(after)


@pytest.mark.parametrize("aaep_config", [{"confirmation_timeouts": {"medium": 2}}])
async def test_timeouts_come_from_the_traitlet(api, new_chat, fake_model, sse) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("send_email", {"to": "a@b.c", "subject": "s", "body": "b"})]),
        Turn(text="Ok."),
    )
    async with sse(chat_id) as stream:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "mail"}
        )
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        assert confirmation["timeout_seconds"] == 2
        after = await stream.until(of_type("session.completed"), timeout=10)
    assert "tool.invoked" not in types(after)
    assert "No answer in time" in after[0]["summary_normal"]


async def test_without_an_api_key_the_user_gets_an_error_event(
    api, new_chat, sse, extension
) -> None:
    extension.clients.credentials.discard(
        "ANTHROPIC_API_KEY"
    )  # held by the server, not in os.environ
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "hi"}
        )
        assert status == 202
        errored = (await stream.until(of_type("session.errored")))[-1]
    assert errored["error_code"] == "MODEL_API_KEY_MISSING"
    assert "ANTHROPIC_API_KEY" in errored["remediation_hint"]
    assert "scripts/start --offline" in errored["remediation_hint"]  # how to try it without a key
    await wait_until(lambda: not extension.runner.get(chat_id).running)


async def test_every_kind_is_answered_with_its_accepted_kind(
    send, new_chat, fake_model, sse
) -> None:
    """One answer shape for every client kind (the ones the panel used to POST on their own too)."""
    chat_id = await new_chat()
    answers = {}
    fake_model.add(Turn(text="Short."))  # guidance with nothing running starts a session
    async with sse(chat_id) as stream:
        for message in (
            {"kind": "approval_mode", "mode": "ask"},
            {"kind": "model", "model": "claude-test"},
            {"kind": "control", "action": "pause"},
            {"kind": "control", "action": "resume"},
            {"kind": "guidance", "text": "Keep it short"},
        ):
            status, body = await send(chat_id, message)
            assert status in (200, 202), (message, body)
            answers[message["kind"] + "/" + str(message.get("action", ""))] = body
        await stream.until(of_type("session.completed"))
    assert {body["kind"] for body in answers.values()} == {
        "approval_mode.accepted",
        "model.accepted",
        "control.accepted",
        "guidance.accepted",
    }
    assert answers["model/"]["message"].startswith("The next request uses ")
    assert answers["control/pause"]["action"] == "pause"
    status, body = await send(
        chat_id,
        {
            "kind": "figure_alt_text",
            "cell_id": "nope",
            "output_index": 0,
            "alt_text": "A bar chart",
        },
    )
    assert status >= 400 and body["message"], "a sentence, not a silent socket"
    status, body = await send(chat_id, {"kind": "model", "model": "claude-none"})
    assert status == 400 and "Pick one from GET /aaep/v1/models" in body["message"]


async def test_a_request_id_comes_back_with_its_answer(api, ws, new_chat, fake_model) -> None:
    chat_id = await new_chat()
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "approval_mode", "mode": "auto", "request_id": "r1"},
    )
    assert status == 200 and body["request_id"] == "r1" and body["kind"] == "approval_mode.accepted"
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "approval_mode", "mode": "auto", "request_id": 7},
    )
    assert status == 400 and "request_id must be" in body["message"]
    socket = await ws(chat_id)
    await socket.write_message(
        json.dumps({"kind": "control", "action": "dance", "request_id": "bad-one"})
    )
    error = await read_frame(socket)
    assert error["kind"] == "error" and error["request_id"] == "bad-one" and error["status"] == 400
    await socket.write_message(
        json.dumps({"type": "confirmation.reply", "reply_token": "rpl_x", "request_id": "r2"})
    )
    assert await read_frame(socket) == {
        "kind": "confirmation.reply.accepted",
        "status": 204,
        "request_id": "r2",
    }
    await socket.write_message(json.dumps({"type": "confirmation.reply", "reply_token": "rpl_x"}))
    await socket.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    assert (await read_frame(socket))["kind"] == "approval_mode.accepted", (
        "a reply without request_id: no answer"
    )
    socket.close()
