"""Long-running work in the panel: pause, resume and steer a run; Continue after a
recoverable error; the notebook's chats (list, switch, New chat); the usage meter.

Driven with the keyboard only against a real ``jupyter lab``. Pause/resume and guidance need
the server's control messages (CONTROL), the chat titles, dates and pages need the stored
chats (STORE), Continue needs both; each test says which. Screenshots go to
``test-output/e2e/long-*.png`` and the announcements of the pause/steer session to
``test-output/e2e/long-running-announcements.txt``.
"""

from __future__ import annotations

import json
import re

import pytest
from e2e_model import GUIDANCE_TEXT, STEER_INTRO, Overloaded
from e2e_page import COMPOSER, OUTPUT, PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


@pytest.fixture(autouse=True)
def _overloaded_scenario(model) -> None:  # type: ignore[no-untyped-def]
    """This module's model also answers "overloaded test" (fresh failures per test)."""
    _, scripted = model
    scripted.scenarios = {"overloaded test": Overloaded(), **scripted.scenarios}


def our_errors(ui: PanelPage) -> list[str]:
    return [e for e in ui.console_errors if "aaep" in e.lower()]


def assert_no_axe_violations(ui: PanelPage) -> None:
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)


def test_pause_steer_resume_and_the_usage_meter(ui: PanelPage, fake_model) -> None:  # type: ignore[no-untyped-def]
    """Needs CONTROL (pause, resume, guidance). The usage meter works with today's server."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Steer test: read the notebook, please.")
    expect(panel.locator(".jp-AAEPMessage-agent").first).to_contain_text(STEER_INTRO.split(".")[0])

    # While the agent works, the message box is the steer box.
    box = panel.locator(COMPOSER)
    expect(panel.locator(".jp-AAEPComposer-label")).to_have_text("Steer the agent")
    expect(panel.locator(".jp-AAEPComposer button[type=submit]")).to_have_text("Send guidance")
    ui.screenshot("long-1-steer-box")
    box.fill(GUIDANCE_TEXT)
    box.press("Enter")
    steering = panel.locator(".jp-AAEPMessage-user.jp-mod-steering")
    expect(steering).to_contain_text(GUIDANCE_TEXT)
    expect(steering.locator(".jp-AAEPMessage-author")).to_have_text("You (steering):")
    ui.wait_announced("Guidance sent; it applies at the next step.")

    # Pause from the keyboard (the focus stays in the box); it takes effect at the next safe
    # point, which comes once the stalled model turn is let go.
    ui.page.keyboard.press("Alt+p")
    ui.wait_announced("Pausing the agent at the next safe point.")
    fake_model.release()
    state = panel.locator(".jp-AAEPPanel-runState")
    expect(state).to_have_text("Paused")
    ui.wait_announced("Paused")
    resume = panel.locator(".jp-AAEPPanel-resume")
    expect(resume).to_have_text("Resume")
    expect(resume).to_have_attribute("aria-keyshortcuts", "Alt+P")
    assert ui.page.evaluate("s => document.activeElement.matches(s)", COMPOSER), ui.focused()
    ui.screenshot("long-2-paused")
    assert_no_axe_violations(ui)

    ui.page.keyboard.press("Alt+p")
    ui.wait_announced("Resumed")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=60_000)
    expect(state).to_have_text("Idle")
    # The guidance reached the model, in a request after the one it was sent during.
    assert any(GUIDANCE_TEXT in json.dumps(r.body) for r in fake_model.requests[1:]), (
        "the guidance never reached the model"
    )

    # The usage meter is filled at the end of the session; asked for, it is spoken.
    meter = panel.locator(".jp-AAEPPanel-usage")
    # The chat is read again after the end event arrives, so the figures may come a moment later.
    expect(meter).to_have_text(re.compile(r"^(?!0 tokens)[\d.]+[kM]? tokens · ≈ \$\d+\.\d+$"))
    meter_text = meter.inner_text()
    assert meter.get_attribute("aria-live") is None
    ui.page.keyboard.press("Alt+u")
    ui.wait_announced("This chat used")
    ui.screenshot("long-3-finished-with-usage")
    assert_no_axe_violations(ui)

    log = ui.live_log()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "long-running-announcements.txt").write_text(
        "\n".join(f"[{e['politeness']}] {e['text']}" for e in log) + "\n", encoding="utf-8"
    )
    assert not our_errors(ui), our_errors(ui)

    # Reopened, the chat shows the guidance once, where it was given (needs the chat's
    # ``guidance`` list from the server).
    ui.reload()
    panel = ui.open_panel()
    steering = panel.locator(".jp-AAEPMessage-user.jp-mod-steering")
    expect(steering).to_have_count(1)
    expect(steering).to_contain_text(GUIDANCE_TEXT)
    expect(panel.locator(".jp-AAEPPanel-usage")).to_have_text(meter_text)


def test_continue_after_a_recoverable_error(ui: PanelPage) -> None:
    """Needs CONTROL/STORE (``control`` ``continue`` and ``supports.continue``)."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Overloaded test: describe the notebook.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-errored")).to_be_visible(timeout=60_000)
    ui.wait_announced("overloaded", "assertive")
    button = panel.locator(".jp-AAEPPanel-continue")
    expect(button).to_be_visible()
    expect(button).to_have_attribute("aria-keyshortcuts", "Alt+C")
    ui.screenshot("long-4-continue")
    assert_no_axe_violations(ui)
    # The focus is in the message box, inside the panel: the shortcut works from there.
    ui.page.keyboard.press("Alt+c")
    ui.wait_announced("Continuing where the agent stopped.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=60_000)
    expect(button).to_have_count(0)
    assert not our_errors(ui), our_errors(ui)


def test_new_chat_then_switch_back_from_the_chat_list(ui: PanelPage) -> None:
    """New chat and switching work with today's server; titles and dates need STORE."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Hello there, first chat.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()

    ui.page.keyboard.press("Alt+n")
    ui.wait_announced("New chat started.")
    expect(panel.locator(".jp-AAEPPanel-empty")).to_be_visible()
    ui.wait_focus(COMPOSER)
    ui.ask("Hello again, second chat.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()

    # The list opens on the chat shown now; the older chat is the next one.
    ui.page.keyboard.press("Alt+h")
    ui.wait_focus('.jp-AAEPChats-item[aria-current="true"]')
    items = panel.locator(".jp-AAEPChats-item")
    expect(items).to_have_count(2)
    ui.wait_announced("2 chats in this notebook.")
    expect(panel.locator(".jp-AAEPChats-toggle")).to_have_attribute("aria-expanded", "true")
    ui.screenshot("long-5-chat-list")
    assert_no_axe_violations(ui)
    # Escape closes the list and gives the focus back to its button.
    ui.page.keyboard.press("Escape")
    ui.wait_focus(".jp-AAEPChats-toggle")
    expect(panel.locator(".jp-AAEPChats-list")).to_have_count(0)
    ui.page.keyboard.press("Alt+h")
    ui.wait_focus('.jp-AAEPChats-item[aria-current="true"]')
    ui.page.keyboard.press("Tab")
    focused = ui.focused() or {}
    assert "first chat" in focused.get("name", "") or "Untitled" in focused.get("name", ""), focused
    ui.page.keyboard.press("Enter")
    ui.wait_announced("Switched to")
    expect(panel.locator(".jp-AAEPMessage-user")).to_contain_text("Hello there, first chat.")
    ui.wait_focus(COMPOSER)
    assert not our_errors(ui), our_errors(ui)


def test_chat_titles_come_from_the_first_request(ui: PanelPage) -> None:
    """Needs STORE (``title`` and ``updated`` in the chat list)."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("Hello, a chat with a title.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    ui.page.keyboard.press("Alt+h")
    item = panel.locator('.jp-AAEPChats-item[aria-current="true"]')
    expect(item.locator(".jp-AAEPChats-title")).to_have_text("Hello, a chat with a title.")
    expect(item.locator(".jp-AAEPChats-meta")).to_contain_text("finished")
    expect(item.locator(".jp-AAEPChats-meta")).to_contain_text(re.compile(r"\d{1,2}:\d{2}"))
