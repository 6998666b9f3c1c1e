"""The model list: a slow start or one failed listing does not hide the endpoint's models."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from jupyter_aaep.server.models import ModelCatalog


class _Models:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def list(self, limit: int) -> Any:
        self.calls += 1
        await asyncio.sleep(0.01)  # an answer over the network
        if self.calls <= self.failures:
            raise ConnectionError("the endpoint is busy")
        return SimpleNamespace(data=[SimpleNamespace(id="claude-opus-9", display_name="Opus 9")])


async def test_building_the_client_is_not_timed() -> None:
    models = _Models(failures=0)

    def slow_factory() -> Any:
        time.sleep(0.3)  # the SDK imported on first use, on a loaded machine
        return SimpleNamespace(models=models)

    catalog = ModelCatalog(slow_factory, default="claude-sonnet-5-5", timeout=0.1)
    listed = await catalog.models()
    assert catalog.source == "api" and catalog.note is None
    assert [m.model_id for m in listed] == ["claude-sonnet-5-5", "claude-opus-9"]


async def test_a_failed_listing_is_asked_again_soon_and_a_good_one_is_kept() -> None:
    models = _Models(failures=1)
    catalog = ModelCatalog(lambda: SimpleNamespace(models=models), default="claude-sonnet-5-5")
    catalog.retry_after = 0.0
    first = await catalog.models()
    assert catalog.source == "configured" and "did not list its models" in (catalog.note or "")
    assert [m.model_id for m in first] == ["claude-sonnet-5-5"]
    second = await catalog.models()
    assert catalog.source == "api" and "claude-opus-9" in [m.model_id for m in second]
    await catalog.models()
    assert models.calls == 2  # a good listing is kept for the ttl
