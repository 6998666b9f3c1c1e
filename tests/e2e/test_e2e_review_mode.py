"""Edits under review in the browser: "Ask before every change", chosen with the keyboard.

The agent proposes an edit of the demo notebook's third cell; the confirmation card shows the
change as marked lines and in words; Reject (keyboard) leaves the cell exactly as it was, the
model hears that the user rejected the change; a second request's edit is approved and lands
in the notebook. axe-core finds nothing in light, dark and high-contrast themes while the
card waits. Screenshots: ``test-output/e2e/review-*.png``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from e2e_model import PACE, request_and_results
from e2e_page import OUTPUT, PanelPage
from playwright.sync_api import expect

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import RecordedRequest, ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

MEANS_CELL = "246e7258"
"""The demo notebook's third cell: it prints the means."""
OLD_FIRST = 'print(f"Mean temperature: {statistics.mean(temperatures):.1f} °C")'
NEW_SOURCE = (
    'print(f"Mean temperature: {statistics.mean(temperatures):.2f} °C")\n'
    'print(f"Mean humidity: {statistics.mean(humidity):.0f} %")\n'
    'print(f"Warmest day: {max(temperatures)} °C")'
)
PROPOSE = "I will show two decimals and add the warmest day to cell 3."
LEFT_AS_IS = "Understood: I left cell 3 exactly as it was."
APPLIED = "Cell 3 now shows two decimals and the warmest day."
ASK = "Please review-edit the means cell to show more detail."


DESCRIPTION = """() => document.activeElement.getAttribute('aria-describedby').split(' ')
                  .map(id => document.getElementById(id).textContent).join(' ')"""
"""What a screen reader reads as the focused element's description."""


def review_edit(results: list[dict[str, Any]]) -> Turn:
    """Read the notebook, propose one edit; then say what happened to it (rejected or applied)."""
    if not results:
        return Turn(tool_uses=[ToolUse("get_notebook_state", {})], chunk_delay=PACE)
    if len(results) == 1:
        return Turn(
            text=PROPOSE,
            tool_uses=[ToolUse("edit_cell", {"cell_id": MEANS_CELL, "source": NEW_SOURCE})],
            chunk_delay=PACE,
            text_chunk_size=5,
        )
    rejected = results[-1].get("is_error") and "rejected this change" in result_text(results[-1])
    return Turn(text=LEFT_AS_IS if rejected else APPLIED, chunk_delay=PACE, text_chunk_size=5)


SCENARIOS = {"review-edit": review_edit}
"""This module's scripted model: only the review scenario (a plain answer otherwise)."""


def means_cell_text(ui: PanelPage) -> str:
    """The third cell's source as the notebook editor shows it."""
    return ui.page.locator(".jp-NotebookPanel .jp-Cell").nth(2).locator(".cm-content").inner_text()


def declined_results(requests: list[RecordedRequest]) -> list[str]:
    out = []
    for request in requests:
        _text, results = request_and_results(request)
        out += [result_text(r) for r in results if r.get("is_error")]
    return out


def test_review_every_change_reject_leaves_the_cell_and_approve_applies(
    ui: PanelPage, fake_model
) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    original = means_cell_text(ui)
    assert OLD_FIRST in original
    ui.open_settings()

    # Keyboard only: from the message box back to the approval mode, one step up.
    ui.focus_composer()
    ui.tab_until(
        lambda f: f.get("tag") == "select" and "Ask before" in f.get("name", ""), backwards=True
    )
    select = panel.locator(".jp-AAEPPanel-approvalMode select")
    expect(select).to_have_value("ask")
    assert select.locator("option").all_inner_texts() == [
        "Plan first",
        "Ask before every change",
        "Ask before running code",
        "Auto",
    ]
    ui.page.keyboard.press("ArrowUp")
    expect(select).to_have_value("ask_all")
    described = ui.page.evaluate(DESCRIPTION)
    assert "asks before every change" in described and "not a sandbox" in described, described
    # The mode goes to the server on the chat's socket, and the server accepts it.
    for _ in range(50):
        if any(
            f.get("kind") == "approval_mode.accepted" and f.get("approval_mode") == "ask_all"
            for f in ui.received
        ):
            break
        ui.page.wait_for_timeout(100)
    assert any(f.get("kind") == "approval_mode" and f.get("mode") == "ask_all" for f in ui.sent), (
        ui.sent
    )
    assert any(
        f.get("kind") == "approval_mode.accepted" and f.get("status") == 200 for f in ui.received
    ), ui.received

    ui.record_live_regions()
    ui.ask(ASK)
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    diff = card.locator(".jp-AAEPDiff")
    expect(diff.locator(".jp-AAEPDiff-caption")).to_have_text(
        "Changes to cell 3: 1 line changed, 1 added"
    )
    words = diff.locator(".jp-AAEPDiff-words li")
    expect(words).to_have_count(2)
    expect(words.first).to_have_text(
        "Line 1 changed from 'print(f\"Mean temperature: {statistics.mean(temperatures):.1f} °C\")' "
        "to 'print(f\"Mean temperature: {statistics.mean(temperatures):.2f} °C\")'."
    )
    expect(words.nth(1)).to_have_text(
        "Line 3 added: 'print(f\"Warmest day: {max(temperatures)} °C\")'."
    )
    # The marked lines: a marker on every changed line (never colour alone), hidden from
    # screen readers, which get the words instead.
    lines = diff.locator(".jp-AAEPDiff-lines")
    expect(lines).to_have_attribute("aria-hidden", "true")
    markers = lines.locator(".jp-AAEPDiff-marker").all_inner_texts()
    assert [m.strip() for m in markers] == ["−", "+", "", "+"], markers
    expect(card.locator(".jp-AAEPCard-title")).to_contain_text("Edit code cell 3")
    assert "246e7258" not in card.inner_text() and "edit_cell" not in card.inner_text()
    ui.wait_announced("Approval needed", "assertive")
    assert means_cell_text(ui) == original, "nothing changes while the user decides"
    expect(card).to_contain_text(
        "it will be rejected"
    )  # silence never applies a change under review
    ui.screenshot("review-1-diff-light")
    ui.page.set_viewport_size({"width": 1400, "height": 2000})  # the whole card, unscrolled
    ui.page.wait_for_timeout(300)
    card.screenshot(path=str(OUTPUT / "review-1b-card.png"))
    ui.page.set_viewport_size({"width": 1400, "height": 900})
    for theme in ("light", "dark", "high-contrast"):
        ui.set_theme(theme)
        violations = ui.axe()
        assert violations == [], (theme, violations)
    ui.screenshot("review-2-diff-high-contrast")
    ui.set_theme("light")

    # Reject with the keyboard: the cell stays exactly as it was, and the model is told.
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    # Focused, the card's description carries the change in words (not the marked lines).
    heard = ui.page.evaluate(DESCRIPTION)
    assert (
        "Changes to cell 3: 1 line changed, 1 added" in heard and "Line 3 added: 'print(f" in heard
    ), heard
    assert "Line 1 changed from" in heard and "+ added line" not in heard, heard
    ui.tab_until(lambda f: f.get("name") == "Reject")
    ui.page.keyboard.press("Space")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You rejected this.")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(LEFT_AS_IS)
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed").last).to_be_visible()
    assert means_cell_text(ui) == original
    declined = declined_results(fake_model.requests)
    assert declined and "rejected this change, so edit_cell was not applied" in declined[-1], (
        declined
    )
    ui.screenshot("review-3-rejected")

    # Asked again: this time approved with the keyboard, and the cell changes.
    ui.ask(ASK + " I will approve it this time.")
    second = panel.locator(".jp-AAEPCard-confirmation.jp-mod-pending")
    expect(second).to_have_count(1)
    expect(second.locator(".jp-AAEPDiff-words li")).to_have_count(2)
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.tab_until(lambda f: f.get("name") == "Approve")
    ui.page.keyboard.press("Enter")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(APPLIED)
    expect(ui.page.locator(".jp-NotebookPanel .jp-Cell").nth(2)).to_contain_text("Warmest day")
    assert means_cell_text(ui) == NEW_SOURCE
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("review-4-approved")

    # The chat keeps its mode: after a reload the select still says "Ask before every change".
    ui.reload()
    panel = ui.open_panel()
    ui.open_settings()
    expect(panel.locator(".jp-AAEPPanel-approvalMode select")).to_have_value("ask_all")
    assert not [e for e in ui.console_errors if "aaep" in e.lower()], ui.console_errors
