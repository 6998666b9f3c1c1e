"""The transcript-first layout on laptop screens and in a narrow sidebar (issue 17).

With an answer holding a wide table and a long line of code, then an 18-line cell waiting for
approval: *Go to the pending request* leaves Approve and Reject inside the viewport, in a bar
of one row that leaves at least six lines of the code in view (its "don't ask again" choices
follow below it), the
transcript has at least 60 % of the panel's height, no transcript item is clipped at the
panel's edge (anything wider scrolls sideways in a named, focusable region), the controls are
a toolbar of labelled icon buttons with the settings folded away, and axe finds nothing — at
1280×720, 1400×900 and in a 250-pixel-wide sidebar, in the light, dark and high-contrast
themes and with the system's forced colours. One page: it is resized to each layout in turn
and each theme is switched to live there (``e2e_sweep``); a failure names its layout and
theme. Screenshots: ``test-output/e2e/layout-<layout>-<theme>.png``.

An indented 12-line cell waiting for approval in the 250-pixel panel (issue 26): every line
starts at its own indentation, a wrapped line's rest hangs inside its line (never left of its
indentation, so ``plt.title`` is never seen outside its ``if`` block), no identifier is broken
across two rows, the line numbers are drawn beside the code but are not part of its text, and a
keyboard user steps through the lines and then Tabs to Approve. Screenshot:
``test-output/e2e/card-250px.png`` (docs/images/card-250px.png is a copy).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from e2e_layout_measures import CODE_LAYOUT, MEASURE, SET_SIDEBAR_WIDTH, UNCUT
from e2e_model import _turn
from e2e_page import OUTPUT, THEMES, PanelPage
from e2e_sweep import FORCED_COLORS, Sweep
from playwright.sync_api import Locator, expect

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import ToolUse

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

WIDE_ANSWER = (
    "Here is the summary per city.\n\n"
    "| city | mean_temperature_celsius | mean_temperature_fahrenheit | observations | note |\n"
    "|---|---|---|---|---|\n"
    "| Reykjavik | 4.5 | 40.1 | 365 | the_coldest_of_the_cities_in_this_table |\n"
    "| Lisbon | 17.9 | 64.2 | 365 | the_warmest_of_the_cities_in_this_table |\n\n"
    "```python\n"
    "summary = temperatures.groupby('city').agg(mean_celsius=('celsius', 'mean'), "
    "observations=('celsius', 'count'))\n"
    "```\n"
)

LAYOUTS = {
    "1280x720": (1280, 720, None),
    "1400x900": (1400, 900, None),
    "sidebar-250": (1280, 720, 250),
}

LAYOUT_THEMES = (*THEMES, FORCED_COLORS)


def _check_toolbar(ui: PanelPage) -> None:
    """The controls: labelled icon buttons (JupyterLab's toolbar button look), the settings
    folded away behind a Settings button that opens and closes them from the keyboard."""
    panel = ui.panel
    toolbar = panel.get_by_role("group", name="Run controls")
    for name in ("Stop", "Undo agent changes", "Settings"):
        button = toolbar.get_by_role("button", name=name, exact=True)
        expect(button).to_have_class(re.compile("jp-ToolbarButtonComponent"))
        expect(button.locator("svg")).to_have_count(1)
        expect(button).to_have_attribute("title", re.compile(r"\w"))
    expect(panel.locator(".jp-AAEPSettings")).to_have_count(0)
    expect(panel.locator(".jp-AAEPFigure-describe")).to_have_count(0)  # no figure here
    settings = ui.open_settings()
    expect(panel.get_by_role("button", name="Settings")).to_have_attribute("aria-expanded", "true")
    for label in ("Approval mode", "Announcements"):
        expect(settings.get_by_label(label, exact=True)).to_be_visible()
    expect(settings.locator(".jp-HTMLSelect select")).to_have_count(
        settings.locator("select").count()
    )
    settings.get_by_label("Approval mode", exact=True).focus()
    ui.page.keyboard.press("Escape")
    expect(panel.locator(".jp-AAEPSettings")).to_have_count(0)
    ui.wait_focus(".jp-AAEPPanel-settingsToggle")
    # The message box: one line, a short placeholder; its hint on demand, not on screen.
    box = panel.locator(".jp-AAEPComposer-input")
    assert box.evaluate("el => el.getBoundingClientRect().height") < 40
    expect(box).to_have_attribute("placeholder", "Ask the agent")
    assert panel.evaluate(UNCUT) == {
        "titleLines": 1,
        "buttonRows": 1,
        "buttonsOut": [],
        "placeholderFits": True,
    }
    expect(panel.locator(".jp-AAEPComposer-hint")).to_be_hidden()
    panel.get_by_role("button", name="Message help").click()
    expect(panel.locator(".jp-AAEPComposer-hint")).to_be_visible()
    panel.get_by_role("button", name="Message help").click()
    expect(panel.locator(".jp-AAEPComposer-hint")).to_be_hidden()


def _use_layout(ui: PanelPage, layout: str, opened_width: float) -> None:
    """Resize the page to *layout*, as a person resizes the window, and the sidebar to the
    layout's width, or else to the width the panel opened at (it opens 250 px wide, whatever
    the window's size; a resized window would keep it so)."""
    width, height, sidebar = LAYOUTS[layout]
    ui.page.set_viewport_size({"width": width, "height": height})
    target = sidebar or opened_width
    ui.page.evaluate(SET_SIDEBAR_WIDTH, target)
    ui.page.wait_for_timeout(300)
    panel_width = ui.panel.evaluate("el => el.getBoundingClientRect().width")
    assert target - 12 <= panel_width <= target + 12, (layout, panel_width)


def _ask_for_the_18_lines(ui: PanelPage) -> Locator:
    ui.ask("Summarise the temperatures in eighteen lines of code and run them.")
    card = ui.panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"), timeout=60_000)
    expect(card.locator("pre")).to_contain_text("stat_16")
    # The code to approve wraps at spaces and is no Tab stop: identifiers stay whole.
    assert card.locator("pre").get_attribute("tabindex") is None
    assert "stat_16" in card.locator("pre").inner_text()
    return card


def _check_the_card(ui: PanelPage) -> dict[str, Any]:
    """From the message box (where a person is), go to the request with its shortcut and
    measure: Approve and Reject in view, the transcript's share, nothing clipped; axe."""
    ui.page.keyboard.press("Control+Shift+O")
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.wait_for_timeout(200)
    measured: dict[str, Any] = ui.page.evaluate(MEASURE)
    names = [b["name"] for b in measured["buttons"]]
    assert any(n.startswith("Approve") for n in names) and any(
        n.startswith("Reject") for n in names
    ), names
    assert all(b["inView"] and b["inTranscript"] for b in measured["buttons"]), json.dumps(
        measured, indent=1
    )
    # One row of Approve and Reject sticks; the longer "don't ask again" choices follow below
    # (two of them in a bar covered the code of the card at 1280x720: 9 rows now seen there).
    assert measured["barHeight"] <= 48, measured["barHeight"]
    assert measured["codeLinesSeen"] >= 6, json.dumps(measured, indent=1)
    assert [g["name"].rsplit(" in this ", 1)[-1] for g in measured["grants"]] == [
        "chat",
        "notebook",
    ]
    unfit = [b["name"] for b in measured["buttons"] + measured["grants"] if not b["fits"]]
    assert unfit == [], f"answer buttons whose words spill out of them: {unfit}"
    assert measured["focusedCard"], "the card has the focus"
    assert measured["stripUnderBar"] <= 0, measured["stripUnderBar"]
    assert measured["composerInView"], "the message box is on screen"
    assert measured["transcriptHeight"] >= 0.6 * measured["panelHeight"], json.dumps(
        measured, indent=1
    )
    assert measured["clipped"] == [], measured["clipped"]
    unnamed = [
        r
        for r in measured["regions"]
        if not (r["role"] == "group" and r["name"] and r["tabindex"] == "0")
    ]
    assert unnamed == [], measured["regions"]
    assert measured["nativeSelects"] == 0
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    return measured


def _scrolls_sideways(ui: PanelPage, regions: list[dict[str, Any]], layout: str) -> None:
    """The wide table and code scroll sideways; a keyboard user scrolls them with the arrows."""
    kinds = {r["className"].split()[-1] if r["kind"] == "div" else r["kind"] for r in regions}
    assert {"jp-AAEPTable-scroll", "pre"} <= kinds, regions
    code = ui.panel.get_by_role("group", name="Code, scrolls sideways").first
    code.focus()
    ui.page.keyboard.press("ArrowRight")
    ui.page.keyboard.press("ArrowRight")
    ui.page.wait_for_function("el => el.scrollLeft > 0", arg=code.element_handle(), timeout=5_000)
    ui.panel.locator(".jp-AAEPPanel-transcript table").scroll_into_view_if_needed()
    ui.screenshot(f"layout-{layout}-wide-answer-scrolled")


def test_layout_with_an_18_line_approval_in_each_size_and_theme(ui: PanelPage, model: Any) -> None:
    """One page, resized to each layout in turn. In each: the toolbar (idle, light), then a
    fresh 18-line approval measured in each theme, switched live; rejected before the next
    layout, so each layout meets a card that arrived in it, in time (a card waits 90 s)."""
    _, scripted = model
    scripted.scenarios["wide table"] = lambda results: _turn(WIDE_ANSWER)
    names = list(LAYOUTS)
    first, last = names[0], names[-1]
    width, height, _ = LAYOUTS[first]
    ui.page.set_viewport_size({"width": width, "height": height})
    ui.open_notebook()
    panel = ui.open_panel()
    opened_width = panel.evaluate("el => el.getBoundingClientRect().width")
    report: dict[str, dict[str, Any]] = {}
    with Sweep(ui, LAYOUT_THEMES) as sweep:
        for layout in LAYOUTS:
            sweep.switch("light")
            _use_layout(ui, layout, opened_width)
            with sweep.check(layout, "idle", "the toolbar"):
                _check_toolbar(ui)
            if layout == first:
                ui.ask("Show me a wide table of the temperatures.")
                expect(panel.locator(".jp-AAEPPanel-transcript table")).to_have_count(
                    1, timeout=60_000
                )
                expect(
                    panel.locator(".jp-AAEPPanel-transcript .jp-AAEPTable-scroll")
                ).to_have_count(1)
                expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_have_count(
                    1, timeout=60_000
                )  # own chat
            # The request before has ended (its closing notice) before the next one is sent.
            expect(panel.locator(".jp-AAEPPanel-runState.jp-mod-idle")).to_have_count(
                1, timeout=60_000
            )
            card = _ask_for_the_18_lines(ui)
            report[layout] = {}
            for theme in sweep.themes_at(layout, keep_focus=False):  # each goes to the card
                with sweep.check(layout, theme, "an 18-line approval"):
                    report[layout][theme] = _check_the_card(ui)
                    ui.screenshot(f"layout-{layout}-{theme}")
            sweep.switch("light")
            if LAYOUTS[layout][2] and "light" in report[layout]:
                with sweep.check(layout, "light", "scrolling sideways"):
                    _scrolls_sideways(ui, report[layout]["light"]["regions"], layout)
            if layout != last:
                ui.page.keyboard.press("Control+Shift+O")
                ui.page.keyboard.press("Control+Shift+A")
                ui.wait_focus("[data-request-id]")
                ui.page.keyboard.press("Control+Shift+Backspace")
                expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You rejected this.")
    print(json.dumps(report))


INDENTED_CODE = """import matplotlib.pyplot as plt
totals = {}
for city, rows in readings.items():
    if rows:
        mean = sum(rows) / len(rows)
        totals[city] = round(mean, 1)
        if mean > 15:
            color = "red"
        else:
            color = "blue"
        plt.bar(city, mean, color=color)
        plt.title("Mean temperature per city")"""


def indented_cell(results: list[dict[str, Any]]) -> Any:
    """Create the indented 12-line cell and ask to run it (the approval is left waiting)."""
    if not results:
        return _turn("", ToolUse("create_cell", {"source": INDENTED_CODE, "cell_type": "code"}))
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(results[-1]))
    if created:
        return _turn("", ToolUse("run_cell", {"cell_id": created.group(1)}))
    return _turn("Done with the chart.")


def test_an_indented_cell_keeps_its_lines_in_a_250_pixel_panel(ui: PanelPage, model: Any) -> None:
    _, scripted = model
    scripted.scenarios["indented chart"] = indented_cell
    ui.page.set_viewport_size({"width": 1280, "height": 900})
    ui.open_notebook()
    panel = ui.open_panel()
    ui.page.evaluate(SET_SIDEBAR_WIDTH, 250)
    ui.page.wait_for_timeout(300)
    assert 238 <= panel.evaluate("el => el.getBoundingClientRect().width") <= 262
    ui.ask("Draw the indented chart of the temperatures.")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"), timeout=60_000)
    expect(card.locator(".jp-AAEPCard-codeLine")).to_have_count(12)

    # Keyboard only: to the request, into its code (Alt+R), down the lines, then Tab to Approve.
    ui.page.keyboard.press("Control+Shift+O")
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.page.keyboard.press("Alt+r")
    ui.wait_focus(".jp-AAEPCard-codeLine")
    for _ in range(11):
        ui.page.keyboard.press("ArrowDown")
    focused = ui.page.evaluate("() => document.activeElement.textContent")
    assert focused == '        plt.title("Mean temperature per city")', focused
    ui.page.keyboard.press("Tab")
    ui.wait_focus(".jp-AAEPCard-approve")
    card.locator(".jp-AAEPCard-codeLine").last.scroll_into_view_if_needed()
    ui.page.wait_for_timeout(200)

    measured = card.evaluate(CODE_LAYOUT)
    ui.screenshot("card-250px-page")
    panel.screenshot(path=str(OUTPUT / "card-250px.png"))
    print(json.dumps(measured))
    report = json.dumps(measured, indent=1)
    # The text is the code itself: no line numbers in it; the numbers are drawn beside it,
    # with empty alternative text (not read as part of the code).
    assert measured["text"].rstrip("\n") == INDENTED_CODE, report
    assert "counter(" in measured["number"] and '/ ""' in measured["number"], report
    lines = measured["lines"]
    assert [line["text"] for line in lines] == INDENTED_CODE.split("\n")
    wrapped = [line for line in lines if line["rows"] > 1]
    assert wrapped, f"nothing wraps at 250 px, so nothing was tested: {report}"
    for line in lines:
        if not line["text"].strip():
            continue
        # Starts at its own indentation, as in the notebook …
        assert abs(line["column"] - line["indent"]) < 0.2, report
        # … no part of it left of that, a wrapped rest further right, inside its own line …
        assert line["leftmost"] >= line["indent"] - 0.2, report
        assert all(at >= line["indent"] + 1 for at in line["wrappedAt"]), report
        # … and no identifier split across two rows.
        assert line["broken"] == [], report
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
