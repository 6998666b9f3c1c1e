"""What the fake puts on the wire: ids, Message objects, SSE events and error bodies.

Kept apart from the HTTP server so the byte format can be read (and tested) on its
own. Shapes follow the real Messages API as the ``anthropic`` SDK parses it
(``types/raw_message_*_event.py``, ``lib/streaming/_messages.py``).
"""

from __future__ import annotations

import json
import math
import secrets
import string
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ErrorReply",
    "Rendered",
    "ToolUse",
    "Turn",
    "build_reply",
    "encode_sse",
    "error_response",
    "new_id",
]

_ALNUM = string.ascii_letters + string.digits


def new_id(prefix: str, length: int = 22) -> str:
    """Return an id shaped like the service's (``msg_01…``, ``toolu_01…``, ``req_011C…``)."""
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(length))


@dataclass(frozen=True)
class ToolUse:
    """One ``tool_use`` block the fake model asks for.

    Parameters
    ----------
    name : str
        Tool name, sent as is (it need not be among the request's ``tools``, so tests can
        exercise unknown tools).
    input : dict
        Tool input; streamed as several ``input_json_delta`` pieces.
    id : str or None
        Block id. ``None`` draws a fresh ``toolu_01…`` id each time the turn is sent, so a
        turn reused by a responder never repeats an id within one conversation.
    """

    name: str
    input: dict[str, Any]
    id: str | None = None

    def __post_init__(self) -> None:
        # Fail where the script is written, not inside the server thread.
        if not isinstance(self.input, dict):
            raise TypeError("ToolUse.input must be a dict")
        json.dumps(self.input)  # raises TypeError if it cannot go on the wire


@dataclass(frozen=True)
class Turn:
    """One scripted assistant turn, answered as a Message (streamed or not).

    Parameters
    ----------
    text : str
        Text of the leading text block; no text block is sent when empty.
    tool_uses : list of ToolUse
        ``tool_use`` blocks sent after the text block, in order.
    stop_reason : str or None
        ``None`` means ``"stop_sequence"`` when ``stop_sequence`` is given, else ``"tool_use"``
        when there are tool uses, else ``"end_turn"``. Any string is sent as it is (the SDK
        passes a reason it does not know through), so newer reasons can be scripted.
    stop_sequence : str or None
        The stop sequence the answer ended on, which the service names (in ``message_delta``
        and the final message) when ``stop_reason`` is ``"stop_sequence"``, and only then.
    delay : float
        Seconds before the first byte of the response (simulates time to first token).
    chunk_delay : float
        Seconds between SSE events.
    text_chunk_size : int
        Characters per ``text_delta``.
    stall_after_chunks : int or None
        After this many text deltas (or all of them, if fewer), stop sending and hold the
        connection open until the client disconnects, ``FakeAnthropic.release()`` is called
        (the stream then finishes normally) or the server stops. Ignored when not streaming.
    input_tokens : int or None
        Reported ``usage.input_tokens`` (and no cache use). ``None``, the default, lets the
        fake count the request's prompt and serve its prompt cache (``_prompt``).
    output_tokens : int or None
        Reported ``usage.output_tokens``; ``None`` estimates about four characters a token.
    error_after_chunks : int or None
        Fail the stream after this many text deltas (or all of them, if fewer) the way the
        service does when it is overloaded mid-answer: an ``event: error`` on a stream that
        was answered 200, then the end of the stream. Ignored when not streaming.
    stream_error : tuple of (str, str)
        The error's type and message for ``error_after_chunks``.
    """

    text: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    text_chunk_size: int = 6
    stall_after_chunks: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error_after_chunks: int | None = None
    stream_error: tuple[str, str] = ("overloaded_error", "Overloaded")

    def __post_init__(self) -> None:
        # Fail where the script is written, not inside the server thread.
        if self.text_chunk_size < 1:
            raise ValueError("text_chunk_size must be at least 1")
        if self.stall_after_chunks is not None and self.stall_after_chunks < 0:
            raise ValueError("stall_after_chunks must be None or >= 0")
        if self.error_after_chunks is not None and self.error_after_chunks < 0:
            raise ValueError("error_after_chunks must be None or >= 0")
        if self.delay < 0 or self.chunk_delay < 0:
            raise ValueError("delay and chunk_delay must be >= 0")
        if self.stop_sequence is not None and self.stop_reason not in (None, "stop_sequence"):
            raise ValueError("stop_sequence is named only with stop_reason='stop_sequence'")
        if self.stop_reason == "stop_sequence" and not self.stop_sequence:
            raise ValueError("stop_reason='stop_sequence' names the sequence: set stop_sequence")


@dataclass(frozen=True)
class ErrorReply:
    """An error answer, with the status code and body the service uses.

    Parameters
    ----------
    status : int
        HTTP status, e.g. 429, 529, 500, 400, 401.
    error_type : str
        ``error.type`` in the body, e.g. ``"rate_limit_error"``, ``"overloaded_error"``.
    message : str
        ``error.message`` in the body.
    retry_after : float or None
        Seconds the client should wait, sent as ``retry-after`` (whole seconds, as the
        service does) and ``retry-after-ms``. The SDK treats 0 as "not given" and falls
        back to its 0.5-8 s backoff, so 0 is sent as ``retry-after-ms: 1``: a retry
        after one millisecond, which keeps retry tests fast.
    """

    status: int
    error_type: str
    message: str
    retry_after: float | None = None


def error_response(reply: ErrorReply) -> tuple[dict[str, Any], dict[str, str]]:
    """Return the JSON body and extra headers for an error answer."""
    headers = {}
    if reply.retry_after is not None:
        headers["retry-after"] = str(math.ceil(reply.retry_after))
        headers["retry-after-ms"] = str(max(1, round(reply.retry_after * 1000)))
    body = {"type": "error", "error": {"type": reply.error_type, "message": reply.message}}
    return body, headers


@dataclass(frozen=True)
class Rendered:
    """A turn rendered for one request: the final Message and its SSE events.

    ``stall_index`` is the number of events to send before stalling, or ``None``.
    """

    message: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    stall_index: int | None


def _json_pieces(text: str) -> list[str]:
    """Split serialized tool input into >= 2 pieces when possible, as the model streams it."""
    if len(text) < 2:
        return [text]
    size = min(10, math.ceil(len(text) / 2))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate_tokens(turn: Turn, inputs: list[str]) -> int:
    if turn.output_tokens is not None:
        return turn.output_tokens
    chars = len(turn.text) + sum(len(s) + 8 for s in inputs)
    return max(1, math.ceil(chars / 4))


def build_reply(
    turn: Turn,
    *,
    model: str,
    prompt: dict[str, int] | None = None,
    context_management: dict[str, Any] | None = None,
) -> Rendered:
    """Render ``turn`` as the Message and the event sequence the service would send.

    ``prompt`` is the input side of ``usage`` (``input_tokens`` and the two cache counts) when
    the fake accounted the request; ``context_management`` is the applied-edits report of a
    request that asked for context editing. Both appear in ``message_start`` (usage) and again
    in ``message_delta`` and the final message, as the service streams them.
    """
    stop_reason = turn.stop_reason or (
        "stop_sequence"
        if turn.stop_sequence is not None
        else "tool_use"
        if turn.tool_uses
        else "end_turn"
    )
    inputs = [json.dumps(tu.input) for tu in turn.tool_uses]
    output_tokens = _estimate_tokens(turn, inputs)
    usage = {
        "input_tokens": turn.input_tokens if turn.input_tokens is not None else 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }
    if prompt is not None and turn.input_tokens is None:
        usage.update(prompt)
    stop_details = (
        {"type": "refusal", "category": None, "explanation": None}
        if stop_reason == "refusal"
        else None
    )
    message: dict[str, Any] = {
        "id": new_id("msg_01"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        # message_start reports the input side and a token or so of output so far.
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": dict(message)})
    ]
    final_content: list[dict[str, Any]] = []
    stall_index: int | None = None
    text_deltas = 0

    def stall_here_if_due() -> None:
        nonlocal stall_index
        if stall_index is None and turn.stall_after_chunks == text_deltas:
            stall_index = len(events)

    index = 0
    if turn.text:
        events.append(_block_start(index, {"type": "text", "text": ""}))
        events.append(("ping", {"type": "ping"}))
        stall_here_if_due()
        for start in range(0, len(turn.text), turn.text_chunk_size):
            piece = turn.text[start : start + turn.text_chunk_size]
            events.append(_delta(index, {"type": "text_delta", "text": piece}))
            text_deltas += 1
            stall_here_if_due()
        if turn.stall_after_chunks is not None and stall_index is None:
            stall_index = len(events)  # fewer deltas than asked: stall after the last one
        events.append(_block_stop(index))
        final_content.append({"type": "text", "text": turn.text})
        index += 1
    elif turn.stall_after_chunks is not None:
        stall_index = len(events)  # no text at all: stall right after message_start

    for tool_use, raw_input in zip(turn.tool_uses, inputs):
        block = {"type": "tool_use", "id": tool_use.id or new_id("toolu_01"), "name": tool_use.name}
        events.append(_block_start(index, {**block, "input": {}}))
        # The service opens every tool input with an empty partial_json.
        for piece in ["", *_json_pieces(raw_input)]:
            events.append(_delta(index, {"type": "input_json_delta", "partial_json": piece}))
        events.append(_block_stop(index))
        final_content.append({**block, "input": json.loads(raw_input)})
        index += 1

    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": stop_reason,
                    "stop_sequence": turn.stop_sequence,
                    "stop_details": stop_details,
                },
                "usage": {
                    "input_tokens": usage["input_tokens"],
                    "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                    "cache_read_input_tokens": usage["cache_read_input_tokens"],
                    "output_tokens": output_tokens,
                },
                **(
                    {"context_management": context_management}
                    if context_management is not None
                    else {}
                ),
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    final = {
        **message,
        "content": final_content,
        "stop_reason": stop_reason,
        "stop_sequence": turn.stop_sequence,
        "stop_details": stop_details,
        "usage": usage,
        **({"context_management": context_management} if context_management is not None else {}),
    }
    if turn.error_after_chunks is not None:
        events = _cut_with_error(events, turn.error_after_chunks, turn.stream_error)
    return Rendered(message=final, events=events, stall_index=stall_index)


def _cut_with_error(
    events: list[tuple[str, dict[str, Any]]], after: int, error: tuple[str, str]
) -> list[tuple[str, dict[str, Any]]]:
    """*events* up to the *after*-th text delta, then the service's mid-stream ``error`` event."""
    cut, seen = len(events), 0
    for i, (name, data) in enumerate(events):
        if seen == after or name == "message_delta":
            cut = i if name != "ping" else i + 1
            break
        if name == "content_block_delta" and data["delta"].get("type") == "text_delta":
            seen += 1
    error_type, message = error
    return [
        *events[:cut],
        ("error", {"type": "error", "error": {"type": error_type, "message": message}}),
    ]


def _block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def encode_sse(event: str, data: dict[str, Any]) -> bytes:
    """Encode one SSE event; the SDK skips events that lack an ``event:`` line."""
    # Raw UTF-8, as the service sends it, so non-ASCII text crosses the SDK's byte decoder.
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event}\ndata: {payload}\n\n".encode()
