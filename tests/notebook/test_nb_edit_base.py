"""No edit without a base, no delete under someone's editor, no cleared output put back: a
second collaborator (a pycrdt client in the room, with its cursor in the awareness) works while
the agent's tools run on a real Jupyter server.

- An edit without ``version`` is based on what that reader was shown: merged when the changes
  touch different lines (the collaborator's line survives), refused otherwise.
- A cell the reader never read (another chat's read does not count) is not replaced or deleted.
- A cell someone is typing in is not deleted, re-typed or cleared: the tool waits, then refuses,
  every keystroke stays in that cell and none lands elsewhere; the person hears it.
- Clearing a running cell sticks: only the outputs after the clear come back, and the model is
  told the cell still runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from nb_helpers import Progress, cell_by_id, on_server_loop, wait_for

from jupyter_aaep.errors import ToolError
from jupyter_aaep.tools.notebook import (
    clear_outputs,
    delete_cell,
    edit_cell,
    get_notebook_state,
)

pytestmark = [pytest.mark.slow, pytest.mark.shared_server]

BEFORE = "total = 0\nfor x in data:\n    total += x\nprint(total)"
HUMAN_FIX = "total += important_human_fix()\n"


def code(cell_id: str, source: str) -> dict[str, Any]:
    return {"id": cell_id, "source": source}


def sources(doc: Any) -> dict[str, str]:
    return {str(c.get("id")): str(c.get("source")) for c in (c.to_py() for c in doc.ycells)}


async def _add_human_fix(doc: Any, service: Any, path: str) -> str:
    """The collaborator adds their line before the last one of cell 1; returns the new text."""
    ytext = doc.ycells[0]["source"]
    at = str(ytext).rindex("print(total)")
    ytext.insert(len(str(ytext)[:at].encode()), HUMAN_FIX)
    expected = BEFORE.replace("print(total)", HUMAN_FIX + "print(total)")
    live = await service.open(path)
    await wait_for(lambda: live.cell("a")["source"] == expected, what="their line on the server")
    return expected


@on_server_loop
async def test_an_edit_without_version_is_merged_with_a_collaborators_line(
    notebook_file, make_ctx, service, collaborator
) -> None:
    path = notebook_file("merge.ipynb", [code("a", BEFORE), code("b", "y = 2")])
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    async with collaborator(path) as (doc, _):
        await get_notebook_state(ctx)
        await _add_human_fix(doc, service, path)
        result = await edit_cell(ctx, cell_id="a", source=BEFORE.replace("total = 0", "total = 10"))
        merged = "total = 10\nfor x in data:\n    total += x\n" + HUMAN_FIX + "print(total)"
        await wait_for(lambda: sources(doc)["a"] == merged, what="the merge in their copy")
    assert (await service.open(path)).cell("a")["source"] == merged
    assert result.summary == "Edited cell 1, keeping the change someone made meanwhile."
    assert "had changed since you read it; your change was merged" in str(result.content)
    # The agent's own edit is its new base: a second edit without version applies plainly.
    again = await edit_cell(ctx, cell_id="a", source=merged.replace("10", "20"))
    assert again.summary == "Edited cell 1."


@on_server_loop
async def test_an_edit_without_version_of_the_line_they_changed_is_refused(
    notebook_file, make_ctx, service, collaborator
) -> None:
    path = notebook_file("clash.ipynb", [code("a", BEFORE)])
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    async with collaborator(path) as (doc, _):
        await get_notebook_state(ctx)
        expected = await _add_human_fix(doc, service, path)
        # The model rewrites the lines around the place they added theirs: nobody can tell which wins.
        with pytest.raises(ToolError, match="Cell 1 changed since you read it") as refused:
            await edit_cell(
                ctx,
                cell_id="a",
                source=BEFORE.replace(
                    "    total += x\nprint(total)", "    total += 2 * x\nprint(total * 2)"
                ),
            )
        assert "Read it again" in str(refused.value)
        await asyncio.sleep(0.3)
        assert sources(doc)["a"] == expected
    assert (await service.open(path)).cell("a")["source"] == expected
    assert any("the other change stays" in line for line in progress), progress


@on_server_loop
async def test_a_cell_never_read_is_not_replaced_nor_deleted(
    notebook_file, make_ctx, service, browser
) -> None:
    path = notebook_file("unread.ipynb", [code("a", "x = 1"), code("b", "mine = 2")])
    ctx = make_ctx(path)
    other = make_ctx(path)
    other.chat_id = "another-chat"  # another chat's agent read the notebook: not this one
    await get_notebook_state(other)
    async with browser(path) as doc:
        for attempt, done in (
            (edit_cell(ctx, cell_id="b", source="mine = 3"), "changed"),
            (edit_cell(ctx, cell_id="b", source="mine = 3", cell_type="markdown"), "changed"),
            (delete_cell(ctx, cell_id="b"), "deleted"),
        ):
            with pytest.raises(ToolError, match=f"Cell 2 was not {done}: you have not read it"):
                await attempt
        await asyncio.sleep(0.3)
        assert sources(doc) == {"a": "x = 1", "b": "mine = 2"}
    # A read of only cell 1 is no base for cell 2; a read of cell 2 is.
    await get_notebook_state(ctx, cell_ids=["a"])
    with pytest.raises(ToolError, match="you have not read it"):
        await edit_cell(ctx, cell_id="b", source="mine = 3")
    await get_notebook_state(ctx, cell_ids=["b"])
    assert (await edit_cell(ctx, cell_id="b", source="mine = 3")).summary == "Edited cell 2."


@on_server_loop
async def test_a_delete_without_version_of_a_cell_changed_since_the_read_is_refused(
    notebook_file, make_ctx, service
) -> None:
    path = notebook_file("stale.ipynb", [code("a", "x = 1"), code("b", "keep = 2")])
    ctx = make_ctx(path)
    await get_notebook_state(ctx)
    (await service.open(path)).set_source("b", "keep = 2  # the person's note")
    with pytest.raises(ToolError, match="Cell 2 changed since you read it"):
        await delete_cell(ctx, cell_id="b")
    assert (await service.open(path)).cell_ids() == ["a", "b"]


@on_server_loop
async def test_a_cell_someone_types_in_is_not_deleted_and_keeps_every_keystroke(
    notebook_file, make_ctx, service, collaborator
) -> None:
    path = notebook_file(
        "typing.ipynb", [code("above", "above = 1"), code("t", "x = df.dropna()"), code("z", "z")]
    )
    typed = "  # typed by the person while the agent deletes"
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    await get_notebook_state(ctx)
    async with collaborator(path) as (doc, put_cursor):
        ytext = doc.ycells[1]["source"]
        await put_cursor(1, 4)
        await wait_for(lambda: service.documents.cursors(path), what="their cursor in the room")

        async def type_slowly() -> None:
            for char in typed:
                ytext.insert(len(str(ytext).encode()), char)
                await asyncio.sleep(0.05)

        typing = asyncio.ensure_future(type_slowly())
        started = time.monotonic()
        with pytest.raises(ToolError) as refused:
            await delete_cell(ctx, cell_id="t")
        waited = time.monotonic() - started
        await typing
        expected = {"above": "above = 1", "t": "x = df.dropna()" + typed, "z": "z"}
        live = await service.open(path)
        await wait_for(lambda: sources(doc) == expected, what="every keystroke in their copy")
        await wait_for(
            lambda: dict(live.sources()) == expected, what="every keystroke on the server"
        )
    assert str(refused.value) == (
        "Someone is typing in cell 2 right now, so it was not deleted. Ask them, or try again later."
    )
    assert waited >= 3.0, f"gave up after {waited:.1f} s without waiting for them"
    assert progress == [
        "The agent wanted to delete cell 2, but someone is typing in it, so it was left as it is."
    ]
    assert str(ytext) == expected["t"], "their editor is still bound to the cell's text"


@on_server_loop
async def test_a_cell_someone_is_in_is_not_retyped_nor_cleared_and_the_others_are(
    notebook_file, make_ctx, service, collaborator
) -> None:
    stream = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    path = notebook_file(
        "busy.ipynb",
        [
            {"id": "here", "source": "print('hello')", "outputs": [stream]},
            {"id": "free", "source": "print('hello')", "outputs": [stream]},
        ],
    )
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    await get_notebook_state(ctx)
    async with collaborator(path) as (doc, put_cursor):
        await put_cursor(0, 2)
        await wait_for(lambda: service.documents.cursors(path), what="their cursor in the room")
        with pytest.raises(
            ToolError, match="Someone is typing in cell 1 right now, so it was not changed"
        ):
            await edit_cell(ctx, cell_id="here", source="# hello", cell_type="markdown")
        cleared = await clear_outputs(ctx)
        live = await service.open(path)
        assert live.cell("here")["cell_type"] == "code" and live.cell("here")["outputs"]
        assert live.cell("free")["outputs"] == []
        assert cell_by_id(doc, "here")["outputs"]  # type: ignore[index]
    assert cleared.summary == (
        "Cleared the outputs of 1 cell. Someone is typing in cell 1 right now, so its outputs "
        "were not cleared. Ask them, or try again later."
    )
    assert progress[0] == (
        "The agent wanted to change the type of cell 1, but someone is typing in it, so it was "
        "left as it is."
    )


@on_server_loop
async def test_clearing_a_running_cells_outputs_sticks(notebook_file, make_ctx, service) -> None:
    source = (
        "import time\nfor i in range(12):\n    print(f'line {i}', flush=True)\n    time.sleep(0.25)"
    )
    path = notebook_file("running.ipynb", [code("run", source)])
    ctx = make_ctx(path)
    run = await service.start_cell(path, "run", source=source, limit=60, turn_timeout=60)
    live = await service.open(path)
    await wait_for(
        lambda: "line 3" in str(live.cell("run")["outputs"]), timeout=60, what="the first lines"
    )
    cleared = await clear_outputs(ctx, cell_ids=["run"])
    assert cleared.summary == (
        "Cleared the outputs of 1 cell. Cell 1 is still running: its next outputs will show."
    )
    result = await asyncio.wait_for(run.task, 60)
    await asyncio.sleep(0.3)
    shown = "".join(
        "".join(o.get("text", "")) for o in (await service.open(path)).cell("run")["outputs"]
    )
    assert "line 11" in shown, shown
    assert "line 0\n" not in shown and "line 1\n" not in shown, (
        f"cleared lines came back: {shown!r}"
    )
    # The run's own result still has every line (the model is told what the code printed).
    every = "".join("".join(o.get("text", "")) for o in result.result.outputs)
    assert all(f"line {i}\n" in every for i in range(12)), every
