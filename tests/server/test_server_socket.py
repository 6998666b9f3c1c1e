"""The chat WebSocket, two subscribers with different terms, and Jupyter's auth rules."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from conftest import frames_until, read_frame
from server_helpers import of_type, types
from tornado.httpclient import HTTPClientError

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.store.chat_store import ChatStore
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server


def request(capabilities: dict | None = None, **fields) -> dict:
    body = {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "ws-test",
        "capabilities": capabilities or {},
    }
    body.update(fields)
    return body


async def test_subprotocol_is_selected_when_offered_and_plain_sockets_work(new_chat, ws) -> None:
    chat_id = await new_chat()
    with_protocol = await ws(chat_id, subprotocols=["other", "aaep.v1"])
    assert with_protocol.selected_subprotocol == "aaep.v1"
    plain = await ws(chat_id)
    assert plain.selected_subprotocol is None
    with_protocol.close()
    plain.close()


async def test_socket_carries_handshakes_messages_and_errors(
    new_chat, ws, fake_model, aaep_schema_validator
) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id, subprotocols=["aaep.v1"])
    await connection.write_message(
        json.dumps(
            request({"preferred_verbosity": "detailed", "supports_confirmation_reply": True})
        )
    )
    accepted = await read_frame(connection)
    assert accepted["type"] == "subscription.accepted"
    aaep_schema_validator.validate(accepted)
    for garbage, status in (
        ("not json", 400),
        ("[]", 400),
        (json.dumps({"kind": "nope"}), 400),
        (json.dumps({"kind": "control", "action": "dance"}), 400),
    ):
        await connection.write_message(garbage)
        error = await read_frame(connection)
        assert error["kind"] == "error" and error["status"] == status and error["message"]
    await connection.write_message(b"\x00\x01", binary=True)
    assert (await read_frame(connection))["status"] == 400
    await connection.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    assert await read_frame(connection) == {
        "kind": "approval_mode.accepted",
        "status": 200,
        "chat_id": chat_id,
        "approval_mode": "ask",
    }
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "F", "when": "today"})]),
        Turn(text="Done."),
    )
    await connection.write_message(json.dumps({"kind": "user_input", "text": "book"}))
    messages = await frames_until(connection, of_type("awaiting.confirmation"))
    answer = messages[0]
    assert answer["kind"] == "user_input.accepted" and answer["status"] == 202
    assert answer["chat_id"] == chat_id and answer["session_id"].startswith("sess_")
    assert (
        types(messages[1:2]) == ["session.started"]
        and messages[1]["session_id"] == answer["session_id"]
    )
    assert all("@context" in m for m in messages[1:]), "after the answer, AAEP events only"
    confirmation = messages[-1]
    await connection.write_message(
        json.dumps(
            {
                "type": "confirmation.reply",
                "reply_token": confirmation["reply_token"],
                "decision": "accept",
                "subscription_id": accepted["subscription_id"],
                "timestamp": SessionClock().now(),
            }
        )
    )
    after = await frames_until(connection, of_type("session.completed"))
    assert "tool.invoked" in types(after)
    assert all(m["verbosity"] == "detailed" for m in after if "summary_normal" in m)
    await connection.write_message(json.dumps({"kind": "control", "action": "stop"}))
    assert (await read_frame(connection))["stopped"] is False
    await connection.write_message(
        json.dumps(
            {
                "type": "subscription.close",
                "subscription_id": accepted["subscription_id"],
                "reason_code": "done",
                "reason_message": "bye",
            }
        )
    )
    assert await read_frame(connection) is None
    assert connection.close_code == 4005
    connection.close()


async def test_rejected_handshake_is_answered_then_the_socket_closes(new_chat, ws) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id)
    await connection.write_message(json.dumps(request(aaep_version="99.99.99")))
    rejected = await read_frame(connection)
    assert (
        rejected["type"] == "subscription.rejected"
        and rejected["reason_code"] == "version_unsupported"
    )
    assert await read_frame(connection) is None
    assert connection.close_code == 4001
    connection.close()


async def test_oversized_frames_get_an_error(new_chat, ws) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id)
    await connection.write_message(json.dumps({"kind": "user_input", "text": "x" * (1 << 20)}))
    error = await read_frame(connection)
    assert error["status"] == 413
    connection.close()


async def test_unknown_chat_socket_is_refused(ws) -> None:
    with pytest.raises(HTTPClientError) as refused:
        await ws("chat_nope")
    assert refused.value.code == 404


async def test_two_subscribers_each_get_what_they_negotiated(
    api, new_chat, ws, sse, fake_model, aaep_schema_validator
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(
            text="Let me check the data first.",
            tool_uses=[ToolUse("fetch_data", {"source": "sample"})],
        ),
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "G", "when": "Monday"})]),
        Turn(text="Room G is booked. The data looked fine. Anything else?"),
    )
    async with sse(chat_id) as listener:
        _, sse_terms, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body=request(
                {
                    "max_events_per_second": 2,
                    "supports_confirmation_reply": True,
                    "event_filters": {"exclude": ["aaep:agent.tool.*"]},
                },
                subscriber_id="sse",
            ),
        )
        assert (await listener.next())["subscription_id"] == sse_terms["subscription_id"]
        socket = await ws(chat_id, subprotocols=["aaep.v1"])
        await socket.write_message(
            json.dumps(
                request({"preferred_verbosity": "terse", "supports_confirmation_reply": True})
            )
        )
        ws_terms = await read_frame(socket)
        assert ws_terms["honored_capabilities"]["preferred_verbosity"] == "terse"
        for answer in (sse_terms, ws_terms):
            aaep_schema_validator.validate(answer)

        started = time.monotonic()
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "check and book"},
        )
        on_socket = await frames_until(socket, of_type("awaiting.confirmation"))
        confirmation = on_socket[-1]
        on_sse = await listener.until(of_type("awaiting.confirmation"))
        assert on_sse[-1]["event_id"] == confirmation["event_id"], "the critical event reaches both"
        await socket.write_message(
            json.dumps(
                {
                    "type": "confirmation.reply",
                    "reply_token": confirmation["reply_token"],
                    "decision": "accept",
                    "subscription_id": ws_terms["subscription_id"],
                    "timestamp": SessionClock().now(),
                }
            )
        )
        on_socket += await frames_until(socket, of_type("session.completed"))
        on_sse += await listener.until(of_type("session.completed"), timeout=20)
        elapsed = time.monotonic() - started
        socket.close()

    # The SSE subscriber: no tool events, at most 2 non-critical messages a second (plus one
    # second's burst), output merged into fewer chunks, and it saw the confirmation resolved.
    assert not any(t.startswith("tool.") for t in types(on_sse))
    non_critical = [m for m in on_sse if m.get("urgency") != "critical"]
    assert len(non_critical) <= 2 * elapsed + 2, (len(non_critical), elapsed)
    resolved = [m for m in on_sse if m.get("from_state") == "awaiting_input"]
    # The answer came over the logged-in WebSocket: listeners hear where it came from (issue 16).
    assert resolved and resolved[0]["summary_normal"] == "Approved by ws-test.", resolved
    sse_text = "".join(m["chunk"] for m in on_sse if "chunk" in m)
    ws_text = "".join(m["chunk"] for m in on_socket if "chunk" in m)
    assert (
        sse_text
        == ws_text
        == "Let me check the data first.Room G is booked. The data looked fine. Anything else?"
    )
    # The WebSocket subscriber: everything, terse.
    assert "tool.invoked" in types(on_socket) and "tool.completed" in types(on_socket)
    assert all(
        m["verbosity"] == "terse" and "summary_detailed" not in m
        for m in on_socket
        if "summary_normal" in m
    )
    assert [m for m in on_socket if m.get("from_state") == "awaiting_input"]
    for message in on_sse + on_socket:
        if "@context" in message:
            aaep_schema_validator.validate(message)
    for stream in (on_sse, on_socket):
        outputs: dict[str, list[dict]] = {}
        for chunk in (m for m in stream if "chunk" in m):
            outputs.setdefault(chunk["output_id"], []).append(chunk)
        for chunks in outputs.values():
            assert [c["complete"] for c in chunks].count(True) == 1 and chunks[-1]["complete"]
            position = 0
            for chunk in chunks:
                assert chunk["position"] == position
                position += len(chunk["chunk"])


async def test_requests_without_credentials_are_refused(api, jp_fetch, ws, new_chat) -> None:
    chat_id = await new_chat()
    anonymous = {"Authorization": ""}
    for parts, method, body in [
        (("chats",), "GET", None),
        (("chats",), "POST", "{}"),
        (("chats", chat_id, "messages"), "POST", '{"kind": "user_input", "text": "hi"}'),
        (("chats", chat_id, "events"), "GET", None),
        (("manifest",), "GET", None),
        (("replies",), "POST", "{}"),
        (("subscriptions",), "POST", "{}"),
    ]:
        status, _, _ = await api(*parts, method=method, raw=body, headers=anonymous)
        assert status == 403, parts
    with pytest.raises(HTTPClientError) as refused:
        await ws(chat_id, headers=anonymous)
    assert refused.value.code == 403


@pytest.fixture
def login(jp_fetch, jp_serverapp):
    """Log in with the token once, as a browser does: (cookie header, xsrf token)."""

    async def cookies() -> tuple[str, str]:
        token = jp_serverapp.identity_provider.token
        first = await jp_fetch(
            "api", "status", params={"token": token}, headers={"Authorization": ""}
        )
        jar = [c.split(";")[0] for c in first.headers.get_list("Set-Cookie")]
        assert any(c.startswith("username-") for c in jar), jar
        page = await jp_fetch(
            "login", headers={"Authorization": ""}, follow_redirects=False, raise_error=False
        )
        jar += [c.split(";")[0] for c in page.headers.get_list("Set-Cookie")]
        xsrf = next(c.split("=", 1)[1] for c in jar if c.startswith("_xsrf="))
        return "; ".join(jar), xsrf

    return cookies


async def test_cookie_authenticated_posts_need_the_xsrf_token(jp_fetch, login, new_chat) -> None:
    cookie, xsrf = await login()
    refused = await jp_fetch(
        "aaep",
        "v1",
        "chats",
        method="POST",
        body="{}",
        raise_error=False,
        headers={"Authorization": "", "Cookie": cookie},
    )
    assert refused.code == 403
    allowed = await jp_fetch(
        "aaep",
        "v1",
        "chats",
        method="POST",
        body="{}",
        raise_error=False,
        headers={"Authorization": "", "Cookie": cookie, "X-XSRFToken": xsrf},
    )
    assert allowed.code == 201


async def test_cross_origin_sockets_are_refused(new_chat, login, jp_http_port, jp_base_url) -> None:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    chat_id = await new_chat()
    cookie, _ = await login()  # the login cookie is for 127.0.0.1:<port>, as in a browser
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}aaep/v1/chats/{chat_id}/ws"

    def connect(origin: str):
        return websocket_connect(HTTPRequest(url, headers={"Cookie": cookie, "Origin": origin}))

    with pytest.raises(HTTPClientError) as refused:
        await connect("http://evil.example")
    assert refused.value.code == 403
    same_origin = await connect(f"http://127.0.0.1:{jp_http_port}")
    same_origin.close()


async def _shut_down_mid_answer(
    api, new_chat, fake_model, sse, extension
) -> tuple[str, list[dict]]:
    chat_id = await new_chat()
    fake_model.add(Turn(text="waiting " * 10, stall_after_chunks=1))
    async with sse(chat_id) as stream:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "go"}
        )
        await stream.until(lambda m: m.get("to_state") == "writing_output")
        session_id = extension.runner.get(chat_id).session.id
        await extension.stop_extension()
        messages = await stream.until(
            lambda m: (
                m.get("type") == "subscription.close"
                or str(m.get("type", "")).endswith("session.cancelled")
            )
        )
        assert await stream.ended()
    fake_model.release()
    await asyncio.sleep(0)
    return session_id, messages


@pytest.mark.parametrize("aaep_config", [{"db_path": ":memory:"}])
async def test_without_a_durable_store_running_sessions_are_cancelled_at_shutdown(
    api, new_chat, fake_model, sse, extension
) -> None:
    _, messages = await _shut_down_mid_answer(api, new_chat, fake_model, sse, extension)
    cancelled = [m for m in messages if str(m.get("type", "")).endswith("session.cancelled")]
    assert cancelled and cancelled[0]["cancelled_by"] == "system"


@pytest.mark.open_sessions
async def test_with_a_durable_store_running_sessions_stay_open_for_continue(
    api, new_chat, fake_model, sse, extension
) -> None:
    """The next start closes them as errored and recoverable (tests/interop/test_restart.py)."""
    session_id, messages = await _shut_down_mid_answer(api, new_chat, fake_model, sse, extension)
    assert not [m for m in messages if str(m.get("type", "")).endswith("session.cancelled")]
    assert messages[-1]["type"] == "subscription.close"
    reopened = ChatStore(extension.db_path)  # what the next start reads
    try:
        assert session_id in [s.session_id for s in reopened.read.running_sessions()]
    finally:
        reopened.close()
