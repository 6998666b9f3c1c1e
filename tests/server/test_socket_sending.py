"""How the chat WebSocket sends: the handshake's answer before the replay, and a bounded
backlog for a client that stops reading (the send loop does not await every write)."""

from __future__ import annotations

import asyncio
import json
import socket as sockets

from conftest import frames_until, read_frame
from server_helpers import of_type, types

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.server import websocket
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


def handshake() -> str:
    return json.dumps(
        {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "late-panel",
            "capabilities": {"supports_confirmation_reply": True},
        }
    )


async def pending_confirmation(api, new_chat, sse, fake_model) -> str:
    """A chat whose running session waits for an approval (what a late subscriber replays)."""
    chat_id = await new_chat()
    fake_model.add(
        Turn(
            text="Booking it.",
            tool_uses=[ToolUse("book_meeting_room", {"room": "F", "when": "today"})],
        ),
        Turn(text="Done."),
    )
    async with sse(chat_id) as listener:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "book"}
        )
        await listener.until(of_type("awaiting.confirmation"))
    return chat_id


async def test_a_handshake_sent_on_opening_is_answered_before_the_replay(
    api, new_chat, sse, ws, fake_model
) -> None:
    """The panel (re)opens its socket while a question is open and sends its request at once:
    its subscription.accepted must come first, then the replay, the question included, under
    the negotiated subscription, which can answer it. (A send loop that started the replay at
    opening sent the question first.)"""
    chat_id = await pending_confirmation(api, new_chat, sse, fake_model)
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(handshake())
    frames = await frames_until(socket, of_type("awaiting.confirmation"))
    assert frames[0]["type"] == "subscription.accepted", types(frames)
    assert types(frames[1:2]) == ["session.started"], types(frames)
    await socket.write_message(
        json.dumps(
            {
                "type": "confirmation.reply",
                "reply_token": frames[-1]["reply_token"],
                "decision": "accept",
                "subscription_id": frames[0]["subscription_id"],
                "timestamp": SessionClock().now(),
            }
        )
    )
    after = await frames_until(socket, of_type("session.completed"))
    assert "tool.invoked" in types(after)
    socket.close()


async def test_a_client_that_never_speaks_still_gets_the_replay(
    api, new_chat, sse, ws, fake_model, monkeypatch
) -> None:
    monkeypatch.setattr(websocket, "HANDSHAKE_WAIT", 0.05)
    chat_id = await pending_confirmation(api, new_chat, sse, fake_model)
    socket = await ws(chat_id)
    frames = await frames_until(socket, of_type("awaiting.confirmation"))
    assert types(frames)[0] == "session.started"
    await socket.write_message(json.dumps({"kind": "control", "action": "stop"}))
    await frames_until(socket, of_type("session.cancelled"))
    socket.close()


async def test_a_client_that_stops_reading_holds_a_bounded_backlog(new_chat, ws, extension) -> None:
    """Neither tornado's write buffer nor the subscription's queue grows without bound: the
    send loop waits while the socket holds unsent bytes, and past ``max_pending`` unsent
    messages the subscription is dropped; the socket then ends once the client reads again."""
    chat_id = await new_chat()
    chat = extension.runner.get(chat_id)
    extension.hub.max_pending = 20
    socket = await ws(chat_id)
    await socket.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    assert (await read_frame(socket))["kind"] == "approval_mode.accepted"
    stream = next(s for s in extension.hub._streams if s.chat_id == chat_id)
    handler = stream.on_end.__self__  # the socket's handler (its _ending)
    handler.ws_connection.stream.socket.setsockopt(sockets.SOL_SOCKET, sockets.SO_SNDBUF, 8192)
    socket.stream.socket.setsockopt(sockets.SOL_SOCKET, sockets.SO_RCVBUF, 8192)
    # The test never calls read_message now: tornado's client stops reading after one frame.
    subscription = stream.subscription
    size = 100_000
    largest_buffer = 0
    for number in range(400):
        chat.emitter.publish({"kind": "kernel.note", "text": f"{number} " + "x" * size})
        await asyncio.sleep(0)
        out = handler.ws_connection.stream
        largest_buffer = max(largest_buffer, out._total_write_index - out._total_write_done_index)
        assert subscription.pending() <= 20
        if subscription.closed:
            break
    assert subscription.closed, "a client that stopped reading was never dropped"
    assert largest_buffer <= 2 * size, largest_buffer
    while (await read_frame(socket, 10)) is not None:  # reading again: the rest, then the end
        pass
    assert socket.close_code == 4000
    assert stream not in extension.hub._streams
    socket.close()


async def test_a_message_goes_out_in_the_step_it_is_published(new_chat, ws, extension) -> None:
    """As a bare broadcast does: no loop turn between publishing and writing to the socket
    (the fan-out benchmark's goal), once the handshake has been answered."""
    chat_id = await new_chat()
    chat = extension.runner.get(chat_id)
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(handshake())
    assert (await read_frame(socket))["type"] == "subscription.accepted"
    stream = next(s for s in extension.hub._streams if s.chat_id == chat_id)
    out = stream.on_end.__self__.ws_connection.stream
    before = out._total_write_index
    chat.emitter.publish({"kind": "kernel.note", "text": "now"})
    assert out._total_write_index > before  # written before this step yields
    assert (await read_frame(socket))["text"] == "now"
    socket.close()


def test_a_message_that_cannot_be_encoded_is_skipped_and_logged(caplog) -> None:
    """One bad message must not end a stream or a socket: it is logged and the rest go on."""
    from jupyter_aaep.server.sse import encoded, sse_frame

    def broken(message: object) -> str:
        raise ValueError("no")

    with caplog.at_level("ERROR"):
        assert encoded(broken, {"type": "x"}) is None
    assert "could not be serialised and was skipped" in caplog.text
    assert encoded(sse_frame, {"type": "note"}) == 'data: {"type":"note"}\n\n'


async def test_both_event_streams_send_each_frame_without_waiting_for_an_ack(
    new_chat, ws, sse, extension
) -> None:
    """Nagle's algorithm is off (TCP_NODELAY) on the chat's WebSocket and SSE stream: with it
    on, a frame written while the previous one is unacknowledged waits for the reader's
    delayed acknowledgement (40 ms on Linux, 200 on Windows): ``tool.completed`` reached a panel
    18 ms after its publication instead of 2 (``benchmarks/run_cell_overhead.py``)."""
    chat_id = await new_chat()
    socket = await ws(chat_id, subprotocols=["aaep.v1"])
    await socket.write_message(handshake())
    assert (await read_frame(socket))["type"] == "subscription.accepted"
    async with sse(chat_id):
        for _ in range(500):
            streams = {s.transport: s for s in extension.hub._streams if s.chat_id == chat_id}
            if len(streams) == 2:
                break
            await asyncio.sleep(0.01)
        assert set(streams) == {"websocket", "sse"}, streams
        # Each stream's handler (its subscription's on_queued is the handler's _push).
        web_socket = streams["websocket"].subscription.on_queued.__self__
        event_stream = streams["sse"].subscription.on_queued.__self__
        for connection in (web_socket.ws_connection.stream, event_stream.request.connection.stream):
            assert connection.socket.getsockopt(sockets.IPPROTO_TCP, sockets.TCP_NODELAY)
    socket.close()
