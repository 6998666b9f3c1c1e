"""Identifier rules of AAEP §2: a fixed prefix followed only by letters and digits.

Model tool-use ids (``toolu_01…``) and dashed UUIDs are never passed through: they are mapped
onto fresh ids here, so nothing outside the protocol's alphabet reaches a subscriber.
"""

from __future__ import annotations

import re
import secrets
from typing import Final, Literal

IdKind = Literal["evt", "sess", "call", "out", "rpl", "sub"]

_PATTERNS: Final[dict[str, re.Pattern[str]]] = {
    kind: re.compile(rf"^{kind}_[A-Za-z0-9]{{1,64}}$")
    for kind in ("evt", "sess", "call", "out", "rpl", "sub")
}


def new_id(kind: IdKind) -> str:
    """A fresh identifier: the prefix and 128 random bits as 32 hex digits (a CSPRNG, §6.2)."""
    return f"{kind}_{secrets.token_hex(16)}"


def is_valid_id(kind: IdKind, value: object) -> bool:
    """Whether *value* is a well-formed identifier of *kind*."""
    return isinstance(value, str) and _PATTERNS[kind].match(value) is not None


def new_event_id() -> str:
    return new_id("evt")


def new_session_id() -> str:
    return new_id("sess")


def new_call_id() -> str:
    return new_id("call")


def new_output_id() -> str:
    return new_id("out")


def new_reply_token() -> str:
    return new_id("rpl")


def new_subscription_id() -> str:
    return new_id("sub")


TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,255}$")


def safe_tool_name(name: str) -> str:
    """A tool name the schema accepts; MCP-style names with ``/`` or ``:`` are mapped to ``_``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:256] or "tool"
    if not re.match(r"[A-Za-z_]", cleaned[0]):
        cleaned = ("_" + cleaned)[:256]
    return cleaned
