"""The chat's Anthropic message history, kept valid across sessions, stops and errors.

The Messages API wants alternating roles and a ``tool_result`` for every ``tool_use``. A
session can end anywhere (stop, error, handoff), so every append goes through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..aaep.wire import sanitize

Message = dict[str, Any]


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def append_user_blocks(history: list[Message], blocks: Iterable[dict[str, Any]]) -> None:
    """Add user content, merging into a trailing user message (two user turns in a row are
    what a stopped or errored session leaves behind). Tool results stay first in a message.

    Text that UTF-8 cannot encode (a lone surrogate from a file name or kernel output) is
    repaired on the way in: kept as it was, it would fail every later request of the chat."""
    new, _ = sanitize(list(blocks))
    if not new:
        return
    if history and history[-1]["role"] == "user":
        existing = _as_blocks(history[-1]["content"])
        results = [b for b in existing + new if b.get("type") == "tool_result"]
        others = [b for b in existing + new if b.get("type") != "tool_result"]
        history[-1] = {"role": "user", "content": results + others}
    else:
        history.append({"role": "user", "content": new})


def append_user_text(history: list[Message], text: str) -> None:
    append_user_blocks(history, [{"type": "text", "text": text}])


def append_assistant(
    history: list[Message], content: Iterable[Any], *, keep_tool_use: bool
) -> list[dict[str, Any]]:
    """Append the model's turn as request params; returns the stored blocks.

    ``tool_use`` blocks are kept only when the turn stopped for tools (and so will get their
    results); a turn cut off mid tool call would otherwise poison every later request. After
    ``pause_turn`` the continuation is merged into the paused assistant message.
    """
    blocks: list[dict[str, Any]] = []
    for block in content:
        param, _ = sanitize(block_to_param(block))
        if param is None:
            continue
        if param["type"] == "tool_use" and not keep_tool_use:
            continue
        blocks.append(param)
    if not blocks:
        return blocks
    if history and history[-1]["role"] == "assistant":
        # pause_turn: the model continues the same assistant turn in the next request.
        history[-1] = {"role": "assistant", "content": _as_blocks(history[-1]["content"]) + blocks}
    else:
        history.append({"role": "assistant", "content": blocks})
    return blocks


def block_to_param(block: Any) -> dict[str, Any] | None:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text} if block.text else None
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    dump = getattr(block, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else None


def tool_result(
    tool_use_id: str, content: str | list[dict[str, Any]], *, is_error: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        result["is_error"] = True
    return result


def close_open_tool_uses(history: list[Message], reason: str) -> None:
    """Give every unanswered ``tool_use`` of the last assistant turn an error result."""
    if not history:
        return
    index = len(history) - 1
    if history[index]["role"] == "user":
        index -= 1
    if index < 0 or history[index]["role"] != "assistant":
        return
    wanted = [b["id"] for b in _as_blocks(history[index]["content"]) if b.get("type") == "tool_use"]
    answered: set[str] = set()
    if index + 1 < len(history):
        answered = {
            str(b.get("tool_use_id"))
            for b in _as_blocks(history[index + 1]["content"])
            if b.get("type") == "tool_result"
        }
    missing = [tool_result(i, reason, is_error=True) for i in wanted if i not in answered]
    if missing:
        append_user_blocks(history, missing)


def close_stopped_request(history: list[Message], note: str, *, partial: str = "") -> None:
    """End a stopped request with an assistant turn that says so (after the open ``tool_use``
    blocks got their results), so the next request starts clean and is never merged into the
    stopped one. *partial* is what the model had written of its answer when it was stopped."""
    if not history:
        return
    text = f"{partial.rstrip()}\n\n{note}" if partial.strip() else note
    block, _ = sanitize({"type": "text", "text": text})
    if history[-1]["role"] == "assistant":
        history[-1] = {"role": "assistant", "content": _as_blocks(history[-1]["content"]) + [block]}
    else:
        history.append({"role": "assistant", "content": [block]})
