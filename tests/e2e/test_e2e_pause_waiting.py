"""Pause and resume while a request waits for the person (issue 15, panel): the approval or
question stays answerable — its buttons, the banner, the shortcuts — also after a reload; a
message typed while a question waits answers it, and the message box says so beforehand.

Keyboard only, against a real ``jupyter lab``; screenshots in ``test-output/e2e/pause-*.png``.
"""

from __future__ import annotations

import re

import pytest
from e2e_model import CITY_QUESTION, FAHRENHEIT_OUTPUT, city_answer
from e2e_page import COMPOSER, PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ASK_CONVERT = (
    "Add a cell that converts the temperatures to Fahrenheit and run it. I will pause first."
)


def press_in_box(ui: PanelPage, key: str) -> None:
    """A panel shortcut, pressed with the focus in the message box (where a person types)."""
    ui.panel.locator(COMPOSER).focus()
    ui.page.keyboard.press(key)


def test_pause_and_resume_around_a_waiting_approval_keep_it_answerable(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask(ASK_CONVERT)
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    state = panel.locator(".jp-AAEPPanel-runState")
    press_in_box(ui, "Alt+p")
    expect(state).to_have_text("Paused")
    # Still waiting, still answerable: the buttons, the banner, the box saying what a message does.
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    banner = panel.locator(".jp-AAEPPanel-pendingBanner")
    expect(banner).to_contain_text("waiting for your answer")
    expect(panel.locator(".jp-AAEPComposer-hint")).to_contain_text(
        "cancels it and starts a new request"
    )
    ui.screenshot("pause-1-approval-paused")

    ui.reload()  # after a reload too
    panel = ui.open_panel()
    state = panel.locator(".jp-AAEPPanel-runState")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(state).to_have_text("Paused")
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(panel.locator(".jp-AAEPPanel-pendingBanner")).to_contain_text("waiting for your answer")
    ui.record_live_regions()
    press_in_box(ui, "Alt+p")
    ui.wait_announced("Resumed")
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.keyboard.press("Control+Shift+Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You approved this.")
    expect(
        ui.page.locator(".jp-NotebookPanel .jp-CodeCell")
        .filter(has_text="fahrenheit = [round")
        .locator(".jp-OutputArea-output")
    ).to_contain_text(FAHRENHEIT_OUTPUT, timeout=60_000)
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    ui.screenshot("pause-2-approved-after-resume")


def test_a_question_answered_while_paused_by_typing_in_the_message_box(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("What is the forecast? Ask me which city.")
    card = panel.locator(".jp-AAEPCard-clarification").last
    expect(card).to_contain_text(CITY_QUESTION)
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    press_in_box(ui, "Alt+p")
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Paused")
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(card.locator("input, textarea").first).to_be_visible()
    # The box says, before anything is sent, that a message answers the question.
    expect(panel.locator(".jp-AAEPComposer-label")).to_have_text("Answer the agent")
    expect(panel.locator(".jp-AAEPComposer-hint")).to_contain_text("what you send answers it")
    ui.screenshot("pause-3-question-paused")
    box = panel.locator(COMPOSER)
    box.fill("Lagos")
    box.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You answered: Lagos")
    # Taken, and acted on only at the resume: the session stays paused until then.
    ui.page.wait_for_timeout(1000)
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Paused")
    expect(
        panel.locator(".jp-AAEPMessage-agent").filter(has_text=city_answer("Lagos"))
    ).to_have_count(0)
    press_in_box(ui, "Alt+p")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(city_answer("Lagos"))
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    ui.screenshot("pause-4-question-answered")
