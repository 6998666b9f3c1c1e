"""What a coding agent's prompt used, added to the chat's token and cost meter like our sessions.

ACP reports usage in two places (claude-agent-acp 0.23.1): the answer to ``session/prompt``
carries that prompt's tokens (``usage``: ``inputTokens``, ``outputTokens``,
``cachedReadTokens``, ``cachedWriteTokens``), and ``usage_update`` carries the ACP session's
cost so far (``cost.amount``, cumulative). A prompt's cost is therefore the cumulative figure
minus what earlier prompts of the same ACP session were already charged; a new ACP session
starts at zero. A cost in another currency than USD, or none, is not guessed: the tokens are
counted and no cost is offered for them (as for a model without a price).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..agent.usage import Usage
from .narration import Narrator

__all__ = ["CostMeter"]


@dataclass
class CostMeter:
    """The cost already counted for the current ACP session (kept across its prompts)."""

    charged_usd: float = 0.0

    def new_session(self) -> None:
        self.charged_usd = 0.0

    def prompt_usage(self, reported: Any, narrator: Narrator) -> Usage:
        """One prompt's usage: its tokens from the answer's ``usage`` (if any), its cost from the
        narrator's last ``usage_update`` less what was counted before. Empty when the agent said
        nothing (no request is counted then)."""
        counts = reported if isinstance(reported, dict) else {}
        one = Usage(
            input_tokens=_count(counts.get("inputTokens")),
            output_tokens=_count(counts.get("outputTokens")),
            cache_read_tokens=_count(counts.get("cachedReadTokens")),
            cache_write_tokens=_count(counts.get("cachedWriteTokens")),
        )
        cost = narrator.cost
        if cost is not None and cost[0] < self.charged_usd:  # the agent started counting anew
            self.charged_usd = 0.0
        if cost is not None and cost[1] == "USD":
            one.cost_usd = cost[0] - self.charged_usd
            self.charged_usd = cost[0]
            one.requests = 1
        elif one.input_tokens or one.output_tokens or one.cache_read_tokens:
            one.requests = one.unpriced_requests = 1
        return one


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
