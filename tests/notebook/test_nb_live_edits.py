"""Editing tools against a real server: a browser stand-in sees every change live."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from nb_helpers import cell_by_id, on_server_loop, wait_for

from jupyter_aaep.agent.tools import ToolError
from jupyter_aaep.notebook import CellNotFound, NotebookNotFound
from jupyter_aaep.tools.notebook import (
    clear_outputs,
    create_cell,
    delete_cell,
    edit_cell,
    get_notebook_state,
    list_notebooks,
    move_cell,
)

pytestmark = pytest.mark.shared_server

CELLS = [
    {"id": "intro", "cell_type": "markdown", "source": "# Analysis"},
    {"id": "load", "source": "import math\nx = 21"},
    {"id": "show", "source": "print(x * 2)"},
]


def ids(doc: Any) -> list[str]:
    return [str(c.get("id")) for c in doc.ycells]


@on_server_loop
async def test_edits_appear_live_in_the_browser(notebook_file, make_ctx, browser, caplog) -> None:
    caplog.set_level(logging.INFO)
    path = notebook_file("work/analysis.ipynb", CELLS)
    ctx = make_ctx(path)
    async with browser(path) as doc:
        assert ids(doc) == ["intro", "load", "show"]
        await get_notebook_state(ctx)  # an edit is based on what the agent read

        created = await create_cell(ctx, source="y = x + 1", after_cell_id="load")
        assert created.summary == "Created code cell 3, after cell 2."
        await wait_for(lambda: len(doc.ycells) == 4, what="the new cell")
        new_id = ids(doc)[2]
        assert new_id not in ("intro", "load", "show")
        assert f"id {new_id}" in created.content
        assert cell_by_id(doc, new_id)["source"] == "y = x + 1"

        await create_cell(ctx, source="## Notes", cell_type="markdown", position=1)
        await wait_for(lambda: len(doc.ycells) == 5, what="the markdown cell")
        assert cell_by_id(doc, ids(doc)[0])["cell_type"] == "markdown"

        edited = await edit_cell(ctx, cell_id="show", source="print(y)")
        assert edited.summary == "Edited cell 5."
        await wait_for(lambda: cell_by_id(doc, "show")["source"] == "print(y)", what="the edit")

        await edit_cell(ctx, cell_id="show", source="Result: *y*", cell_type="markdown")
        await wait_for(
            lambda: cell_by_id(doc, "show")["cell_type"] == "markdown", what="the type change"
        )

        moved = await move_cell(ctx, cell_id="intro", position=5)
        assert moved.summary == "Moved cell 2 to position 5."
        await wait_for(lambda: ids(doc)[-1] == "intro", what="the move")

        await move_cell(ctx, cell_id="intro", before_cell_id="load")
        await wait_for(lambda: ids(doc)[1] == "intro", what="the move back")

        deleted = await delete_cell(ctx, cell_id=new_id)
        assert deleted.summary.startswith("Deleted cell")
        await wait_for(lambda: new_id not in ids(doc), what="the deletion")

        with pytest.raises(CellNotFound, match="no-such-cell"):
            await edit_cell(ctx, cell_id="no-such-cell", source="")
        with pytest.raises(ToolError, match="only one"):
            await create_cell(ctx, source="", after_cell_id="load", position=1)

    assert "Out-of-band" not in caplog.text
    assert "out-of-band" not in caplog.text


@on_server_loop
async def test_user_edit_in_another_cell_survives_agent_edit(
    notebook_file, make_ctx, browser
) -> None:
    path = notebook_file("shared.ipynb", CELLS)
    ctx = make_ctx(path)
    async with browser(path) as doc:
        # The user types in cell 2 while the agent rewrites cell 3.
        await get_notebook_state(ctx)
        user_text = doc.ycells[1]["source"]
        user_text += "\nz = 3  # typed by the user"
        await edit_cell(ctx, cell_id="show", source="print(x, z)")
        await wait_for(
            lambda: cell_by_id(doc, "show")["source"] == "print(x, z)", what="the agent edit"
        )
        live = await ctx.services.notebook.open(path)
        await wait_for(
            lambda: "typed by the user" in live.cell("load")["source"],
            what="the user edit on the server",
        )
        assert live.cell("show")["source"] == "print(x, z)"
        assert cell_by_id(doc, "load")["source"].endswith("z = 3  # typed by the user")


@on_server_loop
async def test_notebook_state_and_listing(notebook_file, make_ctx) -> None:
    outputs = [{"output_type": "stream", "name": "stdout", "text": "42\n"}]
    path = notebook_file(
        "state.ipynb", [*CELLS[:2], {"id": "show", "source": "print(x * 2)", "outputs": outputs}]
    )
    notebook_file("other/deeper/second.ipynb", [{"id": "a", "source": "1"}])
    ctx = make_ctx(path)

    state = await get_notebook_state(ctx)
    text = state.content
    assert "cell 1 · id intro · version " in text and "cell 3 · id show · version " in text
    assert re.search(r"cell 3 · id show · version [0-9a-f]{6} · code", text)
    assert "# Analysis" in text and "[stdout]\n42" in text
    assert "no kernel running" in text
    assert state.summary == "Read the notebook: 3 cells, kernel not started."

    only = await get_notebook_state(ctx, cell_ids=["load"], include_outputs=False)
    assert (
        "id load" in only.content
        and "id intro" not in only.content
        and "showing 1 of 3" in only.content
    )
    ranged = await get_notebook_state(ctx, start=2, end=3)
    assert "id intro" not in ranged.content and "id show" in ranged.content
    other = await get_notebook_state(ctx, notebook_path="other/deeper/second.ipynb")
    assert "id a · version 6b86b2 · code" in other.content

    listing = await list_notebooks(ctx)
    assert "state.ipynb" in listing.content and "other/deeper/second.ipynb" in listing.content

    cleared = await clear_outputs(ctx, cell_ids=["show"])
    assert cleared.summary == "Cleared the outputs of 1 cell."
    live = await ctx.services.notebook.open(path)
    assert live.cell("show")["outputs"] == []

    with pytest.raises(NotebookNotFound, match="list_notebooks"):
        await get_notebook_state(make_ctx("missing.ipynb"))
    with pytest.raises(ToolError, match="not attached"):
        await get_notebook_state(make_ctx(None))


@on_server_loop
async def test_the_log_check_would_see_an_out_of_band_write(
    notebook_file, service, jp_root_dir, caplog
) -> None:
    """Control for the log assertions above: a second writer on disk is detected and logged."""
    caplog.set_level(logging.INFO)
    path = notebook_file("oob.ipynb", CELLS)
    await service.open(path)  # the room now holds the notebook
    notebook_file("oob.ipynb", CELLS[:1])  # someone writes the file behind the room's back
    await wait_for(lambda: "out-of-band" in caplog.text.lower(), timeout=10, what="the warning")
