"""Request checks the real Messages API would reject with 400 ``invalid_request_error``.

The fake runs these on every request so an agent loop that builds a malformed
conversation fails in tests the way it would fail in production. Messages start with a
dotted path (``messages.2.content.0``) like the service's, so a failure points at the
offending block. Only what the agent can get wrong is checked; unknown block types and
extra parameters are accepted.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["IMAGE_MEDIA_TYPES", "decode_image", "validate_request"]

IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Longest base64 image the service takes (5 MB)."""
MAX_IMAGE_PIXELS = 8000
MAX_IMAGES = 100
MANY_IMAGES, MANY_IMAGES_PIXELS = 20, 2000
"""Past 20 images in one request, each may be at most 2000 pixels on a side."""
_PILLOW_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def decode_image(data: str) -> tuple[str, int, int] | str:
    """``(media type, width, height)`` of base64 image data, or a sentence saying what is wrong."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "The image data is not valid base64"
    try:
        from PIL import Image, UnidentifiedImageError

        with Image.open(io.BytesIO(raw)) as image:
            kind, (width, height) = _PILLOW_TYPES.get(str(image.format)), image.size
    except (UnidentifiedImageError, OSError, ValueError):
        return "Could not process image: the data is not a JPEG, PNG, GIF or WebP image"
    if kind is None:
        return "Could not process image: the data is not a JPEG, PNG, GIF or WebP image"
    return kind, int(width), int(height)


TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
"""The beta under which a tool result may hold ``tool_reference`` blocks (tool search)."""
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOOL_USE_ID = re.compile(r"^toolu_[A-Za-z0-9_-]+$")
_TOOL_CHOICES = ("auto", "any", "tool", "none")
_MAX_CACHE_BREAKPOINTS = 4

_Block = tuple[str, dict[str, Any]]  # (dotted path, block)
_Turn = tuple[str, str, list[_Block]]  # (role, path of first message, blocks)


def validate_request(body: object, headers: Mapping[str, str]) -> list[str]:
    """Return every problem found in a ``POST /v1/messages`` request (empty when valid)."""
    problems: list[str] = []
    if not headers.get("anthropic-version"):
        problems.append("anthropic-version: header is required")
    if not isinstance(body, dict):
        return [*problems, "request body must be a JSON object"]
    model = body.get("model")
    if not isinstance(model, str) or not model:
        problems.append("model: field required (a non-empty string)")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append(f"max_tokens: must be a positive integer, got {max_tokens!r}")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream: must be a boolean")
    cache = _CacheCount()
    _check_system(body.get("system"), problems, cache)
    tool_names = _check_tools(body.get("tools"), problems, cache)
    if TOOL_SEARCH_BETA not in headers.get("anthropic-beta", ""):
        cache.deferred.clear()  # without the beta, nothing can be loaded by reference
    _check_tool_choice(body.get("tool_choice"), tool_names, problems)
    _check_messages(body.get("messages"), problems, cache)
    _check_image_count(cache.images, problems)
    if cache.count > _MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {_MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {cache.count}."
        )
    return problems


class _CacheCount:
    """Counts ``cache_control`` breakpoints across system, tools and messages (and, for the
    per-request image limits, the images seen: their path and pixel size)."""

    def __init__(self) -> None:
        self.count = 0
        self.images: list[tuple[str, int, int]] = []
        self.deferred: set[str] = set()  # tools with defer_loading, loadable by tool_reference

    def see(self, owner: dict[str, Any], path: str, problems: list[str]) -> None:
        control = owner.get("cache_control")
        if control is None:
            return
        self.count += 1
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            problems.append(f"{path}.cache_control: type must be 'ephemeral'")


def _check_system(system: object, problems: list[str], cache: _CacheCount) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        problems.append("system: must be a string or a list of text blocks")
        return
    for i, block in enumerate(system):
        path = f"system.{i}"
        if not isinstance(block, dict) or block.get("type") != "text":
            problems.append(f"{path}: system blocks must be text blocks")
            continue
        _check_text(block, path, problems)
        cache.see(block, path, problems)


def _check_tools(tools: object, problems: list[str], cache: _CacheCount) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    if not isinstance(tools, list):
        problems.append("tools: must be a list")
        return names
    for i, tool in enumerate(tools):
        path = f"tools.{i}"
        if not isinstance(tool, dict):
            problems.append(f"{path}: must be an object")
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            problems.append(f"{path}.name: must match ^[a-zA-Z0-9_-]{{1,64}}$, got {name!r}")
        elif name in names:
            problems.append(f"tools: tool names must be unique, {name!r} appears twice")
        else:
            names.add(name)
            if tool.get("defer_loading") is True:
                cache.deferred.add(name)
        cache.see(tool, path, problems)
        if tool.get("type") not in (None, "custom"):
            continue  # server and built-in tools (web_search_…, bash_…) carry no schema
        description = tool.get("description")
        if not isinstance(description, str) or not description.strip():
            problems.append(f"{path}.description: must be a non-empty string")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"{path}.input_schema: must be a JSON Schema with type 'object'")
    return names


def _check_tool_choice(choice: object, tool_names: set[str], problems: list[str]) -> None:
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in _TOOL_CHOICES:
        problems.append(f"tool_choice: type must be one of {', '.join(_TOOL_CHOICES)}")
    elif choice["type"] == "tool" and choice.get("name") not in tool_names:
        problems.append(f"tool_choice.name: {choice.get('name')!r} is not one of the tools")


def _check_text(block: dict[str, Any], path: str, problems: list[str]) -> None:
    text = block.get("text")
    if not isinstance(text, str) or not text:
        problems.append(f"{path}.text: text content blocks must be non-empty")
    elif not text.strip():
        problems.append(f"{path}.text: text content blocks must contain non-whitespace text")


def _check_messages(messages: object, problems: list[str], cache: _CacheCount) -> None:
    if not isinstance(messages, list) or not messages:
        problems.append("messages: at least one message is required")
        return
    # A turn is a run of messages the service merges (consecutive user messages):
    # role, path of its first message, and its blocks with their paths.
    turns: list[_Turn] = []
    last = len(messages) - 1
    for i, message in enumerate(messages):
        path = f"messages.{i}"
        if isinstance(message, dict) and message.get("role") == "system" and i > 0:
            _check_system_message(message.get("content"), path, problems, cache)
            continue
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            problems.append(f"{path}: must be an object with role 'user' or 'assistant'")
            return
        role = message["role"]
        if i == 0 and role != "user":
            problems.append('messages: first message must use the "user" role')
        elif turns and role == "assistant" and turns[-1][0] == "assistant":
            problems.append(f"{path}: roles must alternate between 'user' and 'assistant'")
        blocks = _content_blocks(message.get("content"), path, role, i == last, problems, cache)
        if turns and turns[-1][0] == role == "user":
            turns[-1][2].extend(blocks)
        else:
            turns.append((role, path, blocks))
    _check_tool_pairing(turns, problems)


def _check_system_message(
    content: object, path: str, problems: list[str], cache: _CacheCount
) -> None:
    """A system message after the first turn: instructions added mid-conversation (Claude Code
    2.1 sends its environment this way). Text only; it is not a turn, so it neither breaks
    the alternation of user and assistant nor separates a tool use from its result."""
    if isinstance(content, str):
        if not content.strip():
            problems.append(f"{path}.content: system messages must contain non-whitespace text")
        return
    if not isinstance(content, list) or not content:
        problems.append(f"{path}.content: must be a string or a non-empty list of text blocks")
        return
    for j, block in enumerate(content):
        bpath = f"{path}.content.{j}"
        if not isinstance(block, dict) or block.get("type") != "text":
            problems.append(f"{bpath}: system messages may hold only text blocks")
            continue
        _check_text(block, bpath, problems)
        cache.see(block, bpath, problems)


def _content_blocks(
    content: object,
    path: str,
    role: str,
    is_last: bool,
    problems: list[str],
    cache: _CacheCount,
) -> list[_Block]:
    """Check one message's content; return its blocks with their paths."""
    prefill = is_last and role == "assistant"  # may be empty, must not end in whitespace
    if isinstance(content, str):
        if not content and not prefill:
            problems.append(
                f"{path}.content: all messages must have non-empty content "
                "except for the optional final assistant message"
            )
        elif prefill and content != content.rstrip():
            problems.append("final assistant content cannot end with trailing whitespace")
        elif content and not content.strip():
            problems.append(f"{path}.content: text content must contain non-whitespace text")
        return [(f"{path}.content", {"type": "text", "text": content})] if content else []
    if not isinstance(content, list):
        problems.append(f"{path}.content: must be a string or a list of content blocks")
        return []
    if not content and not prefill:
        problems.append(
            f"{path}.content: all messages must have non-empty content "
            "except for the optional final assistant message"
        )
    blocks: list[_Block] = []
    for j, block in enumerate(content):
        bpath = f"{path}.content.{j}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            problems.append(f"{bpath}: content blocks must be objects with a 'type'")
            continue
        cache.see(block, bpath, problems)
        kind = block["type"]
        if kind == "text":
            _check_text(block, bpath, problems)
        elif kind == "tool_use":
            _check_tool_use(block, bpath, role, problems)
        elif kind == "tool_result":
            _check_tool_result(block, bpath, role, problems, cache)
        elif kind == "image":
            if role != "user":
                problems.append(f"{bpath}: image blocks may only appear in user messages")
            _check_image(block, bpath, problems, cache)
        blocks.append((bpath, block))
    last = content[-1] if content else None
    if prefill and isinstance(last, dict) and last.get("type") == "text":
        text = last.get("text")
        if isinstance(text, str) and text != text.rstrip():
            problems.append("final assistant content cannot end with trailing whitespace")
    return blocks


def _check_tool_use(block: dict[str, Any], path: str, role: str, problems: list[str]) -> None:
    if role != "assistant":
        problems.append(f"{path}: tool_use blocks may only appear in assistant messages")
    if not isinstance(block.get("id"), str) or not _TOOL_USE_ID.match(block["id"]):
        problems.append(f"{path}.id: must match ^toolu_[A-Za-z0-9_-]+$, got {block.get('id')!r}")
    if not isinstance(block.get("name"), str) or not block["name"]:
        problems.append(f"{path}.name: must be a non-empty string")
    if not isinstance(block.get("input"), dict):
        problems.append(f"{path}.input: must be an object")


def _check_tool_result(
    block: dict[str, Any], path: str, role: str, problems: list[str], cache: _CacheCount
) -> None:
    if role != "user":
        problems.append(f"{path}: tool_result blocks may only appear in user messages")
    if not isinstance(block.get("tool_use_id"), str):
        problems.append(f"{path}.tool_use_id: must be a string")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        problems.append(f"{path}.is_error: must be a boolean")
    content = block.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        problems.append(f"{path}.content: must be a string or a list of content blocks")
        return
    for k, inner in enumerate(content):
        ipath = f"{path}.content.{k}"
        if not isinstance(inner, dict) or not isinstance(inner.get("type"), str):
            problems.append(f"{ipath}: content blocks must be objects with a 'type'")
            continue
        cache.see(inner, ipath, problems)
        if inner["type"] == "text":
            _check_text(inner, ipath, problems)
        elif inner["type"] == "image":
            _check_image(inner, ipath, problems, cache)
        elif inner["type"] == "tool_reference":
            _check_tool_reference(inner, ipath, problems, cache)
        elif inner["type"] not in ("document", "search_result"):
            problems.append(
                f"{ipath}.type: tool_result content blocks must be text, image, document or "
                f"search_result, got {inner['type']!r}"
            )


def _check_tool_reference(
    block: dict[str, Any], path: str, problems: list[str], cache: _CacheCount
) -> None:
    """Client-side tool search (what Claude Code's ToolSearch returns): a result may load a
    tool declared with ``defer_loading``, under the advanced-tool-use beta."""
    name = block.get("tool_name")
    if name not in cache.deferred:
        problems.append(
            f"{path}.tool_name: {name!r} is not a tool declared with defer_loading "
            f"(tool_reference needs one, and the anthropic-beta header {TOOL_SEARCH_BETA})"
        )


def _check_image(block: dict[str, Any], path: str, problems: list[str], cache: _CacheCount) -> None:
    """An image block as the service checks it: source kind, media type, base64, bytes, pixels."""
    source = block.get("source")
    where = f"{path}.image.source"
    if not isinstance(source, dict) or source.get("type") not in ("base64", "url", "file"):
        problems.append(f"{where}: must be an object with type 'base64', 'url' or 'file'")
        return
    if source["type"] != "base64":
        return  # nothing to fetch here: the fake never reaches outside addresses
    media_type, data = source.get("media_type"), source.get("data")
    if media_type not in IMAGE_MEDIA_TYPES:
        problems.append(
            f"{where}.base64.media_type: Input should be 'image/jpeg', 'image/png', "
            f"'image/gif' or 'image/webp', got {media_type!r}"
        )
        return
    if not isinstance(data, str) or not data:
        problems.append(f"{where}.base64.data: must be a non-empty base64 string")
        return
    if len(data) > MAX_IMAGE_BYTES:
        problems.append(
            f"{where}.base64: image exceeds 5 MB maximum: {len(data)} bytes > {MAX_IMAGE_BYTES} bytes"
        )
        return
    found = decode_image(data)
    if isinstance(found, str):
        problems.append(f"{where}.base64: {found}")
        return
    actual, width, height = found
    if actual != media_type:
        problems.append(
            f"{where}.base64: Image does not match the provided media type {media_type}"
        )
        return
    if max(width, height) > MAX_IMAGE_PIXELS:
        problems.append(
            f"{where}.base64: image dimensions exceed max allowed size: {MAX_IMAGE_PIXELS} pixels"
        )
        return
    cache.images.append((where, width, height))


def _check_image_count(images: list[tuple[str, int, int]], problems: list[str]) -> None:
    if len(images) > MAX_IMAGES:
        problems.append(
            f"Too many images: {len(images)} in the request; the maximum is {MAX_IMAGES}"
        )
    elif len(images) > MANY_IMAGES:
        for where, width, height in images:
            if max(width, height) > MANY_IMAGES_PIXELS:
                problems.append(
                    f"{where}.base64: image dimensions exceed max allowed size for many-image "
                    f"requests: {MANY_IMAGES_PIXELS} pixels"
                )


def _check_tool_pairing(turns: list[_Turn], problems: list[str]) -> None:
    """Each tool_use answered in the very next user turn, results first, none stray."""
    seen_ids: set[str] = set()
    previous_ids: list[str] = []
    for t, (role, where, blocks) in enumerate(turns):
        if role == "assistant":
            ids: list[str] = []
            for path, block in blocks:
                use_id = block.get("id")
                if block["type"] != "tool_use" or not isinstance(use_id, str):
                    continue
                if use_id in seen_ids:
                    problems.append(f"{path}.id: tool_use ids must be unique, {use_id!r} repeats")
                seen_ids.add(use_id)
                ids.append(use_id)
            answered = set()
            if t + 1 < len(turns):
                answered = {
                    b.get("tool_use_id") for _, b in turns[t + 1][2] if b["type"] == "tool_result"
                }
            missing = [i for i in ids if i not in answered]
            if missing:
                problems.append(
                    f"{where}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message."
                )
            previous_ids = ids
            continue
        results_done = False
        answered_here: set[str] = set()
        for path, block in blocks:
            if block["type"] != "tool_result":
                results_done = True
                continue
            if results_done:
                problems.append(
                    f"{path}: tool_result blocks must come before any other content in the "
                    "user message that answers the tool_use blocks"
                )
            use_id = block.get("tool_use_id")
            if use_id not in previous_ids:
                problems.append(
                    f"{path}: unexpected `tool_use_id` found in `tool_result` blocks: {use_id}. "
                    "Each `tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message."
                )
            elif use_id in answered_here:
                problems.append(f"{path}: duplicate tool_result for tool_use_id {use_id}")
            answered_here.add(str(use_id))
        previous_ids = []
