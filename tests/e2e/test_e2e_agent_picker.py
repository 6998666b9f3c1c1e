"""The agent picker (issue 29): in the panel's settings, next to the model, our own agent first
and the coding agents of ``agents.json`` (here a scripted ACP agent, ``tests/acp/fake_agent.py``,
and one whose command is missing). Reached and changed from the keyboard; the server's sentence
is announced; the missing one is marked and its description says what to install; with the
ACP agent chosen the model picker gives way to a sentence saying it does not apply; axe finds
nothing. Screenshot: ``test-output/e2e/agent-picker.png``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

FAKE_AGENT = Path(__file__).parents[1] / "acp" / "fake_agent.py"


def test_the_agent_is_chosen_from_the_keyboard_and_the_choice_is_announced(
    ui: PanelPage, lab: Any, tmp_path: Path
) -> None:
    folder = lab.home / "config" / "aaep"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.json").write_text(
        json.dumps(
            {
                "agent_servers": {
                    "Scripted agent": {
                        "command": sys.executable,
                        "args": [str(FAKE_AGENT), str(tmp_path / "received.jsonl")],
                    },
                    "Codex": {"command": "/nonexistent/bin/codex-acp"},
                }
            }
        )
    )
    ui.open_notebook()
    ui.open_panel()
    ui.record_live_regions()
    settings = ui.open_settings()
    picker = settings.get_by_label("Agent", exact=True)
    expect(picker).to_be_visible(timeout=30_000)
    expect(picker).to_have_value("Jupyter agent")
    options = picker.locator("option")
    expect(options).to_have_text(["Jupyter agent", "Scripted agent", "Codex (not installed)"])
    expect(options.nth(2)).to_be_disabled()
    described = picker.get_attribute("aria-describedby") or ""
    hint = settings.locator(f"#{described}")
    expect(hint).to_contain_text("Install it with: npm install -g @zed-industries/codex-acp.")

    # Keyboard only: Tab from the Settings button to the picker, then ArrowDown.
    stops = ui.tab_until(
        lambda f: f.get("tag") == "select" and "Scripted agent" in f.get("name", "")
    )
    assert stops[-1]["focusVisible"] and (stops[-1]["outline"] or stops[-1]["shadow"]), stops[-1]
    ui.page.keyboard.press("ArrowDown")
    expect(picker).to_have_value("Scripted agent")
    ui.page.wait_for_function(
        "() => (window.__liveLog || []).some(e => e.text.includes('go to Scripted agent'))",
        timeout=10_000,
    )
    said = [e["text"] for e in ui.live_log()]
    assert "Your next messages in this chat go to Scripted agent." in said, said
    # The model applies to our agent only: in its place, a sentence saying so.
    expect(settings.get_by_label("Model", exact=True)).to_have_count(0)
    expect(settings.locator(".jp-AAEPModel")).to_have_text(
        "Scripted agent uses its own model: the model setting applies only to the built-in "
        "agent. Choose the built-in agent above to pick a model."
    )
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("agent-picker")
