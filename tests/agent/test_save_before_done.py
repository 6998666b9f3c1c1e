"""A session that changed something saves it before it says "Done" (issue 10: nothing reported
as done is lost to a stop of the server), and says so when it could not."""

from __future__ import annotations

import pytest
from conftest import Harness

from jupyter_aaep import aaep_tool
from jupyter_aaep.agent.loop import ChatContext
from jupyter_aaep.agent.session_end import UNSAVED_NOTE
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


@aaep_tool(label="change something")
async def change_something() -> str:
    """Change something in the notebook."""
    return "changed"


@pytest.mark.parametrize("saved", [True, False])
async def test_the_save_comes_before_the_terminal_event(harness: Harness, saved: bool) -> None:
    harness.add_tools([change_something])
    harness.fake.add(Turn(tool_uses=[ToolUse("change_something", {})]), Turn(text="Changed it."))
    seen_at_save: list[list[str]] = []

    async def save() -> bool:
        seen_at_save.append(harness.types())
        return saved

    result = await harness.loop().run(
        harness.session(),
        harness.history,
        "Change it.",
        chat=ChatContext(approval=harness.policy, save_changes=save),
        control=harness.control,
    )
    assert result.status == "completed"
    assert len(seen_at_save) == 1 and "session.completed" not in seen_at_save[0]
    assert "tool.completed" in seen_at_save[0]
    summary = result.terminal_event["summary_normal"]
    assert (UNSAVED_NOTE in summary) is (not saved)


async def test_a_session_without_tools_does_not_save(harness: Harness) -> None:
    harness.fake.add(Turn(text="Hello."))
    calls: list[int] = []

    async def save() -> bool:
        calls.append(1)
        return True

    await harness.loop().run(
        harness.session(),
        harness.history,
        "Hi.",
        chat=ChatContext(approval=harness.policy, save_changes=save),
        control=harness.control,
    )
    assert calls == []
