"""The three approval modes: which calls ask in which mode, what is remembered, and the
line-by-line description of an edit a confirmation carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import pytest

from jupyter_aaep.agent.approval import (
    APPROVAL_MODES,
    MODE_LABELS,
    REMEMBERED_MODES,
    ApprovalPolicy,
)
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.text_diff import describe_change
from jupyter_aaep.agent.tools import ActionPreview, ToolRegistry, ToolResult, aaep_tool
from jupyter_aaep.chats.chat_json import chat_json
from jupyter_aaep.chats.persistence import ChatPersistence
from jupyter_aaep.chats.runner import ChatRunner, InvalidInput
from jupyter_aaep.store.chat_store import ChatStore
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import notebook_tools

TOOLS = {tool.name: tool for tool in notebook_tools()}
PLAIN = ActionPreview(summary="Doing it.")
FLAGGED = ActionPreview(summary="Running cell 1.", risk_flags=("deletes files (shutil.rmtree)",))

CHANGES = (
    "create_cell",
    "edit_cell",
    "delete_cell",
    "move_cell",
    "clear_outputs",
    "interrupt_kernel",
)
RUNS = ("run_cell", "run_all_cells", "restart_kernel")
READS = (
    "get_notebook_state",
    "list_notebooks",
    "list_files",
    "read_file",
    "check_accessibility",
)


def asks(mode: str, tool: str, preview: ActionPreview = PLAIN) -> bool:
    return ApprovalPolicy(mode=mode).needs_confirmation(TOOLS[tool], preview)  # type: ignore[arg-type]


def test_the_three_modes_have_wire_values_and_honest_names() -> None:
    assert APPROVAL_MODES == ("ask", "ask_all", "auto", "plan")
    assert MODE_LABELS == {
        "ask": "Ask before running code",
        "ask_all": "Ask before every change",
        "auto": "Auto",
        "plan": "Plan first",
    }
    assert REMEMBERED_MODES == ("ask", "ask_all", "plan")
    assert {*CHANGES, *RUNS, *READS} <= set(TOOLS)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_notebook_tool_follows_the_rule_of_each_mode(tool: str) -> None:
    """Reading never asks; running code always asks; any other change asks before every change."""
    spec = TOOLS[tool]
    expected = {
        "ask": spec.irreversible or spec.require_confirmation,
        "ask_all": not spec.read_only,
        "auto": spec.irreversible or spec.require_confirmation,
        "plan": spec.irreversible or spec.require_confirmation,  # outside a plan: as ask
    }
    assert {mode: asks(mode, tool) for mode in APPROVAL_MODES} == expected


@pytest.mark.parametrize("tool", RUNS)
def test_running_code_asks_in_every_mode(tool: str) -> None:
    assert all(asks(mode, tool) for mode in APPROVAL_MODES)


@pytest.mark.parametrize("tool", CHANGES)
def test_changes_ask_only_before_every_change(tool: str) -> None:
    assert asks("ask_all", tool)
    assert not asks("ask", tool) and not asks("auto", tool)


@pytest.mark.parametrize("tool", READS)
def test_reading_never_asks(tool: str) -> None:
    assert not any(asks(mode, tool) for mode in APPROVAL_MODES)


def test_auto_answers_for_the_user_except_flagged_code() -> None:
    auto, ask_all, ask = (
        ApprovalPolicy(mode="auto"),
        ApprovalPolicy(mode="ask_all"),
        ApprovalPolicy(),
    )
    assert auto.auto_approves(PLAIN) and not auto.auto_approves(FLAGGED)
    assert asks("auto", "run_cell", FLAGGED), "a risky cell still asks in auto"
    assert not ask.auto_approves(PLAIN) and not ask_all.auto_approves(PLAIN)
    # A preview that says "no confirmation" cannot skip the review of a change.
    quiet = ActionPreview(summary="x", requires_confirmation=False)
    assert ask_all.needs_confirmation(TOOLS["edit_cell"], quiet)
    assert not ask.needs_confirmation(TOOLS["edit_cell"], quiet)
    assert not ask_all.needs_confirmation(TOOLS["read_file"], quiet)


def test_an_unanswered_change_is_rejected_in_every_mode() -> None:
    """The AAEP rule would let a low-risk reversible edit go ahead when nobody answers; we
    never do: silence never applies a change (issue 25)."""
    assert ApprovalPolicy().default_decision(TOOLS["edit_cell"], "low") == "reject"
    assert ApprovalPolicy(mode="auto").default_decision(TOOLS["edit_cell"], "low") == "reject"
    assert ApprovalPolicy(mode="ask_all").default_decision(TOOLS["edit_cell"], "low") == "reject"
    assert ApprovalPolicy(mode="auto").default_decision(TOOLS["delete_cell"], "medium") == "reject"
    assert ApprovalPolicy().default_decision(TOOLS["run_cell"], "medium") == "reject"


def test_a_user_tool_that_changes_something_asks_before_every_change() -> None:
    @aaep_tool(risk_level="low")
    def tag_rows(tag: str) -> ToolResult:
        """Tag the rows.

        Parameters
        ----------
        tag : str
            The tag.
        """
        return ToolResult(content=tag)

    @aaep_tool(risk_level="low", read_only=True)
    def count_rows() -> str:
        """Count the rows."""
        return "3"

    review = ApprovalPolicy(mode="ask_all")
    assert review.needs_confirmation(tag_rows, PLAIN) and not review.needs_confirmation(
        count_rows, PLAIN
    )
    assert not ApprovalPolicy().needs_confirmation(tag_rows, PLAIN)


def test_modes_are_set_by_name_and_restored_unless_auto() -> None:
    policy = ApprovalPolicy()
    policy.set_mode("ask_all")
    assert policy.mode == "ask_all"
    with pytest.raises(
        ValueError,
        match=r"ask \(Ask before running code\), ask_all \(Ask before every change\), "
        r"auto \(Auto\), plan \(Plan first\), not 'review'",
    ):
        policy.set_mode("review")
    assert policy.mode == "ask_all"
    for stored, default, expected in [
        ("ask", "auto", "ask"),
        ("ask_all", "ask", "ask_all"),
        ("auto", "ask", "ask"),
        ("auto", "ask_all", "ask_all"),
        ("junk", "ask", "ask"),
    ]:
        restored = ApprovalPolicy(mode=default)  # type: ignore[arg-type]
        restored.restore(stored)
        assert restored.mode == expected, (stored, default)


# -- the runner: a chat's mode when created, changed and read back after a restart ---------------


async def test_the_mode_is_chosen_at_creation_stored_and_restored(tmp_path: Path) -> None:
    db = tmp_path / "chats.sqlite3"
    async with FakeAnthropic() as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )

        def runner(store: ChatStore, default: str) -> ChatRunner:
            return ChatRunner(
                client_factory=lambda: client,
                config=AgentConfig(model="claude-test"),
                registry_factory=lambda chat: ToolRegistry(conversation_tools()),
                policy_factory=lambda: ApprovalPolicy(mode=default),  # type: ignore[arg-type]
                persistence=ChatPersistence(store),
            )

        store = ChatStore(str(db))
        first = runner(store, "ask")
        plain = first.create_chat("a.ipynb")
        review = first.create_chat("a.ipynb", approval_mode="ask_all")
        switched = first.create_chat("a.ipynb")
        first.set_approval_mode(switched.chat_id, "ask_all")
        auto = first.create_chat("a.ipynb", approval_mode="auto")
        with pytest.raises(InvalidInput, match="approval mode must be one of"):
            first.create_chat("a.ipynb", approval_mode="sometimes")
        assert [chat_json(c)["approval_mode"] for c in (plain, review, switched, auto)] == [
            "ask",
            "ask_all",
            "ask_all",
            "auto",
        ]
        await first.shutdown()
        assert store.flush()
        store.close()

        again = ChatStore(str(db))
        second = runner(again, "ask")
        modes = [second.get(c.chat_id).approval.mode for c in (plain, review, switched, auto)]
        assert modes == ["ask", "ask_all", "ask_all", "ask"], "auto is never remembered"
        await second.shutdown()
        again.close()
        await client.close()


# -- the line-by-line description ---------------------------------------------------------------


def test_a_changed_line_an_added_line_and_removed_lines_in_words() -> None:
    old = "import math\nx = 1\ny = 2\nprint(x)\na = 1\nb = 2\n"
    new = "import math\nx = 2\ny = 2\nprint(x)\nprint(y)\n"
    diff = describe_change(old, new)
    assert diff.summary == "2 lines changed, 1 removed"
    assert diff.text == (
        "Line 2 changed from 'x = 1' to 'x = 2'. Line 5 changed from 'a = 1' to 'print(y)'. "
        "Line 6 removed: 'b = 2'."
    )
    marks = [(line.kind, line.old_line, line.new_line, line.text) for line in diff.lines]
    assert marks[:3] == [
        ("context", 1, 1, "import math"),
        ("removed", 2, None, "x = 1"),
        ("added", None, 2, "x = 2"),
    ]
    assert ("removed", 6, None, "b = 2") in marks and not diff.truncated

    grown = describe_change(
        "a = 1\nb = 2", "# setup\na = 1\nb = 3\n\nprint(a)\nprint(b)\nprint(a + b)"
    )
    assert grown.summary == "1 line changed, 5 added"
    assert grown.sentences == [
        "Line 1 added: '# setup'.",
        "Line 2, line 3 after the change, changed from 'b = 2' to 'b = 3'.",
        "Lines 4 to 7 added: an empty line; 'print(a)'; 'print(b)'; and 1 more.",
    ]
    assert describe_change("a\nb\nc", "a").sentences == ["Lines 2 to 3 removed: 'b'; 'c'."]


def test_indentation_line_endings_and_no_change_are_said_plainly() -> None:
    assert describe_change("if x:\ny()", "if x:\n    y()").sentences == [
        "Line 2 changed its indentation from none to 4 spaces: 'y()'."
    ]
    assert (
        describe_change("\tz()", "  z()").text
        == "Line 1 changed its indentation from 1 tab to 2 spaces: 'z()'."
    )
    assert describe_change("x = 1", "x = 1\n").text == "Only the line endings change."
    same = describe_change("x = 1", "x = 1")
    assert (
        same.text == "The text stays the same."
        and same.summary == "No line changes"
        and same.lines == []
    )
    created = describe_change("", "print(1)")
    assert created.text == "Line 1 added: 'print(1)'." and created.summary == "1 line added"


def test_a_long_rewrite_stays_bounded_and_says_what_was_left_out() -> None:
    old = "\n".join(f"v{n} = {n}" for n in range(200))
    new = "\n".join(f"v{n} = {n * 2}" if n % 2 else f"v{n} = {n}" for n in range(200))
    diff = describe_change(old, new)
    assert diff.changed == 100 and diff.truncated
    assert len(diff.sentences) == 12 and diff.sentences[-1] == "…and 89 more changes."
    assert len(diff.lines) == 60
    wide = describe_change("", "x = '" + "a" * 500 + "'")
    assert wide.sentences[0].endswith("…'.") and len(wide.sentences[0]) < 120
    assert len(wide.lines[0].text) == 300 and wide.lines[0].text.endswith("…")
    as_json: dict[str, Any] = diff.to_json()
    assert as_json["summary"] == "100 lines changed" and as_json["text"].startswith(
        "Line 2 changed from 'v1 = 1'"
    )
    assert as_json["lines"][0] == {
        "kind": "context",
        "text": "v0 = 0",
        "old_line": 1,
        "new_line": 1,
    }


async def test_rejecting_a_change_tells_the_model_nothing_was_changed() -> None:
    """Through the real loop: in ask_all a reversible change waits, and a reject reaches the
    model as a refusal (not a failure), with the tool never invoked."""
    from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
    from jupyter_aaep.aaep.clock import SessionClock
    from jupyter_aaep.aaep.ids import new_subscription_id
    from jupyter_aaep.agent.loop import AgentLoop, ChatContext, RunControl

    touched: list[str] = []

    @aaep_tool(risk_level="low")
    def rename_column(name: str) -> str:
        """Rename a column.

        Parameters
        ----------
        name : str
            The new name.
        """
        touched.append(name)
        return "renamed"

    async with FakeAnthropic() as fake:
        fake.add(
            Turn(tool_uses=[ToolUse("rename_column", {"name": "price"})]),
            Turn(text="Left it as it was."),
        )
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        emitter, heard, broker = Emitter(), ListSubscriber(), ReplyBroker()
        emitter.subscribe(heard)
        loop = AgentLoop(
            client,
            ToolRegistry([rename_column]),
            broker=broker,
            config=AgentConfig(model="claude-test"),
        )
        chat = ChatContext(approval=ApprovalPolicy(mode="ask_all"))
        import asyncio

        task = asyncio.ensure_future(
            loop.run(
                Session(emitter, Producer(model="claude-test")),
                [],
                "rename it",
                chat=chat,
                control=RunControl(),
            )
        )
        for _ in range(500):
            if heard.of_type("awaiting.confirmation"):
                break
            await asyncio.sleep(0.01)
        [asked] = heard.of_type("awaiting.confirmation")
        assert broker.submit(
            {
                "type": "confirmation.reply",
                "reply_token": asked["reply_token"],
                "decision": "reject",
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
            }
        )
        result = await asyncio.wait_for(task, 20)
        await client.close()
    assert result.status == "completed" and touched == []
    assert not heard.of_type("tool.invoked")
    [tool_result] = [
        b
        for b in fake.requests[-1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    assert tool_result["is_error"] is True
    assert tool_result["content"].startswith(
        "The user declined: they rejected this change, so rename_column was "
        "not applied and nothing was changed."
    )
