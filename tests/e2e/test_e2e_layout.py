"""The transcript-first layout on laptop screens (issue 17): with an 18-line cell waiting for
approval, *Go to the pending request* leaves Approve and Reject inside the viewport, the
transcript has at least 60 % of the panel's height, no transcript item is clipped at the
panel's edge, and axe finds nothing — at 1280×720 and 1400×900, in the light, dark and
high-contrast themes. Screenshots: ``test-output/e2e/layout-<size>-<theme>.png``.
"""

from __future__ import annotations

import json
import re

import pytest
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

MEASURE = """() => {
    const panel = document.querySelector('.jp-AAEPPanel');
    const transcript = panel.querySelector('.jp-AAEPPanel-transcript');
    const box = el => el.getBoundingClientRect();
    const inView = el => { const r = box(el); return r.top >= 0 && r.bottom <= window.innerHeight
                                                 && r.left >= 0 && r.right <= window.innerWidth; };
    const inTranscript = el => { const r = box(el), t = box(transcript);
                                 return r.top >= t.top - 1 && r.bottom <= t.bottom + 1; };
    const card = panel.querySelector('.jp-AAEPCard.jp-mod-pending');
    const buttons = [...card.querySelectorAll('.jp-AAEPCard-actions button')];
    const clipped = [...transcript.querySelectorAll('.jp-AAEPPanel-entry, .jp-AAEPPanel-entry *')]
        .filter(el => getComputedStyle(el).overflowX !== 'auto' && getComputedStyle(el).overflowX !== 'scroll')
        .filter(el => el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0)
        .map(el => `${el.className || el.tagName}: ${el.scrollWidth} > ${el.clientWidth}`);
    return {
        panelHeight: box(panel).height,
        transcriptHeight: box(transcript).height,
        buttons: buttons.map(b => ({ name: b.textContent.trim(), inView: inView(b), inTranscript: inTranscript(b) })),
        focusedCard: document.activeElement === card,
        clipped,
    };
}"""


@pytest.mark.parametrize("size", [(1280, 720), (1400, 900)], ids=["1280x720", "1400x900"])
def test_an_18_line_approval_fits_a_laptop_screen(ui: PanelPage, size: tuple[int, int]) -> None:
    width, height = size
    ui.page.set_viewport_size({"width": width, "height": height})
    ui.open_notebook()
    panel = ui.open_panel()
    ui.ask("Summarise the temperatures in eighteen lines of code and run them.")
    card = panel.locator(".jp-AAEPCard-confirmation").last
    expect(card).to_have_class(re.compile("jp-mod-pending"), timeout=60_000)
    expect(card.locator("pre")).to_contain_text("stat_16")
    report = {}
    for theme in ("light", "dark", "high-contrast"):
        ui.set_theme(theme)
        # From the message box (where a person is), as the shortcut is used.
        ui.page.keyboard.press("Control+Shift+O")
        ui.page.keyboard.press("Control+Shift+A")
        ui.wait_focus("[data-request-id]")
        ui.page.wait_for_timeout(200)
        measured = ui.page.evaluate(MEASURE)
        report[theme] = measured
        ui.screenshot(f"layout-{width}x{height}-{theme}")
        names = [b["name"] for b in measured["buttons"]]
        assert any(n.startswith("Approve") for n in names) and any(
            n.startswith("Reject") for n in names
        ), names
        assert all(b["inView"] and b["inTranscript"] for b in measured["buttons"]), json.dumps(
            measured, indent=1
        )
        assert measured["focusedCard"], "the card has the focus"
        assert measured["transcriptHeight"] >= 0.6 * measured["panelHeight"], json.dumps(
            measured, indent=1
        )
        assert measured["clipped"] == [], measured["clipped"]
        violations = ui.axe()
        assert violations == [], json.dumps(violations, indent=2)
    print(json.dumps(report))
