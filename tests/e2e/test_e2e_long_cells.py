"""A long cell the person runs, seen and heard in the panel (issue 19): its progress is a real
``role="progressbar"`` with its value and a value text, *How far along?* (Alt+G) answers while
it runs, and its end is said once, with its result; axe-core finds nothing wrong meanwhile.

Driven from the keyboard against a real ``jupyter lab`` and kernel. The server announces
person runs after 3 seconds here (10 by default). Progress events are at least 15 seconds
apart (the server's pacing), so the cell runs 25 seconds: its first progress, at 15 s, opens
its story in the chat and shows the bar until it ends.
Screenshots: ``test-output/e2e/long-cell-*.png``; what was said:
``test-output/e2e/long-cell-announcements.txt``.
"""

from __future__ import annotations

import json
import re

import pytest
from e2e_page import OUTPUT, PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
LAB_AAEP = {"announce_person_runs_after_seconds": 3}

STEPS = 10
# One line per statement, none ending in a colon: the editor indents nothing by itself.
LINES = [
    "import time",
    f"for i in range(1, {STEPS + 1}): time.sleep(2.5); print(f'step {{i}}/{STEPS}', flush=True)",
    "print('accuracy 0.91')",
]


def test_a_long_cell_i_run_shows_its_progress_answers_how_far_and_ends_in_one_sentence(
    ui: PanelPage,
) -> None:
    ui.open_notebook()
    panel = ui.open_panel()  # the notebook's chat exists from here: runs are told in it
    ui.record_live_regions()
    page = ui.page
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.type("\n".join(LINES))
    expect(cells.nth(3)).to_contain_text("accuracy 0.91")
    ui.wait_kernel_idle()
    page.keyboard.press("Control+Enter")

    bar = panel.get_by_role("progressbar", name="Progress of the running cell")
    expect(bar).to_be_visible(timeout=40_000)
    expect(bar).to_have_attribute("aria-valuemin", "0")
    expect(bar).to_have_attribute("aria-valuemax", "100")
    expect(bar).to_have_attribute("aria-valuetext", re.compile(r"\S"))
    # "step N/10" lines give a percent, so the bar has a value once one was read.
    expect(bar).to_have_attribute("aria-valuenow", re.compile(r"^\d+(\.\d+)?$"), timeout=15_000)
    ui.screenshot("long-cell-1-progress")
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)

    page.keyboard.press("Alt+g")
    answer = ui.wait_announced("Cell 4")  # from the progress endpoint, while the cell runs
    assert "No cell is running" not in answer["text"], answer

    ended = ui.wait_announced("accuracy 0.91", timeout=60_000)
    assert re.search(r"finished after", ended["text"]), ended
    expect(bar).to_have_count(0)
    page.wait_for_timeout(1500)  # a repeated end would be said by now
    log = ui.live_log()
    assert len([e for e in log if "accuracy 0.91" in e["text"]]) == 1, log
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "long-cell-announcements.txt").write_text(
        "\n".join(f"[{e['politeness']}] {e['text']}" for e in log) + "\n", encoding="utf-8"
    )
    ui.screenshot("long-cell-2-finished")
