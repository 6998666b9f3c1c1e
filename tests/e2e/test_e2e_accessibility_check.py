"""*Check This Notebook's Accessibility* in the browser, with the keyboard only.

The palette runs the command on a notebook with a Markdown image without alt text, a
title-less ``###`` heading, a "click here" link and a header-less table; the panel lists each
by cell number and says it; axe-core finds nothing in the light, dark and high-contrast
themes (one page and one check: the theme is switched live on its report, ``e2e_sweep``);
Tab reaches "Go to cell 3" and Enter makes cell 3 the notebook's active cell. No model
is asked: the check is the server's. Screenshots: ``test-output/e2e/a11y-check-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest
from e2e_page import PanelPage
from e2e_sweep import Sweep
from playwright.sync_api import expect
from test_e2e_accessibility import _palette

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

CELLS = [
    "![](rainfall.png)",
    "### Results",
    "The readings come from the weather service: [click here](https://example.org/data).",
    "| | |\n|---|---|\n| Oslo | 3 |",
]


@pytest.fixture(scope="module", autouse=True)
def _never_asks_the_model(fake_model: FakeAnthropic) -> Iterator[None]:
    """The check is the panel's own: the module's tests send the model nothing."""
    yield
    assert fake_model.requests == []


def trouble(ui: PanelPage) -> None:
    nb = nbformat.v4.new_notebook()
    for i, source in enumerate(CELLS):
        cell = nbformat.v4.new_markdown_cell(source)
        cell["id"] = f"cell-{i + 1}"
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    (ui.lab.root / ui.notebook).write_text(nbformat.writes(nb))


def test_the_check_lists_each_problem_by_cell_and_goes_there(ui: PanelPage) -> None:
    """One check of the notebook; its report is audited in each theme, switched live."""
    trouble(ui)
    ui.open_notebook()
    with Sweep(ui) as sweep:
        panel = ui.open_panel()
        ui.record_live_regions()
        _palette(ui, "Check This Notebook's Accessibility")
        report = panel.locator(".jp-AAEPAccessibility")
        expect(report).to_have_class("jp-AAEPAccessibility jp-mod-ready", timeout=20_000)
        items = report.locator(".jp-AAEPAccessibility-item")
        expect(items).to_have_count(5)
        texts = items.all_inner_texts()
        assert texts[0].startswith("The notebook has no title")
        for number, words in [
            (1, "rainfall.png"),
            (2, "Results"),
            (3, "click here"),
            (4, "column headers"),
        ]:
            assert texts[number].startswith(f"Cell {number}: ") and words in texts[number], texts
            assert "cell-" not in texts[number]  # no ids
        said = ui.wait_announced("Found 5 accessibility problems in 4 cells.")
        assert "Cell 3: The link “click here” says nothing" in said["text"]
        for theme in sweep.themes_at("the report"):
            with sweep.check(theme, "the report"):
                ui.screenshot(f"a11y-check-{theme}")
                violations = ui.axe()
                assert violations == [], violations

        # Keyboard: Tab through the list to "Go to cell 3", Enter: cell 3 is the active cell.
        report.locator(".jp-AAEPAccessibility-goTo").first.focus()
        for _ in range(2):
            ui.page.keyboard.press("Tab")
        expect(report.get_by_role("button", name="Go to cell 3")).to_be_focused()
        ui.page.keyboard.press("Enter")
        ui.page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.content?.activeCellIndex === 2"
        )
        active = ui.page.locator(".jp-NotebookPanel .jp-Cell.jp-mod-active")
        expect(active).to_contain_text("click here")
        # the keyboard is in the notebook now (command mode), on the cell the screen reader reads
        ui.page.wait_for_function(
            "() => !!document.activeElement?.closest('.jp-Notebook .jp-Cell.jp-mod-active')"
        )
        # Close leaves nothing behind
        report.get_by_role("button", name="Close").click()
        expect(panel.locator(".jp-AAEPAccessibility")).to_have_count(0)
