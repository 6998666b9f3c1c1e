"""The speech budget (issue 17, docs/NARRATION.md §4): a session with an 18-line cell waiting
for approval, driven from the keyboard, as a screen reader would hear it.

- The approval alert is one short sentence (what, how risky, the key that reviews it).
- The focused card reads a summary (action, risk, "18 lines", time left, keys), never the code;
  the code is a figure of its own, read line by line when the person enters it.
- The countdown is named and coarse ("Time left to answer: 1 minute 30 seconds").
- After Approve, the focus is on the short outcome, never back on the card.
- The whole session's live-region log has no MIME type or size, no bare percentage, one closing
  line, and nothing polite cut off by an alert (what settled just before it is said in it).
  axe-core finds nothing.

What was said is written to ``test-output/e2e/speech-budget-announcements.txt``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from e2e_model import LONG_CELL_CODE
from e2e_page import COMPOSER, OUTPUT, PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ASK = "Summarise the temperatures in eighteen lines of code and run them."
CARD = "[data-request-id]"
SENTENCES = re.compile(r"(?<=[.!?])\s+")
MIME = re.compile(r"\b(image|audio|video|application|text)/[a-z0-9.+-]+|\b\d+(\.\d+)?\s?[KMG]B\b")
BARE_PERCENT = re.compile(r"^\d+(\.\d+)?\s*(percent|%)\.?$")
CLOSING = re.compile(r"^(Done[.,!]|The agent finished|The agent run was stopped|Error:)")


def _accessible(locator: Any) -> dict[str, str]:
    """The name and description Chromium computes, read from its accessibility tree."""
    session = locator.page.context.new_cdp_session(locator.page)
    try:
        locator.evaluate("el => el.setAttribute('data-probe', '1')")
        doc = session.send("DOM.getDocument", {"depth": 0})
        node = session.send(
            "DOM.querySelector", {"nodeId": doc["root"]["nodeId"], "selector": "[data-probe]"}
        )
        tree = session.send("Accessibility.getPartialAXTree", {"nodeId": node["nodeId"]})
        ax = tree["nodes"][0]
        description = next(
            (p["value"]["value"] for p in ax.get("properties", []) if p["name"] == "description"),
            ax.get("description", {}).get("value", ""),
        )
        return {"name": ax.get("name", {}).get("value", ""), "description": description}
    finally:
        locator.evaluate("el => el.removeAttribute('data-probe')")
        session.detach()


def _write_log(log: list[dict[str, Any]]) -> str:
    start = log[0]["time"] if log else 0
    text = "\n".join(
        f"{(e['time'] - start) / 1000:6.2f} s  "
        f"{'ALERT ' if e['politeness'] == 'assertive' else 'polite'}  {e['text']}"
        for e in log
    )
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "speech-budget-announcements.txt").write_text(text + "\n")
    return text


def test_an_approval_of_eighteen_lines_keeps_the_speech_budget(ui: PanelPage) -> None:
    ui.open_notebook()
    ui.record_live_regions()
    page = ui.page
    page.keyboard.press("Control+Shift+Y")
    ui.wait_focus(COMPOSER, timeout=30)
    ui.panel.locator(".jp-AAEPPanel-connection.jp-mod-open").wait_for()
    composer = ui.panel.locator(COMPOSER)
    # The hint is the message box's description the first time it is reached.
    expect(composer).to_have_accessible_description(re.compile("Enter to send"))
    page.keyboard.type(ASK)
    page.keyboard.press("Enter")

    # 1. The alert: one short sentence, what, how risky, the key.
    alert = ui.wait_announced("Approval needed", "assertive", timeout=60)["text"]
    question = alert[alert.index("Approval needed") :]
    assert len(SENTENCES.split(question)) == 1, question
    assert len(question.split()) <= 20, question
    assert "risk" in question and "Ctrl+Shift+A" in question, question
    assert "stat_01" not in alert and "sorted(" not in alert, "no code in the alert"
    assert len(alert.split()) <= 45, f"what was folded in front of the question is short: {alert}"

    # 2. The focused card reads a summary, the code is its own figure.
    page.keyboard.press("Control+Shift+A")
    ui.wait_focus(CARD, timeout=15)
    card = page.locator(f"{CARD}:focus")
    heard = _accessible(card)
    print("card:", heard)
    assert heard["name"].startswith("Approval needed: "), heard
    description = heard["description"]
    assert "18 lines" in description and "Risk" in description, heard
    assert "Keys:" in description and "approves" in description, heard
    assert re.search(r"Time left to answer: \d+ (minute|second)", description), heard
    lines = LONG_CELL_CODE.splitlines()
    assert len(lines) == 18
    for line in lines:
        assert line not in description, f"code in the card's description: {line!r}"
    assert len(description.split()) <= 40, description
    figure = card.get_by_role("figure", name=re.compile(r"^Code to run, 18 lines"))
    expect(figure).to_have_count(1)
    assert figure.locator("pre").inner_text().splitlines() == lines
    timer = card.get_by_role("timer")
    expect(timer.locator(".jp-sr-only")).to_have_text(
        re.compile(r"^Time left to answer: (\d+ minutes?)?( ?\d+ seconds?)?$")
    )
    ui.screenshot("speech-budget-1-card")
    assert ui.axe() == [], "card focused"

    # 2b. Read the pending request's code (Alt+R): the focus is on its first line alone, the
    # arrows go line by line (Home, End), and the lines are no Tab stops of their own.
    page.keyboard.press("Alt+r")
    focused_line = (
        "() => document.activeElement && document.activeElement.matches('.jp-AAEPCard-codeLine')"
    )
    page.wait_for_function(focused_line, timeout=10_000)
    line_text = "() => document.activeElement.textContent"
    assert page.evaluate(line_text) == lines[0]
    page.keyboard.press("ArrowDown")
    assert page.evaluate(line_text) == lines[1]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(line_text) == lines[1]
    page.keyboard.press("End")
    assert page.evaluate(line_text) == lines[-1]
    page.keyboard.press("ArrowDown")
    assert page.evaluate(line_text) == lines[-1], "the last line stays"
    page.keyboard.press("Home")
    assert page.evaluate(line_text) == lines[0]
    assert card.locator(".jp-AAEPCard-codeLine[tabindex='0']").count() == 0
    assert ui.axe() == [], "a line of the code focused"

    # 3. Approve: the focus goes to the short outcome, never back to the card.
    stops = ui.tab_until(lambda f: f.get("name") == "Approve", limit=5)
    assert stops[-1].get("name") == "Approve", stops
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.matches('.jp-AAEPCard-outcome')",
        timeout=10_000,
    )
    focused = page.evaluate(
        "() => ({cls: document.activeElement.className, text: document.activeElement.textContent,"
        " card: document.activeElement.matches('[data-request-id]')})"
    )
    assert not focused["card"], focused
    assert len(focused["text"].split()) <= 6, focused

    # The cell needs the notebook's earlier cells (never run here): it fails, and the turn
    # closes with "Done, but 1 step failed", after the agent's own words.
    expect(ui.panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_be_visible(timeout=60_000)
    ui.wait_announced("Done", timeout=30)
    page.wait_for_timeout(2000)
    # A hint is said once per visit: the message box reached again, within the panel, has
    # no description any more.
    composer.focus()
    ui.panel.locator(".jp-AAEPCard-outcome").last.focus()
    composer.focus()
    expect(composer).not_to_have_accessible_description(re.compile("Enter to send"))
    ui.screenshot("speech-budget-2-done")
    assert ui.axe() == [], "completed"

    # 4. The whole session, as one text.
    log = ui.live_log()
    text = _write_log(log)
    print(text)
    said = [e["text"] for e in log]
    assert not any(MIME.search(s) for s in said), [s for s in said if MIME.search(s)]
    sentences = [s for entry in said for s in SENTENCES.split(entry) if s]
    assert not [s for s in sentences if BARE_PERCENT.match(s)], sentences
    closing = [s for s in sentences if CLOSING.match(s)]
    assert len(closing) == 1, f"one closing line per turn: {closing}"
    alerts = [e for e in log if e["politeness"] == "assertive"]
    for a in alerts:
        # Polite speech the alert would cut off is folded into it: a polite write that
        # settled just before the alert came (a model round trip later, on a busy machine)
        # is said again inside the alert, so it is heard once, in full.
        cut_off = [
            e
            for e in log
            if e["politeness"] == "polite"
            and 0 <= a["time"] - e["time"] < 100
            and e is not a
            and e["text"] not in a["text"]
        ]
        assert not cut_off, f"polite speech cut off by an alert and not said in it: {cut_off}"
