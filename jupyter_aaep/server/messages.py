"""What clients send: JSON bodies and frames, read strictly, refused with a useful sentence.

Both transports carry the same messages (a POST body or one WebSocket text frame). Each is
a JSON object identified by ``kind`` (our own: ``user_input``, ``control``,
``approval_mode``) or by ``type`` (AAEP messages: replies and subscription messages).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MAX_MESSAGE_BYTES = 1 << 20
"""Largest body or frame accepted (1 MiB); AAEP asks for at least 64 KiB."""

KINDS = ("user_input", "control", "approval_mode")
REPLY_TYPES = ("confirmation.reply", "clarification.reply")
SUBSCRIPTION_TYPES = ("subscription.request", "subscription.renegotiate", "subscription.close")
CONTROL_ACTIONS = ("stop", "revert")
LATER_ACTIONS = ("pause", "resume", "guidance")

EXAMPLE = '{"kind": "user_input", "text": "Plot column A"}'


class RequestError(Exception):
    """A client mistake: the HTTP status and a sentence saying what is wrong and what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Response:
    """What a handled message answers: the HTTP status, a JSON body and optional headers."""

    status: int
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def parse_json(raw: bytes | str) -> dict[str, Any]:
    """One JSON object from a body or frame; ``RequestError`` for anything else."""
    size = len(raw.encode("utf-8")) if isinstance(raw, str) else len(raw)
    if size > MAX_MESSAGE_BYTES:
        raise RequestError(413, f"The message is {size} bytes; the limit is {MAX_MESSAGE_BYTES} bytes (1 MiB).")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RequestError(400, "The message is not UTF-8 text; send JSON encoded as UTF-8.") from error
    if not raw.strip():
        raise RequestError(400, f"The message is empty; send a JSON object such as {EXAMPLE}.")
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise RequestError(400, f"The message is not valid JSON ({error}); send a JSON object such as {EXAMPLE}.") from error
    if not isinstance(value, dict):
        raise RequestError(400, f"The message must be a JSON object, not {type(value).__name__}; for example {EXAMPLE}.")
    return value


def classify(message: dict[str, Any]) -> str:
    """The message's ``kind`` or ``type``; ``RequestError`` when it is neither or unknown."""
    kind, message_type = message.get("kind"), message.get("type")
    if kind is not None and message_type is not None:
        raise RequestError(400, "A message has either a kind or a type, not both.")
    if kind is not None:
        if kind not in KINDS:
            raise RequestError(400, f"Unknown message kind {kind!r}; use one of: {', '.join(KINDS)}.")
        return str(kind)
    if message_type is not None:
        if message_type in REPLY_TYPES or message_type in SUBSCRIPTION_TYPES:
            return str(message_type)
        if "@context" in message:
            raise RequestError(400, "This endpoint belongs to the producer; it does not accept AAEP events.")
        known = ", ".join((*REPLY_TYPES, *SUBSCRIPTION_TYPES))
        raise RequestError(400, f"Unknown message type {message_type!r}; use one of: {known}.")
    raise RequestError(
        400, f"Say what the message is with kind ({', '.join(KINDS)}) or type "
        f"({', '.join((*REPLY_TYPES, *SUBSCRIPTION_TYPES))}), e.g. {EXAMPLE}."
    )


def only_fields(message: dict[str, Any], allowed: set[str], *, what: str) -> None:
    extra = sorted(set(message) - allowed)
    if extra:
        raise RequestError(400, f"Unexpected field(s) in {what}: {', '.join(extra)}. Allowed: {', '.join(sorted(allowed))}.")


def text_field(message: dict[str, Any], name: str, *, what: str) -> str:
    value = message.get(name)
    if not isinstance(value, str):
        shown = "missing" if value is None else f"a {type(value).__name__}"
        raise RequestError(400, f"{what} needs {name!r} as a string; it is {shown}.")
    return value
