"""Edits of a chat's message history that make room in the context window.

Used by :mod:`.context`: clearing tool results (with a placeholder that says how to get them
back), sending unchanged results as references, and folding old requests into a summary. Each
edit keeps the history valid for the Messages API: every ``tool_use`` keeps its
``tool_result``, and a reference never points at a result that is gone.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

__all__ = [
    "MAX_SUMMARY_LINES",
    "SUMMARY_HEADER",
    "blocks_of",
    "clear_tool_results",
    "cleared_placeholder",
    "compact",
    "dedupe_results",
    "same_as",
    "tool_names",
]

Message = dict[str, Any]

SUMMARY_HEADER = (
    "Summary of the earlier part of this conversation (compacted to fit the context window):"
)
MAX_SUMMARY_LINES = 40


def cleared_placeholder(tool: str) -> str:
    return (
        f"[Cleared to keep the conversation within the context window: this earlier result of {tool}. "
        f"Call {tool} again if you need it.]"
    )


_CLEARED = "[Cleared to keep the conversation"
_SAME = re.compile(r"^\[Unchanged: identical to the earlier result of \S+ \(call ([^)]+)\)")


def same_as(tool: str, use_id: str) -> str:
    return (
        f"[Unchanged: identical to the earlier result of {tool} (call {use_id}), "
        "which is above in this conversation.]"
    )


def dedupe_results(
    history: list[Message], results: list[dict[str, Any]], *, minimum: int = 1000
) -> list[dict[str, Any]]:
    """Send a result identical to one still in the conversation as a reference to it."""
    names = tool_names(history)
    seen: dict[str, str] = {}
    for message in history:
        for block in blocks_of(message["content"]):
            content = block.get("content")
            if (
                block.get("type") == "tool_result"
                and isinstance(content, str)
                and len(content) >= minimum
            ):
                seen.setdefault(content, str(block.get("tool_use_id")))
    out = []
    for result in results:
        content = result.get("content")
        if result.get("is_error") or not isinstance(content, str) or len(content) < minimum:
            out.append(result)
            continue
        original = seen.get(content)
        if original is None:
            seen[content] = str(result.get("tool_use_id"))
            out.append(result)
            continue
        tool = names.get(str(result.get("tool_use_id")), "the tool")
        out.append({**result, "content": same_as(tool, original)})
    return out


def _originals(history: list[Message]) -> dict[str, Any]:
    return {
        str(b.get("tool_use_id")): b.get("content")
        for m in history
        for b in blocks_of(m["content"])
        if b.get("type") == "tool_result"
    }


def _repair_references(history: list[Message], before: dict[str, Any]) -> None:
    """A reference whose original is gone (cleared or folded) takes over its full content."""
    present = {
        k
        for k, v in _originals(history).items()
        if not (isinstance(v, str) and (v.startswith(_CLEARED) or _SAME.match(v)))
    }
    moved: dict[str, str] = {}
    names = tool_names(history)
    for i, message in enumerate(history):
        blocks = blocks_of(message["content"])
        changed = False
        for j, block in enumerate(blocks):
            content = block.get("content")
            match = (
                _SAME.match(content)
                if block.get("type") == "tool_result" and isinstance(content, str)
                else None
            )
            if match is None or match.group(1) in present:
                continue
            original = match.group(1)
            own = str(block.get("tool_use_id"))
            text: Any
            if original in moved:
                text = same_as(names.get(own, "the tool"), moved[original])
            else:
                text = before.get(original, content)
                moved[original] = own
                present.add(own)
            blocks[j] = {**block, "content": text}
            changed = True
        if changed:
            history[i] = {**message, "content": blocks}


def clear_tool_results(history: list[Message], keep: int) -> int:
    """Clear every tool result but the *keep* most recent; returns how many were cleared now."""
    names = tool_names(history)
    before = _originals(history)
    found = [
        (i, j)
        for i, m in enumerate(history)
        if m["role"] == "user"
        for j, b in enumerate(blocks_of(m["content"]))
        if b.get("type") == "tool_result"
    ]
    cleared = 0
    for i, j in found[: max(0, len(found) - keep)]:
        blocks = blocks_of(history[i]["content"])
        block = blocks[j]
        content = block.get("content")
        if isinstance(content, str) and content.startswith(_CLEARED):
            continue
        tool = names.get(str(block.get("tool_use_id")), "the tool")
        replaced = {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": cleared_placeholder(tool),
        }
        if block.get("is_error"):
            replaced["is_error"] = True
        blocks[j] = replaced
        history[i] = {**history[i], "content": blocks}
        cleared += 1
    if cleared:
        _repair_references(history, before)
    return cleared


def compact(history: list[Message], fits: Any) -> int:
    """Fold the oldest whole requests into one summary until ``fits(history)``.

    Never folds the current (last) request. Returns how many requests were folded.
    """
    starts = [i for i, m in enumerate(history) if _is_request_start(m)]
    if len(starts) < 2:
        return 0
    before = _originals(history)
    for k in range(1, len(starts)):
        trial = _folded(history, starts, k)
        _repair_references(trial, before)
        if fits(trial) or k == len(starts) - 1:
            history[:] = trial
            return k
    return 0  # pragma: no cover - the loop always returns


def _folded(history: list[Message], starts: list[int], k: int) -> list[Message]:
    cut = starts[k]
    lines = _summary_lines(history[0]) + _summarise(history[:cut])
    lines = lines[-MAX_SUMMARY_LINES:]
    summary = {"type": "text", "text": "\n".join([SUMMARY_HEADER, *lines])}
    # The first kept request loses tool results whose tool_use was folded (a stopped session's).
    kept = [
        b
        for b in blocks_of(history[cut]["content"])
        if b.get("type") != "tool_result" and not _is_summary(b)
    ]
    return [{"role": "user", "content": [summary, *kept]}, *history[cut + 1 :]]


def _summarise(messages: list[Message]) -> list[str]:
    lines: list[str] = []
    asked: str | None = None
    tools: Counter[str] = Counter()
    answer = ""

    def flush() -> None:
        if asked is None:
            return
        used = ", ".join(f"{name} x{count}" if count > 1 else name for name, count in tools.items())
        lines.append(f"- The user asked: {_clip(asked, 200)}")
        if used:
            lines.append(f"  Tools used: {used}.")
        if answer:
            lines.append(f"  The agent answered: {_clip(answer, 300)}")

    for message in messages:
        blocks = blocks_of(message["content"])
        if message["role"] == "user" and _is_request_start(message):
            flush()
            asked = " ".join(
                b["text"] for b in blocks if b.get("type") == "text" and not _is_summary(b)
            )
            tools, answer = Counter(), ""
        elif message["role"] == "assistant":
            for block in blocks:
                if block.get("type") == "tool_use":
                    tools[str(block.get("name"))] += 1
                elif block.get("type") == "text" and block.get("text"):
                    answer = str(block["text"])
    flush()
    return lines


def _summary_lines(message: Message) -> list[str]:
    for block in blocks_of(message["content"]):
        if _is_summary(block):
            return str(block["text"]).split("\n")[1:]
    return []


def _is_summary(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and str(block.get("text", "")).startswith(SUMMARY_HEADER)


def _is_request_start(message: Message) -> bool:
    """A user message that carries the user's own words (not only tool results)."""
    return message["role"] == "user" and any(
        b.get("type") == "text" and not _is_summary(b) for b in blocks_of(message["content"])
    )


def tool_names(history: list[Message]) -> dict[str, str]:
    return {
        str(b.get("id")): str(b.get("name"))
        for m in history
        if m["role"] == "assistant"
        for b in blocks_of(m["content"])
        if b.get("type") == "tool_use"
    }


def blocks_of(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
