"""Offline mode says it is offline: the picker offers the demo model, usage has tokens and no price.

The server is set up the way ``jupyter aaep-demo`` sets it up: the model endpoint is the offline
demo model (whose Models API lists only itself) and ``c.AAEPExtension.model`` names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from server_helpers import of_type

from jupyter_aaep.testing.demo_model import MODEL_ID, MODEL_LABEL, demo_model
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic


@pytest.fixture
def fake_model() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic(responder=demo_model, models=[(MODEL_ID, MODEL_LABEL)]).start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


@pytest.fixture
def aaep_config() -> dict[str, Any]:
    return {"model": MODEL_ID}


async def test_the_picker_offers_the_offline_demo_model_and_no_claude(api) -> None:
    status, body, _ = await api("models")
    assert status == 200, body
    assert body["default"] == MODEL_ID and body["default_label"] == "Offline demo model"
    assert body["models"] == [{"id": MODEL_ID, "label": "Offline demo model"}]
    assert not any("claude" in m["id"].lower() or "Claude" in m["label"] for m in body["models"])


async def test_usage_counts_tokens_and_offers_no_cost(api, new_chat, sse) -> None:
    chat_id = await new_chat("demo.ipynb")
    _, empty, _ = await api("chats", chat_id)
    assert empty["usage"]["estimated_cost_usd"] is None  # an empty chat shows no "≈ $0.00"
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "what can you do"},
        )
        assert status == 202
        await stream.until(of_type("session.completed"), timeout=20)
    _, view, _ = await api("chats", chat_id)
    usage = view["usage"]
    prompt = (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )
    assert usage["requests"] >= 1 and prompt > 0 and usage["output_tokens"] > 0, usage
    assert usage["estimated_cost_usd"] is None
    assert all(s["estimated_cost_usd"] is None for s in usage["sessions"])
