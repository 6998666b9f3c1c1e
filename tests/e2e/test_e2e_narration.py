"""What a screen-reader user hears, against the narration rules (docs/NARRATION.md).

- A whole session (open the panel, ask, a cell is created, its run needs approval, the cell
  prints, the answer, the end) is recorded from the live regions and checked as a sequence:
  the steps before the question, no ids, no tool names, no kernel spec names, nothing said
  twice in a row, the cell's output said, "Done." once. The log is written to
  ``test-output/e2e/narration-announcements.txt`` to be read as one text.
- Keyboard only: open the panel (the focus goes to the message box and the panel says where
  you are), ask, go to the request, hear the code (the card's name and description), Tab to
  Approve (the next stop), Enter, hear the cell's result and its whole output, with axe-core 0
  violations in every state in the light, dark and high-contrast themes (switched live at each
  state, ``e2e_sweep``; the focus stays put).
- Every command answers when it has nothing to do.
"""

from __future__ import annotations

import re
import time
from itertools import pairwise
from typing import Any

import pytest
from e2e_model import FAHRENHEIT_CODE, FAHRENHEIT_OUTPUT, FINAL_ANSWER, INTRO
from e2e_page import COMPOSER, OUTPUT, PanelPage
from e2e_sweep import Sweep
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ASK = "Add a cell that converts the temperatures to Fahrenheit and run it."
CARD = "[data-request-id]"

HEX_ID = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
SNAKE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")


def _open_by_keyboard(ui: PanelPage) -> None:
    """Ctrl+Shift+Y: the panel opens, the focus is in the message box, and it says where."""
    ui.page.keyboard.press("Control+Shift+Y")
    ui.wait_focus(COMPOSER, timeout=30)
    ui.panel.locator(".jp-AAEPPanel-connection.jp-mod-open").wait_for()
    said = ui.wait_announced("Agent panel for ")
    assert said["text"] == f"Agent panel for {ui.notebook}. No messages yet. Type your request.", (
        said
    )


def _ask_by_keyboard(ui: PanelPage, text: str) -> None:
    ui.wait_focus(COMPOSER)
    ui.page.keyboard.type(text)
    ui.page.keyboard.press("Enter")


def _hear_the_card(ui: PanelPage) -> None:
    """Ctrl+Shift+A: the card takes the focus; its name is the action, its description a
    summary (the risk, the code's line count, the time left, the keys), never the code itself,
    which is the card's figure, read one line at a time (issue 17's speech budget)."""
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus(CARD)
    card = ui.page.locator(f"{CARD}:focus")
    expect(card).to_have_accessible_name(
        re.compile(r"^Approval needed: Run cell 4, 3 lines of code, in the Python kernel\.$")
    )
    lines = FAHRENHEIT_CODE.splitlines()
    expect(card).to_have_accessible_description(
        re.compile(
            r"^Risk Medium \(cannot be undone\) Code to run, 3 lines: If you do not answer it will"
            r" be rejected; Time left to answer: .+ Keys: .+ approves, .+ rejects\.$"
        )
    )
    description = card.evaluate(
        "el => el.getAttribute('aria-describedby').split(' ')"
        ".map(id => document.getElementById(id)?.textContent ?? '').join('\\n')"
    )
    for line in lines:
        assert line not in description, (line, description)
    # Every line of the code is in the figure, each on its own line of the <pre>.
    figure = card.get_by_role("figure", name=re.compile(r"^Code to run, 3 lines"))
    expect(figure).to_have_count(1)
    pre = figure.locator("pre")
    assert pre.inner_text().splitlines() == lines
    assert pre.get_attribute("tabindex") is None and pre.get_attribute("aria-label") is None


def _tab_to_approve(ui: PanelPage) -> None:
    """Approve and Reject are the next two Tab stops after the card."""
    ui.page.keyboard.press("Tab")
    assert (ui.focused() or {}).get("name") == "Approve", ui.focused()
    ui.page.keyboard.press("Tab")
    assert (ui.focused() or {}).get("name") == "Reject", ui.focused()
    ui.page.keyboard.press("Shift+Tab")
    assert (ui.focused() or {}).get("name") == "Approve", ui.focused()


def _walk_of_the_panel(ui: PanelPage) -> None:
    """One walk of the panel with a request waiting, as browse mode reads it (the ARIA
    snapshot): few "paragraph" nodes, the composer hint not read on its own, the status line
    one phrase, the form named; saved to test-output/e2e/narration-panel-walk.txt."""
    walk = ui.panel.aria_snapshot()
    (OUTPUT / "narration-panel-walk.txt").write_text(walk + "\n")
    lines = [line for line in walk.splitlines() if line.strip()]
    paragraphs = sum("paragraph" in line for line in lines)
    print(f"panel walk: {len(lines)} nodes, {paragraphs} paragraphs")
    assert paragraphs <= 4, walk
    assert "Enter to send" not in walk, "the hint is the message box's description, not read again"
    composer = ui.panel.locator(COMPOSER)
    expect(composer).to_have_accessible_description(
        re.compile("Enter to send, Shift\\+Enter for a new line\\.$")
    )
    expect(
        ui.panel.get_by_role("form", name=re.compile("^(Ask the agent|Steer the agent)$"))
    ).to_have_count(1)
    status = ui.panel.locator(".jp-AAEPPanel-status .jp-sr-only")
    expect(status).to_have_text(
        re.compile(rf"^Notebook {re.escape(ui.notebook)}, waiting for you, connected$")
    )


def _texts(log: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in log]


def _write_log(name: str, log: list[dict[str, Any]]) -> str:
    start = log[0]["time"] if log else 0
    lines = [
        f"{(e['time'] - start) / 1000:6.2f} s  {'ALERT ' if e['politeness'] == 'assertive' else 'polite'}  {e['text']}"
        for e in log
    ]
    OUTPUT.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    (OUTPUT / name).write_text(text)
    return text


def test_a_session_is_narrated_by_the_rules(ui: PanelPage) -> None:
    ui.open_notebook()
    ui.record_live_regions()
    _open_by_keyboard(ui)
    panel = ui.panel
    _ask_by_keyboard(ui, ASK)
    ui.wait_announced("Approval needed", "assertive")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    _hear_the_card(ui)
    ui.screenshot("narration-1-card-focused")
    _tab_to_approve(ui)
    ui.page.keyboard.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You approved this.")
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=60_000)
    ui.wait_announced(f"Cell 4 ran: {FAHRENHEIT_OUTPUT}.")
    ui.wait_announced("Done.")
    # The cell's result is in the panel too, as one line.
    step = panel.locator(".jp-AAEPToolStep").filter(has_text="Cell 4 ran")
    expect(step).to_have_text(f"✓Cell 4 ran: {FAHRENHEIT_OUTPUT}.")
    ui.screenshot("narration-2-completed")
    # The top of the turn: the request as a heading, each step one line.
    ui.page.evaluate("() => { document.querySelector('.jp-AAEPPanel-transcript').scrollTop = 0; }")
    panel.screenshot(path=str(OUTPUT / "narration-3-turn-top.png"))

    # Alt+L: the whole output of the last cell the agent ran.
    ui.page.keyboard.press("Alt+L")
    heard = ui.wait_announced("Output:")
    assert heard["text"].startswith("Cell 4 ran in ") and FAHRENHEIT_OUTPUT in heard["text"], heard
    # Commands with nothing to do say so.
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_announced("Nothing is waiting for you.")
    ui.page.wait_for_timeout(1500)

    log = ui.live_log()
    said = _texts(log)
    text = _write_log("narration-announcements.txt", log)
    print(text)
    whole = " ".join(said)

    # 1. The order of events: the step that led to the question before the question.
    assert whole.index("Created code cell 4, after cell 3.") < whole.index("Approval needed"), said
    assert (
        whole.index("Approval needed")
        < whole.index("Approved in the panel.")
        < whole.index("Cell 4 ran:")
    ), said
    assert whole.index(INTRO.split(".")[0]) < whole.index("Created code cell 4"), said
    alerts = [e["text"] for e in log if e["politeness"] == "assertive"]
    # The question is one short sentence (issue 17); what silence does is on the card.
    assert len(alerts) == 1 and alerts[0].endswith("Ctrl+Shift+A to review."), alerts
    question = alerts[0][alerts[0].index("Approval needed") :]
    assert len(re.split(r"(?<=[.!?])\s+", question)) == 1 and len(question.split()) <= 20

    # 2. No ids, no internal names, no kernel spec names.
    assert not HEX_ID.search(whole), HEX_ID.findall(whole)
    assert "(id " not in whole
    assert not SNAKE.findall(whole), SNAKE.findall(whole)
    assert "ipykernel" not in whole and "Python 3" not in whole
    assert "Python kernel" in whole

    # 3. Nothing repeated: no string twice in a row, no sentence twice in one string, the
    #    answer once, "Done." once, the quick steps' starts not said at all.
    for a, b in pairwise(said):
        assert a != b, f"said twice in a row: {a!r}"
    for entry in said:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", entry) if s]
        for a, b in pairwise(sentences):
            assert a != b, f"repeated sentence in {entry!r}"
    assert whole.count("Done.") == 1, said
    assert whole.count(FINAL_ANSWER.split(".")[0]) == 1, said
    assert "Starting:" not in whole and "Running cell 4." not in whole, said
    assert "Resumed" not in whole and "Finished:" not in whole

    # 4. The cell's output is heard: its first line after the run, all of it on request.
    assert f"Cell 4 ran: {FAHRENHEIT_OUTPUT}." in whole
    # 5. Every string ends a sentence (nothing cut off is read as whole).
    assert all(re.search(r"[.!?…:)]$", s) for s in said), said
    assert ui.axe() == []


def _audit_each_theme(ui: PanelPage, sweep: Sweep, state: str, step: str) -> None:
    """axe-core finds nothing in *state* in each theme, switched live; a screenshot of each."""
    for theme in sweep.themes_at(state):
        with sweep.check(theme, state):
            ui.screenshot(f"narration-{theme}-{step}")
            violations = ui.axe()
            assert violations == [], violations


def test_keyboard_only_in_each_theme(ui: PanelPage) -> None:
    """Open the panel, ask, hear the code to approve, approve it, hear the result; at the
    open panel, the card and the end, each theme is switched to live and audited.

    The journey is made once: the keys, the focus and what is said do not depend on the
    theme, which only sets colours. Which theme each step runs in follows the sweep's order:
    the ask and the card in high contrast, the walk and the approval in light."""
    ui.open_notebook()
    with Sweep(ui) as sweep:
        ui.record_live_regions()
        _open_by_keyboard(ui)
        _audit_each_theme(ui, sweep, "idle", "1-open")
        _ask_by_keyboard(ui, ASK)
        ui.wait_announced("Approval needed", "assertive")
        # The focus stayed in the message box while events arrived.
        assert ui.page.evaluate("s => document.activeElement.matches(s)", COMPOSER)
        _hear_the_card(ui)
        _audit_each_theme(ui, sweep, "confirmation", "2-card")
        sweep.switch("light")
        _walk_of_the_panel(ui)
        _tab_to_approve(ui)
        ui.page.keyboard.press("Enter")
        ui.wait_announced(f"Cell 4 ran: {FAHRENHEIT_OUTPUT}.", timeout=60)
        ui.wait_announced("Done.")
        # Turns are headings: the request is a level-3 heading a screen reader jumps to.
        heading = ui.panel.get_by_role("heading", level=3)
        expect(heading).to_have_count(1)
        expect(heading).to_contain_text(ASK)
        _audit_each_theme(ui, sweep, "completed", "3-done")


def test_every_command_answers_when_it_has_nothing_to_do(ui: PanelPage) -> None:
    ui.open_notebook()
    ui.record_live_regions()
    _open_by_keyboard(ui)
    expectations = {
        "jupyter-aaep:jump-to-confirmation": "Nothing is waiting for you.",
        "jupyter-aaep:approve": "Nothing is waiting for your approval.",
        "jupyter-aaep:reject": "nothing to reject",
        "jupyter-aaep:stop": "Nothing is running, so there is nothing to stop.",
        "jupyter-aaep:hear-last-output": "The agent has not run a cell in this chat yet",
        "jupyter-aaep:undo-changes": "no agent changes to undo",
        "jupyter-aaep:continue": "There is no interrupted request to continue",
    }
    for command, expected in expectations.items():
        enabled = ui.page.evaluate("c => window.jupyterapp.commands.isEnabled(c)", command)
        assert enabled, f"{command} is disabled, so its key would do nothing silently"
        ui.page.evaluate("c => window.jupyterapp.commands.execute(c)", command)
        ui.wait_announced(expected)
    # The keys themselves, from the message box: Alt+L says it once more (waited for, not
    # given a fixed 1.2 s, which a loaded machine overran).
    answer = "The agent has not run a cell"
    before = sum(t.startswith(answer) for t in _texts(ui.live_log()))
    ui.page.keyboard.press("Alt+L")
    deadline = time.monotonic() + 10
    while sum(t.startswith(answer) for t in _texts(ui.live_log())) == before:
        assert time.monotonic() < deadline, _texts(ui.live_log())
        ui.page.wait_for_timeout(100)
    said = _texts(ui.live_log())
    assert said[-1].startswith(answer), said
