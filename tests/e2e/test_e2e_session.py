"""The panel against the real server: ask, stream, approve or reject, stop, fail, reconnect.

Each test opens its own copy of the demo notebook in a real ``jupyter lab`` (one per module)
and drives the panel with the keyboard only. Screenshots of each state go to
``test-output/e2e/session-*.png``.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit

import pytest
from e2e_model import (
    AUTH_HINT,
    BROKEN_CODE,
    CHAT_ANSWER,
    CHOOSE_QUESTION,
    DECLINED_ANSWER,
    FAHRENHEIT_OUTPUT,
    FINAL_ANSWER,
    INTRO,
    RECONNECT_TEXT,
    RUN_ALL_ANSWER,
    choose_answer,
)
from e2e_page import COMPOSER, OUTPUT, PanelPage
from playwright.sync_api import Locator, WebSocketRoute, expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ASK_CONVERT = "Add a cell that converts the temperatures to Fahrenheit and run it."
AGENT_CELL = "fahrenheit = [round(t * 9 / 5 + 32, 1) for t in celsius]"


def agent_cell(ui: PanelPage) -> Locator:
    """The notebook cell the agent created (matched by its code)."""
    return ui.page.locator(".jp-NotebookPanel .jp-CodeCell").filter(has_text="fahrenheit = [round")


def our_errors(ui: PanelPage) -> list[str]:
    return [e for e in ui.console_errors if "aaep" in e.lower()]


def test_ask_stream_approve_with_the_keyboard_and_the_cell_runs(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    expect(panel.locator(".jp-AAEPPanel-empty")).to_be_visible()
    ui.screenshot("session-1-idle")

    ui.ask(ASK_CONVERT)
    ui.watch_focus()
    # The request shows at once; the answer streams in; the agent's cell appears in the notebook.
    expect(panel.locator(".jp-AAEPMessage-user")).to_contain_text(ASK_CONVERT)
    expect(panel.locator(".jp-AAEPMessage-agent").first).to_contain_text(INTRO.split(".")[0])
    expect(agent_cell(ui)).to_be_visible()
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(card.locator("pre")).to_contain_text(AGENT_CELL)
    expect(card).to_contain_text("Medium")
    ui.wait_announced("Approval needed", "assertive")
    focus = ui.focus_report()
    assert focus["same"] and not focus["events"], f"focus moved while events arrived: {focus}"
    assert focus["start"].startswith("textarea"), focus
    ui.screenshot("session-2-confirmation")

    # Keyboard only: jump to the request, Tab to Approve, Enter.
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    stops = ui.tab_until(lambda f: f.get("name") == "Approve")
    assert all(s["outline"] or s["shadow"] for s in stops if s.get("inPanel")), (
        f"invisible focus: {stops}"
    )
    ui.page.keyboard.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You approved this.")
    # The buttons are gone; the focus is on the card's short outcome (the card is not read
    # again) and does not move again.
    assert ui.page.evaluate(
        "() => document.activeElement.matches('[data-request-id] .jp-AAEPCard-outcome')"
    ), ui.focused()
    ui.watch_focus()

    # The cell runs in the notebook's kernel; its output appears in the notebook.
    expect(agent_cell(ui).locator(".jp-OutputArea-output")).to_contain_text(
        FAHRENHEIT_OUTPUT, timeout=60_000
    )
    answer = panel.locator(".jp-AAEPMessage-agent").last
    expect(answer).to_contain_text("The conversion worked.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Idle")
    focus = ui.focus_report()
    assert focus["same"] and not focus["events"], f"focus moved while the run finished: {focus}"
    ui.wait_announced("Done.")
    assert FINAL_ANSWER.split("!")[0].split(". ")[-1] in answer.inner_text()
    ui.screenshot("session-3-completed")
    assert not our_errors(ui), our_errors(ui)


def test_reject_with_the_keyboard_and_nothing_runs(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask(ASK_CONVERT + " (I may say no.)")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.tab_until(lambda f: f.get("name") == "Reject")
    ui.page.keyboard.press("Space")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You rejected this.")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(
        DECLINED_ANSWER.split(":")[0]
    )
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    # The cell is there, never run: no output, no execution count.
    cell = agent_cell(ui)
    expect(cell).to_be_visible()
    expect(cell.locator(".jp-OutputArea-output")).to_have_count(0)
    expect(cell.locator(".jp-InputPrompt")).to_have_text("[ ]:")
    ui.screenshot("session-4-rejected")
    assert not our_errors(ui), our_errors(ui)


def test_stop_mid_run_is_shown_and_announced(ui: PanelPage, fake_model) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Explain the readings slowly, please.")
    answer = panel.locator(".jp-AAEPMessage-agent.jp-mod-streaming")
    expect(answer).to_contain_text("Sentence 3")
    # The status line names what the agent does (it is writing its answer).
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text(
        re.compile("^(Writing|Thinking|Working)$")
    )
    stop = panel.locator(".jp-AAEPPanel-stop")
    expect(stop).to_have_attribute("aria-disabled", "false")
    ui.screenshot("session-5-streaming")
    # Focus is in the message box (inside the panel): the Stop shortcut works from there.
    ui.page.keyboard.press("Control+Shift+Period")
    notice = panel.locator(".jp-AAEPNotice.jp-mod-cancelled")
    expect(notice).to_contain_text("You stopped the agent.")
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Idle")
    expect(panel.locator(".jp-AAEPMessage-agent.jp-mod-streaming")).to_have_count(0)
    expect(stop).to_have_attribute("aria-disabled", "true")
    ui.wait_announced("You stopped the agent.")
    assert ui.page.evaluate("s => document.activeElement.matches(s)", COMPOSER), ui.focused()
    ui.screenshot("session-6-stopped")
    fake_model.release()
    assert not our_errors(ui), our_errors(ui)


def test_api_error_is_shown_with_its_remediation_hint(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Does my API key work?")
    notice = panel.locator(".jp-AAEPNotice.jp-mod-errored")
    expect(notice).to_contain_text("The model service rejected the API key.")
    expect(notice.locator(".jp-AAEPNotice-hint")).to_have_text(f"What you can do: {AUTH_HINT}")
    assert notice.inner_text().count(AUTH_HINT) == 1, "the hint is shown once"
    alert = ui.wait_announced("The model service rejected the API key.", "assertive")
    assert alert["text"].count(AUTH_HINT) == 1, alert
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Idle")
    ui.screenshot("session-7-error")
    assert not our_errors(ui), our_errors(ui)


def test_reload_replays_the_chat_without_announcing_it(ui: PanelPage) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("Say hello.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    ui.reload()
    panel = ui.open_panel()
    # The history comes back from GET aaep/v1/chats/{id}: request, answer, ending.
    expect(panel.locator(".jp-AAEPMessage-user")).to_have_text(
        "You\nSay hello.", use_inner_text=True
    )
    expect(panel.locator(".jp-AAEPMessage-agent")).to_contain_text(CHAT_ANSWER.split("!")[0])
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_have_count(1)
    ui.page.wait_for_timeout(1500)  # anything queued would have been said by now
    # Only where you are (docs/NARRATION.md), never the history again.
    said = [a["text"] for a in ui.announcements()]
    assert said == [f"Agent panel for {ui.notebook}. 2 messages. Type your request."], said
    assert not our_errors(ui), our_errors(ui)


@pytest.mark.own_page
def test_sse_fallback_carries_questions_and_answers(ui: PanelPage) -> None:
    """When WebSockets are unavailable (a proxy), SSE + POST carry the same chat."""
    ui.page.add_init_script(
        """(() => {
            const Native = window.WebSocket;
            window.WebSocket = class extends Native {
                constructor(url, protocols) {
                    if (String(url).includes('/aaep/v1/')) { throw new Error('blocked by the test'); }
                    super(url, protocols);
                }
            };
        })();"""
    )
    posts: list[dict] = []
    ui.page.on(
        "request",
        lambda r: (
            posts.append(r.post_data_json)
            if r.method == "POST" and urlsplit(r.url).path.endswith("/messages")
            else None
        ),
    )
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("Let me choose the unit.")
    card = panel.locator(".jp-AAEPCard-clarification").last
    expect(card).to_contain_text(CHOOSE_QUESTION)
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    ui.screenshot("session-8-clarification-sse")
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    expect(card.locator(".jp-AAEPCard-deadline [role=timer]")).to_contain_text("left")
    ui.tab_until(lambda f: f.get("name") == "Fahrenheit")
    ui.page.keyboard.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You answered: Fahrenheit")
    # Answered: the clock is gone (it would otherwise keep saying "Time to answer: 1:59 left").
    expect(card.locator(".jp-AAEPCard-deadline")).to_have_count(0)
    expect(card.locator("[role=timer]")).to_have_count(0)
    assert "Time to answer" not in card.inner_text()
    ui.screenshot("session-8b-clarification-answered")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(choose_answer("Fahrenheit"))
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    assert ui.sent == [] and ui.received == [], "no AAEP WebSocket was used"
    kinds = [p.get("type") or p.get("kind") for p in posts]
    assert kinds[:2] == ["subscription.request", "user_input"], kinds
    assert "clarification.reply" in kinds, kinds
    assert not our_errors(ui), our_errors(ui)


def test_reconnect_catches_up_with_what_happened_meanwhile(ui: PanelPage, fake_model) -> None:
    """The socket drops mid-session and the session ends meanwhile: the panel reconnects,
    fetches the chat again and shows (and says) how it ended."""
    sockets: list[tuple] = []

    def through(route: WebSocketRoute) -> None:
        sockets.append((route, route.connect_to_server()))

    ui.page.route_web_socket(re.compile(r"/aaep/v1/chats/[^/]+/ws"), through)
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Test the reconnect, please.")
    expect(panel.locator(".jp-AAEPMessage-agent")).to_contain_text("First part.")
    assert len(sockets) == 1
    page_side, server_side = sockets[0]
    server_side.close()
    page_side.close(code=1011, reason="the test cut the connection")
    expect(panel.locator(".jp-AAEPPanel-connection")).not_to_have_text("connected")
    # The session finishes while nobody listens (release again if the stream was not
    # stalled yet when asked: a release only frees streams already waiting).
    deadline = time.monotonic() + 10
    while ui.lab.chat_of(ui.notebook)["status"] != "idle" and time.monotonic() < deadline:  # type: ignore[index]
        fake_model.release()
        time.sleep(0.2)
    expect(panel.locator(".jp-AAEPPanel-connection.jp-mod-open")).to_be_visible(timeout=15_000)
    assert len(sockets) == 2, "the panel opened a new socket"
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    expect(panel.locator(".jp-AAEPPanel-runState")).to_have_text("Idle")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(
        RECONNECT_TEXT.split(". ")[-1]
    )
    ui.wait_announced("While the connection was down: Done.")
    ui.screenshot("session-9-reconnected")
    assert not our_errors(ui), our_errors(ui)


def test_a_pending_approval_survives_a_page_reload(ui: PanelPage) -> None:
    """Reloading the page while the agent waits: the request comes back from the chat's
    pending list, is announced, and can still be approved (the server's reconnect grace).
    Ctrl+Shift+A pressed at once after the reload, the panel still closed, opens it, waits for
    the chat and goes to the request (it used to say "Nothing is waiting for you."); pressed
    right after Ctrl+Shift+Y, it is not taken back to the message box by the panel's opening."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask(ASK_CONVERT + " I will reload first.")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    ui.reload()
    ui.page.keyboard.press("Control+Shift+A")
    # The key opens the panel and loads the chat first: as long as opening the panel may take.
    ui.wait_focus("[data-request-id]", timeout=30)
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(card.locator("pre")).to_contain_text(AGENT_CELL)
    banner = panel.locator(".jp-AAEPPanel-pendingBanner")
    expect(banner).to_contain_text("1 request is waiting for your answer")
    assert any(
        a["politeness"] == "assertive" and "waiting for your answer" in a["text"]
        for a in ui.announcements()
    ), ui.announcements()
    assert not [a for a in ui.announcements() if "Nothing is waiting" in a["text"]]
    # The person hears where they are and goes to the request at once.
    ui.page.keyboard.press("Control+Shift+Y")
    ui.wait_focus(COMPOSER)
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.wait_for_timeout(1000)  # the panel's opening has stopped guarding the message box
    ui.wait_focus("[data-request-id]", timeout=0.1)
    ui.page.keyboard.press("Control+Shift+Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You approved this.")
    expect(agent_cell(ui).locator(".jp-OutputArea-output")).to_contain_text(
        FAHRENHEIT_OUTPUT, timeout=60_000
    )
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    expect(banner).to_have_count(0)
    ui.screenshot("session-10-approved-after-reload")
    assert not our_errors(ui), our_errors(ui)


def test_undo_removes_the_agents_cell_and_says_so_once(ui: PanelPage) -> None:
    """The agent adds a cell; the user undoes it from the keyboard (Tab to the button, Enter):
    the cell goes, the summary is shown and said once, and the focus stays on the button.
    Undoing again after a reload (nothing left on the server) shows and alerts the refusal."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    undo = panel.locator(".jp-AAEPPanel-undo")
    expect(undo).to_have_text("Undo agent changes")
    expect(undo).to_have_attribute("aria-disabled", "true")  # nothing ran in this chat yet

    ui.ask(ASK_CONVERT + " I may undo it afterwards.")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(agent_cell(ui)).to_be_visible()
    expect(undo).to_have_attribute("aria-disabled", "true")  # not while the agent works
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.keyboard.press("Control+Shift+Backspace")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    expect(agent_cell(ui)).to_be_visible()
    expect(undo).to_have_attribute("aria-disabled", "false")

    # Keyboard only: from the message box, Shift+Tab back to the Undo button.
    ui.focus_composer()
    stops = ui.tab_until(lambda f: f.get("name") == "Undo agent changes", backwards=True)
    assert stops[-1]["outline"] or stops[-1]["shadow"], stops[-1]
    description = ui.page.evaluate(
        """() => document.activeElement.getAttribute('aria-describedby').split(' ')
                 .map(id => document.getElementById(id).textContent).join(' ')"""
    )
    assert "the changes the agent made to the notebook in its latest request" in description, (
        description
    )
    assert "as they were before" not in description, (
        "Undo no longer promises the whole notebook back"
    )
    ui.screenshot("session-11-undo-button")
    ui.watch_focus()
    ui.page.keyboard.press("Enter")

    expect(agent_cell(ui)).to_have_count(0)
    notice = panel.locator(".jp-AAEPNotice.jp-mod-reverted")
    # Only what happened: one cell removed, no "0 cells put back and 0 cells restored".
    expect(notice).to_have_text(
        f"Undid the agent's changes to {ui.notebook}: removed 1 cell the agent added."
    )
    ui.wait_announced("Undid the agent's changes", "polite")
    ui.page.wait_for_timeout(1500)  # the stream's copy of the notice would be said by now
    said = [e for e in ui.live_log() if "Undid the agent's changes" in e["text"]]
    assert len(said) == 1, said
    expect(notice).to_have_count(1)
    focus = ui.focus_report()
    assert focus["same"] and not focus["events"], f"focus moved after Undo: {focus}"
    expect(undo).to_have_attribute("aria-disabled", "true")  # that was the only request
    ui.screenshot("session-12-undone")

    # After a reload the panel asks the server what can be undone (``undoable_sessions``):
    # nothing is left, so Undo is not offered, and the command says so without asking anything.
    ui.reload()
    panel = ui.open_panel()
    ui.record_live_regions()
    undo = panel.locator(".jp-AAEPPanel-undo")
    expect(undo).to_have_attribute("aria-disabled", "true")
    ui.page.keyboard.press("Control+Shift+C")
    search = ui.page.locator(".lm-CommandPalette-input")
    expect(search).to_be_focused()
    search.fill("Undo the AI Agent's Last Changes")
    expect(ui.page.locator(".lm-CommandPalette-item.lm-mod-active")).to_contain_text(
        "Undo the AI Agent's Last Changes"
    )
    search.press("Enter")
    ui.wait_announced("There are no agent changes to undo in this chat.", "polite")
    expect(panel.locator(".jp-AAEPPanel-undoError")).to_have_count(0)
    expect(ui.page.locator(".jp-Dialog")).to_have_count(0)
    ui.screenshot("session-13-undo-refused")
    assert not our_errors(ui), our_errors(ui)


def test_run_all_cells_shows_every_cell_and_a_failed_cell_reads_failed(ui: PanelPage) -> None:
    """One approval for three cells shows the code of each, labelled by its number; the cell
    that raises NameError makes the step look and read failed, never "Done"."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    ui.ask("Add a cell that prints df, then run every cell.")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    expect(card.locator(".jp-AAEPCard-title")).to_contain_text("Run 3 code cells")
    expect(card.locator(".jp-AAEPCard-cellsCaption")).to_have_text(
        "Code to run: 3 cells, in this order"
    )
    cells = card.locator(".jp-AAEPCard-cellList > li")
    expect(cells).to_have_count(3)
    expect(cells.locator(".jp-AAEPCard-cellLabel")).to_have_text(["Cell 2", "Cell 3", "Cell 4"])
    expect(cells.nth(0).locator("pre")).to_contain_text("import statistics")
    expect(cells.nth(1).locator("pre")).to_contain_text("Mean temperature")
    expect(cells.nth(2).locator("pre")).to_have_text(BROKEN_CODE)
    # Each cell's code follows its label ("Cell 2"); the list is one named list of 3 items.
    expect(card.get_by_role("list", name="Code to run: 3 cells, in this order")).to_be_visible()
    expect(card.get_by_role("listitem")).to_have_count(3)
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("session-14-run-all-confirmation")
    cell_list = card.locator(".jp-AAEPCard-cellList")
    cell_list.screenshot(path=str(OUTPUT / "session-14b-run-all-cells.png"))

    # Keyboard only: the focused card's summary says how many cells (the code itself is not
    # in it, issue 17); every cell's code is in the card's list, none skipped; Approve is
    # the next Tab stop (docs/NARRATION.md).
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    focused = ui.page.locator("[data-request-id]:focus")
    expect(focused).to_have_accessible_description(
        re.compile(r"Code to run: 3 cells, in this order")
    )
    expect(focused).not_to_have_accessible_description(re.compile(re.escape(BROKEN_CODE)))
    items = cell_list.get_by_role("listitem")
    expect(items.nth(0)).to_contain_text("import statistics")
    expect(items.nth(2)).to_contain_text(BROKEN_CODE)
    stops = ui.tab_until(lambda f: f.get("name") == "Approve")
    assert len(stops) == 1, stops
    ui.page.keyboard.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You approved this.")

    # One line, in words: the mark, "Failed:", what happened (no tool name, no duration).
    step = panel.locator(".jp-AAEPToolStep").filter(has_text="Ran 3 cells")
    expect(step).to_have_class(re.compile("jp-mod-error"), timeout=60_000)
    expect(step.locator(".jp-AAEPToolStep-status")).to_have_text("Failed:")
    expect(step.locator(".jp-AAEPToolStep-icon")).to_have_text("✕")
    expect(step).to_have_text(
        "✕Failed: Ran 3 cells, stopped at the error. Cell 4 failed: NameError: name 'df' is not defined."
    )
    assert "Done" not in step.inner_text() and "run_all_cells" not in step.inner_text()
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(RUN_ALL_ANSWER)
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    ui.wait_announced("Cell 4 failed: NameError: name 'df' is not defined.")
    ui.wait_announced(
        "Done, but 1 step failed"
    )  # the session's end says so too, not a bare "Done."
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("session-15-failed-step")
    ui.set_theme("high-contrast")  # the failed step and the cell list keep their contrast
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("session-15b-failed-step-high-contrast")
    assert not our_errors(ui), our_errors(ui)


def test_the_request_gets_its_session_without_a_stream_acknowledgement(ui: PanelPage) -> None:
    """Subscribers get AAEP events only: with no ``user_input.accepted`` on the stream the
    panel still ties its message to its session (from the answer, or from session.started),
    and a later unrelated error does not mark the message as not sent."""
    routes: list[WebSocketRoute] = []
    dropped: list[dict] = []

    def without_acknowledgement(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def from_server(message: str | bytes) -> None:
            try:
                data = json.loads(message)
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("kind") == "user_input.accepted":
                dropped.append(data)
                return
            route.send(message)

        server.on_message(from_server)
        routes.append(route)

    ui.page.route_web_socket(re.compile(r"/aaep/v1/chats/[^/]+/ws"), without_acknowledgement)
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("Say hello without the acknowledgement.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible()
    chat = ui.lab.chat_of(ui.notebook)
    assert chat is not None and chat["session_id"], chat
    message = panel.locator(".jp-AAEPMessage-user").last
    expect(message).to_have_attribute("data-session-id", chat["session_id"])
    assert not any(
        m.get("kind") == "user_input.accepted" for m in ui.received if m not in dropped
    ), "the test let a stream acknowledgement through"

    # An error frame about something else must not be blamed on the message sent earlier.
    routes[-1].send(json.dumps({"kind": "error", "status": 400, "message": "A test error frame."}))
    expect(panel.locator(".jp-AAEPNotice.jp-mod-error")).to_contain_text("A test error frame.")
    expect(message).not_to_contain_text("(not sent)")
    ui.screenshot("session-16-no-stream-acknowledgement")
    assert not our_errors(ui), our_errors(ui)


def test_approval_mode_says_what_auto_does_not_protect_against(ui: PanelPage) -> None:
    """The approval mode's description says plainly that the risk check is no sandbox: read
    with the select (aria-describedby), shown in words while auto-approve is on."""
    ui.open_notebook()
    panel = ui.open_panel()
    ui.open_settings()
    ui.focus_composer()
    ui.tab_until(
        lambda f: f.get("tag") == "select" and "Ask before" in f.get("name", ""), backwards=True
    )
    describe = """() => document.activeElement.getAttribute('aria-describedby').split(' ')
                   .map(id => document.getElementById(id).textContent).join(' ')"""
    said = ui.page.evaluate(describe)
    assert "unless a quick check flags it as risky" in said, said
    assert "not a sandbox" in said and "cannot catch everything harmful" in said, said
    warning = panel.locator(".jp-AAEPPanel-approvalWarning")
    expect(warning).to_have_count(0)  # quiet while asking every time: only the select says it

    ui.page.keyboard.press("ArrowDown")  # keyboard only: the closed select moves to "auto"
    select = panel.locator(".jp-AAEPPanel-approvalMode select")
    expect(select).to_have_value("auto")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text(
        "The check is not a sandbox: it cannot catch everything harmful."
    )
    assert "not a sandbox" in ui.page.evaluate(describe)
    violations = ui.axe()
    assert violations == [], violations
    ui.screenshot("session-17-auto-approve-explained")
    ui.page.keyboard.press("ArrowUp")
    expect(select).to_have_value("ask")
    assert not our_errors(ui), our_errors(ui)
