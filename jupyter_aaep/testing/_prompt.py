"""How the fake counts prompt tokens, serves the prompt cache and applies context editing.

These rules stand in for the service's tokenizer and cache, so the agent's context handling
can be tested end to end; they are simplified where the service's exact numbers are private:

Token count
    Every unit of the prompt is one tool definition, one system block or one content block of
    a message (a string ``content`` counts as one text block). A unit costs
    ``ceil(len(json) / 4)`` tokens, ``json`` being the block serialized compactly with sorted
    keys and without its ``cache_control``; the prompt is the sum over tools, then system, then
    messages. About four characters a token, as for English text and code. An image counts
    what the service bills for it: scaled to fit 1568 pixels on its long side and about 1.15
    megapixels, ``ceil(width × height / 750)`` tokens (its base64 is not counted as text).

Prompt cache
    The prefix order is tools → system → messages. A unit with ``cache_control`` is a
    breakpoint (at most four; validation rejects more). For each breakpoint the fake looks for a
    cached prefix ending at the breakpoint or at most 19 units before it (the service's
    look-back of about 20 blocks), and the longest hit is ``cache_read_input_tokens``. The
    prefix up to the last breakpoint, past the hit, is written (``cache_creation_input_tokens``)
    at every breakpoint; the rest is ``input_tokens``. A prefix is cached only when it holds at
    least ``min_cacheable_tokens`` (1024 by default, as for Sonnet and Opus) and only for the
    same model; an entry lives ``ttl`` seconds (300, or 3600 for ``"ttl": "1h"``) from its last
    write or read. The content must be identical: one changed byte before a breakpoint is a
    miss from there on.

Context editing (``context_management``, beta ``context-management-2025-06-27``)
    The ``clear_tool_uses_20250919`` edit, and ``clear_thinking_20251015`` (drops thinking
    blocks of older assistant turns; ``keep: "all"``, Claude Code's choice, changes nothing).
    For ``clear_tool_uses_20250919``: When the prompt exceeds ``trigger`` (input
    tokens, default 100 000; or a number of tool uses), every tool result older than the
    ``keep`` most recent tool uses (default 3) whose tool is not in ``exclude_tools`` has its
    content replaced by :data:`CLEARED_PLACEHOLDER` (and its ``tool_use`` input by ``{}`` with
    ``clear_tool_inputs``), unless that removes fewer than ``clear_at_least`` tokens. The edit
    runs before the cache and the context window are accounted, as on the service.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._validation import decode_image

__all__ = [
    "CLEARED_PLACEHOLDER",
    "CONTEXT_MANAGEMENT_BETA",
    "ContextEditError",
    "PromptCache",
    "PromptUsage",
    "apply_context_management",
    "count_tokens",
    "image_tokens",
    "prompt_units",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
CLEARED_PLACEHOLDER = "[This tool result was cleared by context management to save space.]"
LOOKBACK_UNITS = 20
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def _canonical(block: object) -> str:
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True)
class Unit:
    """One block of the prompt in prefix order."""

    text: str
    tokens: int
    ttl: float | None
    """Seconds the cache keeps this prefix, when the unit is a breakpoint; else ``None``."""


def image_tokens(data: str) -> int:
    """What the service bills for one base64 image: scaled to fit 1568 pixels and about 1.15
    megapixels, then ``width × height / 750`` tokens."""
    found = decode_image(data)
    if isinstance(found, str):
        return 0  # validation refused the request already
    _, width, height = found
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return max(1, math.ceil(width * scale * height * scale / 750))


def _without_images(value: Any) -> tuple[Any, int]:
    """*value* with image data left out, and the tokens of the images."""
    if isinstance(value, list):
        items = [_without_images(item) for item in value]
        return [item for item, _ in items], sum(tokens for _, tokens in items)
    if not isinstance(value, dict):
        return value, 0
    source = value.get("source")
    if (
        value.get("type") == "image"
        and isinstance(source, dict)
        and isinstance(source.get("data"), str)
    ):
        return {**value, "source": {**source, "data": ""}}, image_tokens(source["data"])
    total, out = 0, {}
    for key, item in value.items():
        out[key], tokens = _without_images(item)
        total += tokens
    return out, total


def _block_tokens(block: object, text: str) -> int:
    if '"type":"image"' not in text:
        return _tokens(text)
    bare, images = _without_images(block)
    return _tokens(_canonical(bare)) + images


def _unit(block: object) -> Unit:
    text = _canonical(block)
    ttl = None
    if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
        ttl = _TTL_SECONDS.get(str(block["cache_control"].get("ttl", "5m")), 300.0)
    return Unit(text, _block_tokens(block, text), ttl)


def prompt_units(body: dict[str, Any]) -> list[Unit]:
    """The request's prompt as units, in cache-prefix order (tools, system, messages)."""
    units: list[Unit] = []
    for tool in body.get("tools") or []:
        units.append(_unit(tool))
    system = body.get("system")
    if isinstance(system, str) and system:
        units.append(_unit({"type": "text", "text": system}))
    elif isinstance(system, list):
        units.extend(_unit(block) for block in system)
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            units.append(_unit({"type": "text", "text": content}))
        elif isinstance(content, list):
            units.extend(_unit(block) for block in content)
    return units


def count_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a request by the estimate in the module docstring."""
    return sum(unit.tokens for unit in prompt_units(body))


@dataclass(frozen=True)
class PromptUsage:
    """The input side of ``usage`` for one request."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass
class PromptCache:
    """The fake's prompt cache: prefix digests with an expiry, shared by all requests."""

    min_cacheable_tokens: int = 1024
    clock: Callable[[], float] = time.monotonic
    _entries: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def account(self, model: str, units: list[Unit]) -> PromptUsage:
        """Read and write the cache for one prompt and say how its tokens were served."""
        digests, totals = [], []
        running = hashlib.sha256(model.encode())
        tokens = 0
        for unit in units:
            running.update(b"\x00" + unit.text.encode())
            digests.append(running.hexdigest())
            tokens += unit.tokens
            totals.append(tokens)
        breakpoints = [i for i, unit in enumerate(units) if unit.ttl is not None]
        now = self.clock()
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if v > now}
            hit = -1
            for point in breakpoints:
                for index in range(point, max(-1, point - LOOKBACK_UNITS), -1):
                    if digests[index] in self._entries:
                        hit = max(hit, index)
                        break
            read = totals[hit] if hit >= 0 else 0
            cacheable = [p for p in breakpoints if totals[p] >= self.min_cacheable_tokens]
            written = 0
            for point in cacheable:
                self._entries[digests[point]] = now + float(units[point].ttl or 300.0)
            if cacheable and totals[cacheable[-1]] > read:
                written = totals[cacheable[-1]] - read
            if hit >= 0:
                ttl = max((units[p].ttl or 300.0) for p in breakpoints if p >= hit)
                self._entries[digests[hit]] = max(self._entries[digests[hit]], now + ttl)
        return PromptUsage(tokens - read - written, written, read)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class ContextEditError(ValueError):
    """A ``context_management`` parameter the fake (like the service) cannot apply."""


def _threshold(
    spec: object, kinds: tuple[str, ...], default: tuple[str, int], where: str
) -> tuple[str, int]:
    if spec is None:
        return default
    if (
        not isinstance(spec, dict)
        or spec.get("type") not in kinds
        or not isinstance(spec.get("value"), int)
    ):
        raise ContextEditError(
            f"{where}: must be an object with type {' or '.join(kinds)} and an integer value"
        )
    return str(spec["type"]), int(spec["value"])


def apply_context_management(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Apply ``body["context_management"]``; returns the edited body and the applied edits."""
    config = body.get("context_management")
    if not isinstance(config, dict) or not isinstance(config.get("edits"), list):
        raise ContextEditError("context_management: must be an object with a list of edits")
    applied: list[dict[str, Any]] = []
    for i, edit in enumerate(config["edits"]):
        where = f"context_management.edits.{i}"
        kind = edit.get("type") if isinstance(edit, dict) else edit
        if isinstance(edit, dict) and kind == "clear_tool_uses_20250919":
            body, result = _clear_tool_uses(body, edit, where)
        elif isinstance(edit, dict) and kind == "clear_thinking_20251015":
            body, result = _clear_thinking(body, edit, where)
        else:
            raise ContextEditError(f"{where}.type: unsupported context management edit {kind!r}")
        if result is not None:
            applied.append(result)
    return body, applied


def _clear_thinking(
    body: dict[str, Any], edit: dict[str, Any], where: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``clear_thinking_20251015``: thinking blocks of all but the ``keep`` most recent
    assistant turns that have them are dropped (``"all"`` keeps every one, as Claude Code asks;
    the default keeps one)."""
    keep_spec = edit.get("keep", {"type": "thinking_turns", "value": 1})
    if keep_spec == "all":
        return body, None
    _, keep = _threshold(keep_spec, ("thinking_turns",), ("thinking_turns", 1), f"{where}.keep")
    messages = json.loads(json.dumps(body.get("messages") or []))
    thinking = ("thinking", "redacted_thinking")
    turns = [
        m
        for m in messages
        if isinstance(m, dict)
        and m.get("role") == "assistant"
        and isinstance(m.get("content"), list)
        and any(isinstance(b, dict) and b.get("type") in thinking for b in m["content"])
    ]
    older = turns[: max(0, len(turns) - keep)]
    if not older:
        return body, None
    freed = 0
    for message in older:
        kept = [
            b for b in message["content"] if not (isinstance(b, dict) and b.get("type") in thinking)
        ]
        freed += _tokens(_canonical(message["content"])) - _tokens(_canonical(kept))
        message["content"] = kept
    return {**body, "messages": messages}, {
        "type": "clear_thinking_20251015",
        "cleared_thinking_turns": len(older),
        "cleared_input_tokens": freed,
    }


def _clear_tool_uses(
    body: dict[str, Any], edit: dict[str, Any], where: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    trigger = _threshold(
        edit.get("trigger"),
        ("input_tokens", "tool_uses"),
        ("input_tokens", 100_000),
        f"{where}.trigger",
    )
    _, keep = _threshold(edit.get("keep"), ("tool_uses",), ("tool_uses", 3), f"{where}.keep")
    _, at_least = _threshold(
        edit.get("clear_at_least"),
        ("input_tokens",),
        ("input_tokens", 0),
        f"{where}.clear_at_least",
    )
    excluded = set(edit.get("exclude_tools") or [])
    clear_inputs = edit.get("clear_tool_inputs") or False
    messages = json.loads(json.dumps(body.get("messages") or []))
    uses: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                uses.append(block)
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = block
    measure = count_tokens(body) if trigger[0] == "input_tokens" else len(uses)
    if measure <= trigger[1]:
        return body, None
    older = uses[: max(0, len(uses) - keep)]
    cleared, freed = 0, 0
    for use in older:
        result = results.get(str(use.get("id")))
        if (
            use.get("name") in excluded
            or result is None
            or result.get("content") == CLEARED_PLACEHOLDER
        ):
            continue
        before = _tokens(_canonical(result)) + _tokens(_canonical(use))
        result["content"] = CLEARED_PLACEHOLDER
        if clear_inputs is True or (
            isinstance(clear_inputs, list) and use.get("name") in clear_inputs
        ):
            use["input"] = {}
        freed += before - _tokens(_canonical(result)) - _tokens(_canonical(use))
        cleared += 1
    if cleared == 0 or freed < at_least:
        return body, None
    edited = {**body, "messages": messages}
    return edited, {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": cleared,
        "cleared_input_tokens": freed,
    }
