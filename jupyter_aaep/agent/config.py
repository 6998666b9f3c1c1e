"""The agent's model settings, one object the server maps its traitlets onto."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..aaep.coalescer import Boundary
from .context import ContextSettings
from .prompts import SYSTEM_PROMPT
from .usage import PriceTable

DEFAULT_MODEL = "claude-sonnet-5-5"


@dataclass
class AgentConfig:
    """Model settings; the server maps its traitlets onto this."""

    model: str = DEFAULT_MODEL
    max_tokens: int = 8192
    max_turns: int = 25
    """Model turns per request before the session stops with a clear message."""
    system_prompt: str = SYSTEM_PROMPT
    extra_instructions: str = ""
    prompt_caching: bool = True
    cache_conversation: bool = True
    """A moving cache breakpoint on the last block of each request, so every turn reads the
    conversation so far from the prompt cache (needs ``prompt_caching``)."""
    output_boundary: Boundary = "sentence"
    context: ContextSettings = field(default_factory=ContextSettings)
    prices: PriceTable = field(default_factory=PriceTable)
    budget_usd: float | None = None
    """Estimated cost at which a chat stops asking the model; ``None`` for no budget."""
    announce_model: str | None = None
    """The model's name, said when the session starts ("Using Claude Sonnet 4.5."): set for
    the first session after the user chose a model."""
