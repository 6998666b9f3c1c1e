"""The agent writes a figure's alt text (issue 28's acceptance), in a real JupyterLab.

The scripted model adds a cell that plots with matplotlib, runs it in the notebook's real kernel
once the person approves by keyboard, then saves its description with ``set_figure_alt_text``.
The panel says so in a plain sentence; the saved ``.ipynb`` holds the description with the
figure's output; after a reload the rendered image's ``alt`` is exactly that text. axe-core
finds nothing in the panel or the figure. Screenshots: ``test-output/e2e/figure-alt-*.png``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import nbformat
import pytest
from e2e_model import PACE
from e2e_page import PanelPage
from playwright.sync_api import expect
from test_e2e_explorable_figures import axe_figures

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PLOT = (
    "import matplotlib.pyplot as plt\n"
    "days = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri']\n"
    "plt.plot(days, [21.5, 22.1, 23.4, 22.8, 24.0], marker='o')\n"
    "plt.xlabel('day'); plt.ylabel('mean temperature (°C)');"
)
DESCRIPTION = (
    "A line chart of the daily mean temperature in degrees Celsius, Monday to Friday. It rises "
    "from 21.5 on Monday to 24.0 on Friday, with a dip to 22.8 on Thursday."
)
SAVED = "Saved a description of the figure in cell 2 as its alt text."
DONE = "I plotted the week and saved a description of the chart as its alt text."


def plot_and_describe(results: list[dict[str, Any]]) -> Turn:
    """Add the plotting cell, run it, save the description, answer."""
    if not results:
        return Turn(
            text="I will plot the temperatures.",
            tool_uses=[ToolUse("create_cell", {"source": PLOT, "cell_type": "code"})],
            chunk_delay=PACE,
        )
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(results[0]))
    assert created, result_text(results[0])
    cell_id = created.group(1)
    if len(results) == 1:
        return Turn(tool_uses=[ToolUse("run_cell", {"cell_id": cell_id})], chunk_delay=PACE)
    if len(results) == 2:
        return Turn(
            text=DESCRIPTION,
            tool_uses=[
                ToolUse("set_figure_alt_text", {"cell_id": cell_id, "alt_text": DESCRIPTION})
            ],
            chunk_delay=PACE,
        )
    return Turn(text=DONE, chunk_delay=PACE)


SCENARIOS = {"plot the week": plot_and_describe}


def titled_notebook(ui: PanelPage) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Temperatures of the week")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    name = f"{ui.name}-alt.ipynb"
    (ui.lab.root / name).write_text(nbformat.writes(nb))
    return name


def saved_alt(ui: PanelPage, name: str) -> str | None:
    cells = (ui.lab.saved(name) or {}).get("cells", [])
    if len(cells) < 2:
        return None
    for output in cells[1].get("outputs", []):
        if "image/png" in output.get("data", {}):
            alt = output.get("metadata", {}).get("image/png", {}).get("alt")
            return alt if isinstance(alt, str) else None
    return None


def test_the_agent_plots_and_saves_its_description_as_the_figures_alt_text(
    ui: PanelPage,
) -> None:
    ui.notebook = titled_notebook(ui)
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Plot the week's temperatures and describe the chart.")

    # Running code asks: approved by keyboard (jump to the request, Tab to Approve, Enter).
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"), timeout=60_000)
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.tab_until(lambda f: f.get("name") == "Approve")
    ui.page.keyboard.press("Enter")

    # The agent's step is said in a sentence, and the answer comes.
    ui.wait_announced(SAVED, timeout=120)
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(DONE, timeout=60_000)
    figure = ui.page.locator(".jp-NotebookPanel .jp-Cell").nth(1).locator(".jp-OutputArea img")
    expect(figure.first).to_have_attribute("alt", DESCRIPTION, timeout=30_000)
    ui.screenshot("figure-alt-saved")
    assert ui.axe() == []

    # In the saved notebook, with the figure's output.
    deadline = time.monotonic() + 30
    while saved_alt(ui, ui.notebook) != DESCRIPTION and time.monotonic() < deadline:
        ui.page.wait_for_timeout(200)
    assert saved_alt(ui, ui.notebook) == DESCRIPTION

    # After a reload: the rendered image's alt is exactly the saved text.
    ui.reload()
    ui._axe_loaded = False  # the new page has no axe-core yet
    figure = ui.page.locator(".jp-NotebookPanel .jp-Cell").nth(1).locator(".jp-OutputArea img")
    expect(figure.first).to_have_attribute("alt", DESCRIPTION, timeout=60_000)
    ui.screenshot("figure-alt-reloaded")
    assert axe_figures(ui) == []
