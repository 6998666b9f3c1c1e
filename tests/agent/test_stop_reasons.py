"""Every stop reason of the Messages API, handled as what it is.

The table in ``agent/stop_reasons.py`` is checked against the installed SDK's ``StopReason``
type, and each reason is played through the real SDK against the scripted fake: the AAEP
events the session ends with and what a person hears.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

import anthropic
import pytest
from anthropic.types import StopReason

from jupyter_aaep import aaep_tool
from jupyter_aaep.agent.stop_reasons import STOP_REASONS, stop_handling
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

if TYPE_CHECKING:
    from tests.agent.conftest import Harness

SDK_STOP_REASONS = typing.get_args(StopReason)

EXPECTED_MOVE = {
    "end_turn": "finish",
    "tool_use": "run_tools",
    "max_tokens": "finish",
    "stop_sequence": "finish",
    "pause_turn": "send_again",
    "refusal": "fail",
    "model_context_window_exceeded": "fail",
}
"""What this test expects of each reason: written apart from the table, so it checks it."""


def test_the_sdk_defines_stop_reasons() -> None:
    assert "end_turn" in SDK_STOP_REASONS and "tool_use" in SDK_STOP_REASONS


@pytest.mark.parametrize("reason", SDK_STOP_REASONS)
def test_every_stop_reason_of_the_sdk_is_in_the_table(reason: str) -> None:
    assert reason in STOP_REASONS, (
        f"anthropic {anthropic.__version__} defines stop_reason {reason!r}: say in "
        "agent/stop_reasons.py what the loop does with it and what people hear"
    )
    assert reason in EXPECTED_MOVE, f"add {reason!r} to this test's EXPECTED_MOVE as well"
    handling = STOP_REASONS[reason]
    assert handling.next == EXPECTED_MOVE[reason]
    assert (handling.failure is not None) == (handling.next == "fail")
    assert handling.step.endswith(".") and reason not in handling.step  # a sentence, no id


def test_an_unknown_or_missing_reason_fails_and_never_finishes() -> None:
    for reason in ("some_future_reason", None, ""):
        handling = stop_handling(reason)
        assert handling.next == "fail" and handling.failure is not None
        assert handling.failure.category == "unknown"
        assert "does not know" in handling.failure.message


def test_every_handling_is_whole() -> None:
    for reason, handling in STOP_REASONS.items():
        if handling.failure is not None:
            failure = handling.failure
            for sentence in (failure.message, failure.hint):
                assert sentence.endswith(".") and "_" not in sentence, (reason, sentence)
        if handling.note is not None:
            assert handling.note.format(max_tokens=10).endswith("."), reason


# -- through the real SDK and the fake model ------------------------------------------------
def _end(harness: Harness) -> dict[str, Any]:
    """The session's one terminal event (and there is exactly one)."""
    ends = [
        e
        for e in harness.events.events
        if e["type"].endswith(("session.completed", "session.errored", "session.cancelled"))
    ]
    assert len(ends) == 1, [e["type"] for e in ends]
    return ends[0]


async def test_end_turn_completes(harness: Harness) -> None:
    harness.fake.add(Turn(text="All good."))
    assert (await harness.ask("hi")).status == "completed"
    end = _end(harness)
    assert end["type"].endswith("session.completed") and end["summary_normal"] == "Done."


async def test_stop_sequence_completes_and_the_sdk_reads_the_sequence(harness: Harness) -> None:
    harness.fake.add(Turn(text="A short answer", stop_sequence="\n\nEND"))
    raw = await harness.client.messages.create(
        model="claude-test", max_tokens=20, messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.stop_reason == "stop_sequence" and raw.stop_sequence == "\n\nEND"

    harness.fake.add(Turn(text="A short answer", stop_sequence="\n\nEND"))
    assert (await harness.ask("hi")).status == "completed"
    end = _end(harness)
    assert end["type"].endswith("session.completed") and end["summary_normal"] == "Done."


async def test_max_tokens_completes_saying_the_answer_was_cut(harness: Harness) -> None:
    harness.config.max_tokens = 300
    harness.fake.add(Turn(text="The first part of a long", stop_reason="max_tokens"))
    assert (await harness.ask("write a lot")).status == "completed"
    end = _end(harness)
    assert end["summary_normal"] == (
        "Done. The answer was cut off at the length limit of 300 tokens. "
        "Ask me to continue if you need the rest."
    )


async def test_pause_turn_sends_the_turn_again(harness: Harness) -> None:
    harness.fake.add(
        Turn(text="Searching the docs.", stop_reason="pause_turn"), Turn(text="Found it.")
    )
    assert (await harness.ask("look it up")).status == "completed"
    assert len(harness.fake.requests) == 2
    resent = harness.fake.requests[1].body["messages"]
    # the paused turn goes back as the assistant's last message, for the model to continue
    assert resent[-1]["role"] == "assistant"
    assert "Searching the docs." in str(resent[-1]["content"])
    assert harness.types().count("session.completed") == 1
    assert _end(harness)["summary_normal"] == "Done."


async def test_refusal_says_the_model_declined_and_the_chat_goes_on(harness: Harness) -> None:
    calls: list[str] = []

    @aaep_tool(read_only=True, label="look something up")
    async def lookup(key: str) -> str:
        """Look a key up.

        Parameters
        ----------
        key : str
            The key.
        """
        calls.append(key)
        return f"value of {key}"

    harness.add_tools([lookup])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"key": "a"})]),
        Turn(text="I will not", stop_reason="refusal"),
    )
    result = await harness.ask("something I should not ask")
    assert result.status == "errored" and calls == ["a"]
    assert "session.completed" not in harness.types()
    end = _end(harness)
    assert end["type"] == "aaep:agent.session.errored"
    assert end["error_code"] == "MODEL_DECLINED" and end["error_category"] == "requires_user"
    assert end["summary_normal"] == (
        "The model declined this request. Try rephrasing it, or ask for something else."
    )
    assert "Done" not in end["summary_normal"] and "Done" not in end["summary_terse"]

    # the history stays well-formed (each tool_use answered once), so the next request works
    harness.fake.add(Turn(text="Happy to help with that."))
    assert (await harness.ask("something else")).status == "completed"
    sent = harness.fake.requests[-1].body["messages"]
    results = [
        block
        for message in sent
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1
    assert "declined" in str(sent[-2]["content"])  # the model reads that it declined


async def test_context_window_exceeded_says_the_conversation_is_too_long(
    harness: Harness,
) -> None:
    harness.fake.add(
        Turn(text="Here is the start of the summary", stop_reason="model_context_window_exceeded")
    )
    result = await harness.ask("summarise everything")
    assert result.status == "errored"
    assert "session.completed" not in harness.types()
    end = _end(harness)
    assert end["error_code"] == "CONTEXT_WINDOW_EXCEEDED" and end["recoverable"] is True
    assert "too long" in end["summary_normal"] and "cut off" in end["summary_normal"]
    assert "Start a new chat" in end["remediation_hint"]
    # what was written is kept and its output closed
    assert harness.events.of_type("output.streaming")[-1]["complete"] is True
    assert "Here is the start of the summary" in result.answer


async def test_an_unknown_reason_is_never_reported_as_completed(harness: Harness) -> None:
    harness.fake.add(Turn(text="Partly there", stop_reason="a_reason_from_the_future"))
    result = await harness.ask("do it")
    assert result.status == "errored"
    assert "session.completed" not in harness.types()
    end = _end(harness)
    assert end["error_category"] == "unknown" and end["error_code"] == "UNKNOWN_STOP_REASON"
    assert "a_reason_from_the_future" not in end["summary_normal"]  # no identifiers spoken
    assert "continue" in end["remediation_hint"]
