"""The ``%aaep`` view's approvals with ``kernel_replies`` off (the default): the kernel side
names the request and can do nothing else (issue 25).

The card holds an :class:`ApprovalWidget` (drawn by the labextension, which answers from the
browser) and the plain way to the panel for front ends without it. Code in the kernel that
plays with the widget (sets traits, sends messages on its comm, fakes a message from the
browser) leaves the request waiting. Chromium presses the real button in
``tests/e2e/test_e2e_notebook_approve.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import ipywidgets as widgets
import pytest
from test_view_widget import Bridge, buttons, text_of, until
from view_helpers import Chat

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.kernel._view_approval import (
    FRONTEND_MODULE,
    FRONTEND_VERSION,
    PANEL_ONLY,
    PANEL_ONLY_CLASS,
    ApprovalWidget,
)
from jupyter_aaep.kernel.view import LiveView
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

LABEXTENSION = Path(__file__).resolve().parents[2] / "labextension"


class PanelOnlyBridge(Bridge):
    """The server as it is by default: ``kernel_replies`` off."""

    chat_id: str | None = None

    def status(self) -> dict[str, Any]:
        return {"confirm_here": False}


@pytest.fixture
async def bridge() -> AsyncIterator[PanelOnlyBridge]:
    async with FakeAnthropic() as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        async with client:
            b = PanelOnlyBridge(Chat(fake, client))
            b.chat_id = "chat-1"
            b.loop = asyncio.get_running_loop()  # type: ignore[attr-defined]
            yield b
            if b.task is not None:
                await asyncio.wait_for(b.task, 30)
        assert fake.problems == [], fake.problems


def approvals(view: LiveView) -> list[ApprovalWidget]:
    found: list[ApprovalWidget] = []
    pending: list[widgets.Widget] = [view.widget]
    while pending:
        widget = pending.pop(0)
        if isinstance(widget, ApprovalWidget):
            found.append(widget)
        pending.extend(getattr(widget, "children", ()))
    return found


async def _waiting(bridge: PanelOnlyBridge) -> tuple[LiveView, ApprovalWidget, dict[str, Any]]:
    bridge.chat.fake.add(
        Turn(text="I will run cell 3.", tool_uses=[ToolUse("run_code", {"cell": 3})]),
        Turn(text="Done."),
    )
    view = LiveView(bridge, "Run cell 3 for me")
    view.start()
    [widget] = await until(lambda: approvals(view), "the approval widget")
    [event] = bridge.chat.events.of_type("awaiting.confirmation")
    return view, widget, event


async def test_the_card_names_the_request_and_shows_no_kernel_button(
    bridge: PanelOnlyBridge,
) -> None:
    view, widget, event = await _waiting(bridge)
    assert (widget.chat_id, widget.request_id) == ("chat-1", event["event_id"])
    assert buttons(view) == []  # no ipywidgets Button: nothing in the kernel to press
    assert PANEL_ONLY in text_of(view)
    # What goes to the front end: the module to draw it with and the two ids, no text of the
    # request (the browser fetches that from the server) and not the reply token.
    state = widget.get_state()
    assert (state["_view_module"], state["_view_name"]) == (FRONTEND_MODULE, "AAEPApprovalView")
    assert (state["chat_id"], state["request_id"]) == ("chat-1", event["event_id"])
    sent = json.dumps(state)
    assert event["reply_token"] not in sent and "cell 3" not in sent and "total" not in sent
    # The kernel's own text for the card is what the browser view hides once it draws.
    card = next(c for c in view._cards.values())
    assert PANEL_ONLY_CLASS in card.facts._dom_classes
    assert PANEL_ONLY_CLASS in card.elsewhere._dom_classes
    assert view.describe()["approvals"] == [{"chat_id": "chat-1", "request_id": event["event_id"]}]
    bridge.chat.broker.submit(_panel_reply(event))  # the side panel answers, and the test ends


def test_the_widget_has_no_way_to_answer() -> None:
    """Only the two ids and the module's names are added to a plain DOMWidget; no method."""
    added = set(vars(ApprovalWidget)) - set(dir(widgets.DOMWidget))
    methods = {
        name
        for name in added
        if callable(getattr(ApprovalWidget, name)) and not name.startswith("__")
    }
    assert methods == set(), methods
    traits = set(ApprovalWidget.class_trait_names(sync=True)) - set(
        widgets.DOMWidget.class_trait_names(sync=True)
    )
    assert traits == {"chat_id", "request_id"}


async def test_kernel_code_playing_with_the_widget_leaves_the_request_waiting(
    bridge: PanelOnlyBridge,
) -> None:
    view, widget, event = await _waiting(bridge)
    token = event["reply_token"]
    # What code in the kernel can do to the widget: set traits (known and made up), send
    # custom messages and state to the front end, and feed its comm a message as if the
    # browser had sent one (a click, an update), from the loop and from a thread.
    widget.request_id = "evt_other"
    widget.value = "accept"
    widget.clicked = True
    widget.send({"event": "click", "decision": "accept"})
    widget.send_state()
    for message in (
        {"method": "custom", "content": {"event": "click"}},
        {"method": "update", "state": {"decision": "accept", "clicked": True}, "buffer_paths": []},
    ):
        widget._handle_msg({"content": {"data": message}, "buffers": []})
    thread = asyncio.to_thread(
        widget._handle_msg,
        {"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []},
    )
    await thread
    await asyncio.sleep(0.3)
    assert [r.token for r in bridge.chat.broker.pending()] == [token]
    assert not [m for m in bridge.sent if m["type"].endswith(".reply")]
    assert not bridge.chat.events.of_type("tool.invoked")
    bridge.chat.broker.submit(_panel_reply(event))
    await until(lambda: view.state.ended, "the session to end")


def test_the_kernel_asks_for_the_module_the_labextension_registers() -> None:
    package = json.loads((LABEXTENSION / "package.json").read_text())
    tokens = (LABEXTENSION / "src" / "tokens.ts").read_text()
    assert package["name"] == FRONTEND_MODULE
    assert f"NOTEBOOK_WIDGET_MODULE = '{FRONTEND_MODULE}'" in tokens
    registered = re.search(r"NOTEBOOK_WIDGET_VERSION = '(\d+)\.(\d+)\.(\d+)'", tokens)
    assert registered is not None
    assert FRONTEND_VERSION == f"^{registered[1]}.{registered[2]}.0"


def _panel_reply(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "confirmation.reply",
        "reply_token": event["reply_token"],
        "decision": "reject",
        "subscription_id": "sub_panel1",
        "timestamp": SessionClock().now(),
    }
