"""Token usage and its estimated cost, per session and per chat.

The Messages API reports four counts per request: uncached input, cache writes, cache reads
and output. They are priced per million tokens from a table keyed by model-name prefix (the
longest matching prefix wins), with cache writes at 1.25 times and cache reads at 0.1 times
the input price, as Anthropic bills the five-minute cache. The figures are estimates for the
user's orientation, not an invoice. A model priced ``None`` (the offline demo model) costs
nothing and says so: its tokens are counted, and no cost is offered at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..words import plural

__all__ = ["DEFAULT_PRICES", "ModelRequest", "Price", "PriceTable", "Usage"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float | None = None
    """Defaults to 1.25 x ``input``."""
    cache_read: float | None = None
    """Defaults to 0.1 x ``input``."""

    @property
    def write(self) -> float:
        return self.cache_write if self.cache_write is not None else self.input * 1.25

    @property
    def read(self) -> float:
        return self.cache_read if self.cache_read is not None else self.input * 0.1


DEFAULT_PRICES: Mapping[str, Price | None] = {
    # Current models (list prices, USD per million tokens).
    "claude-opus": Price(5.0, 25.0),
    "claude-sonnet": Price(3.0, 15.0),
    "claude-haiku": Price(1.0, 5.0),
    # Older generations that are still served.
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-2025": Price(15.0, 75.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
    "": Price(3.0, 15.0),  # anything else: priced like Sonnet, the usual default
    # The offline demo model (jupyter_aaep.testing.demo_model.MODEL_ID) runs on this computer.
    "aaep-offline-demo": None,
}


class PriceTable:
    """Prices by model-name prefix; ``overrides`` (e.g. from a traitlet) win over the defaults.

    An override is ``{"prefix": {"input": 3, "output": 15}}`` with optional ``cache_write``
    and ``cache_read``, or ``None`` for a model without a price (no cost is estimated).
    """

    def __init__(
        self, overrides: Mapping[str, Mapping[str, float] | Price | None] | None = None
    ) -> None:
        self.prices: dict[str, Price | None] = dict(DEFAULT_PRICES)
        for prefix, value in (overrides or {}).items():
            self.prices[prefix] = (
                value if value is None or isinstance(value, Price) else _price(prefix, value)
            )

    def for_model(self, model: str) -> Price | None:
        best = max((p for p in self.prices if model.startswith(p)), key=len)
        return self.prices[best]


def _price(prefix: str, value: Mapping[str, float]) -> Price:
    try:
        return Price(
            input=float(value["input"]),
            output=float(value["output"]),
            cache_write=None if value.get("cache_write") is None else float(value["cache_write"]),
            cache_read=None if value.get("cache_read") is None else float(value["cache_read"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"The price of {prefix!r} needs numbers for 'input' and 'output' (USD per million tokens), "
            f"optionally 'cache_write' and 'cache_read'; got {dict(value)!r}."
        ) from error


@dataclass
class Usage:
    """Token counts added up over requests, and what they cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0
    """Requests to a model without a price: once every request is one, no cost is offered."""
    on_request: Callable[[ModelRequest], None] | None = field(
        default=None, repr=False, compare=False
    )
    """Told of every model request the loop makes for this chat (the store's per-step records
    hook in here: the chat's usage is the one object the loop and the store both hold)."""

    def request_finished(self, record: ModelRequest) -> None:
        """Pass one request's outcome on; a failing listener never breaks the loop."""
        if self.on_request is None:
            return
        try:
            self.on_request(record)
        except Exception:  # recording a step must not end a session
            log.exception("recording a model request failed")

    def add(self, reported: Any, price: Price | None) -> Usage:
        """Add one response's ``usage``; returns that request's own counts (``price`` is
        ``None`` for a model that has none)."""
        one = Usage(
            input_tokens=_count(reported, "input_tokens"),
            output_tokens=_count(reported, "output_tokens"),
            cache_read_tokens=_count(reported, "cache_read_input_tokens"),
            cache_write_tokens=_count(reported, "cache_creation_input_tokens"),
            requests=1,
        )
        if price is None:
            one.unpriced_requests = 1
            self.merge(one)
            return one
        one.cost_usd = (
            one.input_tokens * price.input
            + one.output_tokens * price.output
            + one.cache_write_tokens * price.write
            + one.cache_read_tokens * price.read
        ) / 1_000_000
        self.merge(one)
        return one

    def merge(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.requests += other.requests
        self.cost_usd += other.cost_usd
        self.unpriced_requests += other.unpriced_requests

    @property
    def priced(self) -> bool:
        """Whether a cost can be estimated: some request was to a model with a price. An empty
        chat has no price to show (the offline demo's empty chat said "≈ $0.00")."""
        return self.unpriced_requests < self.requests

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token sent, however it was served."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_tokens,
            "cache_creation_input_tokens": self.cache_write_tokens,
            # null for a model without a price (the offline demo model): tokens, no cost.
            "estimated_cost_usd": round(self.cost_usd, 6) if self.priced else None,
        }

    def sentence(self) -> str:
        """One sentence for people, e.g. in a session's detailed summary."""
        if not self.requests:
            return "No model requests were made."
        cached = (
            f", {self.cache_read_tokens:,} of them read from the cache"
            if self.cache_read_tokens
            else ""
        )
        cost = f", about {dollars(self.cost_usd)}" if self.priced else ""
        return (
            f"{plural(self.requests, 'model request')} used "
            f"{_tokens(self.prompt_tokens, 'prompt')}{cached} and {_tokens(self.output_tokens, 'output')}{cost}."
        )


@dataclass(frozen=True)
class ModelRequest:
    """One model request as a step: who made it, how it went, how long it took, its tokens."""

    session_id: str
    model: str
    status: str
    """``"success"`` or ``"error"``."""
    latency_ms: int
    usage: Usage | None = None
    """That request's own counts (``None`` when it failed)."""
    text: str = ""
    """A short description, e.g. "The model asked for 2 tools."."""
    error: str | None = None


def _tokens(count: int, kind: str) -> str:
    return plural(count, f"{kind} token", thousands=True)


def dollars(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


def _count(reported: Any, name: str) -> int:
    value = reported.get(name) if isinstance(reported, Mapping) else getattr(reported, name, None)
    return int(value) if isinstance(value, int) else 0
