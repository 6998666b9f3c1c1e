"""Without the labextension's notebook view (its plugin turned off, as in a front end that does
not load it), the ``%aaep`` card says to approve in the side panel, shows the kernel's copy of
the request, and has no button: the fallback of issue 25. Screenshot:
``test-output/e2e/notebook-approve-fallback.png``.
"""

from __future__ import annotations

import pytest
from e2e_page import PanelPage
from playwright.sync_api import expect
from test_e2e_kernel_widget import widget_scenario
from test_e2e_notebook_approve import REQUEST, chat, nothing_ran

from jupyter_aaep.aaep.clock import SessionClock

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
LAB_DISABLED_PLUGINS = ["jupyter-aaep:notebook-approval"]


@pytest.fixture(autouse=True)
def _widget_scenario(model) -> None:  # type: ignore[no-untyped-def]
    _, scripted = model
    scripted.scenarios = {"widget test": widget_scenario, **scripted.scenarios}


def test_without_our_view_the_card_sends_you_to_the_panel(ui: PanelPage) -> None:
    ui.open_notebook()
    page = ui.page
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    expect(cells).to_have_count(3)
    ui.wait_kernel_idle()
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.type(f"%aaep {REQUEST}")
    page.keyboard.press("Control+Enter")
    view = page.locator(".jp-AAEPView")
    expect(view.get_by_text("Approve or reject this in the side panel.")).to_be_visible(
        timeout=60_000
    )
    expect(view).to_contain_text("Approval needed: Run cell 2")
    expect(view.get_by_role("button", name="Approve running cell 2")).to_have_count(0)
    expect(view.locator(".jp-AAEPApproval")).to_have_count(0)
    nothing_ran(ui)
    card = view.locator(".jp-AAEPView-requestCard")
    card.scroll_into_view_if_needed()
    # ipywidgets itself puts "Click to show javascript error." where a widget of an unknown
    # module would be; the card's own sentence says what to do.
    assert "Approve or reject this in the side panel." in card.inner_text()
    ui.screenshot("notebook-approve-fallback")
    found = chat(ui)
    [request] = found["pending_requests"]
    ui.lab.api(
        "POST",
        f"aaep/v1/chats/{found['chat_id']}/messages",
        {
            "type": "confirmation.reply",
            "reply_token": request["reply_token"],
            "decision": "reject",
            "timestamp": SessionClock().now(),
        },
    )
    # Answered by another client with the login (not the panel): named as such.
    expect(view).to_contain_text("A program using your Jupyter login rejected it", timeout=30_000)
