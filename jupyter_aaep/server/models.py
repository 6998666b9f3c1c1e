"""The models a chat can use: from the Models API where the endpoint offers it, else configured.

The panel's model picker lists them (``GET /aaep/v1/models``); a chat's choice is checked
against the same list (``{"kind": "model", "model": ...}``). The Models API
(``client.models.list()``) is asked at most once every ``ttl`` seconds (a listing that failed
is asked again after ``retry_after``: a slow moment must not hide the list for ten minutes); an
endpoint without it
(an Anthropic-compatible server that answers 404, or no key yet) falls back to the configured
list (``c.AAEPExtension.models``), which always holds the configured default model.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SettingLocked

__all__ = ["ModelCatalog", "ModelChoice", "model_label"]

log = logging.getLogger(__name__)


def model_label(model_id: str) -> str:
    """A name people can say for a model id: "claude-sonnet-4-5" → "Claude Sonnet 4.5",
    "claude-3-5-haiku-20241022" → "Claude 3.5 Haiku"; other ids stay as they are."""
    parts = model_id.split("-")
    if parts[0] != "claude" or len(parts) < 2:
        return model_id
    if re.fullmatch(r"\d{8}", parts[-1]):
        parts = parts[:-1]  # the snapshot date
    words: list[str] = []
    numbers: list[str] = []
    for part in parts:
        if part.isdigit() and len(part) <= 2:
            numbers.append(part)
            continue
        if numbers:
            words.append(".".join(numbers))
            numbers = []
        words.append(part.capitalize())
    if numbers:
        words.append(".".join(numbers))
    return " ".join(words)


@dataclass(frozen=True)
class ModelChoice:
    model_id: str
    label: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.model_id, "label": self.label}


class ModelCatalog:
    """Parameters
    ----------
    client_factory
        The model client (the same as the sessions'), asked for ``models.list()``.
    default
        The configured model (``c.AAEPExtension.model``): always offered, and the default.
    configured
        What to offer when the endpoint has no Models API (the default is added if missing).
    """

    def __init__(
        self,
        client_factory: Callable[[], Any],
        *,
        default: str,
        configured: Sequence[str] = (),
        ttl: float = 600.0,
        retry_after: float = 20.0,
        timeout: float = 5.0,
        locked: bool = False,
    ) -> None:
        self.client_factory = client_factory
        self.locked = locked
        """The administrator fixed the list (``c.AAEPExtension.lock_models``): only ``configured``."""
        self.default = default
        self.configured = list(dict.fromkeys([default, *configured]))
        self.ttl = ttl
        self.retry_after = retry_after
        self.timeout = timeout
        self._listed: list[ModelChoice] | None = None
        self._when = 0.0
        self._lock = asyncio.Lock()
        self.source = "configured"
        self.note: str | None = None

    def _fallback(self) -> list[ModelChoice]:
        return [ModelChoice(m, model_label(m)) for m in self.configured]

    async def models(self) -> list[ModelChoice]:
        """The models on offer (the API's list, newest first, with the default first)."""
        async with self._lock:
            kept = (
                self.ttl if self.source != "configured" or self.note is None else self.retry_after
            )
            if self._listed is not None and time.monotonic() - self._when < kept:
                return self._listed
            if self.locked:
                self.source, self.note, self._listed = "policy", None, self._fallback()
                self._when = time.monotonic()
                return self._listed
            try:
                # The client is built (the SDK imported, on a lazy start) before the clock
                # starts: only the endpoint's answer is timed.
                ready = getattr(self.client_factory, "ready", None)
                if ready is not None:
                    await ready()  # an SDK import under way on another thread ends first
                client = self.client_factory()
                found = await asyncio.wait_for(self._from_api(client), self.timeout)
            except Exception as error:  # noqa: BLE001 - any failure: the configured list, and why
                found = None
                self.note = (
                    f"The model endpoint did not list its models ({type(error).__name__}); "
                    "showing the configured list (c.AAEPExtension.models)."
                )
                log.info("AAEP agent: %s", self.note)
            if found:
                self.source, self.note = "api", None
                ids = {m.model_id for m in found}
                extra = [ModelChoice(m, model_label(m)) for m in self.configured if m not in ids]
                self._listed = _default_first([*found, *extra], self.default)
            else:
                self.source = "configured"
                self._listed = self._fallback()
            self._when = time.monotonic()
            return self._listed

    @staticmethod
    async def _from_api(client: Any) -> list[ModelChoice]:
        page = await client.models.list(limit=100)
        return [
            ModelChoice(str(m.id), str(getattr(m, "display_name", "") or model_label(str(m.id))))
            for m in page.data
        ]

    async def describe(self) -> dict[str, Any]:
        """The body of ``GET /aaep/v1/models``."""
        listed = await self.models()
        return {
            "default": self.default,
            "default_label": self.label(self.default),
            "source": self.source,
            "note": self.note,
            "models": [m.to_json() for m in listed],
        }

    def label(self, model_id: str) -> str:
        for choice in self._listed or []:
            if choice.model_id == model_id:
                return choice.label
        return model_label(model_id)

    async def check(self, model_id: str) -> ModelChoice:
        """The offered model named *model_id*; ``ValueError`` with a sentence otherwise."""
        listed = await self.models()
        for choice in listed:
            if choice.model_id == model_id:
                return choice
        names = ", ".join(m.model_id for m in listed[:12])
        if self.locked:
            raise SettingLocked(
                f"The administrator of this server allows only these models: {names}. "
                f"{model_id!r} is not one of them; the chat keeps its current model."
            )
        raise ValueError(f"{model_id!r} is not one of the models this server can use ({names})")


def _default_first(models: list[ModelChoice], default: str) -> list[ModelChoice]:
    first = [m for m in models if m.model_id == default]
    if not first:
        first = [ModelChoice(default, model_label(default))]
    return [*first, *(m for m in models if m.model_id != default)]
