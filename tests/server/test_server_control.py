"""Pause, resume, guidance and stop through the chat's message endpoint and its WebSocket."""

from __future__ import annotations

import json

from conftest import read_frame
from server_helpers import of_type, types
from test_server_messages import reply
from test_server_socket import frames_until, request

from jupyter_aaep.agent.control import STEERING_PREFIX, STOPPED_NOTE
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


def steering(fake_model, index: int) -> list[str]:
    last = fake_model.requests[index].body["messages"][-1]["content"]
    return [
        b["text"] for b in last if b.get("type") == "text" and b["text"].startswith(STEERING_PREFIX)
    ]


async def test_pause_guidance_resume_and_stop_over_post(api, new_chat, fake_model, sse) -> None:
    chat_id = await new_chat()

    def post(body: dict):
        return api("chats", chat_id, "messages", method="POST", body=body)

    status, body, _ = await post({"kind": "control", "action": "pause"})
    assert (status, body) == (200, {"kind": "control.accepted", "action": "pause", "paused": False})
    status, body, _ = await post({"kind": "control", "action": "resume"})
    assert (status, body) == (
        200,
        {"kind": "control.accepted", "action": "resume", "resumed": False},
    )

    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "B", "when": "noon"})]),
        Turn(text="Booked."),
    )
    async with sse(chat_id) as stream:
        status, started, _ = await post({"kind": "user_input", "text": "book room B"})
        assert status == 202
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        status, body, _ = await post({"kind": "control", "action": "pause"})
        assert body == {"kind": "control.accepted", "action": "pause", "paused": True}
        paused = (await stream.until(lambda m: m.get("to_state") == "paused"))[-1]
        assert paused["from_state"] == "awaiting_input" and paused["summary_normal"].startswith(
            "Paused."
        )
        status, view, _ = await api("chats", chat_id)
        assert view["paused"] is True and len(view["pending_requests"]) == 1, (
            "the confirmation stays pending"
        )
        assert (
            view["supports"]["pause"]
            and view["supports"]["resume"]
            and view["supports"]["guidance"]
        )

        status, body, _ = await post(
            {
                "kind": "guidance",
                "text": "book it for one hour only",
                "resume": True,
                "settings": {"approval_mode": "auto"},
            }
        )
        assert (
            status == 202 and body["kind"] == "guidance.accepted" and body["applies"] == "next_turn"
        )
        assert body["session_id"] == started["session_id"] and body["guidance_id"].startswith("gd_")
        batch = await stream.until(lambda m: m.get("from_state") == "paused")
        receipt = next(m for m in batch if m.get("type", "").endswith("progress.updated"))
        assert receipt["summary_normal"].startswith("Guidance received: book it for one hour only.")
        resumed = batch[-1]
        assert resumed["to_state"] == "awaiting_input" and resumed["summary_normal"] == "Resumed."
        status, _, _ = await post(reply(confirmation, "accept"))
        assert status == 204
        messages = await stream.until(of_type("session.completed"))
    assert ("awaiting_input", "calling_tool") in [
        (m.get("from_state"), m.get("to_state")) for m in messages
    ]
    assert steering(fake_model, 1) == [f"{STEERING_PREFIX} book it for one hour only"]
    status, view, _ = await api("chats", chat_id)
    assert view["approval_mode"] == "auto" and view["paused"] is False
    assert [(g["text"], g["applied"]) for g in view["guidance"]] == [
        ("book it for one hour only", True)
    ]

    # Nothing running: guidance starts a new session; stopping it closes the request in the history.
    fake_model.add(Turn(text="slow " * 30, stall_after_chunks=1), Turn(text="Fresh start."))
    async with sse(chat_id) as stream:
        status, body, _ = await post({"kind": "guidance", "text": "now summarise"})
        assert (
            status == 202
            and body["applies"] == "new_session"
            and body["session_id"].startswith("sess_")
        )
        await stream.until(lambda m: m.get("to_state") == "writing_output")
        status, body, _ = await post({"kind": "control", "action": "stop"})
        assert status == 202 and body["stopped"] is True
        await stream.until(of_type("session.cancelled"))
    fake_model.release()
    async with sse(chat_id) as stream:
        await post({"kind": "user_input", "text": "something else"})
        await stream.until(of_type("session.completed"))
    sent = fake_model.requests[-1].body["messages"]
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"][-1]["text"].endswith(
        STOPPED_NOTE
    )
    assert [b["text"] for b in sent[-1]["content"]] == ["something else"]


async def test_control_and_guidance_over_the_websocket(new_chat, ws, fake_model) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id, subprotocols=["aaep.v1"])
    await connection.write_message(json.dumps(request()))
    assert (await read_frame(connection))["type"] == "subscription.accepted"
    fake_model.add(
        Turn(
            text="Reading the data now. Then more and more text",
            text_chunk_size=4,
            stall_after_chunks=8,
        ),
        Turn(text="Using the parquet file."),
    )
    await connection.write_message(json.dumps({"kind": "user_input", "text": "load the data"}))
    await frames_until(connection, of_type("output.streaming"))
    await connection.write_message(
        json.dumps({"kind": "user_input", "text": "use the parquet file"})
    )
    answer = await frames_until(connection, lambda m: m.get("kind") == "user_input.accepted")
    assert answer[-1]["status"] == 202 and answer[-1]["as_guidance"] is True
    await connection.write_message(json.dumps({"kind": "control", "action": "pause"}))
    answer = await frames_until(connection, lambda m: m.get("kind") == "control.accepted")
    assert answer[-1] == {
        "kind": "control.accepted",
        "status": 200,
        "action": "pause",
        "paused": True,
    }
    fake_model.release()
    await frames_until(connection, lambda m: m.get("to_state") == "paused")
    await connection.write_message(json.dumps({"kind": "guidance", "text": "and keep it short"}))
    answer = await frames_until(connection, lambda m: m.get("kind") == "guidance.accepted")
    assert answer[-1]["status"] == 202 and answer[-1]["applies"] == "on_resume"
    await connection.write_message(json.dumps({"kind": "control", "action": "resume"}))
    after = await frames_until(connection, of_type("session.completed"))
    assert any(m.get("kind") == "control.accepted" and m.get("resumed") is True for m in after)
    assert "state.changed" in types([m for m in after if "@context" in m])
    assert steering(fake_model, 1) == [
        f"{STEERING_PREFIX} use the parquet file",
        f"{STEERING_PREFIX} and keep it short",
    ]
    connection.close()
