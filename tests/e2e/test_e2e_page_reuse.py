"""The shared page, handed from test to test (``_SharedPage``), keeps nothing of a test."""

from __future__ import annotations

from typing import Any

from conftest import VIEWPORT
from e2e_lab import LabServer
from e2e_page import PanelPage


def test_a_page_handed_back_keeps_nothing_of_the_test_before(
    shared_page: Any, lab: LabServer
) -> None:
    origin = lab.url.rstrip("/")
    before = PanelPage(shared_page.take(), lab, "page-reuse-before")
    before.notebook = lab.notebook("page-reuse.ipynb")
    before.open_notebook()  # JupyterLab stores things of its own as it runs and unloads
    page = before.page
    page.evaluate(
        "() => { localStorage.setItem('left', 'behind'); sessionStorage.setItem('s', '1'); }"
    )
    page.set_viewport_size({"width": 800, "height": 600})
    page.emulate_media(forced_colors="active")
    before.detach()
    shared_page.hand_back(origin)

    after = PanelPage(shared_page.take(), lab, "page-reuse-after")
    assert after.page is page, "the page was not reused"
    assert page.url == "about:blank"
    page.goto(f"{lab.url}api/status")  # the origin, without an app that stores anything
    stored = page.evaluate("() => [Object.keys(localStorage), Object.keys(sessionStorage)]")
    assert stored == [[], []], stored
    assert page.viewport_size == VIEWPORT
    assert page.evaluate("() => matchMedia('(forced-colors: active)').matches") is False
    assert page.evaluate("() => matchMedia('(prefers-reduced-motion: reduce)').matches") is True
    # The test before stopped listening: the page's errors are heard by this test only.
    page.evaluate("() => console.error('said after the hand-back')")
    page.wait_for_timeout(200)
    assert "said after the hand-back" in after.console_errors
    assert before.console_errors == []
    after.detach()
    shared_page.hand_back(origin)
    lab.shutdown_kernels()
