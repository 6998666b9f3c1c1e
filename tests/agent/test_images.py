"""Images in the conversation: their token cost, and only the most recent ones kept per request."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image

from jupyter_aaep.agent._images import (
    IMAGE_REMOVED,
    image_size,
    image_tokens,
    limit_images,
    strip_image_data,
)
from jupyter_aaep.agent.context import (
    ContextManager,
    ContextSettings,
    ContextState,
    estimate_tokens,
)


def encoded(width: int, height: int, fmt: str = "PNG") -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode()


def image_block(width: int = 40, height: int = 30, fmt: str = "PNG") -> dict:
    mime = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}[fmt]
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": mime, "data": encoded(width, height, fmt)},
    }


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_the_size_is_read_from_the_header_of_every_format(fmt: str) -> None:
    assert image_size(encoded(321, 123, fmt)) == (321, 123)


def test_unknown_or_broken_data_has_no_size_and_costs_the_most() -> None:
    assert image_size(base64.b64encode(b"not an image at all").decode()) is None
    assert image_size("%%%not base64") is None
    assert image_tokens({"type": "image", "source": {"type": "base64", "data": "AAAA"}}) == 1600
    assert (
        image_tokens(
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/x.png"}}
        )
        == 1600
    )


def test_tokens_follow_the_pixels_as_the_api_bills_them() -> None:
    assert image_tokens(image_block(750, 100)) == 100
    # Scaled to 1568 on its long side and about 1.15 megapixels, whatever its size.
    assert 1500 <= image_tokens(image_block(4000, 3000)) <= 1600


def test_an_image_is_estimated_by_its_pixels_not_its_base64() -> None:
    block = image_block(750, 200)
    as_text = len(json.dumps(block)) // 4
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "Cell 1 ran."}, block],
    }
    estimate = estimate_tokens(result)
    assert 200 <= estimate < 260 and estimate < as_text
    bare, images = strip_image_data(result)
    assert images == 200 and bare["content"][1]["source"]["data"] == ""
    assert estimate_tokens("plain text of eight") == 5  # text is unchanged: four characters a token


def conversation(images: int) -> list[dict]:
    history: list[dict] = [
        {"role": "user", "content": [{"type": "text", "text": "Plot it"}, image_block()]}
    ]
    for n in range(images - 1):
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "run_cell", "input": {}}
                ],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{n}",
                        "content": [{"type": "text", "text": f"run {n}"}, image_block()],
                    }
                ],
            }
        )
    return history


def count_images(history: list[dict]) -> int:
    return sum(
        1
        for m in history
        for b in m["content"]
        for inner in (
            [b]
            if b.get("type") == "image"
            else b.get("content")
            if isinstance(b.get("content"), list)
            else []
        )
        if inner.get("type") == "image"
    )


def test_only_the_most_recent_images_are_kept() -> None:
    history = conversation(5)
    assert limit_images(history, 2) == 3
    assert count_images(history) == 2
    # The oldest went first: the user's own image, then the first two results; each says why.
    assert history[0]["content"][1] == {"type": "text", "text": IMAGE_REMOVED}
    first_result = history[2]["content"][0]["content"]
    assert first_result == [
        {"type": "text", "text": "run 0"},
        {"type": "text", "text": IMAGE_REMOVED},
    ]
    assert history[-1]["content"][0]["content"][1]["type"] == "image"
    assert limit_images(history, 2) == 0  # nothing more to do
    assert limit_images(history, 0) == 2 and count_images(history) == 0


def test_the_context_manager_applies_the_image_limit_before_every_request() -> None:
    history = conversation(4)
    manager = ContextManager(
        ContextSettings(max_images=1), ContextState(), model="claude-test", max_tokens=1000
    )
    manager.prepare(history, 100, request_start=True)
    assert count_images(history) == 1
    off = conversation(3)
    ContextManager(
        ContextSettings(strategy="off", max_images=2), ContextState(), model="m", max_tokens=1000
    ).prepare(off, 10)
    assert count_images(off) == 2  # even when context management is off: the API limits images too


def test_every_webp_kind_and_odd_jpeg_headers() -> None:
    def webp(**options: object) -> str:
        out = io.BytesIO()
        Image.new("RGBA", (33, 17), (1, 2, 3, 128)).save(out, format="WEBP", **options)
        return base64.b64encode(out.getvalue()).decode()

    assert image_size(webp(lossless=True)) == (33, 17)  # VP8L
    assert image_size(webp(lossless=False, exact=True)) == (33, 17)  # VP8X (alpha)
    raw = base64.b64decode(encoded(20, 10, "JPEG"))
    # A fill byte and a restart marker before the frame header are skipped, as decoders do.
    padded = raw[:2] + b"\xff\x01" + raw[2:]
    assert image_size(base64.b64encode(padded).decode()) == (20, 10)
    broken = raw[:2] + b"\x00\x00" + raw[2:]
    assert image_size(base64.b64encode(broken).decode()) is None
    riff = base64.b64encode(b"RIFF\x00\x00\x00\x00WEBPXXXX" + b"\x00" * 20).decode()
    assert image_size(riff) is None


def test_text_only_and_assistant_messages_are_left_alone() -> None:
    history = [
        {"role": "user", "content": "Plot it"},
        {"role": "assistant", "content": [{"type": "text", "text": "Done"}]},
        {"role": "user", "content": [image_block(), image_block()]},
    ]
    assert limit_images(history, 1) == 1
    assert history[0]["content"] == "Plot it" and history[1]["content"] == [
        {"type": "text", "text": "Done"}
    ]
    assert [b["type"] for b in history[2]["content"]] == ["text", "image"]
