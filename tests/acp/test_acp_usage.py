"""A coding agent's usage on the chat's meter: the recorded ``usage_update`` and prompt usage."""

from __future__ import annotations

import pytest
import recorded

from jupyter_aaep.aaep.emitter import Emitter
from jupyter_aaep.aaep.session import Producer, Session
from jupyter_aaep.acp.narration import Narrator
from jupyter_aaep.acp.usage import CostMeter

REPORTED = {"inputTokens": 6, "outputTokens": 61, "cachedReadTokens": 0, "cachedWriteTokens": 0}


def _narrator() -> Narrator:
    session = Session(
        Emitter(history_limit=100), Producer(model="outside-agent"), actor="Claude Code"
    )
    return Narrator(session, "Claude Code")


def test_a_prompts_cost_is_the_running_total_less_what_was_counted() -> None:
    meter = CostMeter()
    first = _narrator()
    first.update(recorded.USAGE)
    one = meter.prompt_usage(REPORTED, first)
    assert (one.requests, one.input_tokens, one.output_tokens) == (1, 6, 61)
    assert one.cost_usd == pytest.approx(0.10326225)
    second = _narrator()
    second.update({**recorded.USAGE, "cost": {"amount": 0.15, "currency": "USD"}})
    assert meter.prompt_usage(REPORTED, second).cost_usd == pytest.approx(0.15 - 0.10326225)
    silent = meter.prompt_usage(None, _narrator())  # said nothing: nothing counted
    assert (silent.requests, silent.cost_usd) == (0, 0.0)
    meter.new_session()  # a new ACP session counts from zero again
    third = _narrator()
    third.update({**recorded.USAGE, "cost": {"amount": 0.02, "currency": "USD"}})
    assert meter.prompt_usage(None, third).cost_usd == pytest.approx(0.02)


def test_a_cost_in_another_currency_is_not_guessed() -> None:
    narrator = _narrator()
    narrator.update({**recorded.USAGE, "cost": {"amount": 3.0, "currency": "EUR"}})
    one = CostMeter().prompt_usage({**REPORTED, "inputTokens": True}, narrator)
    assert (one.input_tokens, one.output_tokens) == (0, 61), "a bool is not a count"
    assert one.cost_usd == 0.0 and not one.priced, "tokens counted, no cost offered"
