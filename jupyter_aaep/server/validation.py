"""The shape of every message a client may send, declared once per kind and checked at the edge.

Each AAEP message (both replies, the three subscription messages) and the body of
``POST /aaep/v1/chats`` has a :data:`SPECS` entry, and each of our own kinds (``user_input``,
``guidance``, ``control``, …) a spec in its row of :data:`.message_kinds.KINDS`; a spec says which fields it may hold, the JSON type of each (nested lists and objects too),
the longest string, and for our own kinds the allowed values and id patterns. A message
that does not fit is refused with 400 and a sentence naming the field, what it is and what
it should be, before any of it reaches the runner, the broker or the handshake (replies
excepted, see below).

What is left to the next layer on purpose:

- replies (``confirmation.reply``, ``clarification.reply``) are checked for types only,
  and a reply that does not fit is *ignored* with 204 and a log line, like a reply of the
  right shape that the broker cannot use (unknown token, late, a decision not offered, an
  unknown field): the sender is never told why (§6.3.4), and the conformance suite treats
  any other answer to a reply as an error;
- subscription messages are checked for types only, too: missing fields, versions, ranges
  and unknown capabilities are the handshake's to answer with ``subscription.rejected``,
  which the subscriber's stream must receive (§5.4).

Lone UTF-16 surrogates and nesting depth are checked for the whole message when it is
parsed (:mod:`.messages`), so every field of every kind is covered, known or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..agent.approval import APPROVAL_MODES, mode_choices
from ..errors import RequestError

_SUB_ID = re.compile(r"sub_[A-Za-z0-9]{1,64}")
_EVENT_ID = re.compile(r"evt_[A-Za-z0-9]{1,64}")


def shown(value: Any) -> str:
    """What a value is, for a sentence (the Python type name, as earlier messages said)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" + ("…" if len(value) > 40 else "")
    return f"a {type(value).__name__}"


class Shape:
    """One JSON value's expected form; ``check`` raises ``_Wrong`` naming the path."""

    def describe(self) -> str:
        raise NotImplementedError

    def check(self, value: Any, path: str, what: str) -> None:
        raise NotImplementedError


class _Wrong(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Text(Shape):
    max_length: int = 4096
    non_blank: bool = False
    pattern: re.Pattern[str] | None = None
    example: str = ""
    choices: tuple[str, ...] = ()
    choice_error: str = ""
    """Sentence for a value outside ``choices``; ``{value}`` stands for the value."""
    no_nul: bool = False

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.pattern is not None:
            return f"a string like {self.example}"
        return f"a string of at most {self.max_length} characters"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, str):
            raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")
        if len(value) > self.max_length:
            raise _Wrong(
                path,
                f"{what} needs {path!r} of at most {self.max_length} characters; it has {len(value)}",
            )
        if self.non_blank and not value.strip():
            raise _Wrong(
                path, f"{what} needs {path!r} as a string that must be non-empty (not only spaces)"
            )
        if self.no_nul and "\x00" in value:
            raise _Wrong(path, f"{what} needs {path!r} without NUL characters")
        if self.choices and value not in self.choices:
            if self.choice_error:
                raise _Wrong(path, self.choice_error.replace("{value}", repr(value)[:80]))
            raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")


@dataclass(frozen=True)
class Integer(Shape):
    def describe(self) -> str:
        return "a whole number"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Wrong(path, f"{what} needs {path!r} as a whole number; it is {shown(value)}")


@dataclass(frozen=True)
class Number(Shape):
    def describe(self) -> str:
        return "a number"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _Wrong(path, f"{what} needs {path!r} as a number; it is {shown(value)}")


@dataclass(frozen=True)
class Boolean(Shape):
    def describe(self) -> str:
        return "true or false"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, bool):
            raise _Wrong(path, f"{what} needs {path!r} as true or false; it is {shown(value)}")


@dataclass(frozen=True)
class Anything(Shape):
    """Any JSON value (depth and Unicode were checked when the message was parsed)."""

    def describe(self) -> str:
        return "any JSON value"

    def check(self, value: Any, path: str, what: str) -> None:
        return None


@dataclass(frozen=True)
class OneOf(Shape):
    options: tuple[Shape, ...]

    def describe(self) -> str:
        return " or ".join(option.describe() for option in self.options)

    def check(self, value: Any, path: str, what: str) -> None:
        for option in self.options:
            try:
                option.check(value, path, what)
            except _Wrong:
                continue
            return
        raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape
    max_items: int = 256

    def describe(self) -> str:
        return f"a list of at most {self.max_items} items, each {self.item.describe()}"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, list):
            raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")
        if len(value) > self.max_items:
            raise _Wrong(
                path,
                f"{what} needs {path!r} with at most {self.max_items} items; it has {len(value)}",
            )
        for index, item in enumerate(value):
            self.item.check(item, f"{path}[{index}]", what)


@dataclass(frozen=True)
class Obj(Shape):
    fields: Mapping[str, Shape] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    other: Shape | None = None
    """Shape of fields not named in ``fields``; ``None`` refuses them."""
    max_fields: int = 256

    def describe(self) -> str:
        return "an object"

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, dict):
            raise _Wrong(path, f"{what} needs {path!r} as an object; it is {shown(value)}")
        if len(value) > self.max_fields:
            raise _Wrong(
                path,
                f"{what} needs {path!r} with at most {self.max_fields} fields; it has {len(value)}",
            )
        for name in self.required:
            if name not in value:
                raise _Wrong(
                    path,
                    f"{what} needs {_join(path, name)!r} as {self.fields[name].describe()}; it is missing",
                )
        extra = sorted(name for name in value if name not in self.fields)
        if extra and self.other is None:
            where = f" ({path})" if path else ""
            raise _Wrong(
                path,
                f"Unexpected field(s) in {what}{where}: {', '.join(extra)[:400]}. "
                f"Allowed: {', '.join(sorted(self.fields))}",
            )
        for name, item in value.items():
            shape = self.fields.get(name, self.other)
            if shape is not None:
                shape.check(item, _join(path, name), what)


@dataclass(frozen=True)
class Tagged(Shape):
    """An object whose ``type`` field says which shape the rest must have."""

    kinds: Mapping[str, Obj]

    def describe(self) -> str:
        return "an object whose type is " + ", ".join(self.kinds)

    def check(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, dict):
            raise _Wrong(path, f"{what} needs {path!r} as {self.describe()}; it is {shown(value)}")
        shape = self.kinds.get(str(value.get("type")))
        if shape is None:
            raise _Wrong(
                _join(path, "type"),
                f"{what} needs {_join(path, 'type')!r} as one of "
                f"{', '.join(self.kinds)}; it is {shown(value.get('type'))}",
            )
        shape.check(value, path, what)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclass(frozen=True)
class Spec:
    """One message kind: what it is called in sentences, its shape and an example to copy."""

    what: str
    shape: Obj
    example: str


_CAPABILITIES = Obj(
    {
        "max_events_per_second": Integer(),
        "preferred_verbosity": Text(max_length=64),
        "languages": ListOf(Text(max_length=64), max_items=64),
        "supports_confirmation_reply": Boolean(),
        "supports_clarification_reply": Boolean(),
        "coalesce_boundaries": ListOf(Text(max_length=64), max_items=16),
        "event_filters": Obj(
            {"include": ListOf(Text(max_length=256)), "exclude": ListOf(Text(max_length=256))},
            other=Anything(),
        ),
        "supported_conformance_levels": ListOf(Integer(), max_items=16),
        "supported_extensions": ListOf(Text(max_length=2048)),
        "cognitive_load": Text(max_length=64),
        "pace_wpm": Integer(),
        "accept_signed_manifests_only": Boolean(),
    },
    other=Anything(),  # extension capabilities: the handshake requires objects and says so
)
_REPLY_COMMON: dict[str, Shape] = {
    "type": Text(max_length=64),
    "reply_token": Text(max_length=256),
    "subscription_id": Text(max_length=256),
    "timestamp": Text(max_length=64),
    "decided_by": Text(max_length=256),
    "correlation_id": Text(max_length=256),
}
_SUBSCRIPTION_ID = Text(max_length=256)
_ID_EXAMPLE = "sub_8a4f2c9d1e7b5f3a"

SPECS: dict[str, Spec] = {
    "new chat": Spec(
        "A new chat",
        Obj(
            {
                "notebook_path": Text(non_blank=True, no_nul=True),
                "approval_mode": Text(
                    max_length=64,
                    choices=APPROVAL_MODES,
                    choice_error="approval_mode says {value}, but the approval mode must be one of: "
                    + mode_choices(),
                ),
            }
        ),
        '{"notebook_path": "analysis.ipynb", "approval_mode": "ask_all"}',
    ),
    "confirmation.reply": Spec(
        "confirmation.reply",
        Obj(
            {
                **_REPLY_COMMON,
                "decision": Text(max_length=64),
                "decision_rationale": Text(),
                "modified_action": Obj(other=Anything()),
            },
            other=Anything(),
        ),
        '{"type": "confirmation.reply", "reply_token": "rpl_…", "decision": "accept", '
        f'"subscription_id": "{_ID_EXAMPLE}", "timestamp": "2026-05-24T14:22:24.812Z"}}',
    ),
    "clarification.reply": Spec(
        "clarification.reply",
        Obj(
            {
                **_REPLY_COMMON,
                "response": OneOf((Text(max_length=16384), Boolean(), Number())),
                "confidence": Number(),
            },
            other=Anything(),
        ),
        '{"type": "clarification.reply", "reply_token": "rpl_…", "response": "Lagos", '
        f'"subscription_id": "{_ID_EXAMPLE}", "timestamp": "2026-05-24T14:22:24.812Z"}}',
    ),
    "subscription.request": Spec(
        "subscription.request",
        Obj(
            {
                "type": Text(max_length=64),
                "aaep_version": Text(max_length=64),
                "subscriber_id": Text(max_length=256),
                "subscriber_name": Text(max_length=256),
                "subscriber_version": Text(max_length=64),
                "subscriber_manifest_uri": Text(max_length=2048),
                "correlation_id": Text(max_length=256),
                "capabilities": _CAPABILITIES,
                "extensions": Obj(other=Obj(other=Anything())),
            },
            other=Anything(),
        ),  # unknown fields: the handshake rejects them, on the stream too
        '{"type": "subscription.request", "aaep_version": "1.0.0", "subscriber_id": "my-reader", '
        '"capabilities": {}}',
    ),
    "subscription.renegotiate": Spec(
        "subscription.renegotiate",
        Obj(
            {
                "type": Text(max_length=64),
                "subscription_id": _SUBSCRIPTION_ID,
                "capabilities": _CAPABILITIES,
                "correlation_id": Text(max_length=256),
            },
            other=Anything(),
        ),
        f'{{"type": "subscription.renegotiate", "subscription_id": "{_ID_EXAMPLE}", '
        '"capabilities": {"preferred_verbosity": "terse"}}',
    ),
    "subscription.close": Spec(
        "subscription.close",
        Obj(
            {
                "type": Text(max_length=64),
                "subscription_id": _SUBSCRIPTION_ID,
                "reason_code": Text(max_length=64),
                "reason_message": Text(),
            },
            other=Anything(),
        ),
        f'{{"type": "subscription.close", "subscription_id": "{_ID_EXAMPLE}", "reason_code": "done", '
        '"reason_message": "Finished."}',
    ),
}


def validate(message: Any, spec: Spec) -> None:
    """Raise ``RequestError(400)`` with a sentence when *message* does not fit *spec*."""
    try:
        spec.shape.check(message, "", spec.what)
    except _Wrong as wrong:
        raise RequestError(400, f"{wrong.message}. For example: {spec.example}") from None


def check_subscription_id(value: str | None) -> None:
    """The ``subscription_id`` query parameter: absent, or the id of a negotiated subscription."""
    if value is not None and not _SUB_ID.fullmatch(value):
        raise RequestError(
            400,
            "subscription_id must look like sub_ followed by 1 to 64 letters and digits, "
            "as subscription.accepted gave it; it is " + shown(value) + ".",
        )


def check_last_event_id(value: str | None) -> None:
    """``Last-Event-ID`` (or ``?last_event_id=``): absent, or the id of an event we sent."""
    if value and not _EVENT_ID.fullmatch(value):
        raise RequestError(
            400,
            "Last-Event-ID must be the id of an event this server sent (evt_ followed by "
            f"1 to 64 letters and digits); it is {shown(value)}. Reconnect without it to "
            "start from the running session.",
        )


__all__ = ["SPECS", "Spec", "check_last_event_id", "check_subscription_id", "shown", "validate"]
