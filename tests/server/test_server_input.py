"""Bad input at the edge (issue 9): every malformed message gets a 4xx or an error frame with a
sentence, a bad character never breaks a stream or a chat, and one client cannot take every
stream of the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from conftest import read_frame
from server_helpers import of_type, types

from jupyter_aaep.agent.history import append_user_blocks
from jupyter_aaep.testing.fake_anthropic import Turn

pytestmark = pytest.mark.shared_server

DEEP = "[" * 5000 + "]" * 5000
SUBSCRIBE = {
    "type": "subscription.request",
    "aaep_version": "1.0.0",
    "subscriber_id": "input-test",
    "capabilities": {},
}


async def post(
    api, chat_id: str | None, body: Any = None, *, raw: str | bytes | None = None, path: tuple = ()
):
    parts = path or ("chats", chat_id, "messages")
    return await api(*parts, method="POST", body=body, raw=raw)


# -- HTTP: structure, types, depth and Unicode ---------------------------------------------------
async def test_deep_nesting_is_400_on_every_post_endpoint(api, new_chat) -> None:
    chat_id = await new_chat()
    nested_in_message = '{"kind": "user_input", "text": "x", "extra": ' + DEEP + "}"
    for path in (("chats",), ("chats", chat_id, "messages"), ("replies",), ("subscriptions",)):
        for raw in (DEEP, nested_in_message, "{" * 3000):
            status, body, _ = await api(*path, method="POST", raw=raw)
            assert status == 400, (path, raw[:30], body)
            assert "levels deep; at most 32" in body["message"], body


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        (
            {"kind": "control", "action": "revert", "session_id": ["x"]},
            "control needs 'session_id' as a string like sess_",
        ),
        (
            {"kind": "control", "action": ["stop"]},
            "control needs 'action' as one of stop, pause, resume, continue, revert",
        ),
        (
            {"kind": "approval_mode", "mode": {"ask": True}},
            "approval_mode needs 'mode' as one of ask, ask_all, auto, plan; it is a dict",
        ),
        ({"kind": "user_input", "text": ["hello"]}, "user_input needs 'text' as a string"),
        ({"kind": "user_input", "text": "x" * 100_001}, "at most 100000 characters; it has 100001"),
        ({"kind": "control", "action": "revert", "session_id": "../etc"}, "a string like sess_"),
        (
            {**SUBSCRIBE, "capabilities": {"coalesce_boundaries": [["sentence"]]}},
            "subscription.request needs 'capabilities.coalesce_boundaries[0]' as a string",
        ),
        (
            {**SUBSCRIBE, "capabilities": {"languages": "en-US"}},
            "'capabilities.languages' as a list",
        ),
        (
            {**SUBSCRIBE, "capabilities": {"max_events_per_second": True}},
            "'capabilities.max_events_per_second' as a whole number; it is a bool",
        ),
        (
            {**SUBSCRIBE, "capabilities": {"event_filters": {"include": [{"x": 1}]}}},
            "'capabilities.event_filters.include[0]' as a string",
        ),
        ({**SUBSCRIBE, "subscriber_id": 7}, "'subscriber_id' as a string"),
        (
            {"type": "subscription.renegotiate", "subscription_id": ["sub_1"], "capabilities": {}},
            "subscription.renegotiate needs 'subscription_id' as a string",
        ),
        (
            {
                "type": "subscription.close",
                "subscription_id": "sub_1",
                "reason_code": 4,
                "reason_message": "x",
            },
            "subscription.close needs 'reason_code' as a string",
        ),
    ],
)
async def test_a_wrong_type_anywhere_is_400_naming_the_field(
    api, new_chat, message, fragment
) -> None:
    chat_id = await new_chat()
    status, body, _ = await post(api, chat_id, message)
    assert status == 400 and fragment in body["message"], body
    assert "For example: {" in body["message"]


async def test_lone_surrogates_are_refused_in_any_field(api, new_chat) -> None:
    chat_id = await new_chat()
    cases = [
        (
            ("chats", chat_id, "messages"),
            '{"kind": "user_input", "text": "bad \\ud800 here"}',
            "Field 'text'",
        ),
        (("chats",), '{"notebook_path": "nb\\udcff.ipynb"}', "Field 'notebook_path'"),
        (
            ("chats", chat_id, "messages"),
            '{"kind": "user_input", "text": "x", "\\udc00": 1}',
            "A field name",
        ),
        (
            ("subscriptions",),
            json.dumps({**SUBSCRIBE, "capabilities": {"languages": ["en\ud800"]}}),
            "Field 'capabilities.languages[0]'",
        ),
        (
            ("replies",),
            json.dumps({"type": "confirmation.reply", "reply_token": "rpl_\udfff"}),
            "Field 'reply_token'",
        ),
    ]
    for path, raw, fragment in cases:
        status, body, _ = await api(*path, method="POST", raw=raw)
        assert status == 400, (raw, body)
        assert fragment in body["message"] and "lone UTF-16 surrogate" in body["message"], body
    # a surrogate *pair* is an ordinary character (here an emoji), not an error
    status, body, _ = await api(
        "chats", method="POST", raw='{"notebook_path": "\\ud83d\\ude00.ipynb"}'
    )
    assert status == 201 and body["notebook_path"] == "😀.ipynb"


async def test_new_chat_body_is_checked(api) -> None:
    for body, fragment in (
        ({"notebook_path": 3}, "'notebook_path' as a string"),
        ({"notebook_path": " "}, "non-empty"),
        ({"notebook_path": "a\x00b"}, "without NUL"),
        ({"notebook": "a.ipynb"}, "Unexpected field(s) in A new chat: notebook"),
    ):
        status, answer, _ = await api("chats", method="POST", body=body)
        assert status == 400 and fragment in answer["message"], answer


async def test_replies_of_the_wrong_shape_are_ignored_with_204(api, new_chat) -> None:
    chat_id = await new_chat()
    for reply in (
        {"type": "confirmation.reply", "reply_token": ["rpl_x"], "decision": {"a": 1}},
        {"type": "clarification.reply", "reply_token": "rpl_x", "response": [1, 2]},
        {"type": "clarification.reply", "confidence": "high"},
    ):
        assert (await post(api, chat_id, reply))[0] == 204
        assert (await post(api, None, reply, path=("replies",)))[0] == 204
    status, body, _ = await post(
        api, "chat_missing", {"type": "confirmation.reply", "reply_token": 1}
    )
    assert status == 404, body


async def test_odd_stream_parameters_are_400(
    jp_http_port, jp_base_url, jp_auth_header, new_chat
) -> None:
    chat_id = await new_chat()
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}aaep/v1/"
    cases = [
        (
            f"chats/{chat_id}/events",
            {"Last-Event-ID": "'; DROP TABLE"},
            None,
            "Last-Event-ID must be",
        ),
        (
            f"chats/{chat_id}/events",
            {"Last-Event-ID": "evt_" + "a" * 65},
            None,
            "Last-Event-ID must be",
        ),
        ("events", {}, {"last_event_id": "evt_1 or 2"}, "Last-Event-ID must be"),
        (
            f"chats/{chat_id}/events",
            {},
            {"subscription_id": "sub_1 or 2"},
            "subscription_id must look like",
        ),
        ("events", {}, {"subscription_id": ["a", "b"]}, None),
    ]
    async with httpx.AsyncClient(timeout=10) as client:
        for path, headers, params, fragment in cases:
            async with client.stream(
                "GET", base + path, headers={**jp_auth_header, **headers}, params=params
            ) as got:
                body = json.loads(await asyncio.wait_for(got.aread(), 5))
            assert got.status_code == 400, (path, headers, params, body)
            if fragment:
                assert fragment in body["message"]
        broken = await client.get(base + "chats?notebook_path=%ff%fe", headers=jp_auth_header)
        assert broken.status_code == 400


# -- WebSocket -----------------------------------------------------------------------------------
async def test_every_bad_frame_gets_an_error_frame_and_the_socket_stays_open(
    new_chat, ws, extension, monkeypatch
) -> None:
    chat_id = await new_chat()
    connection = await ws(chat_id)
    frames = [
        (DEEP, 400, "levels deep"),
        ('{"kind": "user_input", "text": "\\ud800"}', 400, "lone UTF-16 surrogate"),
        (
            json.dumps({"kind": "control", "action": "revert", "session_id": ["x"]}),
            400,
            "'session_id'",
        ),
        (
            json.dumps({**SUBSCRIBE, "capabilities": {"coalesce_boundaries": [["sentence"]]}}),
            400,
            "coalesce_boundaries",
        ),
        (
            json.dumps({"type": "subscription.request"}),
            400,
            "missing aaep_version",
        ),  # malformed: keeps the socket
        ("{", 400, "not valid JSON"),
        ("", 400, "empty"),
        ("7", 400, "must be a JSON object"),
    ]
    for frame, status, fragment in frames:
        await connection.write_message(frame)
        error = await read_frame(connection)
        assert (
            error["kind"] == "error" and error["status"] == status and fragment in error["message"]
        ), (frame[:40], error)
    await connection.write_message(b"\xff\xfe", binary=True)
    assert (await read_frame(connection))["status"] == 400

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(extension.service, "handle", broken)
    await connection.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    error = await read_frame(connection)
    assert error["kind"] == "error" and error["status"] == 500 and "stays open" in error["message"]
    monkeypatch.undo()
    await connection.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    assert (await read_frame(connection))["kind"] == "approval_mode.accepted"
    assert connection.close_code is None
    connection.close()


# -- containment: a bad character that got in some other way -----------------------------------------
async def test_a_lone_surrogate_that_got_in_elsewhere_is_contained(
    api, new_chat, fake_model, sse, ws, extension
) -> None:
    """As if from a file name or kernel output: in an event and in the model history. Every
    stream goes on, replay across it works, and the chat's next session succeeds."""
    chat_id = await new_chat()
    chat = extension.runner.get(chat_id)
    fake_model.add(Turn(text="All good."))
    socket = await ws(chat_id)
    async with sse(chat_id) as stream, sse(None) as everything:
        chat.emitter.publish({"kind": "kernel.note", "text": "listing data\udcff.csv"})
        append_user_blocks(chat.history, [{"type": "text", "text": "files: data\udcff.csv"}])
        assert (await stream.next())["text"] == "listing data\ufffd.csv"
        assert (await everything.next())["text"] == "listing data\ufffd.csv"
        assert (await read_frame(socket))["text"] == "listing data\ufffd.csv"
        status, _, _ = await post(api, chat_id, {"kind": "user_input", "text": "and now?"})
        assert status == 202
        session = await stream.until(of_type("session.completed"))
        await everything.until(of_type("session.completed"))
    assert "output.streaming" in types(session)
    noted = next(e for e in chat.emitter.history if e.get("kind") == "kernel.note")
    assert noted["text"] == "listing data\ufffd.csv"
    started = next(m for m in session if str(m.get("type")).endswith("session.started"))
    async with sse(chat_id, headers={"Last-Event-ID": started["event_id"]}) as again:
        replay = await again.until(of_type("session.completed"))
    assert replay == session[session.index(started) + 1 :]
    assert "\ud800" not in json.dumps(fake_model.requests[-1].body, ensure_ascii=False)
    assert "data\ufffd.csv" in json.dumps(fake_model.requests[-1].body, ensure_ascii=False)
    socket.close()


async def test_a_broken_event_published_directly_reaches_every_stream_repaired(
    api, new_chat, sse, extension
) -> None:
    chat_id = await new_chat()
    chat = extension.runner.get(chat_id)
    async with sse(chat_id) as stream, sse(None) as everything:
        chat.emitter.publish({"kind": "kernel.note", "text": "out\udcff", "value": float("nan")})
        chat.emitter.publish({"kind": "kernel.note", "text": "next"})
        for reader in (stream, everything):
            assert await reader.next() == {
                "kind": "kernel.note",
                "text": "out\ufffd",
                "value": None,
            }
            assert await reader.next() == {"kind": "kernel.note", "text": "next"}


# -- streams per client ----------------------------------------------------------------------------
@pytest.mark.parametrize("aaep_config", [{"max_streams_per_client": 2}])
async def test_a_client_over_its_limit_loses_its_idlest_stream(
    api, new_chat, sse, ws, extension
) -> None:
    chat_id = await new_chat()
    hub = extension.hub
    async with sse(chat_id) as oldest, sse(chat_id) as second:
        await asyncio.sleep(0.05)
        socket = await ws(chat_id)  # a third stream of the same client: the oldest idle one goes
        notice = await oldest.next()
        assert notice["type"] == "subscription.close" and notice["reason_code"] == "stream_limit"
        assert "least recently used" in notice["reason_message"]
        assert await oldest.ended()
        assert len(hub._streams) == 2
        await socket.write_message(
            json.dumps({"kind": "approval_mode", "mode": "ask"})
        )  # the socket is in use
        assert (await read_frame(socket))["kind"] == "approval_mode.accepted"
        async with sse(chat_id):  # now the SSE stream `second` is the idlest
            assert (await second.next())["reason_code"] == "stream_limit"
            await socket.write_message(json.dumps({"kind": "approval_mode", "mode": "auto"}))
            assert (await read_frame(socket))["kind"] == "approval_mode.accepted"
            assert socket.close_code is None
        socket.close()
