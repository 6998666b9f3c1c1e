"""A cell citation in the ``%aaep`` view, by keyboard only (issue 30): the answer's "cell 2" is
a real link in the cell's output; Tab reaches it, Enter makes cell 2 the notebook's active cell
with the focus in it, and the panel's announcer says so; the view shows neither the id nor the
markup; axe finds nothing in the view. Screenshot: ``test-output/e2e/view-citation.png``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_model import _turn
from e2e_page import PanelPage
from playwright.sync_api import expect
from test_e2e_citations import ACTIVE
from test_e2e_kernel_widget import VIEW, axe_in_view

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

REQUEST = "View citation: where are the readings built"
READINGS_CELL = "fb119298"
"""The demo notebook's second cell."""


def test_a_citation_in_the_aaep_view_is_a_link_that_goes_to_its_cell(
    ui: PanelPage, model: Any
) -> None:
    _, scripted = model
    scripted.scenarios = {
        "view citation": lambda results: _turn(
            f"The readings are built in [[cell:{READINGS_CELL}]], the dictionary in "
            f"[[cell:{READINGS_CELL}:3-9]]."
        ),
        **scripted.scenarios,
    }
    ui.open_notebook()
    ui.record_live_regions()
    page = ui.page
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    expect(cells).to_have_count(3)
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    expect(cells).to_have_count(4)
    page.keyboard.press("Enter")
    page.keyboard.type(f"%aaep {REQUEST}")
    ui.wait_kernel_idle()
    page.keyboard.press("Control+Enter")

    view = page.locator(VIEW)
    link = view.get_by_role("link", name="cell 2", exact=True)
    expect(link).to_have_count(1, timeout=60_000)
    expect(view.get_by_role("link", name="cell 2, lines 3 to 9", exact=True)).to_have_count(1)
    expect(view).not_to_contain_text(READINGS_CELL)
    expect(view).not_to_contain_text("[[cell")
    violations = axe_in_view(ui)
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("view-citation")

    # Keyboard only: leave the editor, Tab to the link, Enter.
    page.keyboard.press("Escape")
    ui.tab_until(lambda f: f.get("name") == "cell 2" and f.get("tag") == "a", limit=60)
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({ACTIVE})().index === 1", timeout=10_000)
    assert page.evaluate(ACTIVE) == {"index": 1, "focusInCell": True}
    ui.wait_announced("Cell 2 is now the active cell.")
    assert "#aaep-cell-citation" not in page.url  # the link moved the focus, not the address

    # The lines link selects the cited lines in the cell's editor.
    page.keyboard.press("Escape")
    view.get_by_role("link", name="cell 2, lines 3 to 9", exact=True).focus()
    page.keyboard.press("Enter")
    ui.wait_announced("Cell 2, lines 3 to 9 is now the active cell.")
    said = [e["text"] for e in ui.live_log()]
    assert not [t for t in said if READINGS_CELL in t or "[[" in t], said
    # The link looks like one (underlined, not by colour alone) and shows where the focus is.
    link.focus()
    focused = ui.focused() or {}
    assert focused.get("tag") == "a" and focused.get("outline"), focused
    assert "underline" in link.evaluate("a => getComputedStyle(a).textDecorationLine")
