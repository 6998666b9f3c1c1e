"""Approvals named by where they came from (issue 25), through a real server and its streams.

Anything holding the Jupyter token can POST a reply; only the panel's own stream key makes it
"Approved in the panel". A client that names itself in its handshake is heard by that name,
anything else as "a program using your Jupyter login"; a change of approval mode by anything
but the panel is announced; silence and absence never approve.
"""

from __future__ import annotations

import json

import pytest
from conftest import read_frame
from server_helpers import PANEL_HANDSHAKE, of_type, panel_key, wait_until
from test_server_socket import frames_until, request

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server

PANEL = "Approved in the panel."
PROGRAM = "Approved by a program using your Jupyter login."


def reply(confirmation: dict, decision: str = "accept", **extra) -> dict:
    body = {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decision": decision,
    }
    body.update(extra)
    return body


def bookings(count: int) -> Turn:
    return Turn(
        tool_uses=[
            ToolUse("book_meeting_room", {"room": f"Room {n}", "when": "noon"})
            for n in range(count)
        ]
    )


def resolutions(events: list[dict]) -> list[str]:
    """What listeners heard as each confirmation was resolved."""
    return [e["summary_normal"] for e in events if e.get("from_state") == "awaiting_input"]


async def test_a_reply_posted_with_the_token_is_never_heard_as_the_panel(
    api, new_chat, fake_model, sse, extension
) -> None:
    """A plain HTTP client with the token, claiming to be the panel in decided_by, and even
    naming a subscription of the panel: it is named as what it is."""
    chat_id = await new_chat()
    fake_model.add(bookings(1), Turn(text="Booked."))
    async with sse(chat_id) as stream:
        await panel_key(api, stream, chat_id)  # the panel is there, with its key
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
        )
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        panel_subscription = next(
            s.subscription.id for s in extension.hub._streams if s.chat_id == chat_id
        )
        forged = reply(
            confirmation,
            decided_by="user:jupyterlab",
            subscription_id=panel_subscription,
            stream_key="key_" + "0" * 32,
        )
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=forged)
        assert status == 204
        events = await stream.until(of_type("session.completed"), timeout=20)
    assert resolutions(events) == [PROGRAM]
    assert PANEL not in json.dumps(events)


async def test_the_panels_key_is_approved_in_the_panel_and_from_the_notebook_with_via(
    api, new_chat, fake_model, sse
) -> None:
    first, other = await new_chat(), await new_chat("other.ipynb")
    fake_model.add(bookings(4), Turn(text="Booked."))
    async with sse(first) as stream, sse(other) as elsewhere:
        key = await panel_key(api, stream, first)
        other_key = await panel_key(api, elsewhere, other)
        assert key != other_key
        await api(
            "chats", first, "messages", method="POST", body={"kind": "user_input", "text": "book"}
        )
        answers = [
            {"stream_key": key},
            {"stream_key": key, "via": "notebook"},
            {"via": "notebook"},  # the marker alone proves nothing
            {"stream_key": other_key},  # another chat's key does not speak for this one
        ]
        for extra in answers:
            confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
            status, _, _ = await api(
                "chats", first, "messages", method="POST", body=reply(confirmation, **extra)
            )
            assert status == 204
        events = await stream.until(of_type("session.completed"), timeout=20)
    heard = [e for e in stream.frames if e.data.get("from_state") == "awaiting_input"]
    assert [e.data["summary_normal"] for e in heard] == [
        PANEL,
        "Approved from the notebook.",
        PROGRAM,
        PROGRAM,
    ]
    assert resolutions(events)[-1] == PROGRAM


async def test_a_socket_that_names_itself_is_heard_by_its_name(new_chat, ws, fake_model) -> None:
    chat_id = await new_chat()
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(
        json.dumps(
            request(
                {"supports_confirmation_reply": True},
                subscriber_id="aaep-listen",
                subscriber_name="aaep-listen",
            )
        )
    )
    accepted = await read_frame(socket)
    assert accepted["type"] == "subscription.accepted"
    fake_model.add(bookings(1), Turn(text="Booked."))
    await socket.write_message(json.dumps({"kind": "user_input", "text": "book"}))
    confirmation = (await frames_until(socket, of_type("awaiting.confirmation")))[-1]
    await socket.write_message(
        json.dumps(
            reply(confirmation, subscription_id=accepted["subscription_id"], decided_by="user:me")
        )
    )
    events = await frames_until(socket, of_type("session.completed"))
    socket.close()
    assert resolutions(events) == ["Approved by aaep-listen."]


async def test_the_panel_over_its_socket_gets_a_key_and_is_heard_as_the_panel(
    new_chat, ws, fake_model
) -> None:
    chat_id = await new_chat()
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(json.dumps(PANEL_HANDSHAKE))
    assert (await read_frame(socket))["type"] == "subscription.accepted"
    key = await read_frame(socket)
    assert key["kind"] == "stream.key" and key["stream_key"].startswith("key_")
    fake_model.add(bookings(1), Turn(text="Booked."))
    await socket.write_message(json.dumps({"kind": "user_input", "text": "book"}))
    confirmation = (await frames_until(socket, of_type("awaiting.confirmation")))[-1]
    await socket.write_message(json.dumps(reply(confirmation, stream_key=key["stream_key"])))
    events = await frames_until(socket, of_type("session.completed"))
    socket.close()
    assert resolutions(events) == [PANEL]


async def test_a_mode_change_by_anything_but_the_panel_is_announced(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(bookings(1), Turn(text="Not booked."), Turn(text="Hello."))
    async with sse(chat_id) as stream:
        key = await panel_key(api, stream, chat_id)
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
        )
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        # The panel's own change is not announced (the person made it).
        mode = {"kind": "approval_mode", "mode": "ask_all"}
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={**mode, "stream_key": key}
        )
        assert status == 200
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "approval_mode", "mode": "auto"},
        )
        assert status == 200 and body["approval_mode"] == "auto"
        said = "A program using your Jupyter login switched this chat to auto mode."
        notice = (await stream.until(lambda m: m.get("summary_normal") == said))[-1]
        assert notice["type"] == "aaep:agent.progress.updated" and notice["urgency"] == "normal"
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body=reply(confirmation, "reject", stream_key=key),
        )
        await stream.until(of_type("session.completed"), timeout=20)
        # While nothing runs: told as the next request starts.
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "approval_mode", "mode": "ask"},
        )
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "hi"}
        )
        events = await stream.until(of_type("session.completed"), timeout=20)
    later = "A program using your Jupyter login switched this chat to 'Ask before running code'."
    told = [e["summary_normal"] for e in events if e.get("summary_normal") == later]
    assert told == [later]
    assert (
        sum(
            1
            for f in stream.frames
            if f.data.get("summary_normal", "").endswith("to 'Ask before every change'.")
        )
        == 0
    )


async def test_a_request_nobody_can_answer_is_rejected_and_said_so(
    api, new_chat, fake_model, extension
) -> None:
    """No stream open: the request is withdrawn at once and rejected, told as such (never as
    "No answer in time"), and nothing runs."""
    chat_id = await new_chat()
    fake_model.add(bookings(1), Turn(text="Nobody answered."))
    await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
    )
    chat = extension.runner.get(chat_id)
    await wait_until(lambda: not chat.running, timeout=20, what="the session to end")
    events = chat.emitter.history
    [said] = resolutions(events)
    assert said.startswith("Nobody was connected to answer it, so it was rejected: "), said
    assert not any("No answer in time" in e.get("summary_normal", "") for e in events)
    assert not any(e.get("type") == "aaep:agent.tool.invoked" for e in events)


async def test_a_mode_change_in_guidance_settings_is_announced_too(
    api, new_chat, fake_model, extension
) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="Understood."))  # with nothing running, guidance starts a session
    status, _, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "guidance", "text": "go faster", "settings": {"approval_mode": "auto"}},
    )
    assert status == 202
    chat = extension.runner.get(chat_id)
    await wait_until(lambda: not chat.running, timeout=20, what="the guided session to end")
    said = [e.get("summary_normal") for e in chat.emitter.history]
    assert "A program using your Jupyter login switched this chat to auto mode." in said, said


async def test_a_chat_created_in_auto_mode_says_so_at_its_first_request(
    api, sse, fake_model
) -> None:
    """Creating a chat carries no stream key, so a program could make one that approves by
    itself unheard: it is said once, at the chat's first request, whoever created it."""
    status, body, _ = await api(
        "chats", method="POST", body={"notebook_path": "a.ipynb", "approval_mode": "auto"}
    )
    assert status == 201 and body["approval_mode"] == "auto"
    chat_id = body["chat_id"]
    fake_model.add(Turn(text="Hello."), Turn(text="Again."))
    async with sse(chat_id) as stream:
        for text in ("hi", "again"):
            await api(
                "chats",
                chat_id,
                "messages",
                method="POST",
                body={"kind": "user_input", "text": text},
            )
            await stream.until(of_type("session.completed"), timeout=20)
        told = [
            f.data["summary_normal"]
            for f in stream.frames
            if f.data.get("summary_normal", "").startswith("This chat started in auto mode")
        ]
    assert len(told) == 1, told
