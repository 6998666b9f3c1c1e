"""The fake Messages API checks image blocks like the service and counts them by their pixels."""

from __future__ import annotations

import base64
import io

import anthropic
import pytest
from PIL import Image

from jupyter_aaep.testing._prompt import count_tokens, image_tokens
from jupyter_aaep.testing._validation import validate_request
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

HEADERS = {"anthropic-version": "2023-06-01"}


def encoded(width: int = 30, height: int = 20, fmt: str = "PNG") -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode()


def image(data: str, media_type: str = "image/png") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def request(*blocks: dict, role: str = "user") -> dict:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Look"}, *blocks]}]
    if role == "assistant":
        messages = [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": list(blocks)},
        ]
    return {"model": "m", "max_tokens": 10, "messages": messages}


def in_result(*blocks: dict) -> dict:
    return {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "Run it"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "run_cell", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "ran"}, *blocks],
                    }
                ],
            },
        ],
    }


def test_valid_images_pass_in_messages_and_tool_results() -> None:
    for fmt, mime in (
        ("PNG", "image/png"),
        ("JPEG", "image/jpeg"),
        ("GIF", "image/gif"),
        ("WEBP", "image/webp"),
    ):
        assert validate_request(request(image(encoded(fmt=fmt), mime)), HEADERS) == []
        assert validate_request(in_result(image(encoded(fmt=fmt), mime)), HEADERS) == []


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (image(encoded(), "image/bmp"), "media_type: Input should be 'image/jpeg'"),
        (
            image(encoded(fmt="JPEG"), "image/png"),
            "Image does not match the provided media type image/png",
        ),
        (image("not base64!!"), "not valid base64"),
        (
            image(base64.b64encode(b"plain bytes, no image").decode()),
            "not a JPEG, PNG, GIF or WebP",
        ),
        (image(""), "must be a non-empty base64 string"),
        (
            {"type": "image", "source": {"type": "bytes"}},
            "must be an object with type 'base64', 'url' or 'file'",
        ),
        (image(encoded(8001, 2)), "image dimensions exceed max allowed size: 8000 pixels"),
    ],
)
def test_bad_images_are_refused_with_the_service_s_words(block: dict, expected: str) -> None:
    for body in (request(block), in_result(block)):
        problems = validate_request(body, HEADERS)
        assert len(problems) == 1 and expected in problems[0], problems


def test_size_count_and_place_limits() -> None:
    big = "A" * (5 * 1024 * 1024 + 4)
    assert "image exceeds 5 MB maximum" in validate_request(request(image(big)), HEADERS)[0]
    assert "may only appear in user messages" in " ".join(
        validate_request(request(image(encoded()), role="assistant"), HEADERS)
    )
    small = image(encoded(10, 10))
    assert validate_request(request(*[small] * 100), HEADERS) == []
    assert "Too many images: 101" in validate_request(request(*[small] * 101), HEADERS)[0]
    # Past 20 images, each may be at most 2000 pixels on a side.
    wide = image(encoded(2100, 4))
    assert validate_request(request(wide, *[small] * 19), HEADERS) == []
    problems = validate_request(request(wide, *[small] * 20), HEADERS)
    assert len(problems) == 1 and "many-image requests: 2000 pixels" in problems[0]
    weird = in_result({"type": "thinking", "thinking": "x"})
    assert "tool_result content blocks must be text, image" in validate_request(weird, HEADERS)[0]


def test_images_count_by_pixels_not_by_base64() -> None:
    data = encoded(750, 400)
    assert image_tokens(data) == 400
    with_image = count_tokens(request(image(data)))
    without = count_tokens(request())
    assert 400 < with_image - without <= 425  # the pixels, plus the block's JSON without its data
    assert len(data) // 4 != 400  # base64 as text would count something else
    assert 1500 <= image_tokens(encoded(3000, 3000)) <= 1600  # scaled down as the service does


def test_the_sdk_gets_a_400_and_the_fake_records_the_problem() -> None:
    with FakeAnthropic([Turn(text="I see a square.")]) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
        with pytest.raises(
            anthropic.BadRequestError, match="does not match the provided media type"
        ):
            client.messages.create(**request(image(encoded(fmt="JPEG"), "image/png")))
        reply = client.messages.create(**request(image(encoded(750, 400))))
        client.close()
    assert reply.content[0].text == "I see a square."
    assert [len(r.images) for r in fake.requests] == [1, 1]
    assert fake.requests[1].prompt_tokens is not None and fake.requests[1].prompt_tokens < 1000
    assert len(fake.problems) == 1 and "media type image/png" in fake.problems[0]
