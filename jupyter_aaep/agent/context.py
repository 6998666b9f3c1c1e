"""Keeping a chat's conversation inside the model's context window, and cheap to resend.

Four mechanisms, cheapest first:

0. **Unchanged results are not sent twice.** A tool result identical to an earlier one still in
   the conversation (the agent reading an unchanged notebook again) is sent as a one-line
   reference to it. Clearing or compacting the original moves its content into the first
   reference that stays, so no reference ever points at nothing.
1. **Clearing old tool results.** A tool result is replaced by a one-line placeholder that
   names the tool and says it can be called again. Clearing changes the prompt, so everything
   after the first cleared block is written to the prompt cache again. To pay that rarely and
   little, clearing happens in one batch, at the start of a user request (when little follows
   the cleared blocks), once the prompt plus the growth of a recent request would pass the
   *high-water mark*; it then takes every earlier result, so the prompt grows for several
   requests before the next batch. Within a request, results older than the ``keep`` most
   recent are cleared only if the prompt passes the mark anyway.
2. **The Messages API's own context editing** (``context_management`` with the
   ``clear_tool_uses_20250919`` edit, beta ``context-management-2025-06-27``), when the server
   offers it: within a request, the server (which counts tokens exactly) clears old tool
   results at the high-water mark, instead of the client clearing on its estimate. When a
   response reports that it did, the same results are cleared in the history too, so the
   following requests stay below the trigger and keep reading one stable prefix from the
   cache (the server would otherwise move the cleared boundary, and miss the cache, on every
   turn). A server that refuses the parameter (400 naming it) is remembered for the chat and
   the client clears instead.
3. **Compacting old turns.** When the turns themselves, with every old tool result cleared,
   still pass the high-water mark, the oldest requests are folded into one deterministic
   summary (what was asked, which tools ran, how the agent answered) at the start of the
   history, down to the *low-water mark*. Whole requests are folded, so every remaining
   ``tool_use`` still has its ``tool_result``.

Token counts are estimated at about four characters a token over the JSON of each block, and
calibrated against the prompt sizes the API reports. A "prompt is too long" answer recalibrates,
compacts and retries; a request that cannot fit even then (one tool result larger than the
window) raises :class:`ContextTooLarge`, naming the tool.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..words import plural
from ._history_edits import (
    SUMMARY_HEADER,
    Message,
    blocks_of,
    clear_tool_results,
    compact,
    dedupe_results,
    tool_names,
)
from ._images import limit_images, strip_image_data

__all__ = [
    "CONTEXT_MANAGEMENT_BETA",
    "DEFAULT_CONTEXT_WINDOWS",
    "SUMMARY_HEADER",
    "ContextManager",
    "ContextReport",
    "ContextSettings",
    "ContextState",
    "ContextTooLarge",
    "clear_tool_results",
    "compact",
    "dedupe_results",
    "estimate_tokens",
    "parse_too_long",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
Strategy = Literal["auto", "server", "client", "off"]
DEFAULT_CONTEXT_WINDOWS: Mapping[str, int] = {"": 200_000}
"""Context window by model-name prefix (longest wins); every current Claude model has 200 000."""
_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum")


def estimate_tokens(value: object) -> int:
    """About four characters a token over the compact JSON of *value*; an image counts what the
    API bills for its size (``_images``), not its base64."""
    if isinstance(value, str):
        return max(1, math.ceil(len(value) / 4))
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if '"type":"image"' not in text:
        return max(1, math.ceil(len(text) / 4))
    bare, images = strip_image_data(value)
    return max(
        1, math.ceil(len(json.dumps(bare, separators=(",", ":"), ensure_ascii=False)) / 4) + images
    )


def parse_too_long(message: str) -> tuple[int, int] | None:
    """``(prompt tokens, maximum)`` from the API's "prompt is too long" error, if it is one."""
    match = _TOO_LONG.search(message)
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclass
class ContextSettings:
    """How a chat's context is bounded; the server maps its traitlets onto this."""

    window: int | None = None
    """Context window in tokens; ``None`` looks the model up in ``windows``."""
    windows: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_CONTEXT_WINDOWS))
    strategy: Strategy = "auto"
    """``auto``: the server's context editing where offered, client-side clearing otherwise;
    ``server``/``client``: prefer one; ``off``: send everything (a long chat will fail)."""
    high_water: float = 0.75
    """Share of the usable window at which old tool results are cleared (or turns compacted)."""
    low_water: float = 0.45
    """Share of the usable window compaction brings the prompt down to."""
    keep_tool_results: int = 3
    """Most recent tool results never cleared by a batch."""
    max_images: int = 4
    """Images (figures from cell outputs) sent with one request; older ones become a note."""

    def window_for(self, model: str) -> int:
        if self.window:
            return self.window
        table = {**DEFAULT_CONTEXT_WINDOWS, **self.windows}
        return table[max((p for p in table if model.startswith(p)), key=len)]


@dataclass
class ContextState:
    """What a chat has learned about its server and its prompts (kept across sessions)."""

    server_edits: bool | None = None
    """Whether the server accepts ``context_management``; ``None`` until it was tried."""
    ratio: float = 1.0
    """The server's token count over our estimate, from the last response."""
    window: int | None = None
    """A smaller window the server announced ("… > M maximum"), which wins over the settings."""
    compactions: int = 0
    """How many times this chat's context was cleared or summarised."""
    growths: list[int] = field(default_factory=list)
    """Tokens the last few requests added to the conversation (their tool calls and results)."""
    rules_told: tuple[Any, ...] | None = None
    """Which rules files the chat was last told apply (``None``: not yet told)."""


@dataclass
class ContextReport:
    """What one pass did to the history."""

    cleared: int = 0
    summarised: int = 0
    """Earlier requests folded into the summary."""

    def __bool__(self) -> bool:
        return bool(self.cleared or self.summarised)

    def merge(self, other: ContextReport) -> None:
        self.cleared += other.cleared
        self.summarised += other.summarised

    def sentence(self) -> str:
        """The one sentence the user hears."""
        results = plural(self.cleared, "old tool result")
        if self.summarised and self.cleared:
            return (
                f"Earlier parts of this chat were summarised and {results} set aside to stay within "
                "the model's context window; the agent keeps working."
            )
        if self.summarised:
            return "Earlier parts of this chat were summarised to stay within the model's context window; the agent keeps working."
        return (
            f"To stay within the model's context window, {results} "
            f"{'were' if self.cleared != 1 else 'was'} set aside; the agent can run those tools again if needed."
        )


class ContextTooLarge(Exception):
    """One request is larger than the window even with everything older cleared."""

    def __init__(
        self, *, tool: str | None, tokens: int, limit: int, subject: str = "Your message"
    ) -> None:
        self.tool, self.tokens, self.limit = tool, tokens, limit
        what = f"The result of the tool {tool}" if tool else subject
        super().__init__(
            f"{what} is about {tokens:,} tokens, more than the {limit:,} tokens the model's context "
            "window leaves for the conversation, so it could not be sent."
        )

    @property
    def hint(self) -> str:
        if self.tool:
            return (
                f"It was left out of the conversation. Ask for a smaller part (for example a range of "
                f"cells, or without outputs) so {self.tool} returns less, or clear large outputs first."
            )
        return (
            "It was left out of the conversation. Send a shorter message, or split it into parts."
        )


class ContextManager:
    """Applies :class:`ContextSettings` to one chat's history before each model request."""

    def __init__(
        self, settings: ContextSettings, state: ContextState, *, model: str, max_tokens: int
    ) -> None:
        self.settings = settings
        self.state = state
        self.max_tokens = max_tokens
        self._size(min(settings.window_for(model), state.window or settings.window_for(model)))
        self.pending = ContextReport()
        """Edits the server made that were mirrored into the history, not yet announced."""
        self.growth = 0
        """Tokens this request has added so far."""
        self._memo: dict[int, tuple[object, int]] | None = None
        """Block sizes during one :meth:`prepare`, which estimates the same blocks up to five
        times (its edits replace blocks, never change one): 6 ms of each model turn before."""

    def _size(self, window: int) -> None:
        self.window = window
        # Room left for the answer: the turn's max_tokens, but never more than a quarter.
        self.usable = window - min(self.max_tokens, window // 4)
        self.high = int(self.usable * self.settings.high_water)
        self.low = int(self.usable * self.settings.low_water)

    @property
    def enabled(self) -> bool:
        return self.settings.strategy != "off"

    @property
    def server_active(self) -> bool:
        return self.settings.strategy in ("auto", "server") and self.state.server_edits is not False

    # -- estimates -------------------------------------------------------------------------------
    def estimate(self, fixed: int, history: list[Message]) -> int:
        """Prompt tokens as the server will count them (calibrated estimate)."""
        raw = fixed + sum(self._tokens(b) for m in history for b in blocks_of(m["content"]))
        return math.ceil(raw * self.state.ratio)

    def _tokens(self, block: dict[str, Any]) -> int:
        memo = self._memo
        if memo is None:
            return estimate_tokens(block)
        known = memo.get(id(block))
        if known is not None and known[0] is block:
            return known[1]
        size = estimate_tokens(block)
        memo[id(block)] = (block, size)  # the block is held, so its id is not reused meanwhile
        return size

    def _estimate_cleared(self, fixed: int, history: list[Message], keep: int) -> int:
        """The estimate if every clearable tool result were cleared now."""
        trial = list(history)
        clear_tool_results(trial, keep)
        return self.estimate(fixed, trial)

    @property
    def expected_growth(self) -> int:
        """What a request is expected to add: the most a recent request added."""
        return max(self.state.growths, default=0)

    def grew(self, blocks: list[dict[str, Any]]) -> None:
        """Count blocks this request added (the model's turn, the tool results)."""
        self.growth += math.ceil(sum(estimate_tokens(b) for b in blocks) * self.state.ratio)

    def finish_request(self) -> None:
        """Remember this request's growth for the next request's forecast (last five kept)."""
        self.state.growths = [*self.state.growths, self.growth][-5:]
        self.growth = 0

    # -- before a request -------------------------------------------------------------------------
    def prepare(
        self, history: list[Message], fixed: int, *, request_start: bool = False
    ) -> ContextReport:
        """Clear, compact or refuse so the next request fits; returns what changed (to announce).

        *request_start* marks the first model request of a user request: the cheap moment to
        clear in a batch, since only the new message follows the cleared blocks.
        """
        report, self.pending = self.pending, ContextReport()
        limit_images(history, self.settings.max_images)  # even with "off": the API caps images too
        if not self.enabled:
            return report
        self._memo = {}
        try:
            return self._make_room(history, fixed, report, request_start=request_start)
        finally:
            self._memo = None

    def _make_room(
        self, history: list[Message], fixed: int, report: ContextReport, *, request_start: bool
    ) -> ContextReport:
        expected = self.expected_growth if request_start else 0
        keep = 0 if request_start else self.settings.keep_tool_results
        estimate = self.estimate(fixed, history)
        if request_start and estimate + expected > self.high:
            report.cleared += clear_tool_results(history, 0)
        elif estimate > (self.usable if self.server_active else self.high):
            report.cleared += clear_tool_results(history, keep)
        if self._estimate_cleared(fixed, history, keep) + expected > self.high:
            # Clearing cannot make room: the turns themselves are too long.
            report.cleared += clear_tool_results(history, keep)
            report.summarised += compact(
                history, lambda h: self.estimate(fixed, h) + expected <= self.low
            )
        if self.estimate(fixed, history) > self.usable:
            report.cleared += clear_tool_results(history, 1)
            report.summarised += compact(history, lambda h: self.estimate(fixed, h) <= self.low)
        if self.estimate(fixed, history) > self.usable:
            self._refuse_oversized(history, fixed)
        if report:
            self.state.compactions += 1
        return report

    def _refuse_oversized(self, history: list[Message], fixed: int) -> None:
        """Replace the largest block of the current request with a note, and say which it was."""
        names = tool_names(history)
        biggest: tuple[int, int, int] | None = None
        for i, message in enumerate(history):
            for j, block in enumerate(blocks_of(message["content"])):
                size = estimate_tokens(block)
                if biggest is None or size > biggest[0]:
                    biggest = (size, i, j)
        if biggest is None:  # pragma: no cover - an empty history always fits
            return
        size, i, j = biggest
        blocks = blocks_of(history[i]["content"])
        block = blocks[j]
        tokens = math.ceil(size * self.state.ratio)
        if block.get("type") == "tool_result":
            tool = names.get(str(block.get("tool_use_id")), "unknown tool")
            note = (
                f"The result of {tool} was about {tokens:,} tokens, too large for the context window; "
                "it was left out. Ask for a smaller part."
            )
            blocks[j] = {
                "type": "tool_result",
                "tool_use_id": block["tool_use_id"],
                "content": note,
                "is_error": True,
            }
        else:
            tool = None
            blocks[j] = {
                "type": "text",
                "text": f"[A message of about {tokens:,} tokens was left out: too large to send.]",
            }
        history[i] = {**history[i], "content": blocks}
        subject = (
            "Your message" if history[i]["role"] == "user" else "An earlier answer of the agent"
        )
        raise ContextTooLarge(tool=tool, tokens=tokens, limit=self.usable - fixed, subject=subject)

    def server_edit(self, estimate: int) -> dict[str, Any] | None:
        """The ``context_management`` parameter for this request, or ``None``.

        Sent once the prompt is past half the usable window, so short chats keep plain requests.
        """
        if not self.enabled or not self.server_active or estimate < self.usable // 2:
            return None
        return {
            "edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "trigger": {"type": "input_tokens", "value": self.high},
                    "keep": {"type": "tool_uses", "value": self.settings.keep_tool_results},
                    "clear_at_least": {
                        "type": "input_tokens",
                        "value": max(1, (self.high - self.low) // 2),
                    },
                }
            ]
        }

    # -- after a response --------------------------------------------------------------------------
    def observe(
        self, history: list[Message], *, sent_estimate: int, prompt_tokens: int, edits: Any
    ) -> None:
        """Calibrate on the reported prompt size and mirror the server's edits into the history."""
        applied = _applied_clears(edits)
        if applied:
            self.pending.cleared += clear_tool_results(history, self.settings.keep_tool_results)
            return  # the reported size is after the server's edit: no calibration from it
        if prompt_tokens > 0 and sent_estimate > 0:
            raw = sent_estimate / self.state.ratio
            self.state.ratio = min(4.0, max(0.5, prompt_tokens / raw))

    def refused(self) -> None:
        """The server does not offer context editing: clear on this side from now on."""
        self.state.server_edits = False

    def accepted(self) -> None:
        self.state.server_edits = True

    def too_long(self, *, sent_estimate: int, actual: int, maximum: int) -> None:
        """The server refused the prompt's length: adopt its window and recalibrate with a margin."""
        if maximum < self.window:
            self.state.window = maximum
            self._size(maximum)
        raw = sent_estimate / self.state.ratio
        self.state.ratio = min(4.0, max(self.state.ratio, actual / raw * 1.05))


def _applied_clears(edits: Any) -> int:
    applied = getattr(edits, "applied_edits", None)
    if applied is None and isinstance(edits, Mapping):
        applied = edits.get("applied_edits")
    total = 0
    for edit in applied or []:
        count = getattr(edit, "cleared_tool_uses", None)
        if count is None and isinstance(edit, Mapping):
            count = edit.get("cleared_tool_uses")
        total += int(count or 0)
    return total
