"""Edits under review ("ask before every change") on a real Jupyter server and the live document.

A browser stand-in (``browser``) is connected to the notebook's room like JupyterLab: it must
see nothing at all of a rejected change, and the approved change at once. The previews of the
edit tools say what will change in words and line by line.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop, wait_for

from jupyter_aaep.aaep import ListSubscriber
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import StaleApproval, ToolError, ToolRegistry
from jupyter_aaep.chats.runner import ChatRunner
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import create_cell, delete_cell, edit_cell, notebook_tools

pytestmark = pytest.mark.shared_server

TOOLS = {tool.name: tool for tool in notebook_tools()}
OLD = "import math\nx = 1\ny = 2\nprint(x)\n"
NEW = "import math\nx = 2\ny = 2\nprint(x)\nprint(y)\n"
STREAM = {"output_type": "stream", "name": "stdout", "text": "1\n"}


def cells_json(doc: Any) -> str:
    """The document's cells, serialised exactly (what "untouched, byte for byte" compares)."""
    return json.dumps([ycell.to_py() for ycell in doc.ycells], sort_keys=True)


def reply(runner: ChatRunner, chat_id: str, event: dict[str, Any], decision: str) -> None:
    assert runner.reply(
        chat_id,
        {
            "type": "confirmation.reply",
            "reply_token": event["reply_token"],
            "decision": decision,
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
        },
    )


@on_server_loop
async def test_edit_previews_say_what_changes_line_by_line(notebook_file, make_ctx) -> None:
    path = notebook_file(
        "review.ipynb",
        [
            {"id": "load", "cell_type": "markdown", "source": "# Load the data"},
            {"id": "calc", "source": OLD, "outputs": [STREAM]},
            {"id": "plot", "source": "plot(x)"},
        ],
    )
    ctx = make_ctx(path)

    edit = await TOOLS["edit_cell"].describe(ctx, {"cell_id": "calc", "source": NEW})
    change = edit.extra_context["change"]
    assert edit.action == "Edit code cell 2: 1 line changed, 1 added."
    assert "calc" not in edit.action and "edit_cell" not in edit.action, (
        "no ids or tool names for people"
    )
    assert change["kind"] == "edit" and change["cell_number"] == 2
    assert "cell_number" not in edit.extra_context, "at the top it means the cell that will run"
    assert change["old_source"] == OLD and change["new_source"] == NEW
    assert (
        change["diff"]["text"]
        == "Line 2 changed from 'x = 1' to 'x = 2'. Line 5 added: 'print(y)'."
    )
    assert [line["kind"] for line in change["diff"]["lines"]] == [
        "context",
        "removed",
        "added",
        "context",
        "context",
        "added",
    ]
    assert "-x = 1" in edit.extra_context["diff"], "the unified diff stays for other clients"

    retype = await TOOLS["edit_cell"].describe(
        ctx, {"cell_id": "plot", "source": "Plot x.", "cell_type": "markdown"}
    )
    assert retype.action.endswith("It becomes a Markdown cell.")
    assert retype.extra_context["change"]["new_cell_type"] == "markdown"

    create = await TOOLS["create_cell"].describe(
        ctx, {"source": "df = load()\ndf.head()", "after_cell_id": "load"}
    )
    assert create.action == "Create a code cell after cell 1 ('Load the data'), with 2 lines."
    assert create.extra_context["change"]["where"] == "after cell 1 ('Load the data')"
    assert (
        create.extra_context["change"]["diff"]["text"]
        == "Lines 1 to 2 added: 'df = load()'; 'df.head()'."
    )
    top = await TOOLS["create_cell"].describe(
        ctx, {"source": "# Title", "cell_type": "markdown", "position": 1}
    )
    assert top.action == "Create a Markdown cell at the top, with 1 line."
    end = await TOOLS["create_cell"].describe(ctx, {"source": "z = 3"})
    assert end.extra_context["change"]["where"] == "after cell 3 ('plot(x)') (at the end)"

    delete = await TOOLS["delete_cell"].describe(ctx, {"cell_id": "calc"})
    assert delete.action == "Delete code cell 2: 4 lines and its 1 output."
    assert delete.extra_context["change"]["diff"]["removed"] == 4
    assert delete.extra_context["change"]["old_source"] == OLD

    move = await TOOLS["move_cell"].describe(ctx, {"cell_id": "load", "after_cell_id": "plot"})
    assert (
        move.action
        == "Move cell 1 'Load the data' to position 3, after cell 3 ('plot(x)') (at the end)."
    )
    assert move.extra_context["change"] | {"where": None} == {
        "kind": "move",
        "cell_number": 1,
        "cell_type": "markdown",
        "from_position": 1,
        "to_position": 3,
        "where": None,
        "label": "'Load the data'",
    }
    up = await TOOLS["move_cell"].describe(ctx, {"cell_id": "plot", "position": 1})
    assert up.action == "Move cell 3 to position 1, at the top."

    clear = await TOOLS["clear_outputs"].describe(ctx, {})
    assert clear.action == "Clear the outputs of every code cell: 1 output in 1 cell."
    assert clear.extra_context["change"]["cells_with_outputs"] == [2]
    some = await TOOLS["clear_outputs"].describe(ctx, {"cell_ids": ["plot"]})
    assert some.action == "Clear the outputs of cell 3: 0 outputs in 0 cells."

    # A call that cannot work fails before anyone is asked.
    for tool, args in [
        ("edit_cell", {"cell_id": "ghost", "source": "x"}),
        ("create_cell", {"source": "x", "after_cell_id": "ghost"}),
        ("create_cell", {"source": "key = '[hidden]'"}),
        ("move_cell", {"cell_id": "load"}),
    ]:
        try:
            await TOOLS[tool].describe(ctx, args)
        except ToolError:
            continue
        raise AssertionError(f"{tool} {args} was described instead of refused")


@on_server_loop
async def test_an_approval_of_a_change_is_bound_to_what_was_shown(
    notebook_file, make_ctx, service
) -> None:
    path = notebook_file(
        "bound.ipynb", [{"id": "a", "source": "x = 1"}, {"id": "b", "source": "y = 2"}]
    )
    ctx = make_ctx(path)
    await TOOLS["get_notebook_state"](ctx)
    shown = await TOOLS["edit_cell"].describe(ctx, {"cell_id": "a", "source": "x = 10"})
    placed = await TOOLS["create_cell"].describe(ctx, {"source": "z", "position": 2})
    gone = await TOOLS["delete_cell"].describe(ctx, {"cell_id": "b"})
    (await service.open(path)).set_source("a", "x = 1  # the user typed here")
    (await service.open(path)).insert_cell(
        0, cell_type="code", source="w = 0"
    )  # position 2 is now after it
    for call in (
        edit_cell(make_ctx(path, approved=shown.fingerprint), cell_id="a", source="x = 10"),
        create_cell(make_ctx(path, approved=placed.fingerprint), source="z", position=2),
    ):
        try:
            await call
        except StaleApproval as error:
            assert "nothing was changed" in str(error)
            continue
        raise AssertionError("a stale approval was used")
    assert [c["source"] for c in (await service.open(path)).cells()] == [
        "w = 0",
        "x = 1  # the user typed here",
        "y = 2",
    ]
    await delete_cell(
        make_ctx(path, approved=gone.fingerprint), cell_id="b"
    )  # b itself did not change
    assert len(await service.open(path)) == 2


@on_server_loop
async def test_a_rejected_edit_leaves_the_live_notebook_untouched_and_an_approved_one_applies(
    notebook_file, service, browser, jp_root_dir: Path
) -> None:
    path = notebook_file(
        "live.ipynb", [{"id": "calc", "source": OLD}, {"id": "plot", "source": "plot(x)"}]
    )
    async with FakeAnthropic() as fake, browser(path) as doc:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        runner = ChatRunner(
            client_factory=lambda: client,
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), *notebook_tools()]),
            config=AgentConfig(model="claude-test"),
            services=AgentServices(notebook=service),
            policy_factory=lambda: ApprovalPolicy(mode="ask_all"),
        )
        chat = runner.create_chat(path)
        heard = ListSubscriber()
        chat.emitter.subscribe(heard)
        fake.add(Turn(tool_uses=[ToolUse("get_notebook_state", {})]), Turn(text="Read it."))
        runner.submit(chat.chat_id, "read the notebook")  # an edit is based on what was read
        await chat.task
        await asyncio.sleep(0.6)  # past the room's save delay: the file on disk is settled
        before, on_disk = cells_json(doc), (jp_root_dir / path).read_bytes()

        fake.add(
            Turn(
                text="I will fix x.",
                tool_uses=[ToolUse("edit_cell", {"cell_id": "calc", "source": NEW})],
            ),
            Turn(text="Understood, I left the cell as it was."),
        )
        runner.submit(chat.chat_id, "set x to 2 and print y")
        asked = await wait_for(
            lambda: heard.of_type("awaiting.confirmation"), what="the edit's confirmation"
        )
        assert asked[0]["extra_context"]["change"]["diff"]["text"].startswith(
            "Line 2 changed from 'x = 1' to 'x = 2'."
        )
        assert asked[0]["risk_level"] == "low" and asked[0]["irreversible"] is False
        reply(runner, chat.chat_id, asked[0], "reject")
        await chat.task
        await asyncio.sleep(0.6)
        assert cells_json(doc) == before, "the browser's notebook did not change at all"
        assert (jp_root_dir / path).read_bytes() == on_disk, "nor the file"
        assert not [e for e in heard.of_type("tool.invoked") if e["tool"] == "edit_cell"]
        [result] = [
            b
            for b in fake.requests[-1].body["messages"][-1]["content"]
            if b.get("type") == "tool_result"
        ]
        assert result["is_error"] and "rejected this change" in result["content"]

        # Approved: applied at once in the browser's copy; Undo puts it back.
        fake.add(
            Turn(
                tool_uses=[
                    ToolUse("edit_cell", {"cell_id": "calc", "source": NEW}),
                    ToolUse("create_cell", {"source": "print(x + y)", "after_cell_id": "calc"}),
                ]
            ),
            Turn(text="Done."),
        )
        runner.submit(chat.chat_id, "please do it after all")
        edit = await wait_for(
            lambda: heard.of_type("awaiting.confirmation")[1:], what="the second request"
        )
        reply(runner, chat.chat_id, edit[0], "accept")
        create = await wait_for(
            lambda: heard.of_type("awaiting.confirmation")[2:], what="the new cell's request"
        )
        assert (
            create[0]["action"] == "Create a code cell after cell 1 ('import math'), with 1 line."
        )
        assert create[0]["default_decision"] == "reject", (
            "silence never applies a change under review"
        )
        reply(runner, chat.chat_id, create[0], "accept")
        await chat.task
        await wait_for(
            lambda: (
                [str(c.get("source")) for c in doc.ycells.to_py()]
                == [NEW, "print(x + y)", "plot(x)"]
            ),
            what="the approved changes in the browser",
        )
        await runner.revert(chat.chat_id)
        await wait_for(lambda: cells_json(doc) == before, what="Undo to restore the notebook")
        await client.close()
