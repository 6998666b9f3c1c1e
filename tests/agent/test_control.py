"""Pause, resume, guidance and stop in every phase of a session, through the real SDK and the
scripted model (the autouse audit checks every event against the schemas and the sequence rules)."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.agent.control import STEERING_PREFIX, STOPPED_NOTE, Guidance
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn
from tests.agent.test_loop import make_recorder

if TYPE_CHECKING:
    from tests.agent.conftest import Harness


@pytest.fixture
def calls(harness: Harness) -> list[tuple[str, dict]]:
    recorded: list[tuple[str, dict]] = []
    harness.add_tools(make_recorder(recorded))
    return recorded


async def until(predicate: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def release_until(harness: Harness, predicate: Any, timeout: float = 10.0) -> None:
    """Let the stalled stream go on; again until *predicate* holds, since a release that comes
    before the fake's server thread reached its stall would not free it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("the stalled stream did not go on")
        harness.fake.release()
        await asyncio.sleep(0.05)


def states(harness: Harness) -> list[tuple[str, str]]:
    return [(e["from_state"], e["to_state"]) for e in harness.events.of_type("state.changed")]


def guide(harness: Harness, text: str) -> str:
    return harness.control.guide(Guidance(text=text, session_id=None))


def user_texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


# -- thinking (the model's stream is stalled) ----------------------------------------------------
async def test_pause_while_thinking_holds_the_tools_until_resume(harness: Harness, calls) -> None:
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"key": "a"})], stall_after_chunks=0),
        Turn(text="Found it."),
    )
    task = harness.start("find a")
    await until(lambda: len(harness.fake.requests) == 1)
    assert harness.control.pause() is True
    await asyncio.sleep(0.05)
    assert "paused" not in [to for _, to in states(harness)], "a pause waits for the safe point"
    await release_until(harness, lambda: harness.control.paused)
    paused = harness.events.of_type("state.changed")[-1]
    assert (paused["from_state"], paused["to_state"]) == ("thinking", "paused")
    assert paused["summary_normal"].startswith("Paused. Nothing more will happen until you resume")
    await asyncio.sleep(0.1)
    assert calls == [] and len(harness.fake.requests) == 1, "nothing runs while paused"

    assert guide(harness, "use key b as well") == "on_resume"
    receipt = harness.events.of_type("progress.updated")[-1]
    assert (
        receipt["summary_normal"]
        == "Guidance received: use key b as well. It applies when you resume."
    )
    assert harness.control.resume() is True
    result = await task

    assert result.status == "completed" and calls == [("lookup", {"key": "a"})]
    assert ("paused", "thinking") in states(harness)
    resumed = next(
        e for e in harness.events.of_type("state.changed") if e["from_state"] == "paused"
    )
    assert resumed["summary_normal"] == "Resumed."
    last = harness.fake.requests[1].body["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result", "tool results stay first in the message"
    assert last[-1]["text"] == f"{STEERING_PREFIX} use key b as well"


async def test_guidance_while_thinking_applies_at_the_next_turn(harness: Harness, calls) -> None:
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"key": "a"})], stall_after_chunks=0), Turn(text="Ok.")
    )
    task = harness.start("find a")
    await until(lambda: len(harness.fake.requests) == 1)
    assert guide(harness, "skip the plots") == "next_turn"
    assert (
        "It applies at the next step."
        in harness.events.of_type("progress.updated")[-1]["summary_normal"]
    )
    await release_until(harness, task.done)
    assert (await task).status == "completed"
    assert (
        user_texts(harness.fake.requests[1].body["messages"][-1])[-1]
        == f"{STEERING_PREFIX} skip the plots"
    )
    assert "paused" not in [to for _, to in states(harness)]


# -- streaming output ------------------------------------------------------------------------
async def test_guidance_sent_while_a_turn_streams_is_in_the_very_next_request(
    harness: Harness,
) -> None:
    """The turn ends with end_turn; the guidance still reaches the model, in the next request."""
    harness.fake.add(
        Turn(
            text="Plotting column A in blue. This takes a moment",
            text_chunk_size=5,
            stall_after_chunks=7,
        ),
        Turn(text="Switched to red."),
    )
    task = harness.start("plot A")
    await harness.wait_for("output.streaming")
    guide(harness, "make it red")
    await release_until(harness, task.done)
    result = await task

    assert result.status == "completed" and len(harness.fake.requests) == 2
    sent = harness.fake.requests[1].body["messages"]
    assert sent[-2]["role"] == "assistant" and "blue" in sent[-2]["content"][0]["text"]
    assert user_texts(sent[-1]) == [f"{STEERING_PREFIX} make it red"]
    assert harness.control.queue == []


async def test_pause_while_streaming_the_answer_pauses_before_the_end(harness: Harness) -> None:
    harness.fake.add(
        Turn(text="First part. Second part comes", text_chunk_size=4, stall_after_chunks=4)
    )
    task = harness.start("explain")
    await harness.wait_for("output.streaming")
    assert harness.control.pause() is True
    await release_until(harness, lambda: harness.control.paused)
    assert states(harness)[-1] == ("writing_output", "paused")
    assert harness.events.of_type("output.streaming")[-1]["complete"] is True, (
        "output closes before the pause"
    )
    assert not task.done()
    assert harness.control.resume() is True
    result = await task
    assert result.status == "completed" and states(harness)[-1] == ("paused", "writing_output")


# -- waiting for a confirmation -----------------------------------------------------------------
async def test_pause_keeps_a_confirmation_alive_past_its_timeout(harness: Harness, calls) -> None:
    harness.policy.timeouts = {"low": 1, "medium": 1, "high": 1}
    harness.fake.add(Turn(tool_uses=[ToolUse("run_code", {"code": "x = 1"})]), Turn(text="Ran it."))
    task = harness.start("run it")
    confirmation = await harness.wait_for("awaiting.confirmation")
    assert harness.control.pause() is True
    assert states(harness)[-1] == ("awaiting_input", "paused"), (
        "while waiting for a reply, the pause is at once"
    )
    await asyncio.sleep(1.5)  # past the 1-second timeout
    assert not task.done() and len(harness.broker.pending()) == 1 and calls == []
    assert harness.reply(confirmation, "accept"), "the reply still counts while paused"
    await asyncio.sleep(0.1)
    assert calls == [], "an approved tool waits for the resume"
    harness.control.resume()
    result = await task

    assert result.status == "completed" and calls == [("run_code", {"code": "x = 1"})]
    assert ("paused", "awaiting_input") in states(harness)
    assert ("awaiting_input", "calling_tool") in states(harness)


async def test_after_resume_the_timeout_runs_on_from_where_it_stopped(
    harness: Harness, calls
) -> None:
    harness.policy.timeouts = {"low": 1, "medium": 1, "high": 1}
    harness.fake.add(Turn(tool_uses=[ToolUse("run_code", {"code": "x"})]), Turn(text="Not run."))
    task = harness.start("run it")
    await harness.wait_for("awaiting.confirmation")
    request = harness.broker.pending()[0]
    announced = request.deadline
    harness.control.pause()
    await asyncio.sleep(1.2)
    harness.control.resume()
    assert (request.deadline - announced).total_seconds() >= 1.1, (
        "the deadline moved by the paused time"
    )
    result = await task  # nobody answers: the default (reject) applies a second later
    assert result.status == "completed" and calls == []
    assert (
        "did not answer in time"
        in harness.fake.requests[1].body["messages"][-1]["content"][0]["content"].lower()
    )


async def test_pause_during_a_question_and_guidance_with_resume(harness: Harness) -> None:
    harness.fake.add(
        Turn(tool_uses=[ToolUse("ask_user", {"question": "Which file?"})]), Turn(text="Thanks.")
    )
    task = harness.start("load data")
    question = await harness.wait_for("awaiting.clarification")
    harness.control.pause()
    assert guide(harness, "prefer the 2024 file") == "on_resume"
    assert harness.control.resume() is True
    assert harness.reply(question, "data.csv")
    assert (await task).status == "completed"
    last = harness.fake.requests[1].body["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result" and "data.csv" in last[0]["content"]
    assert last[-1]["text"] == f"{STEERING_PREFIX} prefer the 2024 file"


# -- running a tool (a cell) --------------------------------------------------------------------
async def test_pause_while_a_tool_runs_takes_effect_before_the_next_tool(harness: Harness) -> None:
    gate = asyncio.Event()
    ran: list[str] = []

    @aaep_tool(label="run a cell")
    async def run_cell(index: int) -> str:
        """Run a cell.

        Parameters
        ----------
        index : int
            Which cell.
        """
        ran.append(f"start {index}")
        await gate.wait()
        ran.append(f"end {index}")
        return f"cell {index} ran"

    harness.add_tools([run_cell])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("run_cell", {"index": 1}), ToolUse("run_cell", {"index": 2})]),
        Turn(text="Both ran."),
    )
    task = harness.start("run cells 1 and 2")
    await until(lambda: ran == ["start 1"])
    harness.control.pause()
    gate.set()
    await until(lambda: harness.control.paused)
    assert ran == ["start 1", "end 1"], "the running cell finishes; the next does not start"
    assert states(harness)[-1] == ("calling_tool", "paused")
    harness.control.guide(Guidance(text="stop after cell 2", session_id=None))
    harness.control.resume()
    assert (await task).status == "completed"
    assert ran == ["start 1", "end 1", "start 2", "end 2"]
    last = harness.fake.requests[1].body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]


# -- stop, in every phase: the stopped request never reaches the model again unanswered ----------
async def _stop(harness: Harness, task: asyncio.Task) -> None:
    harness.control.cancelled_by = "user"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert harness.types()[-1] == "session.cancelled"


def _assert_closed_then_clean(harness: Harness, stopped: str, *, partial: str = "") -> None:
    messages = harness.fake.requests[-1].body["messages"]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in pairwise(roles)), "roles alternate"
    note = messages[-2]
    assert note["role"] == "assistant" and note["content"][-1]["text"].endswith(STOPPED_NOTE)
    if partial:
        assert note["content"][-1]["text"].startswith(partial)
    assert user_texts(messages[-1]) == ["what next?"], (
        "the new request is not merged into the stopped one"
    )
    first = next(m for m in messages if m["role"] == "user")
    assert stopped in user_texts(first)


@pytest.mark.parametrize("phase", ["thinking", "streaming", "confirmation", "tool", "paused"])
async def test_stop_in_every_phase_closes_the_request(harness: Harness, calls, phase: str) -> None:
    gate = asyncio.Event()

    @aaep_tool(label="wait")
    async def slow() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "done"

    harness.add_tools([slow])
    partial = ""
    if phase == "thinking":
        harness.fake.add(Turn(text="never", stall_after_chunks=0))
    elif phase in ("streaming", "paused"):
        harness.fake.add(
            Turn(text="Half an answer. And more", text_chunk_size=4, stall_after_chunks=5)
        )
    elif phase == "confirmation":
        harness.fake.add(Turn(tool_uses=[ToolUse("run_code", {"code": "x"})]))
    else:
        harness.fake.add(Turn(tool_uses=[ToolUse("slow", {})]))
    task = harness.start("the stopped request")
    if phase == "thinking":
        await until(lambda: len(harness.fake.requests) == 1)
    elif phase == "streaming":
        await harness.wait_for("output.streaming")
        partial = "Half an answer."
    elif phase == "paused":
        await harness.wait_for("output.streaming")
        harness.control.pause()
        await release_until(harness, lambda: harness.control.paused)
    elif phase == "confirmation":
        await harness.wait_for("awaiting.confirmation")
    else:
        await harness.wait_for("tool.invoked")
    await _stop(harness, task)
    harness.fake.release()
    if phase == "paused":
        assert harness.history[-1]["content"][0]["text"] == "Half an answer. And more"
    harness.control = type(harness.control)()
    harness.fake.add(Turn(text="Ready."))
    assert (await harness.ask("what next?")).status == "completed"
    _assert_closed_then_clean(harness, "the stopped request", partial=partial)
    assert calls == []


# -- settings through guidance ----------------------------------------------------------------------
async def test_guidance_settings_change_the_turn_cap_mid_run(harness: Harness, calls) -> None:
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"key": "a"})], stall_after_chunks=0),
        Turn(tool_uses=[ToolUse("lookup", {"key": "b"})]),
        Turn(tool_uses=[ToolUse("lookup", {"key": "c"})]),
    )
    task = harness.start("look everything up")
    await until(lambda: len(harness.fake.requests) == 1)
    harness.control.guide(
        Guidance(text="only two steps", session_id=None, settings={"max_turns": 2})
    )
    await release_until(harness, task.done)
    result = await task
    assert result.status == "errored" and len(harness.fake.requests) == 2
    errored = harness.events.of_type("session.errored")[0]
    assert (
        errored["error_code"] == "TURN_LIMIT_REACHED"
        and "after 2 model turns" in errored["summary_normal"]
    )


# -- errors per step ---------------------------------------------------------------------------------
async def test_a_failing_tool_is_reported_and_a_failing_loop_ends_the_session(
    harness: Harness, monkeypatch
) -> None:
    @aaep_tool(read_only=True, label="break")
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    harness.add_tools([broken])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("broken", {})]), Turn(text="The tool failed; here is why.")
    )
    result = await harness.ask("try it")
    assert result.status == "completed", "a failing tool is a failed step, not a failed session"
    assert "disk on fire" in harness.last_tool_results()[0]["content"]
    assert harness.last_tool_results()[0]["is_error"] is True

    from jupyter_aaep.agent.dispatch import ToolDispatcher

    async def explode(self: Any, uses: Any) -> None:
        raise RuntimeError("bookkeeping broke")

    monkeypatch.setattr(ToolDispatcher, "run_all", explode)
    harness.fake.add(Turn(tool_uses=[ToolUse("broken", {})]), Turn(text="unused"))
    result = await harness.ask("again")
    assert result.status == "errored", "an error of the loop itself ends the session"
    assert harness.types()[-1] == "session.errored"
    assert len([r for r in harness.fake.requests if r.reply is not None]) == 3


# -- small rules -------------------------------------------------------------------------------------
async def test_resume_before_the_safe_point_cancels_the_pause(harness: Harness, calls) -> None:
    assert harness.control.pause() is False, "nothing to pause before the session started"
    harness.fake.add(
        Turn(tool_uses=[ToolUse("lookup", {"key": "a"})], stall_after_chunks=0), Turn(text="Ok.")
    )
    task = harness.start("find a")
    await until(lambda: len(harness.fake.requests) == 1)
    assert harness.control.pause() is True and harness.control.resume() is True
    assert harness.control.resume() is False, "neither paused nor about to pause"
    await release_until(harness, task.done)
    assert (await task).status == "completed" and "paused" not in [to for _, to in states(harness)]


def test_the_note_says_who_stopped_the_request() -> None:
    from jupyter_aaep.agent._loop_text import stopped_note
    from jupyter_aaep.agent.control import RunControl

    assert stopped_note(RunControl()) == STOPPED_NOTE
    assert "new request instead" in stopped_note(RunControl(reason="superseded_by_new_request"))
    assert "server" in stopped_note(RunControl(cancelled_by="system", reason="server_shutdown"))
    assert (
        stopped_note(RunControl(cancelled_by="timeout", reason="x"))
        == "[Stopped before finishing.]"
    )


def test_the_note_of_an_errored_request_and_the_done_phrases() -> None:
    from jupyter_aaep.agent._loop_text import done_phrase, done_terse, errored_note, was_declined

    assert errored_note("The model service is overloaded right now.") == (
        "[This request ended with an error before it was finished: The model service is overloaded right now. "
        "Do not pick it up again unless the user asks.]"
    )
    assert "finished: Broken\n text." not in errored_note("Broken\n text")
    assert "finished: Broken text. Do not" in errored_note("Broken\n text")
    assert "finished: unknown error. Do not" in errored_note("  ")
    assert len(errored_note("x" * 5000)) < 320
    assert done_phrase([]) == "Done." and done_terse([]) == ""
    assert done_phrase(["run a cell"]) == "Done, but 1 step failed: run a cell."
    assert (
        done_phrase([], ["run a cell"])
        == "Done, after recovering from 1 step that failed first: run a cell."
    )
    assert done_phrase(["read a file"], ["run a cell", "run a cell"]) == (
        "Done, after recovering from 2 steps that failed first: run a cell; "
        "but 1 step failed: read a file."
    )
    assert (
        done_phrase(["run a cell", "run a cell", "read"])
        == "Done, but 3 steps failed: run a cell, read."
    )
    assert done_phrase([f"t{i}" for i in range(7)]).endswith("t4 and more.")
    assert (
        done_terse(["a"]) == "Done, 1 step failed."
        and done_terse(["a", "b"]) == "Done, 2 steps failed."
    )
    assert was_declined("The user declined: run_code was not run.", "run_code")
    assert was_declined("run_code was not run: the approval request was withdrawn.", "run_code")
    assert not was_declined("Cell 3 failed: the file was not run.", "run_code")
    assert not was_declined([{"type": "text", "text": "The user declined:"}], "run_code")


async def test_a_request_opened_while_paused_starts_frozen(harness: Harness) -> None:
    from jupyter_aaep.aaep.clock import SessionClock

    harness.broker.pause_session("sess_x1")
    event = {
        "reply_token": "rpl_abcdefabcdef0123",
        "session_id": "sess_x1",
        "timestamp": SessionClock().now(),
        "timeout_seconds": 1,
        "default_decision": "reject",
    }
    request = harness.broker.open_confirmation(event)
    assert request.paused_at_ms is not None
    waiting = asyncio.ensure_future(harness.broker.wait(request))
    await asyncio.sleep(1.2)
    assert not waiting.done(), "no timeout while paused"
    harness.broker.resume_session("sess_x1")
    outcome = await asyncio.wait_for(waiting, 5)
    assert outcome.resolution == "timeout" and outcome.value == "reject"
