"""The fake Messages API, driven through the real ``anthropic`` SDK over real HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import typing
from typing import Any

import anthropic
import httpx
import httpx2  # the transport the anthropic SDK uses
import pytest
from anthropic.types import StopReason

from jupyter_aaep.testing import ErrorReply, FakeAnthropic, RecordedRequest, ToolUse, Turn
from jupyter_aaep.testing._prompt import (
    CLEARED_PLACEHOLDER,
    PromptCache,
    apply_context_management,
    count_tokens,
    prompt_units,
)
from jupyter_aaep.testing._validation import validate_request

MODEL = "claude-fake-1"
USER = [{"role": "user", "content": "Hello"}]


def client_for(fake: FakeAnthropic, **kwargs: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, **kwargs)


async def stream_final(
    client: anthropic.AsyncAnthropic, messages: list[dict[str, Any]] = USER, **kwargs: Any
) -> anthropic.types.Message:
    async with client.messages.stream(
        model=MODEL, max_tokens=256, messages=messages, **kwargs
    ) as stream:
        return await stream.get_final_message()


async def test_text_answer_streams_through_sdk() -> None:
    text = "Hello from the fake model: Grüße, 你好 👋."  # non-ASCII crosses as raw UTF-8
    async with (
        FakeAnthropic([Turn(text=text, input_tokens=42)]) as fake,
        client_for(fake) as client,
        client.messages.stream(
            model=MODEL, max_tokens=256, messages=USER, system="Be brief."
        ) as stream,
    ):
        pieces = [piece async for piece in stream.text_stream]
        message = await stream.get_final_message()
    assert pieces == [text[i : i + 6] for i in range(0, len(text), 6)]
    assert message.content[0].type == "text" and message.content[0].text == text
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL and message.id.startswith("msg_01")
    assert message.usage.input_tokens == 42
    assert message.usage.output_tokens >= 1
    assert message.usage.cache_read_input_tokens == 0
    (request,) = fake.requests
    assert request.path == "/v1/messages" and request.status == 200
    assert request.body["stream"] is True and request.body["system"] == "Be brief."
    assert request.message is not None and request.message["content"][0]["text"] == text
    assert fake.problems == []


async def test_wire_format_matches_the_service() -> None:
    """Every SSE event has an ``event:`` line; start and delta carry usage; x-api-key works."""
    turn = Turn(text="Hi", tool_uses=[ToolUse("run_cell", {"code": "1 + 1"})])
    with FakeAnthropic([turn]) as fake:
        async with httpx.AsyncClient(base_url=fake.base_url) as http:
            response = await http.post(
                "/v1/messages",
                headers={"x-api-key": fake.api_key, "anthropic-version": "2023-06-01"},
                json={"model": MODEL, "max_tokens": 10, "messages": USER, "stream": True},
            )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["request-id"].startswith("req_")
    events = [block.splitlines() for block in response.text.split("\n\n") if block]
    assert all(len(lines) == 2 and lines[0].startswith("event: ") for lines in events)
    data = [json.loads(lines[1].removeprefix("data: ")) for lines in events]
    assert [lines[0][7:] for lines in events] == [d["type"] for d in data]
    assert data[0]["type"] == "message_start" and data[-1]["type"] == "message_stop"
    assert set(data[0]["message"]["usage"]) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert data[-2]["type"] == "message_delta" and "output_tokens" in data[-2]["usage"]
    assert fake.problems == []


async def test_tool_use_input_arrives_in_pieces() -> None:
    tool_input = {"code": "import math\nprint(math.pi)", "cell_index": 3}
    async with (
        FakeAnthropic([Turn(tool_uses=[ToolUse("run_cell", tool_input)])]) as fake,
        client_for(fake) as client,
        client.messages.stream(model=MODEL, max_tokens=256, messages=USER) as stream,
    ):
        partials = [e.partial_json async for e in stream if e.type == "input_json"]
        message = await stream.get_final_message()
    assert len([p for p in partials if p]) >= 2
    assert json.loads("".join(partials)) == tool_input
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "run_cell"
    assert block.input == tool_input and block.id.startswith("toolu_01")
    assert message.stop_reason == "tool_use"


async def test_parallel_tool_uses_round_trip() -> None:
    """Two tool uses in one turn; answering both in the next request is valid."""
    first = Turn(
        text="Let me look.",
        tool_uses=[ToolUse("read_cell", {"index": 0}), ToolUse("read_cell", {"index": 1})],
    )
    async with (
        FakeAnthropic([first, Turn(text="Both cells are empty.")]) as fake,
        client_for(fake) as client,
    ):
        message = await stream_final(client)
        uses = [b for b in message.content if b.type == "tool_use"]
        assert [u.input for u in uses] == [{"index": 0}, {"index": 1}]
        assert uses[0].id != uses[1].id
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": ""} for u in uses]
        history = [*USER, message.to_param(), {"role": "user", "content": results}]
        final = await stream_final(client, history)
    assert final.content[0].text == "Both cells are empty."
    assert fake.problems == []


@pytest.mark.parametrize(
    "stop_reason", [r for r in typing.get_args(StopReason) if r not in ("end_turn", "tool_use")]
)
async def test_stop_reasons_pass_through(stop_reason: str) -> None:
    """Every stop reason the SDK defines, streamed as the service streams it."""
    sequence = "\n\nEND" if stop_reason == "stop_sequence" else None
    turn = Turn(text="Partial", stop_reason=stop_reason, stop_sequence=sequence)
    async with FakeAnthropic([turn]) as fake, client_for(fake) as client:
        message = await stream_final(client)
    assert message.stop_reason == stop_reason
    assert message.stop_sequence == sequence  # named with its reason, and only then
    if stop_reason == "refusal":
        assert message.stop_details is not None and message.stop_details.type == "refusal"


def test_a_stop_sequence_is_named_with_its_reason_only() -> None:
    with pytest.raises(ValueError, match="set stop_sequence"):
        Turn(text="x", stop_reason="stop_sequence")
    with pytest.raises(ValueError, match="only with"):
        Turn(text="x", stop_reason="end_turn", stop_sequence="END")
    assert Turn(text="x", stop_sequence="END").stop_sequence == "END"


async def test_rate_limit_is_retried_quickly(caplog: pytest.LogCaptureFixture) -> None:
    script = [ErrorReply(429, "rate_limit_error", "Slow down", retry_after=0), Turn(text="ok")]
    with caplog.at_level(logging.INFO, logger="anthropic"):
        async with FakeAnthropic(script) as fake, client_for(fake) as client:
            message = await stream_final(client)
    assert message.content[0].text == "ok"
    assert [r.status for r in fake.requests] == [429, 200]
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "1"]
    waits = [
        float(record.getMessage().rsplit(" in ", 1)[1].split()[0])
        for record in caplog.records
        if record.getMessage().startswith("Retrying request")
    ]
    # the wait the SDK chose from our headers; its own backoff would be at least 0.375 s
    assert len(waits) == 1 and waits[0] < 0.01
    assert fake.problems == []


@pytest.mark.parametrize(
    ("status", "error_type", "exc_type"),
    [
        (529, "overloaded_error", anthropic.OverloadedError),
        (500, "api_error", anthropic.InternalServerError),
        (400, "invalid_request_error", anthropic.BadRequestError),
    ],
)
async def test_error_statuses_map_to_sdk_exceptions(
    status: int, error_type: str, exc_type: type[anthropic.APIStatusError]
) -> None:
    async with (
        FakeAnthropic([ErrorReply(status, error_type, "Nope")]) as fake,
        client_for(fake, max_retries=0) as client,
    ):
        with pytest.raises(exc_type) as caught:
            await stream_final(client)
    assert caught.value.status_code == status
    assert caught.value.type == error_type and caught.value.api_message == "Nope"
    assert (caught.value.request_id or "").startswith("req_")


async def test_overloaded_exhausts_retries() -> None:
    script = [ErrorReply(529, "overloaded_error", "Overloaded", retry_after=0)] * 3
    async with FakeAnthropic(script) as fake, client_for(fake) as client:  # default max_retries=2
        with pytest.raises(anthropic.OverloadedError) as caught:
            await stream_final(client)
    assert isinstance(caught.value, anthropic.InternalServerError)
    assert len(fake.requests) == 3


async def test_wrong_key_is_rejected_without_consuming_the_script() -> None:
    async with FakeAnthropic([Turn(text="for the right key")]) as fake:
        async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-wrong") as bad:
            with pytest.raises(anthropic.AuthenticationError):
                await stream_final(bad)
        async with client_for(fake) as client:
            message = await stream_final(client)
    assert message.content[0].text == "for the right key"
    assert [r.status for r in fake.requests] == [401, 200]


async def test_cancelled_stalled_stream_disconnects_and_stop_is_quick() -> None:
    fake = FakeAnthropic([Turn(text="x" * 60, text_chunk_size=5, stall_after_chunks=2)]).start()
    try:
        received: list[str] = []
        two_deltas = asyncio.Event()

        async def consume(client: anthropic.AsyncAnthropic) -> None:
            async with client.messages.stream(model=MODEL, max_tokens=99, messages=USER) as s:
                async for piece in s.text_stream:
                    received.append(piece)
                    if len(received) == 2:
                        two_deltas.set()

        async with client_for(fake) as client:
            task = asyncio.create_task(consume(client))
            await asyncio.wait_for(two_deltas.wait(), 2)
            await asyncio.sleep(0.1)  # the stream is held open: nothing more arrives
            assert len(received) == 2 and not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        for _ in range(40):  # the server notices the hang-up within a poll or two
            if fake.requests[0].disconnected:
                break
            await asyncio.sleep(0.05)
        assert fake.requests[0].disconnected
    finally:
        started = time.monotonic()
        await asyncio.to_thread(fake.stop)
        assert time.monotonic() - started < 2
    assert fake.problems == []


async def test_stop_cuts_a_stalled_stream() -> None:
    fake = FakeAnthropic([Turn(text="never finished", stall_after_chunks=0)]).start()
    async with client_for(fake, max_retries=0) as client:
        task = asyncio.create_task(stream_final(client))
        for _ in range(200):
            if fake.requests:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # let the stream reach its stall
        started = time.monotonic()
        await asyncio.to_thread(fake.stop)
        assert time.monotonic() - started < 2
        # The SDK does not wrap transport errors raised while reading a stream.
        with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
            await asyncio.wait_for(task, 2)


async def test_release_finishes_stalled_streams() -> None:
    text = "a stalled answer that resumes"
    async with (
        FakeAnthropic([Turn(text=text, stall_after_chunks=1)]) as fake,
        client_for(fake) as client,
    ):
        task = asyncio.create_task(stream_final(client))
        await asyncio.to_thread(fake.wait_until_held, 1, 5)
        assert not task.done()
        fake.release()
        message = await asyncio.wait_for(task, 2)
    assert message.content[0].text == text
    assert not fake.requests[0].disconnected


async def test_a_release_frees_a_stream_begun_before_it_but_not_one_begun_after() -> None:
    """A release while a stream is on its way to its stall (here: its opening delay) is not
    lost; one from before the request arrived frees nothing, so a test waits for the hold."""
    async with (
        FakeAnthropic(
            [
                Turn(text="first", stall_after_chunks=0, delay=0.5),
                Turn(text="second", stall_after_chunks=0),
            ]
        ) as fake,
        client_for(fake) as client,
    ):
        first = asyncio.create_task(stream_final(client))
        while not fake.requests:
            await asyncio.sleep(0.02)
        fake.release()  # the stream is in its delay, not yet at its stall
        assert (await asyncio.wait_for(first, 5)).content[0].text == "first"
        second = asyncio.create_task(stream_final(client))
        await asyncio.to_thread(fake.wait_until_held, 1, 5)
        await asyncio.sleep(0.2)
        assert not second.done(), "the earlier release must not free a later stream"
        fake.release()
        assert (await asyncio.wait_for(second, 5)).content[0].text == "second"
        with pytest.raises(TimeoutError, match="0 of 1 streams held"):
            fake.wait_until_held(1, 0.1)


async def test_a_release_once_the_request_is_seen_frees_it_however_slow_the_fake_is() -> None:
    """The loaded machine's case: the release lands after the request is recorded but before the
    fake has chosen its answer (here the responder releases); the stream still finishes."""
    fake: FakeAnthropic

    def answer(record: Any) -> Turn:
        fake.release()
        return Turn(text="freed", stall_after_chunks=0)

    async with FakeAnthropic(responder=answer) as fake, client_for(fake) as client:
        assert (await asyncio.wait_for(stream_final(client), 5)).content[0].text == "freed"


async def test_missing_tool_result_is_rejected_like_the_service() -> None:
    tool_use = {"type": "tool_use", "id": "toolu_01abc", "name": "run_cell", "input": {}}
    history = [
        *USER,
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": "Never mind."},
    ]
    async with FakeAnthropic([Turn(text="unused")]) as fake, client_for(fake) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await stream_final(client, history)
    assert "toolu_01abc" in (caught.value.api_message or "")
    assert len(fake.problems) == 1 and "tool_result" in fake.problems[0]
    assert fake.requests[0].reply is None  # the scripted turn was not consumed


_USE = {"type": "tool_use", "id": "toolu_01a", "name": "t", "input": {}}


def _tool_history(answer: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*USER, {"role": "assistant", "content": [_USE]}, {"role": "user", "content": answer}]


_RESULT = {"type": "tool_result", "tool_use_id": "toolu_01a", "content": "done"}
_TEXT = {"type": "text", "text": "and"}
_TOOL = {"name": "t", "description": "A tool.", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"messages": _tool_history([_RESULT, _TEXT])}, None),
        ({"messages": [*_tool_history([_RESULT]), *USER]}, None),  # consecutive users merge
        ({"messages": _tool_history([_TEXT, _RESULT])}, "must come before"),
        (
            {"messages": _tool_history([{**_RESULT, "tool_use_id": "toolu_01b"}, _RESULT])},
            "unexpected `tool_use_id`",
        ),
        ({"messages": [{"role": "assistant", "content": "Hi"}]}, "first message"),
        (
            {
                "messages": [
                    *USER,
                    {"role": "assistant", "content": "a"},
                    {"role": "assistant", "content": "b"},
                ]
            },
            "alternate",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]}, "non-empty"),
        ({"messages": [{"role": "user", "content": " \n"}]}, "non-whitespace"),
        ({"messages": [*USER, {"role": "assistant", "content": "Sure, "}]}, "trailing whitespace"),
        ({"messages": [*USER, {"role": "assistant", "content": ""}]}, None),  # empty prefill
        (
            {
                "messages": [
                    *USER,
                    {"role": "assistant", "content": [_USE, _USE]},
                    {"role": "user", "content": [_RESULT]},
                ]
            },
            "unique",
        ),
        ({"messages": []}, "at least one message"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"model": ""}, "model"),
        ({"tools": [{**_TOOL, "name": "bad name!"}]}, "tools.0.name"),
        ({"tools": [{**_TOOL, "input_schema": {"type": "string"}}]}, "input_schema"),
        ({"tools": [_TOOL, _TOOL]}, "unique"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, None),
        ({"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]}, None),
        (
            {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}] * 5},
            "maximum of 4",
        ),
        ({"tool_choice": {"type": "tool", "name": "missing"}, "tools": [_TOOL]}, "tool_choice"),
    ],
)
def test_validation_rules(changes: dict[str, Any], expected: str | None) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": USER, **changes}
    problems = validate_request(body, {"anthropic-version": "2023-06-01"})
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


async def test_responder_answers_by_keyword() -> None:
    def responder(request: RecordedRequest) -> Turn | ErrorReply:
        if "weather" in request.last_user_text:
            return Turn(tool_uses=[ToolUse("get_weather", {"city": "Oslo"})])
        return Turn(text=f"echo: {request.last_user_text}")

    async with FakeAnthropic(responder=responder) as fake, client_for(fake) as client:
        tool = await stream_final(client, [{"role": "user", "content": "weather?"}])
        echo = await stream_final(
            client, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        )
    assert tool.content[0].type == "tool_use" and tool.content[0].name == "get_weather"
    assert echo.content[0].text == "echo: hi"
    assert fake.problems == []


async def test_exhausted_script_is_a_problem() -> None:
    async with FakeAnthropic([Turn(text="only one")]) as fake, client_for(fake) as client:
        await stream_final(client)
        with pytest.raises(anthropic.BadRequestError, match="fake script exhausted"):
            await stream_final(client)
        fake.add(Turn(text="added later"))
        late = await stream_final(client)
    assert fake.problems == ["fake script exhausted: no turn scripted for request 2"]
    assert late.content[0].text == "added later"


def test_sync_client_without_event_loop() -> None:
    script = [Turn(text="plain", tool_uses=[ToolUse("t", {"a": 1})]), Turn(text="streamed")]
    with FakeAnthropic(script, model="claude-reported") as fake:
        assert fake.base_url.startswith("http://127.0.0.1:")
        with anthropic.Anthropic(base_url=fake.base_url, api_key=fake.api_key) as client:
            created = client.messages.create(model=MODEL, max_tokens=10, messages=USER)
            with client.messages.stream(model=MODEL, max_tokens=10, messages=USER) as stream:
                streamed = stream.get_final_message()
    assert [b.type for b in created.content] == ["text", "tool_use"]
    assert created.content[1].input == {"a": 1} and created.stop_reason == "tool_use"
    assert created.model == "claude-reported"
    assert streamed.content[0].text == "streamed"
    assert "stream" not in fake.requests[0].body
    fake.stop()  # idempotent
    assert fake.problems == []


def test_script_entries_are_checked_where_they_are_written() -> None:
    with pytest.raises(TypeError):
        ToolUse("t", {"when": object()})
    with pytest.raises(ValueError, match="text_chunk_size"):
        Turn(text="x", text_chunk_size=0)
    with pytest.raises(ValueError, match="either a script or a responder"):
        FakeAnthropic([], responder=lambda request: Turn())


# -- context window, prompt cache and context editing (``_prompt``) ----------------------------


BIG = "x" * 8000  # 2000 tokens by the fake's estimate (plus the JSON around it)


def _conversation(turns: int, *, size: str = BIG) -> list[dict[str, Any]]:
    """User/assistant pairs with tool calls, ending with a user message."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i}",
                        "name": "get_notebook_state",
                        "input": {},
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": size}],
            }
        )
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "next"}]})
    return messages


def _mark_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = messages[-1]
    blocks = [
        *last["content"][:-1],
        {**last["content"][-1], "cache_control": {"type": "ephemeral"}},
    ]
    return [*messages[:-1], {**last, "content": blocks}]


def test_token_estimate_is_four_characters_a_token_over_each_block() -> None:
    body = {"system": "s" * 40, "tools": [], "messages": [{"role": "user", "content": "Hello"}]}
    units = prompt_units(body)
    assert [u.tokens for u in units] == [
        -(-len('{"text":"' + "s" * 40 + '","type":"text"}') // 4),
        -(-len('{"text":"Hello","type":"text"}') // 4),
    ]
    assert count_tokens(body) == sum(u.tokens for u in units)
    # cache_control does not count, so marking a block never changes its size.
    marked = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Hello", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ]
    }
    assert count_tokens(marked) == units[1].tokens


async def test_prompt_too_long_is_the_services_400_and_uses_no_script_entry() -> None:
    messages = _conversation(4)  # about 8 000 tokens
    async with (
        FakeAnthropic([Turn(text="ok")], context_window=5000) as fake,
        client_for(fake, max_retries=0) as client,
    ):
        with pytest.raises(anthropic.BadRequestError) as caught:
            await stream_final(client, messages)
        body = caught.value.body
        assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
        tokens = count_tokens({"messages": messages})
        assert body["error"]["message"] == f"prompt is too long: {tokens} tokens > 5000 maximum"
        assert fake.requests[0].status == 400 and fake.requests[0].prompt_tokens == tokens
        # The rejected request consumed nothing: a short one gets the scripted turn.
        message = await stream_final(client)
        assert message.content[0].type == "text" and message.content[0].text == "ok"
    assert fake.problems == []


SYSTEM = [
    {"type": "text", "text": "You are helpful. " * 300, "cache_control": {"type": "ephemeral"}}
]


def _extend(messages: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The conversation one tool round later, as the agent would send it next."""
    return [
        *messages,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_x{n}", "name": "get_notebook_state", "input": {}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_x{n}", "content": BIG}],
        },
    ]


async def test_cache_accounting_reads_the_previous_prefix_and_writes_the_new_part() -> None:
    base = _conversation(2)
    later = _extend(base, 1)
    edited = [
        {"role": "user", "content": [{"type": "text", "text": "question 0, edited"}]},
        *later[1:],
    ]
    script = [Turn(text=t) for t in "abcde"]
    async with FakeAnthropic(script) as fake, client_for(fake) as client:
        one = await stream_final(client, _mark_last(base), system=SYSTEM)
        two = await stream_final(client, _mark_last(later), system=SYSTEM)
        three = await stream_final(client, _mark_last(later), system=SYSTEM)
        four = await stream_final(client, _mark_last(edited), system=SYSTEM)
        five = await stream_final(client, edited, system=SYSTEM)  # only the system prompt is marked
    sizes = [r.prompt_tokens or 0 for r in fake.requests]
    system_tokens = count_tokens({"system": SYSTEM})
    # First request: everything up to the last breakpoint is written, nothing read.
    assert (
        one.usage.cache_read_input_tokens,
        one.usage.cache_creation_input_tokens,
        one.usage.input_tokens,
    ) == (0, sizes[0], 0)
    # Second: the previous breakpoint lies within the look-back, so the first prompt is read.
    assert (
        two.usage.cache_read_input_tokens,
        two.usage.cache_creation_input_tokens,
        two.usage.input_tokens,
    ) == (sizes[0], sizes[1] - sizes[0], 0)
    # The same request again reads everything.
    assert (three.usage.cache_read_input_tokens, three.usage.cache_creation_input_tokens) == (
        sizes[1],
        0,
    )
    # One changed byte early on: only the system prompt before it is still a hit.
    assert (four.usage.cache_read_input_tokens, four.usage.cache_creation_input_tokens) == (
        system_tokens,
        sizes[3] - system_tokens,
    )
    # No breakpoint on the messages: they are plain input.
    assert (
        five.usage.cache_read_input_tokens,
        five.usage.cache_creation_input_tokens,
        five.usage.input_tokens,
    ) == (system_tokens, 0, sizes[4] - system_tokens)
    assert [r.usage.total for r in fake.requests if r.usage] == sizes
    assert fake.problems == []


async def test_usage_is_in_message_start_and_message_delta() -> None:
    async with (
        FakeAnthropic([Turn(text="hi")]) as fake,
        client_for(fake) as client,
        client.messages.stream(
            model=MODEL, max_tokens=10, messages=_mark_last(_conversation(1)), system=SYSTEM
        ) as stream,
    ):
        events = [event async for event in stream]
    start = next(e for e in events if e.type == "message_start")
    delta = next(e for e in events if e.type == "message_delta")
    size = fake.requests[0].prompt_tokens
    assert start.message.usage.cache_creation_input_tokens == size
    assert delta.usage.cache_creation_input_tokens == size and delta.usage.input_tokens == 0
    assert delta.usage.cache_read_input_tokens == 0 and delta.usage.output_tokens >= 1


def test_cache_rules_minimum_length_lifetime_and_lookback() -> None:
    now = [1000.0]
    cache = PromptCache(min_cacheable_tokens=1024, clock=lambda: now[0])
    short = {
        "messages": _mark_last([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    }
    usage = cache.account("m", prompt_units(short))
    assert (usage.cache_creation_input_tokens, usage.input_tokens) == (
        0,
        usage.total,
    )  # too short to cache
    long_body = {"messages": _mark_last(_conversation(1))}
    units = prompt_units(long_body)
    assert cache.account("m", units).cache_creation_input_tokens == sum(u.tokens for u in units)
    assert cache.account("other-model", units).cache_read_input_tokens == 0  # caches are per model
    now[0] += 299
    assert cache.account("m", units).cache_read_input_tokens == sum(
        u.tokens for u in units
    )  # refreshed
    now[0] += 299
    assert cache.account("m", units).cache_read_input_tokens > 0
    now[0] += 301
    assert (
        cache.account("m", units).cache_read_input_tokens == 0
    )  # expired after five minutes unused
    # More than 20 new blocks after the previous breakpoint: the look-back no longer finds it.
    cache.clear()
    cache.account("m", units)
    many = [
        *_conversation(1)[:-1],
        *[
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": f"m{i}"}] * 2,
            }
            for i in range(12)
        ],
    ]
    far = prompt_units({"messages": _mark_last(many)})
    assert cache.account("m", far).cache_read_input_tokens == 0


def test_one_hour_breakpoints_live_an_hour() -> None:
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    messages = _conversation(1)
    last = messages[-1]
    messages[-1] = {
        **last,
        "content": [{**last["content"][0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
    }
    units = prompt_units({"messages": messages})
    cache.account("m", units)
    now[0] = 3000
    assert cache.account("m", units).cache_read_input_tokens == sum(u.tokens for u in units)


EDIT = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 5000},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
}


async def test_context_editing_clears_old_tool_results_server_side() -> None:
    messages = _conversation(4)
    async with (
        FakeAnthropic([Turn(text="ok")]) as fake,
        client_for(fake) as client,
        client.beta.messages.stream(
            model=MODEL,
            max_tokens=10,
            messages=messages,
            context_management=EDIT,  # type: ignore[arg-type]
            betas=["context-management-2025-06-27"],
        ) as stream,
    ):
        message = await stream.get_final_message()
    (request,) = fake.requests
    assert (
        request.path.startswith("/v1/messages")
        and "context-management-2025-06-27" in request.headers["anthropic-beta"]
    )
    assert request.applied_edits is not None and request.applied_edits[0]["cleared_tool_uses"] == 3
    assert message.context_management is not None
    (applied,) = message.context_management.applied_edits
    assert applied.cleared_tool_uses == 3 and applied.cleared_input_tokens > 5000
    # The prompt was counted after the edit; the client's own history is untouched.
    assert request.prompt_tokens is not None and request.prompt_tokens < count_tokens(
        {"messages": messages}
    )
    assert messages[2]["content"][0]["content"] == BIG
    assert fake.problems == []


def test_context_editing_rules() -> None:
    body = {"messages": _conversation(4)}
    edited, applied = apply_context_management({**body, "context_management": EDIT})
    results = [
        b for m in edited["messages"] for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert [r["content"] == CLEARED_PLACEHOLDER for r in results] == [True, True, True, False]
    # Below the trigger, or when less than clear_at_least would go, nothing changes.
    quiet = {"edits": [{**EDIT["edits"][0], "trigger": {"type": "input_tokens", "value": 10**6}}]}
    assert apply_context_management({**body, "context_management": quiet})[1] == []
    greedy = {
        "edits": [{**EDIT["edits"][0], "clear_at_least": {"type": "input_tokens", "value": 10**6}}]
    }
    assert apply_context_management({**body, "context_management": greedy})[1] == []
    # Excluded tools are kept; clear_tool_inputs empties the calls too; a tool_uses trigger counts calls.
    kept = {"edits": [{**EDIT["edits"][0], "exclude_tools": ["get_notebook_state"]}]}
    assert apply_context_management({**body, "context_management": kept})[1] == []
    inputs = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": 2},
                "clear_tool_inputs": True,
            }
        ]
    }
    edited, applied = apply_context_management({**body, "context_management": inputs})
    assert applied[0]["cleared_tool_uses"] == 1  # default keep: the 3 most recent
    assert edited["messages"][1]["content"][0]["input"] == {}


@pytest.mark.parametrize(
    "config",
    [
        {"edits": [{"type": "compact_20260112"}]},
        {"edits": "all"},
        {
            "edits": [
                {"type": "clear_tool_uses_20250919", "keep": {"type": "input_tokens", "value": 3}}
            ]
        },
    ],
)
async def test_context_editing_mistakes_are_400s(config: dict[str, Any]) -> None:
    async with FakeAnthropic([]) as fake, client_for(fake, max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError, match="context_management"):
            await client.beta.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=USER,
                context_management=config,  # type: ignore[arg-type]
                betas=["context-management-2025-06-27"],
            )
    assert len(fake.problems) == 1
    fake.problems.clear()


async def test_a_server_without_context_editing_refuses_it() -> None:
    async with (
        FakeAnthropic([Turn(text="ok")], context_management=False) as fake,
        client_for(fake, max_retries=0) as client,
    ):
        with pytest.raises(
            anthropic.BadRequestError, match="context_management: Extra inputs are not permitted"
        ):
            await client.beta.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=USER,
                context_management=EDIT,  # type: ignore[arg-type]
                betas=["context-management-2025-06-27"],
            )
        # Without the parameter the same server answers, from the script entry it did not use.
        message = await client.messages.create(model=MODEL, max_tokens=10, messages=USER)
        assert message.content[0].type == "text"
    assert fake.problems == []


async def test_context_editing_without_the_beta_header_is_a_problem() -> None:
    async with FakeAnthropic([]) as fake, httpx.AsyncClient(base_url=fake.base_url) as http:
        response = await http.post(
            "/v1/messages",
            headers={"x-api-key": fake.api_key, "anthropic-version": "2023-06-01"},
            json={"model": MODEL, "max_tokens": 10, "messages": USER, "context_management": EDIT},
        )
    assert response.status_code == 400 and "anthropic-beta" in response.json()["error"]["message"]
    assert len(fake.problems) == 1
    fake.problems.clear()


def test_a_system_message_mid_conversation_is_accepted_as_claude_code_sends_it() -> None:
    """Claude Code 2.1 puts its environment in a ``system`` message after the first user turn;
    the service takes it (text only) without counting it as a turn."""
    headers = {"anthropic-version": "2023-06-01"}
    use = {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    system = {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            system,
            {"role": "assistant", "content": [use]},
            system,
            {"role": "user", "content": [result]},
        ],
    }
    assert validate_request(body, headers) == []
    first = {**body, "messages": [system, *body["messages"]]}
    assert validate_request(first, headers) == [
        "messages.0: must be an object with role 'user' or 'assistant'"
    ]
    image = {"role": "system", "content": [{"type": "image", "source": {}}]}
    bad = {**body, "messages": [body["messages"][0], image]}
    assert validate_request(bad, headers) == [
        "messages.1.content.0: system messages may hold only text blocks"
    ]


def test_clearing_thinking_keeps_all_when_asked_and_drops_older_turns_otherwise() -> None:
    thought = {"type": "thinking", "thinking": "hmm " * 50, "signature": "s"}
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [thought, {"type": "text", "text": "one"}]},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": [thought, {"type": "text", "text": "two"}]},
        ],
    }
    keep_all = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    assert apply_context_management({**body, "context_management": keep_all}) == (
        {**body, "context_management": keep_all},
        [],
    )
    one = {"edits": [{"type": "clear_thinking_20251015"}]}
    edited, [applied] = apply_context_management({**body, "context_management": one})
    assert edited["messages"][1]["content"] == [{"type": "text", "text": "one"}]
    assert edited["messages"][3]["content"][0] == thought  # the newest turn keeps its thinking
    assert applied["cleared_thinking_turns"] == 1 and applied["cleared_input_tokens"] > 0


def test_a_tool_reference_loads_only_a_deferred_tool_under_the_tool_search_beta() -> None:
    """Claude Code's ToolSearch answers with ``tool_reference`` blocks naming MCP tools it
    declared with ``defer_loading``; the service takes them only under its beta."""
    deferred = {
        "name": "mcp__notebook__run_cell",
        "description": "Run a cell.",
        "input_schema": {"type": "object"},
        "defer_loading": True,
    }
    search = {
        "name": "ToolSearch",
        "description": "Find tools.",
        "input_schema": {"type": "object"},
    }
    use = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {}}

    def body(name: str) -> dict[str, Any]:
        found = {"type": "tool_reference", "tool_name": name}
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [found]}
        return {
            "model": "m",
            "max_tokens": 10,
            "tools": [search, deferred],
            "messages": [
                {"role": "user", "content": "run it"},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]},
            ],
        }

    beta = {"anthropic-version": "2023-06-01", "anthropic-beta": "advanced-tool-use-2025-11-20"}
    assert validate_request(body("mcp__notebook__run_cell"), beta) == []
    [wrong] = validate_request(body("ToolSearch"), beta)  # declared, but not deferred
    assert wrong.startswith("messages.2.content.0.content.0.tool_name: 'ToolSearch' is not")
    [no_beta] = validate_request(
        body("mcp__notebook__run_cell"), {"anthropic-version": "2023-06-01"}
    )
    assert "advanced-tool-use-2025-11-20" in no_beta
