"""The administrator's policy in the panel: with ``auto`` turned off for everyone, the approval
mode select offers only the allowed modes, and the administrator's sentence is read with it and
shown under it; axe-core finds nothing wrong. Screenshot: ``test-output/e2e/policy-1.png``.
"""

from __future__ import annotations

import json

import pytest
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
LAB_AAEP = {"allowed_approval_modes": ["ask", "ask_all"]}


def test_only_the_allowed_approval_modes_are_offered_and_the_lock_is_said(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.open_settings()
    select = panel.locator(".jp-AAEPPanel-approvalMode select")
    expect(select.locator("option")).to_have_count(2)
    assert select.locator("option").evaluate_all("os => os.map(o => o.value)") == ["ask_all", "ask"]
    policy = panel.locator(".jp-AAEPPanel-policy")
    expect(policy).to_contain_text("Set by the administrator of this server: approval modes:")

    ui.focus_composer()
    ui.tab_until(
        lambda f: f.get("tag") == "select" and "Ask before" in f.get("name", ""), backwards=True
    )
    said = ui.page.evaluate(
        """() => document.activeElement.getAttribute('aria-describedby').split(' ')
               .map(id => document.getElementById(id).textContent).join(' ')"""
    )
    assert "Set by the administrator of this server" in said, said
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("policy-1")
