"""Approvals from the ``%aaep`` view in a notebook, taken from the browser, never the kernel.

The view's Approve and Reject are drawn by the labextension (an ipywidget of our own whose
Python side only names the chat and the request). The browser reads the request as the server
describes it (:func:`describe_request`, ``GET /aaep/v1/chats/{chat}/requests/{event_id}``) and
sends the person's answer to the chat's ``messages`` endpoint with their Jupyter login, marked
``"via": "notebook"`` with the key of one of the page's event streams of the chat
(``server/reply_origin.py`` names it "Approved from the notebook."). What makes the path sound is
that the kernel has no way to take it (the kernel endpoints refuse confirmations unless
``kernel_replies`` is on, and the widget's Python side sends nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import RequestError

__all__ = ["AWAITING_KINDS", "NOTEBOOK_VIA", "describe_request"]

NOTEBOOK_VIA = "notebook"
"""The ``via`` value the notebook view's replies carry."""

AWAITING_KINDS = {
    "aaep:agent.awaiting.confirmation": "confirmation",
    "aaep:agent.awaiting.clarification": "clarification",
}
"""The events that ask a person something, with the kind of answer each waits for."""
_STATE = "aaep:agent.state.changed"
_ENDS = (
    "aaep:agent.session.completed",
    "aaep:agent.session.errored",
    "aaep:agent.session.cancelled",
)


def describe_request(
    history: Iterable[Mapping[str, Any]], request_id: str, *, open_tokens: set[str]
) -> dict[str, Any]:
    """One request of a chat, by its event id: the ``awaiting.*`` event as listeners got it,
    whether it still waits for an answer, and once it does not, the producer's sentence about
    what became of it (``outcome``; ``None`` until that sentence is out).

    Raises ``RequestError(404)`` when the chat never asked it.
    """
    events = [event for event in history if "@context" in event]
    index = next(
        (
            i
            for i, event in enumerate(events)
            if event.get("event_id") == request_id and event.get("type") in AWAITING_KINDS
        ),
        None,
    )
    if index is None:
        raise RequestError(
            404,
            "This chat has no request with that id: it may belong to another chat, or the "
            "server restarted since. Look in the side panel for what is waiting.",
        )
    event = dict(events[index])
    is_open = event.get("reply_token") in open_tokens
    return {
        "request_id": request_id,
        "kind": AWAITING_KINDS[str(event.get("type"))],
        "open": is_open,
        "outcome": None if is_open else _outcome(event, events[index + 1 :]),
        "event": event,
    }


def _outcome(request: Mapping[str, Any], later: list[Mapping[str, Any]]) -> str | None:
    """The first sentence of the same session after the request: the state change out of
    waiting (how it was answered), or the session's end when it ended unanswered."""
    session = request.get("session_id")
    for event in later:
        if event.get("session_id") != session:
            continue
        kind = event.get("type")
        if kind == _STATE and event.get("from_state") == "awaiting_input" or kind in _ENDS:
            text = event.get("summary_normal") or event.get("summary_terse")
            if kind in _ENDS:
                return "This request ended before an answer." + (f" {text}" if text else "")
            return str(text) if text else "Answered."
    return None
