"""The agent never loses a person's work: a second collaborator (a pycrdt client in the room)
edits while the agent works, through the real runner, tools and a scripted model.

- Undo reverts only the agent's recorded operations and names the cells it kept.
- A read-only session has nothing to undo.
- An edit is bound to the version the model read: a concurrent line is merged, or the edit is
  refused and the model is told.
- A cell the agent moves while someone types in it loses no keystroke.
- Another program writing the file during a session is reported to the model and the people.
- Each edit is on disk within a fraction of a second.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest
from nb_helpers import (
    Progress,
    cell_by_id,
    on_server_loop,
    wait_for,
    write_notebook,
)

from jupyter_aaep.aaep import ListSubscriber
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.data_blocks import unwrap
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolError, ToolRegistry
from jupyter_aaep.chats.chat_json import chat_json
from jupyter_aaep.chats.runner import ChatRunner, InvalidInput
from jupyter_aaep.notebook._text_edits import version_tag
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import (
    clear_outputs,
    delete_cell,
    edit_cell,
    move_cell,
    notebook_tools,
)

pytestmark = [pytest.mark.slow, pytest.mark.shared_server]

ROOM_SAVE_DELAY = 3.0
"""The room's own autosave delay here: longer than JupyterLab's 1 s default, so a file that holds
the agent's edit sooner was saved by the agent, not by the autosave."""


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any]) -> dict[str, Any]:
    jp_server_config["YDocExtension"] = {
        **jp_server_config["YDocExtension"],
        "document_save_delay": ROOM_SAVE_DELAY,
    }
    return jp_server_config


def code(cell_id: str, source: str) -> dict[str, Any]:
    return {"id": cell_id, "source": source}


class Rig:
    """The real runner with the notebook tools, talking to a scripted model over HTTP."""

    def __init__(self, fake: FakeAnthropic, service: Any) -> None:
        self.fake = fake
        self.client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        self.runner = ChatRunner(
            client_factory=lambda: self.client,
            registry_factory=lambda chat: ToolRegistry([*conversation_tools(), *notebook_tools()]),
            config=AgentConfig(model="claude-test"),
            services=AgentServices(notebook=service),
        )
        self.heard = ListSubscriber()

    def chat(self, path: str) -> Any:
        chat = self.runner.create_chat(path)
        chat.emitter.subscribe(self.heard)
        return chat

    async def run(self, chat: Any, text: str) -> Any:
        self.runner.submit(chat.chat_id, text)
        return await chat.task

    def tool_results(self) -> list[str]:
        """Every tool_result text the model received, in order (read inside its data block)."""
        found = []
        for request in self.fake.requests:
            message = request.body["messages"][-1]
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = unwrap(block.get("content") or "")
                    if str(content) not in found:
                        found.append(str(content))
        return found

    def said(self) -> list[str]:
        """What people heard: every event's normal summary (progress descriptions included)."""
        lines = []
        for event in self.heard.events:
            for key in ("summary_normal",):
                if event.get(key):
                    lines.append(str(event[key]))
            progress = event.get("progress") or {}
            if isinstance(progress, dict) and progress.get("description"):
                lines.append(str(progress["description"]))
        return lines


def sources(doc: Any) -> list[tuple[str, str]]:
    """(id, source) of each cell of a collaborator's ``YNotebook`` or of a ``LiveNotebook``."""
    cells = doc.cells() if hasattr(doc, "cells") else [c.to_py() for c in doc.ycells]
    return [(str(c.get("id")), str(c.get("source"))) for c in cells]


def on_disk(root: Path, path: str) -> list[tuple[str, str]]:
    """The cells in the file (none while it is being written)."""
    try:
        cells = json.loads((root / path).read_text())["cells"]
    except ValueError:
        return []
    return [
        (c["id"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
        for c in cells
    ]


@on_server_loop
async def test_undo_keeps_a_collaborators_edit_and_cell_and_reverts_only_the_agents(
    notebook_file, service, browser
) -> None:
    path = notebook_file(
        "undo.ipynb",
        [code("a", "x = 1"), code("b", "y = 2"), code("c", "z = 3"), code("d", "w = 4")],
    )
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(
            Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
            Turn(
                tool_uses=[
                    ToolUse("edit_cell", {"cell_id": "a", "source": "x = 100"}),
                    ToolUse("edit_cell", {"cell_id": "b", "source": "y = 200"}),
                    ToolUse("create_cell", {"source": "print(x, y)", "after_cell_id": "b"}),
                    ToolUse("delete_cell", {"cell_id": "d"}),
                ]
            ),
            Turn(text="Changed the cells."),
        )
        async with browser(path) as doc:
            await rig.run(chat, "change the numbers")
            await wait_for(
                lambda: len(doc.ycells) == 4 and cell_by_id(doc, "b")["source"] == "y = 200",
                what="the agent's edits in the collaborator's copy",
            )
            # The collaborator changes the agent's cell b, edits c (never touched by the agent), adds a cell.
            with doc.ydoc.transaction():
                b = doc.ycells[1]["source"]
                b.insert(len(str(b)), "  # checked")
                c = doc.ycells[3]["source"]
                c.insert(len(str(c)), "\nz += 1")
                doc.ycells.append(
                    doc.create_ycell(
                        {
                            "id": "mine",
                            "cell_type": "code",
                            "source": "mine = True",
                            "metadata": {},
                            "outputs": [],
                            "execution_count": None,
                        }
                    )
                )
            live = await service.open(path)
            await wait_for(
                lambda: "mine" in live.cell_ids(), what="the collaborator's cell on the server"
            )
            assert chat_json(chat)["undoable_sessions"] == [
                chat.results[-1].terminal_event["session_id"]
            ]

            notice = await rig.runner.revert(chat.chat_id)
            expected = [
                ("a", "x = 1"),
                ("b", "y = 200  # checked"),
                ("c", "z = 3\nz += 1"),
                ("d", "w = 4"),
                ("mine", "mine = True"),
            ]
            assert sources(await service.open(path)) == expected
            await wait_for(
                lambda: sources(doc) == expected, what="the undo in the collaborator's copy"
            )
        assert (notice["removed"], notice["added"], notice["restored"]) == (1, 1, 1)
        assert notice["kept"] == [
            "Cell 2 was kept as it is: someone changed it after this request."
        ]
        assert notice["summary"] == (
            "Undid the agent's changes to undo.ipynb: removed 1 cell the agent added, put back 1 cell the agent "
            "deleted and restored 1 cell the agent changed. Cell 2 was kept as it is: someone changed it after "
            "this request."
        )
        await rig.client.close()


@on_server_loop
async def test_a_read_only_session_has_nothing_to_undo(notebook_file, service, browser) -> None:
    path = notebook_file("read.ipynb", [code("a", "x = 1")])
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(Turn(tool_uses=[ToolUse("get_notebook_state", {})]), Turn(text="It sets x."))
        async with browser(path) as doc:
            await rig.run(chat, "explain this notebook")
            doc.ycells.append(
                doc.create_ycell(
                    {
                        "id": "mine",
                        "cell_type": "code",
                        "source": "mine = 1",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                    }
                )
            )
            live = await service.open(path)
            await wait_for(lambda: "mine" in live.cell_ids(), what="the collaborator's cell")
            assert chat_json(chat)["undoable_sessions"] == []
            with pytest.raises(
                InvalidInput, match="nothing to undo: the agent has not changed this notebook"
            ):
                await rig.runner.revert(chat.chat_id)
            assert [c for c, _ in sources(await service.open(path))] == ["a", "mine"]
        await rig.client.close()


async def _type_during_the_models_turn(rig: Rig, doc: Any, cell_index: int, text: str) -> None:
    """Wait for the notebook to be read, then type *text* at the end of a cell (as the collaborator)."""
    await wait_for(
        lambda: any(e.get("type") == "aaep:agent.tool.completed" for e in rig.heard.events),
        what="the model's read",
    )
    ysource = doc.ycells[cell_index]["source"]
    ysource.insert(len(str(ysource).encode()), text)


@on_server_loop
async def test_a_line_added_between_the_read_and_the_edit_is_merged(
    notebook_file, service, browser
) -> None:
    before = "import math\n\nradius = 2\narea = math.pi * radius"
    path = notebook_file("merge.ipynb", [code("a", before)])
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(
            Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
            Turn(
                delay=1.5,
                tool_uses=[
                    ToolUse(
                        "edit_cell",
                        {
                            "cell_id": "a",
                            "version": version_tag(before),
                            "source": before.replace(
                                "area = math.pi * radius", "area = math.pi * radius ** 2"
                            ),
                        },
                    )
                ],
            ),
            Turn(text="Fixed the formula."),
        )
        async with browser(path) as doc:
            rig.runner.submit(chat.chat_id, "fix the area")
            await _type_during_the_models_turn(rig, doc, 0, "\nprint(area)")
            result = await chat.task
            merged = "import math\n\nradius = 2\narea = math.pi * radius ** 2\nprint(area)"
            await wait_for(lambda: cell_by_id(doc, "a")["source"] == merged, what="the merged cell")
        assert (await service.open(path)).cell("a")["source"] == merged
        told = rig.tool_results()[-1]
        assert "had changed since you read it; your change was merged" in told and merged in told
        assert "Edited cell 1, keeping the change someone made meanwhile." in rig.said()
        assert result.status == "completed"
        await rig.client.close()


@on_server_loop
async def test_an_edit_of_the_lines_someone_changed_is_refused_and_the_model_told(
    notebook_file, service, browser
) -> None:
    before = "rate = 0.1\nprint(rate)"
    path = notebook_file("refuse.ipynb", [code("a", before)])
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(
            Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
            Turn(
                delay=1.5,
                tool_uses=[
                    ToolUse(
                        "edit_cell",
                        {
                            "cell_id": "a",
                            "version": version_tag(before),
                            "source": "rate = 0.2\nprint(rate)",
                        },
                    )
                ],
            ),
            Turn(text="I will read it again."),
        )
        async with browser(path) as doc:
            rig.runner.submit(chat.chat_id, "raise the rate")
            await wait_for(
                lambda: any(e.get("type") == "aaep:agent.tool.completed" for e in rig.heard.events),
                what="the model's read",
            )
            ysource = doc.ycells[0]["source"]
            ysource.insert(len("rate = 0.1"), "5")  # the person's own change on the same line
            await chat.task
            await asyncio.sleep(0.3)
            assert cell_by_id(doc, "a")["source"] == "rate = 0.15\nprint(rate)"
        assert (await service.open(path)).cell("a")["source"] == "rate = 0.15\nprint(rate)"
        told = rig.tool_results()[-1]
        assert told.startswith(
            "Cell 1 changed since you read it and your edit and the other change touch the "
            "same lines, so nothing was changed. Read it again"
        ), told
        assert any(
            "the agent's edit was not applied, so the other change stays" in line
            for line in rig.said()
        )
        assert chat.snapshots == {}, "a refused edit changed nothing: nothing to undo"
        await rig.client.close()


@on_server_loop
async def test_typing_in_a_cell_the_agent_moves_loses_no_keystroke(
    notebook_file, make_ctx, service, browser
) -> None:
    path = notebook_file(
        "move.ipynb",
        [code("a", "a = 1"), code("b", "b = 2"), code("c", "c = 3"), code("t", "typed = '")],
    )
    typed = "the quick brown fox jumps over the lazy dog"
    async with browser(path) as doc:
        ytext = doc.ycells[3]["source"]  # the shared text the person's editor is bound to

        async def type_slowly() -> None:
            for char in typed:
                ytext.insert(len(str(ytext).encode()), char)
                await asyncio.sleep(0.03)

        typing = asyncio.ensure_future(type_slowly())
        await asyncio.sleep(0.2)
        result = await move_cell(make_ctx(path), cell_id="t", position=1)
        await typing
        expected = "typed = '" + typed
        live = await service.open(path)
        await wait_for(
            lambda: live.cell("t")["source"] == expected, what="every keystroke on the server"
        )
        assert live.cell_ids() == ["t", "a", "b", "c"]
        await wait_for(
            lambda: [c for c, _ in sources(doc)] == ["t", "a", "b", "c"],
            what="the order in the copy",
        )
        assert doc.ycells[0]["source"] is ytext or str(doc.ycells[0]["source"]) == expected
        lost = len(expected) - len(live.cell("t")["source"])
        print(f"keystrokes lost while the agent moved the cell: {lost} of {len(typed)}")
        assert lost == 0
        assert str(ytext) == expected, "the person's editor is still bound to the cell's text"
    assert result.summary == "Moved cell 4 to position 1."


@on_server_loop
async def test_another_programs_write_during_a_session_is_reported(
    notebook_file, service, browser, jp_root_dir
) -> None:
    path = notebook_file("oob.ipynb", [code("a", "x = 1")])
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(
            Turn(tool_uses=[ToolUse("create_cell", {"source": "agent_cell = 1"})]),
            Turn(delay=3.0, tool_uses=[ToolUse("get_notebook_state", {})]),
            Turn(text="Done here."),
        )
        async with browser(path) as doc:
            rig.runner.submit(chat.chat_id, "add a cell")
            await wait_for(
                lambda: any("agent_cell" in s for _, s in on_disk(jp_root_dir, path)),
                what="the agent's cell on disk",
            )
            await asyncio.sleep(0.3)
            write_notebook(
                jp_root_dir, path, [code("a", "x = 1"), code("other", "from_another_program = 1")]
            )
            await wait_for(
                lambda: cell_by_id(doc, "other") is not None, timeout=15, what="the room's reload"
            )
            result = await chat.task
        told = rig.tool_results()[-1]
        assert told.startswith(
            "[Notice] Another program rewrote the notebook's file and Jupyter reloaded it; "
            "these changes by the agent are gone: the new cell 'agent_cell = 1'."
        ), told
        heard = rig.said()
        assert any("these changes by the agent are gone" in line for line in heard), heard
        end = result.terminal_event
        assert (
            end["summary_terse"] != "Done."
            and "are gone: the new cell 'agent_cell = 1'" in end["summary_normal"]
        )
        await rig.client.close()


@on_server_loop
async def test_each_agent_edit_is_on_disk_within_a_fraction_of_a_second(
    notebook_file, service, jp_root_dir
) -> None:
    """The room's own autosave waits for its delay; the agent's edit is saved right after it."""
    path = notebook_file("saved.ipynb", [code("a", "x = 1")])
    with FakeAnthropic() as fake:
        rig = Rig(fake, service)
        chat = rig.chat(path)
        fake.add(
            Turn(tool_uses=[ToolUse("create_cell", {"source": "saved_soon = 1"})]),
            Turn(
                delay=5.0, text="Added."
            ),  # the session is still running while the file is checked
        )
        rig.runner.submit(chat.chat_id, "add a cell")
        await wait_for(
            lambda: any(e.get("type") == "aaep:agent.tool.completed" for e in rig.heard.events),
            what="the edit",
        )
        done = time.monotonic()
        await wait_for(
            lambda: any(s == "saved_soon = 1" for _, s in on_disk(jp_root_dir, path)),
            timeout=3,
            what="the edit on disk",
        )
        delay_ms = (time.monotonic() - done) * 1000
        print(f"save delay after an agent edit: {delay_ms:.0f} ms")
        assert delay_ms < 800
        await chat.task
        await rig.client.close()


@on_server_loop
async def test_undo_of_moves_and_cleared_outputs_and_stale_deletes(
    notebook_file, make_ctx, service
) -> None:
    stream = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    path = notebook_file(
        "more.ipynb",
        [
            code("a", "a = 1"),
            code("b", "b = 2"),
            {"id": "c", "source": "print('hello')", "outputs": [stream]},
        ],
    )
    ctx = make_ctx(path)
    record = service.begin_record("chat-1", "sess-1", path)
    with pytest.raises(Exception, match="Cell 1 changed since you read it"):
        await delete_cell(
            ctx, cell_id="a", version=version_tag("a = 0")
        )  # read before someone changed it
    assert record.empty, "a refused change is not recorded"
    await move_cell(ctx, cell_id="c", position=1, version=version_tag("print('hello')"))
    await clear_outputs(ctx, cell_ids=["c"])
    live = await service.open(path)
    assert live.cell_ids() == ["c", "a", "b"] and live.cell("c")["outputs"] == []
    report = await service.undo(path, [record])
    live = await service.open(path)
    assert (report.restored, report.kept) == (2, [])
    assert live.cell_ids() == ["a", "b", "c"]
    assert live.cell("c")["outputs"][0]["text"] == "hello\n"

    # Moved again, then a person moves it elsewhere: undo keeps the person's order and says so.
    record = service.begin_record("chat-1", "sess-2", path)
    await move_cell(ctx, cell_id="c", position=1)
    live.move_cell("c", 1)  # the person's own move
    report = await service.undo(path, [record])
    assert report.kept == ["Cell 2 was kept where it is: someone moved it after this request."]
    assert (await service.open(path)).cell_ids() == ["a", "c", "b"]


@on_server_loop
async def test_typing_in_a_cell_the_agent_edits_loses_no_keystroke(
    notebook_file, make_ctx, service, browser
) -> None:
    before = "total = 0\nnote = '"
    path = notebook_file("typing.ipynb", [code("t", before)])
    typed = "typed while the agent edits the first line"
    ctx = make_ctx(path)
    service.remember_read(before)  # what the model read
    async with browser(path) as doc:
        ytext = doc.ycells[0]["source"]

        async def type_slowly() -> None:
            for char in typed:
                ytext.insert(len(str(ytext).encode()), char)
                await asyncio.sleep(0.02)

        typing = asyncio.ensure_future(type_slowly())
        await asyncio.sleep(0.3)
        result = await edit_cell(
            ctx, cell_id="t", source="total = 100\nnote = '", version=version_tag(before)
        )
        await typing
        expected = "total = 100\nnote = '" + typed
        live = await service.open(path)
        await wait_for(
            lambda: live.cell("t")["source"] == expected and str(ytext) == expected,
            what="the edit and every keystroke on both sides",
        )
    lost = len(typed) - (len(live.cell("t")["source"]) - len("total = 100\nnote = '"))
    print(f"keystrokes lost while the agent edited the cell: {lost} of {len(typed)}")
    assert (
        lost == 0 and result.summary == "Edited cell 1, keeping the change someone made meanwhile."
    )


@on_server_loop
async def test_a_cell_someone_has_their_cursor_in_stays_alive_when_moved(
    notebook_file, make_ctx, service, collaborator
) -> None:
    """Not typing, only there: the room's awareness shows their cursor, so the cell is kept."""
    path = notebook_file(
        "cursor.ipynb", [code("a", "a = 1"), code("b", "b = 2"), code("here", "here = 3")]
    )
    async with collaborator(path) as (doc, put_cursor):
        ytext = doc.ycells[2]["source"]
        await put_cursor(2, 4)
        live = await service.open(path)
        await wait_for(
            lambda: service.documents.cursors(path), what="the cursor in the room's awareness"
        )
        assert live.cells_with_cursors(
            await service.documents.cursors(path), {"a", "b", "here"}
        ) == {"here"}
        await move_cell(make_ctx(path), cell_id="here", position=1)
        await wait_for(
            lambda: [c for c, _ in sources(doc)] == ["here", "a", "b"], what="the move in the copy"
        )
        ytext.insert(
            len("here"), "_still"
        )  # the person types after the move, in the text their editor holds
        await wait_for(
            lambda: (
                (live.cell("here")["source"] if "here" in live.cell_ids() else "")
                == "here_still = 3"
            ),
            what="their typing on the server",
        )
        assert doc.ycells[0]["source"] is ytext or str(doc.ycells[0]["source"]) == "here_still = 3"


@on_server_loop
async def test_a_move_past_the_cell_someone_is_also_in_waits_then_is_skipped_and_said(
    notebook_file, make_ctx, service, collaborator
) -> None:
    """Their editor is in the cell and in a cell it would pass: no way to move it without
    re-creating one of them, so the agent waits for them, then leaves the order and says so."""
    path = notebook_file(
        "busy.ipynb", [code("here", "here = 1"), code("a", "a = 2"), code("b", "b = 3")]
    )
    async with collaborator(path) as (doc, put_cursor):
        here, b = doc.ycells[0]["source"], doc.ycells[2]["source"]
        await put_cursor(0, 4, also=[(2, 1)])
        live = await service.open(path)
        await wait_for(
            lambda: service.documents.cursors(path), what="the cursors in the room's awareness"
        )
        progress = Progress()
        record = service.begin_record("chat-1", "sess-1", path)
        started = time.monotonic()
        with pytest.raises(ToolError, match="Cell 1 was not moved: someone is typing in it"):
            await move_cell(make_ctx(path, progress=progress), cell_id="here", position=3)
        waited = time.monotonic() - started
        assert waited >= 3.0, f"gave up after {waited:.1f} s without waiting for them"
        assert progress == [
            "Someone is typing in cell 1 and the cells around it, so the agent did not move it."
        ]
        assert live.cell_ids() == ["here", "a", "b"]
        assert record.empty, "a move not made is nothing to undo"
        here.insert(len("here"), "_kept")
        b.insert(len("b"), "_kept")
        await wait_for(
            lambda: (
                live.cell("here")["source"] == "here_kept = 1"
                and live.cell("b")["source"] == "b_kept = 3"
            ),
            what="their typing in both cells on the server",
        )
