"""A cell citation in an answer, by keyboard only: a real link named "cell 2" (the cell's number
now), Enter makes cell 2 the active cell with the focus in it and says so; nothing the panel says
holds the id or the markup; axe finds nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_model import _turn
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ACTIVE = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const cell = nb.widgets[nb.activeCellIndex];
  return {index: nb.activeCellIndex, focusInCell: cell.node.contains(document.activeElement)};
}"""


def test_a_citation_is_a_link_that_goes_to_its_cell_by_keyboard(ui: PanelPage, model: Any) -> None:
    _, scripted = model
    cells = json.loads((ui.lab.root / ui.notebook).read_text())["cells"]
    second = cells[1]["id"]
    scripted.scenarios["where is the data"] = lambda results: _turn(
        f"The temperatures are loaded in [[cell:{second}]]. Its first line is [[cell:{second}:1-1]]."
    )
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Where is the data loaded?")
    link = panel.get_by_role("link", name="cell 2", exact=True)
    expect(link).to_have_count(1, timeout=60_000)
    expect(panel.get_by_role("link", name="cell 2, line 1", exact=True)).to_have_count(1)
    ui.wait_announced("loaded in cell 2")

    # Keyboard only: from the message box back to the link, then Enter.
    ui.focus_composer()
    ui.tab_until(lambda f: f.get("name") == "cell 2" and f.get("tag") == "a", backwards=True)
    ui.page.keyboard.press("Enter")
    ui.page.wait_for_function(f"() => ({ACTIVE})().index === 1")
    assert ui.page.evaluate(ACTIVE) == {"index": 1, "focusInCell": True}
    ui.wait_announced("Cell 2 is now the active cell.")

    said = " ".join(entry["text"] for entry in ui.live_log())
    assert second not in said and "[[" not in said and "cell:" not in said
    assert ui.axe() == []


def test_which_rules_apply_here_is_said(ui: PanelPage) -> None:
    (ui.lab.root / "AGENTS.md").write_text("Use pandas.")
    try:
        ui.open_notebook()
        ui.open_panel()
        ui.record_live_regions()
        ui.page.evaluate("() => window.jupyterapp.commands.execute('jupyter-aaep:which-rules')")
        ui.wait_announced("1 rule applies: AGENTS.md. AGENTS.md is at ")
    finally:
        (ui.lab.root / "AGENTS.md").unlink()
