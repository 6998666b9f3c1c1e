"""Undo: the runner snapshots the notebook before each session and can put it back."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.aaep import ListSubscriber
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.runner import ChatBusy, ChatRunner, InvalidInput
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server


@on_server_loop
async def test_revert_puts_back_what_the_session_changed(notebook_file, service) -> None:
    path = notebook_file(
        "undo.ipynb", [{"id": "keep", "source": "x = 1"}, {"id": "gone", "source": "y = 2"}]
    )
    with FakeAnthropic() as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        runner = ChatRunner(
            client_factory=lambda: client,
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), *notebook_tools()]),
            config=AgentConfig(model="claude-test"),
            services=AgentServices(notebook=service),
        )
        chat = runner.create_chat(path)
        heard = ListSubscriber()
        chat.emitter.subscribe(heard)
        with pytest.raises(InvalidInput, match="nothing to undo"):
            await runner.revert(chat.chat_id)
        fake.add(
            Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
            Turn(
                tool_uses=[
                    ToolUse("edit_cell", {"cell_id": "keep", "source": "x = 100"}),
                    ToolUse("delete_cell", {"cell_id": "gone"}),
                    ToolUse("create_cell", {"source": "# new", "cell_type": "markdown"}),
                ]
            ),
            Turn(text="Changed three cells."),
        )
        runner.submit(chat.chat_id, "rewrite the notebook")
        with pytest.raises(ChatBusy):
            await runner.revert(chat.chat_id)
        await chat.task
        changed = await service.open(path)
        assert [c["source"] for c in changed.cells()] == ["x = 100", "# new"]

        notice = await runner.revert(chat.chat_id)
        restored = await service.open(path)
        assert [(c["id"], c["source"]) for c in restored.cells()] == [
            ("keep", "x = 1"),
            ("gone", "y = 2"),
        ]
        assert (
            notice["kind"] == "notebook.reverted"
            and notice["removed"] == 1
            and notice["added"] == 1
        )
        assert notice["summary"] == (
            "Undid the agent's changes to undo.ipynb: removed 1 cell the agent added, "
            "put back 1 cell the agent deleted and restored 1 cell the agent changed."
        )
        assert all(e.get("kind") != "notebook.reverted" for e in heard.events), (
            "the undo is the answer to its request; the AAEP stream carries AAEP events only"
        )
        with pytest.raises(InvalidInput):
            await runner.revert(chat.chat_id)  # that snapshot is used up
        await client.close()


@on_server_loop
async def test_no_snapshot_without_a_notebook_service(notebook_file) -> None:
    runner: Any = ChatRunner(
        client_factory=lambda: None, registry_factory=lambda chat: ToolRegistry()
    )  # type: ignore[arg-type,return-value]
    chat = runner.create_chat("x.ipynb")
    with pytest.raises(InvalidInput):
        await runner.revert(chat.chat_id)


@on_server_loop
async def test_undo_never_removes_a_cell_another_agent_worked_on_after_it(
    notebook_file, make_ctx, service
) -> None:
    """The agent adds two cells; Claude Code, in a later session, edits one and only moves the
    other (its text is still the agent's). Undoing the agent's session removes neither, and names
    Claude Code; Claude Code's own session stays undoable and puts both back as it found them."""
    from jupyter_aaep.tools.notebook import create_cell, edit_cell, move_cell

    path = notebook_file("two.ipynb", [{"id": "a", "source": "a = 1"}])
    ctx = make_ctx(path)
    agents = service.begin_record("chat-1", "sess-agent", path)
    await create_cell(ctx, source="b = 2")
    await create_cell(ctx, source="c = 3")
    b, c = [i for i in (await service.open(path)).cell_ids() if i != "a"]
    service.end_record("chat-1")
    outside = service.begin_record("chat-1", "sess-outside", path, actor="Claude Code")
    await edit_cell(ctx, cell_id=b, source="b = 20")
    await move_cell(ctx, cell_id=c, position=1)
    service.end_record("chat-1")

    report = await service.undo(path, [agents], others=[outside])
    assert [x["source"] for x in (await service.open(path)).cells()] == ["c = 3", "a = 1", "b = 20"]
    assert report.removed == 0
    assert sorted(report.kept) == [
        "Cell 1 was kept as it is: Claude Code changed it after this request.",
        "Cell 3 was kept as it is: Claude Code changed it after this request.",
    ]

    report = await service.undo(path, [outside])
    assert [x["source"] for x in (await service.open(path)).cells()] == ["a = 1", "b = 2", "c = 3"]
    assert (report.restored, report.kept) == (2, [])
