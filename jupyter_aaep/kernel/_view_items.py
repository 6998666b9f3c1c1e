"""The items of the live view's timeline, and the phrases they are told in: no widgets, no I/O.

:class:`~._view_state.ViewState` keeps these in order; the widget layer (``view.py``,
``_view_html.py``) draws them. Each item is plain data a test can check: the streamed answer,
a tool step, a confirmation or clarification request and its state, a notice. The replies a
request's buttons send are built here too (:func:`confirmation_reply`, :func:`clarification_reply`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ..aaep.clock import parse_timestamp
from ..words import plural
from ._view_citations import ViewCitation

__all__ = [
    "AnswerItem",
    "Item",
    "NoticeItem",
    "ProgressBar",
    "RequestItem",
    "StepItem",
    "action_phrase",
    "clarification_reply",
    "confirmation_reply",
    "core_name",
    "epoch",
    "event_text",
    "summary",
]

_URI = "https://aaep-protocol.org/types/agent."
_COMPACT = "aaep:agent."
RequestState = Literal[
    "pending", "sending", "accepted", "rejected", "answered", "resolved", "cancelled"
]
StepStatus = Literal["running", "success", "error", "timeout"]


def core_name(event_type: object) -> str | None:
    """``tool.invoked`` for ``aaep:agent.tool.invoked`` or its URI form; ``None`` otherwise."""
    if not isinstance(event_type, str):
        return None
    for prefix in (_COMPACT, _URI):
        if event_type.startswith(prefix):
            return event_type[len(prefix) :]
    return None


def event_text(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) and value.strip() else None


def summary(event: dict[str, Any]) -> str:
    """The event's normal summary (or the nearest one it has), or ``""``."""
    return (
        event_text(event, "summary_normal")
        or event_text(event, "summary_terse")
        or event_text(event, "summary_detailed")
        or ""
    )


def action_phrase(event: dict[str, Any]) -> str:
    """What a confirmation would do, as the end of a button name: "running cell 3".

    Said in the user's words (DESIGN §8): cells by number, never ids or JSON; a tool without
    a known wording by its name with spaces ("calling load sales").
    """
    extra = event.get("extra_context")
    extra = extra if isinstance(extra, dict) else {}
    change = extra.get("change")
    if isinstance(change, dict) and isinstance(change.get("kind"), str):
        return _change_phrase(change)
    number = extra.get("cell_number")
    if isinstance(number, int) and not isinstance(number, bool):
        return f"running cell {number}"
    cells = extra.get("cells")
    if isinstance(cells, list) and cells:
        return f"running {plural(len(cells), 'cell')}"
    tool = extra.get("tool")
    if tool == "restart_kernel":
        return "restarting the kernel"
    if tool == "run_cell":
        return "running a cell"
    if isinstance(tool, str) and tool:
        return f"calling {tool.replace('_', ' ')}"
    return "this action"


_CHANGE_VERBS = {
    "edit": "editing",
    "create": "adding",
    "delete": "deleting",
    "move": "moving",
    "clear_outputs": "clearing the outputs of",
}


def _change_phrase(change: dict[str, Any]) -> str:
    """A reviewed change ("ask before every change") by what it does to which cell."""
    verb = _CHANGE_VERBS.get(str(change["kind"]), "changing")
    number = change.get("cell_number")
    has_number = isinstance(number, int) and not isinstance(number, bool)
    if change["kind"] == "create":
        where = change.get("where")
        return f"adding a cell {where}" if isinstance(where, str) and where else "adding a cell"
    return f"{verb} cell {number}" if has_number else f"{verb} a cell"


@dataclass
class AnswerItem:
    """The agent's streamed answer (one per ``output_id``)."""

    key: str
    text: str = ""
    complete: bool = False
    kind: Literal["answer"] = "answer"
    citations: list[ViewCitation] = field(default_factory=list)


@dataclass
class StepItem:
    """One tool step and its outcome."""

    key: str
    tool: str
    summary: str
    status: StepStatus = "running"
    outcome: str = ""
    error_message: str | None = None
    duration_ms: int | None = None
    kind: Literal["step"] = "step"


@dataclass
class RequestItem:
    """A confirmation or clarification, kept whole (its reply token is echoed exactly)."""

    key: str
    event: dict[str, Any]
    state: RequestState = "pending"
    outcome: str = ""
    problem: str | None = None
    """Why the last answer sent from here did not arrive (shown; the buttons work again)."""
    sent: Any = None
    """What this view sent (a decision or an answer), while and after sending it."""
    kind: Literal["confirmation", "clarification"] = "confirmation"

    @property
    def token(self) -> str:
        return str(self.event.get("reply_token", ""))

    @property
    def open(self) -> bool:
        """Whether an answer can still be given here (buttons enabled)."""
        return self.state == "pending"

    def deadline(self) -> float | None:
        """Epoch seconds at which the producer applies the default, if known."""
        start = epoch(self.event.get("timestamp"))
        timeout = self.event.get("timeout_seconds")
        if start is None or not isinstance(timeout, int) or isinstance(timeout, bool):
            return None
        return start + timeout


@dataclass
class NoticeItem:
    """A sentence in the timeline: guidance, a hand-off, the end of the session, an error."""

    key: str
    variant: Literal["info", "handoff", "completed", "errored", "cancelled", "error"]
    text: str
    hint: str | None = None
    kind: Literal["notice"] = "notice"


Item = AnswerItem | StepItem | RequestItem | NoticeItem


def confirmation_reply(
    item: RequestItem, decision: str, *, subscription_id: str, timestamp: str
) -> dict[str, Any]:
    """The ``confirmation.reply`` for *item*, sent with the view's own subscription id."""
    return {
        "type": "confirmation.reply",
        "reply_token": item.token,
        "decision": decision,
        "subscription_id": subscription_id,
        "timestamp": timestamp,
        "decided_by": "user:notebook-widget",
    }


def clarification_reply(
    item: RequestItem, answer: str, *, subscription_id: str, timestamp: str
) -> dict[str, Any]:
    """The ``clarification.reply`` for *item*: the answer typed as the request accepts it.

    A request that takes only yes/no gets a boolean, only numbers a number; anything else
    (free text, a choice) goes as the string.
    """
    kinds = item.event.get("accepted_response_kinds")
    kinds = kinds if isinstance(kinds, list) and kinds else ["freetext"]
    response: Any = answer.strip()
    if "freetext" not in kinds and "multiple_choice" not in kinds:
        if "yes_no" in kinds and response.lower() in ("yes", "y", "true", "no", "n", "false"):
            response = response.lower() in ("yes", "y", "true")
        elif "numeric" in kinds:
            try:
                response = float(response) if re.search(r"[.eE]", response) else int(response)
            except ValueError:
                pass
    return {
        "type": "clarification.reply",
        "reply_token": item.token,
        "response": response,
        "subscription_id": subscription_id,
        "timestamp": timestamp,
        "decided_by": "user:notebook-widget",
    }


@dataclass(frozen=True)
class ProgressBar:
    """How far the running step is, as a progress bar shows it (from ``progress.updated``)."""

    percent: float | None
    """0–100, or ``None`` when nothing countable is known (an indeterminate bar)."""
    value_text: str
    """What a screen reader says for the bar (``aria-valuetext``): "40 of 100, about 3 minutes left"."""

    @classmethod
    def from_event(cls, event: dict[str, Any], said: str) -> ProgressBar | None:
        progress = event.get("progress")
        if not isinstance(progress, dict):
            return None
        raw = progress.get("percent")
        percent = (
            float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        )
        step, total = progress.get("step"), progress.get("total_steps")
        if percent is None and isinstance(step, int) and isinstance(total, int) and total > 0:
            percent = 100.0 * min(step, total) / total
        description = progress.get("description")
        text = description if isinstance(description, str) and description else said
        if percent is None and not text:
            return None
        if not text:
            text = f"{percent:.0f} percent"
        return cls(None if percent is None else max(0.0, min(100.0, percent)), text)


def epoch(value: object) -> float | None:
    """An event timestamp in epoch seconds, or ``None`` when it is not one."""
    try:
        return parse_timestamp(str(value)).timestamp()
    except (TypeError, ValueError):
        return None
