"""SSE streams and Level 3 subscriptions over HTTP: handshakes, replay, keepalive, disconnects."""

from __future__ import annotations

import pytest
from server_helpers import of_type, types, wait_until

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server


def request(capabilities: dict | None = None, **fields) -> dict:
    body = {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "test",
        "capabilities": capabilities or {},
    }
    body.update(fields)
    return body


async def post(api, chat_id, body):
    return await api("chats", chat_id, "messages", method="POST", body=body)


async def test_keepalive_comments_on_a_quiet_stream(new_chat, sse) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:  # keepalive every 0.5 s (conftest.py)
        await wait_until(lambda: stream.comments.count(": keepalive") >= 2, 10, "two keepalives")
    assert stream.comments[0] == ": connected"
    assert stream.comments.count(": keepalive") >= 2


async def test_in_band_handshake_answers_on_the_stream_and_applies_there(
    api, new_chat, fake_model, sse, aaep_schema_validator, jp_base_url
) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        status, accepted, headers = await post(
            api,
            chat_id,
            request(
                {
                    "max_events_per_second": 5,
                    "preferred_verbosity": "terse",
                    "supports_confirmation_reply": True,
                    "event_filters": {"exclude": ["aaep:agent.state.*"]},
                }
            ),
        )
        assert status == 201 and accepted["type"] == "subscription.accepted"
        assert headers["Location"] == f"{jp_base_url}aaep/v1/chats/{chat_id}/events"
        on_stream = await stream.next()
        assert on_stream == accepted
        aaep_schema_validator.validate(on_stream)
        fake_model.add(Turn(text="Short answer."))
        await post(api, chat_id, {"kind": "user_input", "text": "hi"})
        messages = await stream.until(of_type("session.completed"))
    assert "state.changed" not in types(messages)
    assert all(
        m["verbosity"] == "terse" and "summary_detailed" not in m
        for m in messages
        if "summary_normal" in m
    )
    for message in messages[1:]:
        aaep_schema_validator.validate(message)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (request(aaep_version="99.99.99"), 200, "version_unsupported"),
        (request({"languages": ["yo-NG"]}), 200, "capabilities_incompatible"),
        (request({"accept_signed_manifests_only": True}), 200, "manifest_signature_required"),
        (request({"max_events_per_second": -1}), 400, "capabilities_incompatible"),
        ({"type": "subscription.request"}, 400, "unknown"),
    ],
)
async def test_rejections_are_answered_on_the_stream_too(
    api, new_chat, sse, aaep_schema_validator, body, status, code
) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        got, answer, _ = await post(api, chat_id, body)
        assert got == status and answer["reason_code"] == code
        on_stream = await stream.next()
        assert on_stream["type"] == "subscription.rejected" and on_stream["reason_code"] == code
        aaep_schema_validator.validate(on_stream)
        if status == 400:
            assert answer["message"] == answer["reason_message"]


async def test_languages_are_accepted_with_what_we_write(api, new_chat, sse) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        _, accepted, _ = await post(api, chat_id, request({"languages": ["yo-NG", "en-US"]}))
        assert accepted["honored_capabilities"]["languages"] == ["en-US"]
        assert (await stream.next())["subscription_id"] == accepted["subscription_id"]


async def test_appendix_b_subscribe_then_stream_then_renegotiate_and_close(
    api, new_chat, fake_model, sse, jp_base_url, aaep_schema_validator
) -> None:
    chat_id = await new_chat()
    status, accepted, headers = await api(
        "subscriptions",
        method="POST",
        params={"chat_id": chat_id},
        body=request({"preferred_verbosity": "detailed"}),
    )
    assert status == 201
    sub = accepted["subscription_id"]
    assert (
        headers["Location"] == f"{jp_base_url}aaep/v1/chats/{chat_id}/events?subscription_id={sub}"
    )
    status, body, _ = await api(
        "subscriptions", method="POST", body={"kind": "user_input", "text": "x"}
    )
    assert status == 400
    async with sse(chat_id, params={"subscription_id": sub}) as stream:
        fake_model.add(Turn(text="Hello."))
        await post(api, chat_id, {"kind": "user_input", "text": "hi"})
        messages = await stream.until(of_type("session.completed"))
        assert all(m["verbosity"] == "detailed" for m in messages if "summary_normal" in m)
        # Another in-band handshake leaves a URL-bound stream alone.
        await post(api, chat_id, request({"preferred_verbosity": "terse"}))
        status, again, _ = await api(
            "replies",
            method="POST",
            body={
                "type": "subscription.renegotiate",
                "subscription_id": sub,
                "capabilities": {"preferred_verbosity": "terse"},
            },
        )
        assert status == 200 and again["honored_capabilities"]["preferred_verbosity"] == "terse"
        aaep_schema_validator.validate(again)
        assert (await stream.next()) == again
        status, _, _ = await api(
            "replies",
            method="POST",
            body={
                "type": "subscription.close",
                "subscription_id": sub,
                "reason_code": "done",
                "reason_message": "bye",
            },
        )
        assert status == 204
        assert await stream.ended()
    status, body, _ = await api(
        "replies",
        method="POST",
        body={"type": "subscription.renegotiate", "subscription_id": sub, "capabilities": {}},
    )
    assert status == 404 and "no open subscription" in body["message"]
    status, body, _ = await api("chats", chat_id, "events", params={"subscription_id": sub})
    assert status == 404 and "waiting for a stream" in body["message"]
    status, body, _ = await api("chats", chat_id, "events", params={"subscription_id": "bad id"})
    assert status == 400
    status, _, _ = await api(
        "replies", method="POST", body={"type": "subscription.close", "subscription_id": sub}
    )
    assert status == 204
    status, body, _ = await api("replies", method="POST", body={"type": "subscription.close"})
    assert status == 400


async def test_renegotiation_rejected_ends_the_subscription(api, new_chat, sse) -> None:
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        _, accepted, _ = await post(api, chat_id, request())
        await stream.next()
        status, answer, _ = await post(
            api,
            chat_id,
            {
                "type": "subscription.renegotiate",
                "subscription_id": accepted["subscription_id"],
                "capabilities": {"languages": ["fr-FR"]},
            },
        )
        assert status == 200 and answer["type"] == "subscription.rejected"
        assert (await stream.next())["type"] == "subscription.rejected"
        assert await stream.ended()


async def test_last_event_id_replays_what_was_missed(api, new_chat, fake_model, sse) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="One. Two."))
    async with sse(chat_id) as stream:
        await post(api, chat_id, {"kind": "user_input", "text": "count"})
        first = await stream.until(of_type("session.completed"))
    started = first[1]
    async with sse(chat_id, headers={"Last-Event-ID": started["event_id"]}) as again:
        replay = await again.until(of_type("session.completed"))
    assert replay == first[2:]
    async with sse(chat_id, headers={"Last-Event-ID": "evt_gone"}) as lost:
        note = await lost.next()
    assert note["kind"] == "replay.unavailable" and "evt_gone" in note["message"]
    async with sse(None, headers={"Last-Event-ID": "evt_gone"}) as everything:
        assert (await everything.next())["kind"] == "replay.unavailable"


async def test_a_late_subscriber_gets_the_running_session_and_can_answer(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "E", "when": "now"})]),
        Turn(text="Fine."),
    )
    async with sse(chat_id) as early:
        await post(api, chat_id, {"kind": "user_input", "text": "book"})
        await early.until(of_type("awaiting.confirmation"))
        async with sse(chat_id) as late:
            replayed = await late.until(of_type("awaiting.confirmation"))
            assert types(replayed)[0] == "session.started" and all(
                "@context" in m for m in replayed
            )
            await post(api, chat_id, {"kind": "control", "action": "stop"})
            await late.until(of_type("session.cancelled"))


@pytest.mark.parametrize("aaep_config", [{"reconnect_grace_seconds": 0.3}])
async def test_disconnect_of_the_only_subscriber_applies_the_default(
    api, new_chat, fake_model, sse, extension
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("send_email", {"to": "a@b.c", "subject": "s", "body": "b"})]),
        Turn(text="Not sent."),
    )
    async with sse(chat_id) as stream:
        await post(api, chat_id, {"kind": "user_input", "text": "mail"})
        await stream.until(of_type("awaiting.confirmation"))
    chat = extension.runner.get(chat_id)
    await wait_until(lambda: not chat.running, what="the session to end after the subscriber left")
    assert chat.results[-1].status == "completed"
    transcript = (await api("chats", chat_id))[1]["transcript"]
    assert "tool.invoked" not in types(transcript)
    resolved = next(e for e in transcript if e.get("from_state") == "awaiting_input")
    assert "rejected" in resolved["summary_normal"]


@pytest.mark.parametrize("aaep_config", [{"reconnect_grace_seconds": 5}])
async def test_a_reloaded_page_can_still_answer_within_the_grace(
    api, new_chat, fake_model, sse, extension
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("send_email", {"to": "a@b.c", "subject": "s", "body": "b"})]),
        Turn(text="Sent."),
    )
    async with sse(chat_id) as first:
        await post(api, chat_id, {"kind": "user_input", "text": "mail"})
        await first.until(of_type("awaiting.confirmation"))
    chat = extension.runner.get(chat_id)
    async with sse(chat_id) as reloaded:  # the page comes back and replays the pending request
        confirmation = (await reloaded.until(of_type("awaiting.confirmation")))[-1]
        assert chat.running, "the approval is still pending after the first page went away"
        await post(
            api,
            chat_id,
            {
                "type": "confirmation.reply",
                "reply_token": confirmation["reply_token"],
                "decision": "accept",
                "subscription_id": "sub_0reloaded",
                "timestamp": SessionClock().now(),
            },
        )
        messages = await reloaded.until(of_type("session.completed"))
    assert "tool.invoked" in types(messages)


async def test_with_nobody_to_answer_the_default_applies_at_once(
    api, new_chat, fake_model, sse, extension
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("delete_record", {"record_id": "67890"})]), Turn(text="Kept it.")
    )
    async with sse(None) as everything:  # follows all chats, cannot answer
        await post(api, chat_id, {"kind": "user_input", "text": "delete"})
        messages = await everything.until(of_type("session.completed"))
    assert "awaiting.confirmation" not in types(
        messages
    )  # not sent to a subscriber that cannot answer
    assert "state.changed" in types(messages) and "tool.invoked" not in types(messages)
    assert {m["session_id"] for m in messages} == {messages[0]["session_id"]}


async def test_streams_of_all_chats(api, new_chat, fake_model, sse) -> None:
    first, second = await new_chat("a.ipynb"), await new_chat("b.ipynb")
    fake_model.add(Turn(text="A."), Turn(text="B."))
    async with sse(None) as everything:
        _, one, _ = await post(api, first, {"kind": "user_input", "text": "a"})
        await everything.until(of_type("session.completed"))
        _, two, _ = await post(api, second, {"kind": "user_input", "text": "b"})
        await everything.until(of_type("session.completed"))
    sessions = {f.data["session_id"] for f in everything.frames}
    assert sessions == {one["session_id"], two["session_id"]}


async def test_a_handshake_mid_request_keeps_the_request_answerable(
    api, new_chat, fake_model, sse
) -> None:
    chat_id = await new_chat()
    fake_model.add(
        Turn(tool_uses=[ToolUse("book_meeting_room", {"room": "H", "when": "now"})]),
        Turn(text="Booked."),
    )
    async with sse(chat_id) as stream:
        await post(api, chat_id, {"kind": "user_input", "text": "book"})
        confirmation = (await stream.until(of_type("awaiting.confirmation")))[-1]
        _, accepted, _ = await post(api, chat_id, request({"supports_confirmation_reply": True}))
        assert (await stream.next())["type"] == "subscription.accepted"
        _, view, _ = await api("chats", chat_id)
        assert len(view["pending_requests"]) == 1, "re-subscribing did not answer the request"
        await post(
            api,
            chat_id,
            {
                "type": "confirmation.reply",
                "reply_token": confirmation["reply_token"],
                "decision": "accept",
                "subscription_id": accepted["subscription_id"],
                "timestamp": SessionClock().now(),
            },
        )
        after = await stream.until(of_type("session.completed"))
    assert "tool.invoked" in types(after)


async def test_appendix_b_subscription_for_all_chats(
    api, new_chat, fake_model, sse, jp_base_url
) -> None:
    chat_id = await new_chat()
    status, accepted, headers = await api(
        "subscriptions", method="POST", body=request({"preferred_verbosity": "terse"})
    )
    sub = accepted["subscription_id"]
    assert (
        status == 201
        and headers["Location"] == f"{jp_base_url}aaep/v1/events?subscription_id={sub}"
    )
    status, body, _ = await api("chats", chat_id, "events", params={"subscription_id": sub})
    assert status == 404 and "another endpoint" in body["message"]
    status, accepted, _ = await api(
        "subscriptions", method="POST", body=request({"preferred_verbosity": "terse"})
    )
    async with sse(None, params={"subscription_id": accepted["subscription_id"]}) as everything:
        fake_model.add(Turn(text="Hi."))
        await post(api, chat_id, {"kind": "user_input", "text": "hi"})
        messages = await everything.until(of_type("session.completed"))
    assert all(m["verbosity"] == "terse" for m in messages if "summary_normal" in m)
    status, rejected, _ = await api(
        "subscriptions", method="POST", body=request(aaep_version="3.0.0")
    )
    assert status == 200 and rejected["reason_code"] == "version_unsupported"


async def test_an_sse_message_goes_out_in_the_step_it_is_published(
    new_chat, sse, extension
) -> None:
    """As on the WebSocket: a published message is written before the publisher's step
    yields (the agent's next model request would otherwise hold it back: run_cell's figure)."""
    chat_id = await new_chat()
    chat = extension.runner.get(chat_id)
    async with sse(chat_id) as stream:
        await wait_until(lambda: ": connected" in stream.comments, 10, "the stream open")
        hub_stream = next(
            s for s in extension.hub._streams if s.chat_id == chat_id and s.transport == "sse"
        )
        handler = hub_stream.subscription.on_queued.__self__
        out = handler.request.connection.stream
        before = out._total_write_index
        chat.emitter.publish({"kind": "kernel.note", "text": "now"})
        assert out._total_write_index > before  # written before this step yields
        assert (await stream.until(lambda m: m.get("kind") == "kernel.note"))[-1]["text"] == "now"
