"""Approve from the notebook, by default (issue 25): ``%aaep`` in a cell of a real JupyterLab,
with the server as shipped (``kernel_replies`` off).

The view's Approve and Reject are drawn by the labextension from the server's description of
the request and answer from the browser with the person's login. A real click runs the agent's
cell, heard as "Approved from the notebook."; nothing runs before it; code in the same kernel
(a thread and an asyncio task) that plays with the widget from Python presses nothing; the
keyboard reaches and presses the buttons and lands on the outcome; an answer given in the side
panel shows here. axe-core audits the view. Screenshots: ``test-output/e2e/notebook-approve-*``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from e2e_page import PanelPage
from playwright.sync_api import Locator, expect
from test_e2e_kernel_widget import axe_in_view, widget_scenario

from jupyter_aaep.aaep.clock import SessionClock

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

REQUEST = "Widget test: load the readings and tell me the warmest day"
FINAL = "The readings are loaded. The warmest day is Friday, at 24.0 °C."
APPROVE = "Approve running cell 2"
REJECT = "Reject running cell 2"
APPROVED_HERE = "Approved from the notebook."

KERNEL_PRESSES = '''
import asyncio, threading
from jupyter_aaep.kernel.view import RECENT
widget = next(c.approval for c in RECENT[-1]._cards.values() if c.approval is not None)

def press():
    """Everything the kernel side of the widget can do: traits, messages, fake browser input."""
    widget.value = "accept"
    widget.clicked = True
    widget.request_id = widget.request_id
    widget.send({"event": "click", "decision": "accept"})
    widget.send_state()
    for data in (
        {"method": "custom", "content": {"event": "click", "decision": "accept"}},
        {"method": "update", "state": {"value": "accept", "clicked": True}, "buffer_paths": []},
    ):
        widget._handle_msg({"content": {"data": data}, "buffers": []})

thread = threading.Thread(target=press)
thread.start()
thread.join()

async def press_later():
    press()

task = asyncio.get_event_loop().create_task(press_later())
print("pressed from the kernel")
'''


@pytest.fixture(autouse=True)
def _widget_scenario(model) -> None:  # type: ignore[no-untyped-def]
    _, scripted = model
    scripted.scenarios = {"widget test": widget_scenario, **scripted.scenarios}


def start_request(ui: PanelPage) -> Locator:
    """A new cell at the end with ``%aaep``, run; returns the live view once its Approve shows."""
    ui.open_notebook()
    page = ui.page
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    expect(cells).to_have_count(3)
    # A cell run before the kernel is connected can be lost: wait until it is idle.
    ui.wait_kernel_idle()
    cells.last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    expect(cells).to_have_count(4)
    page.keyboard.press("Enter")
    page.keyboard.type(f"%aaep {REQUEST}")
    page.keyboard.press("Control+Enter")
    view = page.locator(".jp-AAEPView")
    expect(view).to_be_visible(timeout=60_000)
    expect(view.get_by_role("button", name=APPROVE)).to_be_enabled(timeout=60_000)
    return view


def run_in_kernel(ui: PanelPage, code: str) -> str:
    """Run *code* in the notebook's kernel as any cell would (its printed text back)."""
    return ui.page.evaluate(  # type: ignore[no-any-return]
        """async code => {
            const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.sessionContext);
            const future = panel.sessionContext.session.kernel.requestExecute({ code });
            let out = '';
            future.onIOPub = msg => {
                const c = msg.content;
                if (msg.header.msg_type === 'stream') out += c.text;
                if (msg.header.msg_type === 'error') out += `${c.ename}: ${c.evalue}`;
            };
            await future.done;
            return out;
        }""",
        code,
    )


def chat(ui: PanelPage) -> dict[str, Any]:
    found = ui.lab.chat_of(ui.notebook)
    assert found is not None
    return found


def said(found: dict[str, Any]) -> list[str]:
    return [
        str(e.get("summary_normal"))
        for e in found["transcript"]
        if e.get("from_state") == "awaiting_input"
    ]


def nothing_ran(ui: PanelPage) -> None:
    found = chat(ui)
    assert len(found["pending_requests"]) == 1, found["pending_requests"]
    assert not [e for e in found["transcript"] if e["type"].endswith("tool.invoked")]
    readings = ui.page.locator(".jp-NotebookPanel .jp-CodeCell").nth(0)
    expect(readings.locator(".jp-InputPrompt")).not_to_contain_text(re.compile(r"\[\d+\]"))


def test_a_click_on_approve_runs_the_cell_and_kernel_code_cannot_click(ui: PanelPage) -> None:
    view = start_request(ui)
    approval = view.locator(".jp-AAEPApproval")
    # Drawn from the server's description; the kernel's own text for the card is hidden.
    expect(approval).to_contain_text("Approval needed: Run cell 2")
    expect(approval.locator("pre")).to_contain_text(
        "temperatures = [t for t, _ in readings.values()]"
    )
    expect(approval).to_contain_text(
        re.compile(r"If you do not answer by .+, it will be rejected\.")
    )
    expect(view.get_by_text("Approve or reject this in the side panel.")).to_be_hidden()
    expect(view.get_by_role("button", name=REJECT)).to_be_enabled()
    violations = axe_in_view(ui)
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("notebook-approve-1-waiting")

    # Code in the same kernel, from a thread and from an asyncio task, presses the widget.
    assert "pressed from the kernel" in run_in_kernel(ui, KERNEL_PRESSES)
    # A script's click (what a JavaScript output could do) is not a person's either.
    ui.page.evaluate("() => document.querySelector('.jp-AAEPApproval-approve').click()")
    time.sleep(3)  # the task has run, and a reply would have been heard by now
    nothing_ran(ui)
    expect(view.get_by_role("button", name=APPROVE)).to_be_enabled()
    expect(approval.locator(".jp-AAEPApproval-outcome")).to_have_text("")

    view.get_by_role("button", name=APPROVE).click()  # a real mouse click
    outcome = approval.locator(".jp-AAEPApproval-outcome")
    expect(outcome).to_have_text(APPROVED_HERE, timeout=60_000)
    expect(outcome).to_be_focused()
    expect(outcome.locator("xpath=..")).to_have_attribute("aria-live", "polite")
    expect(view.get_by_role("button", name=APPROVE)).to_have_count(0)
    expect(view).to_contain_text(FINAL, timeout=60_000)
    readings = ui.page.locator(".jp-NotebookPanel .jp-CodeCell").nth(0)
    expect(readings.locator(".jp-InputPrompt")).to_contain_text(re.compile(r"\[\d+\]"))
    assert said(chat(ui)) == [APPROVED_HERE]
    violations = axe_in_view(ui)
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("notebook-approve-2-approved")


def test_approve_with_the_keyboard_only(ui: PanelPage) -> None:
    view = start_request(ui)
    nothing_ran(ui)
    ui.page.keyboard.press("Escape")  # out of the editor: from here only Tab and Enter
    stops = ui.tab_until(lambda f: f.get("name") == APPROVE, limit=60)
    focused = ui.focused() or {}
    assert focused.get("tag") == "button" and (focused.get("outline") or focused.get("shadow")), (
        stops
    )
    ui.page.keyboard.press("Tab")
    assert (ui.focused() or {}).get("name") == REJECT
    ui.page.keyboard.press("Shift+Tab")
    ui.page.keyboard.press("Enter")
    outcome = view.locator(".jp-AAEPApproval-outcome")
    expect(outcome).to_have_text(APPROVED_HERE, timeout=60_000)
    expect(outcome).to_be_focused()
    expect(view).to_contain_text(FINAL, timeout=60_000)
    assert said(chat(ui)) == [APPROVED_HERE]


def test_an_answer_given_elsewhere_shows_in_the_view(ui: PanelPage) -> None:
    """Answered by another client with the person's login (not the panel: no stream key), the
    view shows that answer, named by where it came from."""
    view = start_request(ui)
    found = chat(ui)
    [request] = found["pending_requests"]
    reply = {
        "type": "confirmation.reply",
        "reply_token": request["reply_token"],
        "decision": "reject",
        "timestamp": SessionClock().now(),
    }
    ui.lab.api("POST", f"aaep/v1/chats/{found['chat_id']}/messages", reply)
    outcome = view.locator(".jp-AAEPApproval-outcome")
    expect(outcome).to_contain_text(
        "A program using your Jupyter login rejected it", timeout=30_000
    )
    expect(view.get_by_role("button", name=APPROVE)).to_have_count(0)
    readings = ui.page.locator(".jp-NotebookPanel .jp-CodeCell").nth(0)
    expect(readings.locator(".jp-InputPrompt")).not_to_contain_text(re.compile(r"\[\d+\]"))
