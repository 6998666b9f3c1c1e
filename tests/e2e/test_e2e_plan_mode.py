"""Plan first in the browser, keyboard only: the mode chosen in the select, the plan read as a
numbered list, "Edit the plan" opening JupyterLab's editor, a saved change reaching the model,
and the plan approved with one key; both runs complete and each step is heard.

Screenshots: ``test-output/e2e/plan-*.png``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from e2e_model import PACE, request_and_results
from e2e_page import PanelPage
from playwright.sync_api import expect

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

LOAD, MEANS = "fb119298", "246e7258"
"""The demo notebook's two code cells (cell 2 loads the readings, cell 3 prints the means)."""
PLAN = {
    "summary": "Load the readings and print the means",
    "steps": [f"Run cell {LOAD} (loads the readings)", f"Run cell {MEANS} (prints the means)"],
}
ADDED = "Say that both cells ran"
DONE = "Both cells ran; the means are printed under cell 3."
DESCRIPTION = """() => document.activeElement.getAttribute('aria-describedby').split(' ')
                  .map(id => document.getElementById(id).textContent).join(' ')"""


def plan_then_run(results: list[dict[str, Any]]) -> Turn:
    """Propose the plan; once approved run both cells, reporting each step (and the step the
    person added, when they added one)."""
    if not results:
        return Turn(tool_uses=[ToolUse("propose_plan", PLAN)], chunk_delay=PACE)
    approved = result_text(results[0])
    if "approved the plan" not in approved:
        return Turn(text="Nothing was done.", chunk_delay=PACE)
    script: list[ToolUse] = [
        ToolUse("run_cell", {"cell_id": LOAD}),
        ToolUse("plan_step", {"step": 1, "status": "done"}),
        ToolUse("run_cell", {"cell_id": MEANS}),
        ToolUse("plan_step", {"step": 2, "status": "done"}),
    ]
    if f"Added as step 3: '{ADDED}'" in approved:
        script.append(ToolUse("plan_step", {"step": 3, "status": "done"}))
    done = len(results) - 1
    if done < len(script):
        return Turn(tool_uses=[script[done]], chunk_delay=PACE)
    return Turn(text=DONE, chunk_delay=PACE, text_chunk_size=5)


SCENARIOS = {"plan-mode": plan_then_run}


def test_plan_first_chosen_by_keyboard_edited_and_approved_with_one_key(
    ui: PanelPage, fake_model: FakeAnthropic
) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.open_settings()
    ui.focus_composer()
    ui.tab_until(
        lambda f: f.get("tag") == "select" and "Ask before" in f.get("name", ""), backwards=True
    )
    select = panel.locator(".jp-AAEPPanel-approvalMode select")
    assert select.locator("option").all_inner_texts() == [
        "Plan first",
        "Ask before every change",
        "Ask before running code",
        "Auto",
    ]
    ui.page.keyboard.press("ArrowUp")
    ui.page.keyboard.press("ArrowUp")
    expect(select).to_have_value("plan")
    assert "nothing is changed or run until you approve it" in ui.page.evaluate(DESCRIPTION)
    for _ in range(50):
        if any(f.get("approval_mode") == "plan" for f in ui.received):
            break
        ui.page.wait_for_timeout(100)

    ui.record_live_regions()
    ui.ask("Please do the plan-mode demo.")
    card = panel.locator(".jp-AAEPPlanCard.jp-mod-pending")
    expect(card).to_have_count(1, timeout=30_000)
    steps = card.locator("ol.jp-AAEPPlanCard-steps > li")
    expect(steps).to_have_text(["Run cell 2 (loads the readings)", "Run cell 3 (prints the means)"])
    first = fake_model.requests[0].body
    offered = [t["name"] for t in first["tools"]]
    assert "propose_plan" in offered and "run_cell" not in offered and "edit_cell" not in offered
    ui.wait_announced(
        "Plan for your approval, 2 steps: Load the readings and print the means. "
        "1. Run cell 2 (loads the readings). 2. Run cell 3 (prints the means).",
        "assertive",
    )
    assert LOAD not in card.inner_text() and "propose_plan" not in card.inner_text()
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("plan-1-card")

    # The card, focused, reads its title and the numbered steps.
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    heard = ui.page.evaluate(DESCRIPTION)
    assert "Run cell 2 (loads the readings)" in heard and "Run cell 3" in heard, heard

    # Edit the plan: JupyterLab's editor opens the Markdown; a step is added and saved.
    ui.tab_until(lambda f: f.get("name") == "Edit the plan")
    ui.page.keyboard.press("Enter")
    editor = ui.page.locator(".jp-FileEditor .cm-content")
    expect(editor).to_contain_text("1. Run cell 2 (loads the readings)", timeout=20_000)
    editor.click()
    ui.page.keyboard.press("Control+End")
    ui.page.keyboard.type(f"\n3. {ADDED}\n")
    ui.page.keyboard.press("Control+S")
    tab = ui.page.locator(".lm-TabBar-tab", has_text=re.compile(r"plan-[0-9a-f]{12}\.md"))
    expect(tab).not_to_have_class(re.compile("jp-mod-dirty"), timeout=10_000)
    ui.screenshot("plan-2-editor")

    # Back to the request, approved with one key: the first choice.
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.keyboard.press("Control+Shift+Enter")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(DONE, timeout=60_000)
    told = [result_text(r) for r in request_and_results(fake_model.requests[1])[1]]
    assert any(f"Added as step 3: '{ADDED}'" in t for t in told), told[0][:400]
    ui.wait_announced("Step 1 of 3 done: Run cell 2 (loads the readings).")
    ui.wait_announced("All 3 steps of the plan ran.")
    cells = ui.page.locator(".jp-NotebookPanel .jp-Cell")
    expect(cells.nth(2)).to_contain_text("Mean temperature")
    # One person's decision: the runs were approved by the plan, not asked one by one.
    asked = [e for e in ui.live_log() if "Approval needed" in e["text"]]
    assert asked == [], asked
    ui.screenshot("plan-3-done")
    assert not [e for e in ui.console_errors if "aaep" in e.lower()], ui.console_errors


def test_a_plan_in_the_notebook_view_shows_its_steps_and_runs_on_its_first_choice(
    ui: PanelPage, fake_model: FakeAnthropic
) -> None:
    """``%aaep`` in plan mode: the view's card is the plan, numbered, with its first choice and
    Reject, and says where the other choices are; a click on the first choice runs it."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.open_settings()
    panel.locator(".jp-AAEPPanel-approvalMode select").select_option(label="Plan first")
    page = ui.page
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    ui.wait_kernel_idle()
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.type("%aaep plan-mode from the notebook: load the readings, print the means")
    page.keyboard.press("Control+Enter")
    approval = page.locator(".jp-AAEPView .jp-AAEPApproval").first  # the runs' cards follow
    expect(approval).to_contain_text(
        f"Plan for your approval, 2 steps: {PLAN['summary']}", timeout=60_000
    )
    expect(approval.locator("ol.jp-AAEPApproval-steps li")).to_have_count(2)
    expect(approval).to_contain_text(
        "The other choices (run it asking before each step, keep planning with a comment, edit "
        "the plan) are in the side panel."
    )
    expect(approval.get_by_role("button", name="Reject the plan")).to_be_enabled()
    ui.screenshot("plan-notebook-view")
    approval.get_by_role("button", name="Run it, asking only for code the risk scan flags").click()
    expect(approval.locator(".jp-AAEPApproval-outcome")).to_have_text(
        "Plan approved: the agent runs its 2 steps, asking only for code the risk scan flags.",
        timeout=60_000,
    )
    expect(page.locator(".jp-AAEPView").last).to_contain_text(DONE, timeout=90_000)
