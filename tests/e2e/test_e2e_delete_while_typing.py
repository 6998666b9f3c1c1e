"""A cell in use is not deleted, and an edit without ``version`` keeps a person's line, in a
real JupyterLab (issue 26).

Delete: a person clicks into the second of three code cells and asks the agent to delete it.
The scripted model reads the notebook and deletes the cell without a version. As soon as the
delete starts, the person types into the cell with the keyboard. The agent waits for them, then
leaves the cell: every typed character is in the second cell, none in the cell above (where
JupyterLab used to send them once the cell was gone), the view and the saved file still have all
three cells, and the panel says the agent wanted to delete it. Screenshot:
``test-output/e2e/delete-while-typing.png``.

Edit: the model reads the notebook; the person then adds a line to the first cell; the model
rewrites that cell's first line without a version. The two changes touch different lines, so
the cell holds both, in the view and on disk.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import nbformat
import pytest
from e2e_lab import LabServer
from e2e_model import PACE
from e2e_page import PanelPage
from playwright.sync_api import expect

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

CELLS = {
    "first": "values = [3, 1, 2]",
    "second": "total = sum(values)",
    "third": "print(total)",
}
ASK_DELETE = "Please delete the second cell."
ASK_EDIT = "Please add a 4 to the values in the first cell."
DELETE_INTRO = "I will delete the second cell."
EDIT_INTRO = "I will add the 4."
LEFT = "I left the second cell: someone is typing in it."
EDITED = "The first cell now has a 4."
TYPED = "  # typed by a person while the agent deletes this cell 0123456789"
"""Plain letters, digits and spaces: nothing CodeMirror completes or JupyterLab binds."""
HUMAN_LINE = "total += important_human_fix"
KEY_DELAY_MS = 40
THINKING = 6.0
"""Seconds the model 'thinks' between its read and its edit: the person adds their line then."""


def delete_second(results: list[dict[str, Any]]) -> Turn:
    if not results:
        return Turn(tool_uses=[ToolUse("get_notebook_state", {})], chunk_delay=PACE)
    if len(results) == 1:
        return Turn(
            text=DELETE_INTRO,
            tool_uses=[ToolUse("delete_cell", {"cell_id": "second"})],
            chunk_delay=PACE,
            text_chunk_size=8,
        )
    return Turn(text=LEFT, chunk_delay=PACE, text_chunk_size=8)


def edit_first(results: list[dict[str, Any]]) -> Turn:
    if not results:
        return Turn(tool_uses=[ToolUse("get_notebook_state", {})], chunk_delay=PACE)
    if len(results) == 1:
        return Turn(
            delay=THINKING,
            text=EDIT_INTRO,
            tool_uses=[
                ToolUse("edit_cell", {"cell_id": "first", "source": "values = [3, 1, 2, 4]"})
            ],
            chunk_delay=PACE,
            text_chunk_size=8,
        )
    return Turn(text=EDITED, chunk_delay=PACE, text_chunk_size=8)


SCENARIOS = {"delete the second cell": delete_second, "add a 4": edit_first}


def three_cells(path: Any) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in CELLS.items()]
    nbformat.write(nb, str(path))


def frame_seen(ui: PanelPage, kind: str, tool: str) -> bool:
    return any(
        frame.get("type") == f"aaep:agent.tool.{kind}" and tool in json.dumps(frame)
        for frame in ui.received
    )


def wait_frame(ui: PanelPage, kind: str, tool: str, name: str) -> None:
    deadline = time.monotonic() + 30
    while not frame_seen(ui, kind, tool):
        if time.monotonic() > deadline:
            ui.screenshot(f"failed-{name}")
            raise AssertionError(f"no {tool} {kind}: {ui.received[-5:]}")
        ui.page.wait_for_timeout(10)


def typed_kept(cell_text: str) -> int:
    matcher = difflib.SequenceMatcher(None, TYPED, cell_text, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks())


def saved(ui: PanelPage, cells: Any, wanted: str) -> list[tuple[str, str]]:
    """Save with the keyboard; the cells in the file once it holds *wanted* (or after 15 s)."""
    cells.last.locator(".cm-content").click()
    ui.page.keyboard.press("Control+s")
    return ui.lab.cells_once_saved(ui.notebook, wanted)


@contextmanager
def scenario(shared_page: Any, lab: LabServer, name: str) -> Iterator[PanelPage]:
    """The shared page, on a fresh three-cell notebook."""
    with shared_page.lent(lab, name) as ui:
        ui.notebook = lab.unused_name(name)
        three_cells(lab.root / ui.notebook)
        yield ui


@pytest.fixture(scope="module")
def deleted(shared_page: Any, lab: LabServer) -> Iterator[dict[str, Any]]:
    with scenario(shared_page, lab, "delete-while-typing") as ui:
        ui.open_notebook()
        panel = ui.open_panel()
        ui.record_live_regions()
        cells = ui.page.locator(".jp-NotebookPanel .jp-Cell")
        expect(cells).to_have_count(3)
        ui.ask(ASK_DELETE)
        cells.nth(1).locator(".cm-content").click()
        ui.page.keyboard.press("End")
        expect(cells.nth(1)).to_have_class(re.compile("jp-mod-active"))
        wait_frame(ui, "invoked", "delete_cell", "delete-while-typing")
        ui.page.keyboard.type(TYPED, delay=KEY_DELAY_MS)
        expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=30_000)
        expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(LEFT)
        ui.page.wait_for_timeout(500)
        texts = [t.replace("\u200b", "") for t in cells.locator(".cm-content").all_inner_texts()]
        ui.screenshot("delete-while-typing")
        result = {
            "texts": texts,
            "kept": typed_kept(texts[1]) if len(texts) > 1 else 0,
            "narration": panel.inner_text(),
            "on_disk": saved(ui, cells, TYPED),
            "progress": [
                str(f.get("summary_normal", ""))
                for f in ui.received
                if f.get("type") == "aaep:agent.progress.updated"
            ],
            "errors": [e for e in ui.console_errors if "aaep" in e.lower()],
        }
    yield result


@pytest.fixture(scope="module")
def edited(shared_page: Any, lab: LabServer) -> Iterator[dict[str, Any]]:
    with scenario(shared_page, lab, "edit-without-version") as ui:
        ui.open_notebook()
        panel = ui.open_panel()
        cells = ui.page.locator(".jp-NotebookPanel .jp-Cell")
        expect(cells).to_have_count(3)
        ui.ask(ASK_EDIT)
        wait_frame(ui, "completed", "get_notebook_state", "edit-without-version")
        # The person adds their line to the first cell while the model thinks.
        cells.nth(0).locator(".cm-content").click()
        ui.page.keyboard.press("End")
        ui.page.keyboard.press("Enter")
        ui.page.keyboard.type(HUMAN_LINE, delay=KEY_DELAY_MS)
        assert not frame_seen(ui, "invoked", "edit_cell"), "typed too late to test the merge"
        expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=30_000)
        expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(EDITED)
        ui.page.wait_for_timeout(500)
        texts = [t.replace("\u200b", "") for t in cells.locator(".cm-content").all_inner_texts()]
        result = {
            "texts": texts,
            "narration": panel.inner_text(),
            "on_disk": saved(ui, cells, "[3, 1, 2, 4]"),
        }
    yield result


def test_a_cell_someone_types_in_is_not_deleted_and_keeps_every_keystroke(
    deleted: dict[str, Any],
) -> None:
    texts = deleted["texts"]
    assert deleted["kept"] == len(TYPED), f"lost {len(TYPED) - deleted['kept']} characters: {texts}"
    assert texts == [CELLS["first"], CELLS["second"] + TYPED, CELLS["third"]], texts
    assert (
        "The agent wanted to delete cell 2, but someone is typing in it, so it was left as it is."
        in deleted["progress"]
    ), deleted["progress"]
    assert "delete_cell" not in deleted["narration"], deleted["narration"]
    assert deleted["on_disk"] == [
        ("first", CELLS["first"]),
        ("second", CELLS["second"] + TYPED),
        ("third", CELLS["third"]),
    ], deleted["on_disk"]
    assert not deleted["errors"], deleted["errors"]


def test_an_edit_without_version_keeps_the_persons_line(edited: dict[str, Any]) -> None:
    merged = "values = [3, 1, 2, 4]\n" + HUMAN_LINE
    assert edited["texts"][0] == merged, edited["texts"]
    assert "keeping the change someone made meanwhile" in edited["narration"], edited["narration"]
    assert edited["on_disk"][0] == ("first", merged), edited["on_disk"]
