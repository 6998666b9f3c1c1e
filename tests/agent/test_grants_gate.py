"""Standing permissions at the dispatcher's gate, through the real loop and SDK: an allow answers
for the person and says so, flagged code still asks, a deny refuses without asking and beats an
allow, and the outside agents' actor goes through the same grants."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from jupyter_aaep.agent.grant_book import GrantBook
from jupyter_aaep.agent.loop import ChatContext
from jupyter_aaep.agent.tools import ActionPreview, ToolResult, aaep_tool
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

if TYPE_CHECKING:
    from tests.agent.conftest import Harness


def _tools(ran: list[str]) -> list[Any]:
    @aaep_tool(risk_level="medium", irreversible=True, label="run a cell")
    async def run_cell(cell_id: str) -> ToolResult:
        """Run a cell.

        Parameters
        ----------
        cell_id : str
            The cell.
        """
        ran.append(cell_id)
        return ToolResult(content="ran", summary=f"Ran cell {cell_id}.")

    @run_cell.preview
    async def _preview(cell_id: str) -> ActionPreview:
        flagged = cell_id == "bad"
        return ActionPreview(
            summary=f"Running cell {cell_id}.",
            action=f"Run cell {cell_id}.",
            extra_context={"code": "import os\nos.system('ls')" if flagged else "x = 1"},
            risk_flags=("runs shell commands",) if flagged else (),
        )

    return [run_cell]


async def _ask(harness: Harness, book: GrantBook, text: str, *, actor: str | None = None) -> None:
    session = harness.session()
    if actor is not None:
        session.actor = actor
    await harness.loop().run(
        session,
        harness.history,
        text,
        chat=ChatContext(
            chat_id="chat_a", notebook_path="a.ipynb", approval=harness.policy, grants=book
        ),
        control=harness.control,
    )


async def test_an_allow_answers_and_says_which_grant(harness: Harness) -> None:
    ran: list[str] = []
    harness.add_tools(_tools(ran))
    book = GrantBook()
    grant = book.add("run_cell:unflagged", "notebook", notebook_path="a.ipynb")
    harness.fake.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "4"})]), Turn(text="Done."))
    await _ask(harness, book, "run cell 4")
    assert ran == ["4"]
    asked = harness.events.of_type("awaiting.confirmation")[0]
    assert asked["extra_context"]["granted_by"]["id"] == grant.id
    assert asked["summary_normal"] == (
        "Running cell 4: allowed by your permission for unflagged code in this notebook."
    )
    left = next(e for e in harness.events.of_type("state.changed") if "extensions" in e)
    record = left["extensions"]["jaaep_permission"]["confirmation_reply"]
    assert (
        record["decided_by"] == f"grant:{grant.id}"
        and record["reply_token"] == asked["reply_token"]
    )


async def test_flagged_code_still_asks_with_no_offer(harness: Harness) -> None:
    ran: list[str] = []
    harness.add_tools(_tools(ran))
    book = GrantBook()
    book.add("run_cell:unflagged", "always")
    harness.fake.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "bad"})]), Turn(text="ok"))
    run = asyncio.ensure_future(_ask(harness, book, "run the bad cell"))
    card = await harness.wait_for("awaiting.confirmation")
    assert (
        "granted_by" not in card["extra_context"] and "auto_approved" not in card["extra_context"]
    )
    assert "permission_offers" not in card["extra_context"]
    harness.reply(card, "reject")
    await run
    assert ran == []


async def test_a_deny_beats_an_allow_and_is_never_asked(harness: Harness) -> None:
    ran: list[str] = []
    harness.add_tools(_tools(ran))
    book = GrantBook()
    book.add("run_cell:unflagged", "always")
    deny = book.add("run_cell:unflagged", "notebook", effect="deny", notebook_path="a.ipynb")
    harness.fake.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "4"})]), Turn(text="Not run."))
    await _ask(harness, book, "run cell 4", actor="Claude Code")  # an outside agent's session
    assert ran == [] and harness.events.of_type("awaiting.confirmation") == []
    assert harness.events.of_type("tool.invoked") == []
    told = [e["summary_normal"] for e in harness.events.of_type("progress.updated")]
    assert (
        "Not done: Running cell 4. Stopped by your rule never to allow unflagged code in this notebook."
        in told
    )
    (result,) = harness.last_tool_results()
    assert result["is_error"] and "standing rule forbids" in str(result["content"])
    assert book.revoke(deny.id) == deny
