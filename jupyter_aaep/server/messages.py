"""What clients send: JSON bodies and frames, read strictly, refused with a useful sentence.

Both transports carry the same messages (a POST body or one WebSocket text frame). Each is
a JSON object identified by ``kind`` (our own: ``user_input``, ``guidance``, ``control``,
``approval_mode``, ``model``, ``agent``, …) or by ``type`` (AAEP messages: replies and subscription messages).

:func:`parse_json` is the first gate for all of them: at most 1 MiB, UTF-8, nested at most
:data:`MAX_DEPTH` levels (measured on the text before parsing, so a ``[[[[…`` bomb never
reaches the recursive parser), and no lone UTF-16 surrogate (``"\\ud800"``) in any string
or field name. Surrogates are refused rather than repaired: the client sent text that is not
Unicode, and only it knows what it meant. Each kind's own fields are checked next, against
its spec in :mod:`.validation`.

One answer shape, whatever the transport: a message of one of our own kinds
(:data:`.message_kinds.KINDS`, where :func:`~.message_kinds.classify` tells it from AAEP's) is
answered by a JSON object whose ``kind`` is ``"<kind>.accepted"`` (:func:`accepted`), or by an
error carrying a sentence (``{"message": …}`` over HTTP, ``{"kind": "error", "status", "message"}``
on the socket). A message may carry a ``request_id`` (:func:`take_request_id`), which its answer
echoes, so a client matches answers to requests without guessing. AAEP replies are answered
204 without a body, as the protocol asks; on the socket they get an answer only when they carry
a ``request_id`` (``{"kind": "confirmation.reply.accepted", …}``: received, not "applied").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from ..aaep.wire import has_lone_surrogate
from ..errors import RequestError

MAX_MESSAGE_BYTES = 1 << 20
"""Largest body or frame accepted (1 MiB); AAEP asks for at least 64 KiB."""

REPLY_TYPES = ("confirmation.reply", "clarification.reply")
SUBSCRIPTION_TYPES = ("subscription.request", "subscription.renegotiate", "subscription.close")
CONTROL_ACTIONS = ("stop", "pause", "resume", "continue", "revert")

MAX_DEPTH = 32
"""Deepest nesting of lists and objects accepted; our messages need 4, extensions a few more."""

MAX_REQUEST_ID = 128
"""Longest ``request_id`` echoed back; a client's own counter or UUID fits many times over."""

EXAMPLE = '{"kind": "user_input", "text": "Plot column A"}'
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


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
        raise RequestError(
            413, f"The message is {size} bytes; the limit is {MAX_MESSAGE_BYTES} bytes (1 MiB)."
        )
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RequestError(
                400, "The message is not UTF-8 text; send JSON encoded as UTF-8."
            ) from error
    if not raw.strip():
        raise RequestError(400, f"The message is empty; send a JSON object such as {EXAMPLE}.")
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise RequestError(
            400,
            f"The message nests lists and objects {depth} levels deep; at most {MAX_DEPTH} "
            f"are accepted. Send a flat JSON object such as {EXAMPLE}.",
        )
    try:
        value = json.loads(raw)
    except RecursionError as error:  # pragma: no cover - nesting_depth refuses such text first
        raise RequestError(
            400, f"The message nests too deeply; at most {MAX_DEPTH} levels are accepted."
        ) from error
    except ValueError as error:
        raise RequestError(
            400, f"The message is not valid JSON ({error}); send a JSON object such as {EXAMPLE}."
        ) from error
    if not isinstance(value, dict):
        raise RequestError(
            400,
            f"The message must be a JSON object, not {type(value).__name__}; for example {EXAMPLE}.",
        )
    where = surrogate_path(value)
    if where is not None:
        raise RequestError(
            400,
            f"{where} holds a lone UTF-16 surrogate (a \\ud800–\\udfff escape without its "
            "pair), which is not Unicode text. Send valid UTF-8; encode emoji and other "
            "characters outside the BMP as the full surrogate pair or as the character itself.",
        )
    return value


def nesting_depth(text: str) -> int:
    """How deeply lists and objects nest in JSON *text*, found without recursion: the
    brackets left once strings are taken out, counted in one pass. Invalid JSON gets an upper
    bound, which is all a depth limit needs."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0  # cannot nest deeper than the limit (the common case: no scan at all)
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate((1 if c in "[{" else -1 for c in brackets), initial=0))


def surrogate_path(value: Any) -> str | None:
    """Where the first lone surrogate is, as a sentence subject (``Field 'text'``), or ``None``."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return f"Field {path!r}" if path else "The message"
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                if has_lone_surrogate(key):
                    return f"A field name in {path!r}" if path else "A field name"
                pending.append((child, name))
        elif isinstance(item, list):
            pending.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def only_fields(message: dict[str, Any], allowed: set[str], *, what: str) -> None:
    extra = sorted(set(message) - allowed)
    if extra:
        raise RequestError(
            400,
            f"Unexpected field(s) in {what}: {', '.join(extra)}. Allowed: {', '.join(sorted(allowed))}.",
        )


def text_field(message: dict[str, Any], name: str, *, what: str) -> str:
    value = message.get(name)
    if not isinstance(value, str):
        shown = "missing" if value is None else f"a {type(value).__name__}"
        raise RequestError(400, f"{what} needs {name!r} as a string; it is {shown}.")
    return value


def accepted(kind: str) -> str:
    """The ``kind`` of the answer to a message of *kind* (``control`` → ``control.accepted``)."""
    return f"{kind}.accepted"


def take_request_id(message: dict[str, Any]) -> str | None:
    """Remove and return the message's ``request_id`` (the client's name for this request,
    echoed in its answer); ``RequestError`` when it is not a short string."""
    if "request_id" not in message:
        return None
    value = message.pop("request_id")
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_REQUEST_ID
        or not value.isprintable()
    ):
        raise RequestError(
            400,
            f"request_id must be a non-empty printable string of at most {MAX_REQUEST_ID} "
            "characters (a counter or a UUID); it comes back in the answer.",
        )
    return value
