"""Images in the conversation: what they cost in tokens, and how many stay in it.

An image block is mostly base64, so counting it as text (four characters a token) would make
one plot look like 40 000 tokens; the Messages API bills about ``width × height / 750`` tokens
for it after scaling it to fit 1568 pixels and about 1.15 megapixels, so at most about 1600.
The size is read from the image's header (PNG, GIF, JPEG, WebP), without decoding it.

Each request keeps only the most recent images (``ContextSettings.max_images``); older ones are
replaced by a short note, so a long session of plotting stays bounded and the model knows it
can look again.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

__all__ = ["IMAGE_REMOVED", "image_size", "image_tokens", "limit_images", "strip_image_data"]

MAX_IMAGE_TOKENS = 1600
IMAGE_REMOVED = (
    "[An image that was here was removed to keep the conversation small (only the most recent "
    "images are kept). Call the tool that showed it again if you need to see it.]"
)


def image_size(data: str) -> tuple[int, int] | None:
    """``(width, height)`` from the header of a base64 PNG, GIF, JPEG or WebP, or ``None``."""
    head = data[:87_384]  # about 64 KB of bytes: enough to reach a JPEG's frame header
    try:
        raw = base64.b64decode(head[: len(head) - len(head) % 4], validate=False)
    except (binascii.Error, ValueError):
        return None
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return int(width), int(height)
    if raw[:4] == b"GIF8" and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return int(width), int(height)
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP" and len(raw) >= 30:
        return _webp_size(raw)
    if raw[:2] == b"\xff\xd8":
        return _jpeg_size(raw)
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(raw[24:27], "little") + 1
        height = int.from_bytes(raw[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L" and len(raw) >= 25:
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and len(raw) >= 30:
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", raw[i + 2 : i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def image_tokens(block: dict[str, Any]) -> int:
    """What the API bills for one image block (``MAX_IMAGE_TOKENS`` when the size is unknown)."""
    source = block.get("source")
    data = source.get("data") if isinstance(source, dict) else None
    size = image_size(data) if isinstance(data, str) else None
    if size is None or min(size) <= 0:
        return MAX_IMAGE_TOKENS
    width, height = size
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return max(1, min(MAX_IMAGE_TOKENS, math.ceil(width * scale * height * scale / 750)))


def strip_image_data(value: Any) -> tuple[Any, int]:
    """*value* with every image's data left out, and the tokens those images cost."""
    if isinstance(value, list):
        items = [strip_image_data(item) for item in value]
        return [item for item, _ in items], sum(tokens for _, tokens in items)
    if not isinstance(value, dict):
        return value, 0
    if value.get("type") == "image":
        source = value.get("source")
        bare = {**source, "data": ""} if isinstance(source, dict) else source
        return {**value, "source": bare}, image_tokens(value)
    total = 0
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, (list, dict)):
            out[key], tokens = strip_image_data(item)
            total += tokens
        else:
            out[key] = item
    return out, total


def _images_in(block: dict[str, Any]) -> int:
    if block.get("type") == "image":
        return 1
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, list):
        return sum(
            1 for inner in content if isinstance(inner, dict) and inner.get("type") == "image"
        )
    return 0


def limit_images(history: list[dict[str, Any]], keep: int) -> int:
    """Keep the *keep* most recent images of the user's side of *history*; replace the others
    with :data:`IMAGE_REMOVED`. Returns how many were removed."""
    total = sum(
        _images_in(b)
        for m in history
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict)
    )
    excess = total - max(0, keep)
    removed = 0
    for index, message in enumerate(history):
        if excess <= removed:
            break
        if message["role"] != "user" or not isinstance(message["content"], list):
            continue
        blocks: list[Any] = []
        changed = False
        for block in message["content"]:
            if removed < excess and isinstance(block, dict) and block.get("type") == "image":
                blocks.append({"type": "text", "text": IMAGE_REMOVED})
                removed += 1
                changed = True
            elif removed < excess and isinstance(block, dict) and _images_in(block):
                inner, count = _without_images(block["content"], excess - removed)
                blocks.append({**block, "content": inner})
                removed += count
                changed = True
            else:
                blocks.append(block)
        if changed:
            history[index] = {**message, "content": blocks}
    return removed


def _without_images(content: list[Any], most: int) -> tuple[list[Any], int]:
    """A tool result's content with up to *most* images replaced by one note."""
    out: list[Any] = []
    removed = 0
    for inner in content:
        if removed < most and isinstance(inner, dict) and inner.get("type") == "image":
            if removed == 0:
                out.append({"type": "text", "text": IMAGE_REMOVED})
            removed += 1
        else:
            out.append(inner)
    return out, removed
