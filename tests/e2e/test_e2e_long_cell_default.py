"""Long cells with the server's default pacing (issue 19), driven from the keyboard against a
real ``jupyter lab`` and kernel.

- A 12-second cell the person runs (the default threshold is 10 seconds): *How far along?*
  (Alt+G) answers while it runs, its end is said once, with its result, politely; a cell that
  fails after 11 seconds is said once, assertively. Nothing else about them is said: their first
  progress would come at 15 seconds, so a cell this short is heard only at its end.
- A 40-second training cell the agent runs and leaves running (its wait window is shortened to
  5 seconds, the only option changed): the agent's last words say so, then the milestones at
  least 15 seconds apart, the progress bar, and the end, once.

``test_e2e_long_cells.py`` checks the progress bar of a cell the person runs. What was said:
``test-output/e2e/long-cell-default-announcements.txt`` and ``long-cell-agent-announcements.txt``.
"""

from __future__ import annotations

import itertools
import re

import pytest
from e2e_model import ScriptedModel, _turn
from e2e_page import OUTPUT, PanelPage
from playwright.sync_api import expect

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
LAB_AAEP = {"run_cell_wait_seconds": 5}

# One line per statement, none ending in a colon: the editor indents nothing by itself.
TRAIN = [
    "import time",
    "for i in range(1, 13): time.sleep(1); print(f'step {i}/12', flush=True)",
    "print('accuracy 0.91')",
]
FAIL = ["import time", "time.sleep(11)", "raise ValueError('bad shape')"]


def _add_cell_and_run(ui: PanelPage, lines: list[str], number: int) -> None:
    cells = ui.page.locator(".jp-NotebookPanel .jp-Cell")
    cells.last.locator(".jp-InputArea-editor").click()
    ui.page.keyboard.press("Escape")
    ui.page.keyboard.press("b")
    ui.page.keyboard.press("Enter")
    ui.page.keyboard.type("\n".join(lines))
    expect(cells.nth(number - 1)).to_contain_text(lines[-1])
    ui.page.keyboard.press("Control+Enter")


def test_a_twelve_second_cell_i_run_is_told_once_when_it_ends(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()  # the notebook's chat exists from here: runs are told in it
    ui.record_live_regions()
    page = ui.page

    _add_cell_and_run(ui, TRAIN, 4)
    page.wait_for_timeout(4000)  # still under the 10-second threshold
    page.keyboard.press("Alt+g")
    answer = ui.wait_announced("is still running", timeout=15)
    assert answer["text"].startswith("Cell 4 is still running ("), answer
    assert re.search(r"step \d+ of 12", answer["text"]), answer

    ended = ui.wait_announced("accuracy 0.91", timeout=60)
    assert re.fullmatch(r"Cell 4 finished after 1\d s: accuracy 0\.91\.", ended["text"]), ended
    assert ended["politeness"] == "polite", ended
    expect(panel).to_contain_text("Cell 4 finished after")

    _add_cell_and_run(ui, FAIL, 5)
    failed = ui.wait_announced("bad shape", timeout=60)
    # Said once: the story opened at its failure starts with the sentence it ends with, and the
    # alert does not take that along again ("… bad shape. Error: … bad shape.").
    assert re.fullmatch(
        r"Error: Cell 5 failed after 1\d s: ValueError: bad shape\.", failed["text"]
    )
    assert failed["politeness"] == "assertive", failed
    page.wait_for_timeout(2000)  # a repeated end would be said by now

    log = ui.live_log()
    about = [e["text"] for e in log if re.search(r"\b(Cell [45]|A cell)\b", e["text"])]
    assert about == [answer["text"], ended["text"], failed["text"]], log
    expect(panel.get_by_role("progressbar")).to_have_count(0)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "long-cell-default-announcements.txt").write_text(
        "\n".join(f"[{e['politeness']}] {e['text']}" for e in log) + "\n", encoding="utf-8"
    )
    ui.screenshot("long-cell-default-ended")


ASK_TRAIN = "Train the model in a new cell; do not wait for it."
TRAIN_CODE = (
    "import time\n"
    "for epoch in range(1, 9):\n"
    "    time.sleep(5)\n"
    "    print(f'epoch {epoch}/8', flush=True)\n"
    "print('accuracy 0.91')"
)
LEFT_RUNNING = "The training runs in its cell; I did not wait for it."


def train_and_leave_it(results: list[dict]) -> Turn:
    """Create the training cell, run it once approved, end the turn while it still runs."""
    if not results:
        return _turn("", ToolUse("create_cell", {"source": TRAIN_CODE, "cell_type": "code"}))
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(results[-1]))
    if created:
        return _turn("", ToolUse("run_cell", {"cell_id": created.group(1)}))
    return _turn(LEFT_RUNNING)


def test_a_cell_the_agent_leaves_running_is_told_until_it_ends(
    ui: PanelPage, model: tuple[object, ScriptedModel]
) -> None:
    model[1].scenarios = {"train the model": train_and_leave_it, **model[1].scenarios}
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    page = ui.page
    ui.ask(ASK_TRAIN)
    ui.wait_announced("Approval needed", "assertive")
    page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.tab_until(lambda f: f.get("name") == "Approve")
    page.keyboard.press("Enter")

    # The agent's turn ends while the cell runs; its last words say so.
    closing = ui.wait_announced("you will hear when it ends", timeout=60)
    number = re.search(
        r"Cell (\d+) is still running; you will hear when it ends\.", closing["text"]
    )
    assert number, closing
    cell = f"Cell {number.group(1)}"
    assert LEFT_RUNNING in panel.inner_text()

    bar = panel.get_by_role("progressbar")
    expect(bar).to_be_visible(timeout=40_000)
    expect(bar).to_have_attribute("aria-valuenow", re.compile(r"^\d+(\.\d+)?$"))
    expect(bar).to_have_attribute("aria-valuetext", re.compile(r"epoch \d of 8"))

    ended = ui.wait_announced(f"{cell} finished after", timeout=90)
    assert re.fullmatch(rf"{cell} finished after 4\d s: accuracy 0\.91\.", ended["text"]), ended
    expect(bar).to_have_count(0)
    page.wait_for_timeout(2000)  # a repeated end would be said by now

    log = ui.live_log()
    after = [e for e in log if e["time"] > closing["time"] and cell in e["text"]]
    progress = [e for e in after if e is not ended and e["text"] != ended["text"]]
    # At most the three milestones, never two within 15 seconds; then the end, once.
    assert 1 <= len(progress) <= 3, after
    assert all(
        re.fullmatch(rf"{cell}: epoch \d of 8(, about .+ left)?\.", e["text"]) for e in progress
    ), after
    times = [e["time"] for e in progress]
    assert all(b - a >= 14_000 for a, b in itertools.pairwise(times)), times
    assert [e["text"] for e in after].count(ended["text"]) == 1, after
    # From the agent's last words to the end of the run: at most 5 announcements.
    assert len([e for e in log if e["time"] >= closing["time"]]) <= 5, log
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "long-cell-agent-announcements.txt").write_text(
        "\n".join(f"[{e['politeness']}] {e['text']}" for e in log) + "\n", encoding="utf-8"
    )
    ui.screenshot("long-cell-agent-ended")
