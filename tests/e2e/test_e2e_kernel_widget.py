"""``%aaep`` in a cell of a real JupyterLab: the live view appears in the cell's output, the
user presses Approve with the keyboard (Tab to it, Enter), the agent's cell runs in the same
kernel, and the final answer shows in the view; axe-core audits the view.

The magic is there without ``%load_ext``: kernels of the server's environment load the
extension (``jupyter_aaep.kernel.autoload``). Screenshots: ``test-output/e2e/kernel-widget-*.png``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from e2e_model import _turn
from e2e_page import AXE, PanelPage
from playwright.sync_api import expect

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
LAB_AAEP = {"kernel_replies": True}  # the widget's Approve button is opt-in (issue 16)

REQUEST = "Widget test: load the readings and tell me the warmest day"
READINGS_CELL = "fb119298"
"""The demo notebook's second cell (builds ``readings`` and ``temperatures``): cell 2."""
INTRO = "I will run cell 2 to load the readings."
FINAL = "The readings are loaded. The warmest day is **Friday**, at 24.0 °C."
VIEW = ".jp-AAEPView"


def widget_scenario(results: list[dict[str, Any]]) -> Turn:
    if not results:
        return _turn(INTRO, ToolUse("run_cell", {"cell_id": READINGS_CELL}))
    if results[-1].get("is_error"):
        return _turn(f"The cell did not run: {result_text(results[-1])[:200]}")
    return _turn(FINAL)


@pytest.fixture(autouse=True)
def _widget_scenario(model) -> None:  # type: ignore[no-untyped-def]
    _, scripted = model
    scripted.scenarios = {"widget test": widget_scenario, **scripted.scenarios}


def axe_in_view(ui: PanelPage) -> list[dict[str, Any]]:
    """axe-core violations inside the live view only."""
    if not ui.page.evaluate("() => typeof window.axe !== 'undefined'"):
        ui.page.add_script_tag(path=str(AXE))
    return ui.page.evaluate(  # type: ignore[no-any-return]
        """async () => {
            const result = await axe.run({ include: [['.jp-AAEPView']] }, { resultTypes: ['violations'] });
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({ target: n.target.join(' '), summary: n.failureSummary })),
            }));
        }"""
    )


def test_aaep_in_a_cell_approve_with_the_keyboard(ui: PanelPage) -> None:
    ui.open_notebook()
    page = ui.page
    # A new cell at the end of the notebook, with the request (typing it is not what is tested).
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    expect(cells).to_have_count(3)
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    expect(page.locator(".jp-NotebookPanel .jp-Cell.jp-mod-active")).to_have_count(1)
    assert "jp-mod-active" in (cells.last.get_attribute("class") or "")
    page.keyboard.press("b")
    expect(cells).to_have_count(4)
    page.keyboard.press("Enter")
    page.keyboard.type(f"%aaep {REQUEST}")
    ui.wait_kernel_idle()
    page.keyboard.press("Control+Enter")  # run it, staying on the cell

    view = page.locator(VIEW)
    expect(view).to_be_visible(timeout=60_000)
    expect(view).to_contain_text(f"You asked the agent: {REQUEST}")
    approve = view.get_by_role("button", name="Approve running cell 2")
    reject = view.get_by_role("button", name="Reject running cell 2")
    expect(approve).to_be_enabled(timeout=60_000)
    expect(reject).to_be_enabled()
    expect(view).to_contain_text(INTRO)
    expect(view.locator("pre")).to_contain_text("temperatures = [t for t, _ in readings.values()]")
    expect(view).to_contain_text("If you do not answer, it will be rejected in")
    assert view.locator("[aria-live]").count() == 0  # the side panel is the one narrator
    violations = axe_in_view(ui)
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("kernel-widget-1-confirmation")

    # Keyboard only from here: leave the editor, Tab to Approve, press Enter.
    page.keyboard.press("Escape")
    stops = ui.tab_until(lambda f: f.get("name") == "Approve running cell 2", limit=60)
    focused = ui.focused() or {}
    assert focused.get("tag") == "button" and (focused.get("outline") or focused.get("shadow")), (
        stops
    )
    page.keyboard.press("Enter")

    expect(view).to_contain_text(FINAL.replace("**", ""), timeout=60_000)
    expect(view).to_contain_text("Approved from the notebook.")
    expect(view).to_contain_text("Done: Running cell 2.")
    expect(view).to_contain_text("Finished:")
    # The pressed button keeps the focus and now says the outcome; Reject is disabled.
    pressed = view.locator(".jp-AAEPView-approve")
    expect(pressed).to_have_text("Approved from the notebook.")
    expect(pressed).to_be_focused()
    expect(reject).to_be_disabled()
    expect(view.locator("strong", has_text="Friday")).to_be_visible()
    # The agent's cell ran in this notebook's kernel: it has an execution count now.
    readings = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(0)
    expect(readings.locator(".jp-InputPrompt")).to_contain_text(re.compile(r"\[\d+\]"))

    violations = axe_in_view(ui)
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("kernel-widget-2-answered")
    chat = ui.lab.chat_of(ui.notebook)
    assert chat is not None and chat["transcript"][-1]["type"].endswith("session.completed")
