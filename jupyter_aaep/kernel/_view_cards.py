"""The widgets of one confirmation or clarification card of the live view (``view.py``)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any, Protocol

import ipywidgets as widgets  # type: ignore[import-untyped]

from ._view_approval import PANEL_ONLY, PANEL_ONLY_CLASS, ApprovalWidget
from ._view_html import approve_name, pressed_name, reject_name, request_html, request_outcome_html
from ._view_items import RequestItem
from ._view_state import ViewState

__all__ = ["CardHost", "RequestCard", "set_html"]


class CardHost(Protocol):
    """What a card uses of its live view (``view.LiveView``), so the cards need not import the
    view that builds them."""

    state: ViewState
    client: Any

    def reply(self, token: str, value: str) -> None: ...


class RequestCard:
    """The widgets of one confirmation or clarification card (kept, so focus stays put).

    The button the user pressed here stays enabled and focused, and its text becomes the answer's
    fate ("Sending your answer…", then the producer's outcome): ipywidgets 8 can focus neither a
    Box nor an HTML widget, so disabling the focused button would drop the focus to the top of
    the page. Pressing it again does nothing. Every other button is disabled once answered.
    """

    def __init__(self, view: CardHost, item: RequestItem) -> None:
        self.view = view
        self.token = item.token
        self.facts = widgets.HTML()
        self.outcome = widgets.HTML()
        self.buttons: list[widgets.Button] = []
        self.labels: dict[str, str] = {}
        self.pressed: widgets.Button | None = None
        self.answer: widgets.Text | None = None
        rows: list[widgets.Widget] = [self.facts]
        self.approval: ApprovalWidget | None = None
        if item.kind == "confirmation" and not view.state.confirm_here:
            # The kernel cannot answer: the labextension draws Approve and Reject from the
            # server's description and answers from the browser. Until it does (and where it
            # is not loaded), the kernel's own facts and the way to the panel show.
            self.elsewhere = widgets.HTML()
            set_html(self.elsewhere, f"<p>{html.escape(PANEL_ONLY)}</p>")
            rows.append(self.elsewhere)
            chat = getattr(view.client, "chat_id", None)
            event_id = item.event.get("event_id")
            if isinstance(chat, str) and chat and isinstance(event_id, str) and event_id:
                self.approval = ApprovalWidget(chat_id=chat, request_id=event_id)
                rows.append(self.approval)
                for shown in (self.facts, self.elsewhere, self.outcome):
                    shown.add_class(PANEL_ONLY_CLASS)
        elif item.kind == "confirmation":
            approve = self._button(approve_name(item), "jp-AAEPView-approve", lambda: "accept")
            reject = self._button(reject_name(item), "jp-AAEPView-reject", lambda: "reject")
            rows.append(widgets.HBox([approve, reject]))
        else:
            choices = [
                c
                for c in item.event.get("choices") or []
                if isinstance(c, dict) and isinstance(c.get("value"), str)
            ]
            picks = [
                self._button(
                    str(c.get("label") or c["value"]), "jp-AAEPView-choice", _constant(c["value"])
                )
                for c in choices
            ]
            if picks:
                rows.append(widgets.HBox(picks))
            kinds = item.event.get("accepted_response_kinds") or ["freetext"]
            if not choices or any(k in kinds for k in ("freetext", "numeric", "yes_no")):
                self.answer = widgets.Text(
                    description="Your answer",
                    placeholder="Type your answer, then press Send answer",
                )
                self.answer.add_class("jp-AAEPView-answerBox")
                send = self._button(
                    "Send answer",
                    "jp-AAEPView-send",
                    lambda: self.answer.value if self.answer else "",
                )
                rows.append(widgets.HBox([self.answer, send]))
        rows.append(self.outcome)
        self.box = widgets.VBox(rows)
        self.box.add_class("jp-AAEPView-requestCard")

    def _button(self, label: str, css: str, value: Callable[[], str]) -> widgets.Button:
        # width "auto": ipywidgets' fixed width would cut the name ("Reject running ce…").
        button = widgets.Button(description=label, layout=widgets.Layout(width="auto"))
        button.add_class(css)
        self.labels[button.model_id] = label

        def press(_: widgets.Button) -> None:
            item = self.view.state.request(self.token)
            if item is not None and item.open:  # pressed again once answered: nothing to do
                self.pressed = button
                self.view.reply(self.token, value())

        button.on_click(press)
        self.buttons.append(button)
        return button

    def update(self, item: RequestItem, now: float) -> None:
        set_html(self.facts, request_html(item))
        set_html(self.outcome, request_outcome_html(item, now))
        answered_here = item.state != "pending" and item.sent is not None
        for button in self.buttons:
            keep = answered_here and button is self.pressed
            label = pressed_name(item) if keep else self.labels[button.model_id]
            disabled = not item.open and not keep
            if button.description != label:
                button.description = label
            if button.disabled != disabled:
                button.disabled = disabled
        if self.answer is not None and self.answer.disabled == item.open:
            self.answer.disabled = not item.open


def _constant(value: str) -> Callable[[], str]:
    return lambda: value


def set_html(widget: widgets.HTML, value: str) -> None:
    if widget.value != value:  # an unchanged value sends nothing to the browser
        widget.value = value
