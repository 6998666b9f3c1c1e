"""What goes on the wire: every message as one line of JSON that is always valid UTF-8.

AAEP is UTF-8 only (§11). Python strings can still hold what UTF-8 cannot encode: a lone
UTF-16 surrogate (``"\\ud800"`` decoded from a JSON escape, or a file name read with
``surrogateescape``). Such a string must never reach a transport, where encoding it fails
and ends the stream for everyone. :func:`sanitize` makes any value safe to send (lone
surrogates become U+FFFD, non-finite numbers ``null``, anything JSON cannot hold its text)
and says what it changed, so the one who published it can log the bug; :func:`dumps` is the
single serialiser every transport uses, so SSE and WebSocket send the same bytes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate left in a Python string (a valid pair is decoded to one character)."""
REPLACEMENT = "\ufffd"
MAX_DEPTH = 64
"""Deeper values are cut (``null``): no event of ours nests anywhere near this far."""


def has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


def sanitize(value: Any) -> tuple[Any, list[str]]:
    """A JSON-safe copy of *value* (the value itself when nothing had to change) and the
    paths of what was changed, e.g. ``["data.text: lone surrogate replaced"]``."""
    if _plain(value, 0):
        return value, []  # the usual case, checked without building the paths of a report
    problems: list[str] = []
    return _clean(value, "", problems, 0, set()), problems


def _plain(value: Any, depth: int) -> bool:
    """Whether *value* is JSON as it is: exactly what :func:`_clean` would return unchanged,
    with no problem to report (plain ``dict``/``list``/``str``/``int``/finite ``float``; a
    cycle or any subclass is left to :func:`_clean`)."""
    kind = type(value)
    if kind is str:
        return value.isascii() or LONE_SURROGATE.search(value) is None
    if kind is dict:
        if depth >= MAX_DEPTH:
            return False
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or LONE_SURROGATE.search(key) is None):
                return False
            if not _plain(item, depth + 1):
                return False
        return True
    if kind is list:
        return depth < MAX_DEPTH and all(_plain(item, depth + 1) for item in value)
    if value is None or kind is bool or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    return False


def _clean(value: Any, path: str, problems: list[str], depth: int, seen: set[int]) -> Any:
    if isinstance(value, str):
        if has_lone_surrogate(value):
            problems.append(f"{path or 'value'}: lone surrogate replaced")
            return LONE_SURROGATE.sub(REPLACEMENT, value)
        return value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        problems.append(f"{path or 'value'}: {value} is not a JSON number")
        return None
    if depth >= MAX_DEPTH or id(value) in seen:
        problems.append(f"{path or 'value'}: nested too deeply or in a cycle")
        return None
    if isinstance(value, Mapping):
        seen.add(id(value))
        changed = False
        result: dict[str, Any] = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else str(key)
            clean_name = _clean(name, f"{path}.{name}".lstrip("."), problems, depth + 1, seen)
            clean_item = _clean(item, f"{path}.{name}".lstrip("."), problems, depth + 1, seen)
            changed = changed or clean_name is not key or clean_item is not item
            result[clean_name] = clean_item
        seen.discard(id(value))
        return result if changed or not isinstance(value, dict) else value
    if isinstance(value, (list, tuple)):
        seen.add(id(value))
        items = [
            _clean(item, f"{path}[{i}]", problems, depth + 1, seen) for i, item in enumerate(value)
        ]
        seen.discard(id(value))
        unchanged = isinstance(value, list) and all(a is b for a, b in zip(items, value))
        return value if unchanged else items
    problems.append(f"{path or 'value'}: a {type(value).__name__} is not JSON")
    return _clean(str(value), path, problems, depth, seen)


def dumps(message: Any) -> str:
    """One compact JSON line, safe to encode as UTF-8 whatever *message* holds."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or has_lone_surrogate(text):
        clean, _ = sanitize(message)
        text = json.dumps(clean, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text


__all__ = ["LONE_SURROGATE", "REPLACEMENT", "dumps", "has_lone_surrogate", "sanitize"]
