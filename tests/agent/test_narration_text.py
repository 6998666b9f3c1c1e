"""The event texts listeners hear, against docs/NARRATION.md: a step's result at each
verbosity (a tool's own terse and detailed result, masked), no tool names in what is said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_aaep.agent.tools import ToolError, ToolResult, aaep_tool, gerund_phrase
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

if TYPE_CHECKING:
    from tests.agent.conftest import Harness

SECRET = "sk-ant-api03-" + "A" * 40


async def test_a_tools_terse_and_detailed_results_reach_listeners_masked(harness: Harness) -> None:
    @aaep_tool(read_only=True, label="measure the data")
    def measure_data() -> ToolResult:
        """Measure the data."""
        return ToolResult(
            content="measured",
            summary="Measured: 3 rows.",
            terse="3 rows.",
            detail=f"Measured 3 rows:\na\nb\nc (key {SECRET})",
        )

    @aaep_tool(read_only=True, label="look around")
    def look_around() -> str:
        """Look around."""
        return "seen"

    harness.add_tools([measure_data, look_around])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("measure_data", {}), ToolUse("look_around", {})]), Turn(text="ok")
    )
    result = await harness.ask("measure")

    assert result.status == "completed"
    measured, looked = harness.events.of_type("tool.completed")
    assert measured["summary_normal"] == "Measured: 3 rows."
    assert measured["summary_terse"] == "3 rows."
    assert measured["summary_detailed"].startswith("Measured 3 rows:\na\nb\nc")
    assert SECRET not in measured["summary_detailed"], "secrets are masked in what listeners get"
    # A tool without its own results: said by what it does, acknowledged tersely.
    assert looked["summary_normal"] == "Finished: look around."
    assert looked["summary_terse"] == "Done."
    said = " ".join(str(e.get("summary_normal", "")) for e in harness.events.events)
    assert "measure_data" not in said and "look_around" not in said, "tools by what they do"
    # The state line says what is being done, in the background (the result is what is heard).
    working = [
        e
        for e in harness.events.of_type("state.changed")
        if e["to_state"] == "calling_tool" and e["from_state"] != "awaiting_input"
    ]
    assert working[0]["summary_normal"] == "The agent is measuring the data."
    assert all(e["urgency"] == "background" for e in working)


def test_a_steps_label_becomes_what_doing_it_is_called() -> None:
    cases = {
        "read the notebook": "reading the notebook",
        "run a cell": "running a cell",
        "create a cell": "creating a cell",
        "move a cell": "moving a cell",
        "look at a figure": "looking at a figure",
        "see": "seeing",
        "tie a knot": "tying a knot",
        "Write File, from the files server": "using Write File, from the files server",
    }
    assert {label: gerund_phrase(label) for label in cases} == cases


async def test_a_tools_error_reaches_listeners_without_ids_or_tool_names(harness: Harness) -> None:
    @aaep_tool(read_only=True, label="check a cell")
    def check_cell(cell_id: str) -> str:
        """Check a cell.

        Parameters
        ----------
        cell_id : str
            The cell.
        """
        raise ToolError(f"Cell 3 (id {cell_id}): check_cell timed out after 5 seconds.")

    harness.add_tools([check_cell])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("check_cell", {"cell_id": "6d6fe3bd"})]), Turn(text="ok")
    )
    await harness.ask("check")

    completed = harness.events.of_type("tool.completed")[0]
    assert completed["status"] == "error"
    assert completed["error_message"] == "Cell 3: check a cell timed out after 5 seconds."
    assert (
        completed["summary_normal"]
        == "Check a cell failed: Cell 3: check a cell timed out after 5 seconds."
    )
    # The model still reads the exact text, id included.
    assert "6d6fe3bd" in str(harness.last_tool_results()[0]["content"])
