"""Standing permissions in Chromium, by keyboard (issue 27): the approval card offers "Approve, and
don't ask again for unflagged code in this chat", then "... in this notebook", after Reject in
the Tab order (axe finds nothing in the card); the notebook one gives the permission; *What May the Agent
Do Without Asking?* (Alt+Y) says the numbered list and opens it in a dialog whose first Take back
button has the focus; axe finds nothing in it; Enter takes it back, says so, and the focus goes
to the list's heading. Screenshots: ``test-output/e2e/permissions-card.png`` and
``permissions.png``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_lab import LabServer
from e2e_page import AXE, PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

CHOICE = "Approve, and don't ask again for unflagged code in this notebook"
CHAT_CHOICE = "Approve, and don't ask again for unflagged code in this chat"


def _axe(page: Any, selector: str) -> list[dict[str, Any]]:
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(  # type: ignore[no-any-return]
        """async selector => {
            const result = await axe.run({ include: [[selector]] }, { resultTypes: ['violations'] });
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({ target: n.target.join(' '), summary: n.failureSummary })),
            }));
        }""",
        selector,
    )


def test_give_hear_and_take_back_a_permission_by_keyboard(ui: PanelPage, lab: LabServer) -> None:
    ui.open_notebook()
    ui.open_panel()
    ui.record_live_regions()
    page: Any = ui.page
    ui.ask("Convert the temperatures to fahrenheit")
    choice = page.get_by_role("button", name=CHOICE)
    expect(choice).to_be_visible(timeout=30000)
    card = page.locator(".jp-AAEPCard.jp-mod-pending")
    violations = _axe(page, ".jp-AAEPCard.jp-mod-pending")
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("permissions-card")
    # From Reject, Tab reaches the narrower choice first, then the notebook's.
    card.get_by_role("button", name="Reject", exact=True).focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name=CHAT_CHOICE)).to_be_focused()
    page.keyboard.press("Tab")
    expect(choice).to_be_focused()
    page.keyboard.press("Enter")
    ui.wait_announced("Permission given", timeout=30)
    (permission,) = lab.api("GET", "aaep/v1/permissions")["permissions"]
    assert (permission["rule"], permission["scope"]) == ("run_cell:unflagged", "notebook")

    page.keyboard.press("Alt+y")
    ui.wait_announced(
        "The agent may do 1 thing without asking: 1. Without asking: unflagged code in"
    )
    first = page.get_by_role(
        "button", name="Take back 1: Without asking: unflagged code in", exact=False
    )
    expect(first).to_be_focused(timeout=10000)
    expect(page.get_by_role("dialog").get_by_role("listitem")).to_have_count(1)
    violations = _axe(page, ".jp-Dialog")
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("permissions")
    page.keyboard.press("Enter")
    ui.wait_announced("Taken back: Without asking: unflagged code in")
    expect(page.get_by_role("heading", name="0 standing permissions")).to_be_focused()
    assert lab.api("GET", "aaep/v1/permissions")["permissions"] == []
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
