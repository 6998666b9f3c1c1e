"""What the live view shows, from the AAEP events of one session: no widgets, no I/O.

:class:`ViewState` takes events (``apply``) and the user's actions (``mark_sending``,
``reply_failed``) and keeps an ordered timeline of items: the streamed answer, tool steps,
confirmation and clarification requests, and notices (hand-offs, the session's end, errors).
The widget layer (``view.py``) only turns these items into widgets, so everything a test needs
to check about what the user sees is checked here, with real event dicts.

It follows one session only: the one given to :meth:`ViewState.follow` (the session its request
started), or, until that is known, the first ``session.started`` whose ``request_text`` is the
view's own request. Events of other sessions of the same chat (the side panel's) are kept
aside, in case they turn out to be ours, and otherwise ignored. One exception: when the request
ends with a cell still running, the sessions that tell that cell (their ``correlation_id`` is
the request's session) are followed too, for their progress bar and their last sentence.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from ..agent.services import cells_left_running
from ._view_citations import citations_of
from ._view_items import (
    AnswerItem,
    Item,
    NoticeItem,
    ProgressBar,
    RequestItem,
    RequestState,
    StepItem,
    core_name,
    epoch,
    event_text,
    summary,
)

__all__ = ["ViewState"]

TERMINAL = ("session.completed", "session.errored", "session.cancelled")
MAX_ASIDE = 2000
"""Events of sessions not (yet) known to be ours kept aside, in total."""
MAX_SEEN = 20_000

_STATE_TEXT = {
    "idle": "The agent is starting.",
    "thinking": "The agent is thinking.",
    "deciding": "The agent is deciding what to do next.",
    "calling_tool": "The agent is working on a step.",
    "writing_output": "The agent is writing its answer.",
    "awaiting_input": "The agent is waiting for your answer, below or in the side panel.",
    "handing_off": "The agent is handing control back to you.",
    "paused": "Paused. Resume with %aaep resume or from the side panel.",
}


@dataclass
class ViewState:
    """The view's state: which session it follows, its status line and its timeline."""

    request_text: str
    session_id: str | None = None
    status: str = "Connecting to the agent…"
    agent_state: str = "idle"
    ended: str | None = None
    """``completed``, ``errored`` or ``cancelled`` once the session ended."""
    progress: str | None = None
    bar: ProgressBar | None = None
    """The running step's progress bar (cleared when the step or the session ends)."""
    items: OrderedDict[str, Item] = field(default_factory=OrderedDict)
    version: int = 0
    """Goes up whenever something shown changed (the widget layer renders on change)."""
    confirm_here: bool = True
    """Whether approvals may be given in this view (the server's ``kernel_replies``); when not,
    a confirmation card sends the person to the side panel instead of showing buttons."""
    left_running: int = 0
    """How many cells the request left running (data on its ``session.completed``)."""
    cell_runs: dict[str, bool] = field(default_factory=dict)
    """Sessions telling the cells the request left running, and whether each has ended."""
    _seen: set[str] = field(default_factory=set)
    _aside: list[dict[str, Any]] = field(default_factory=list)
    _counter: int = 0

    @property
    def following(self) -> bool:
        """Whether there is more to show: the request, or a cell it left running."""
        if self.ended is None:
            return True
        return sum(self.cell_runs.values()) < self.left_running

    # -- which session ------------------------------------------------------------------------
    def follow(self, session_id: str) -> bool:
        """Follow *session_id* (from the server's answer to the request); events of it that
        arrived before are applied now. Returns whether anything changed."""
        if self.session_id == session_id:
            return False
        self.session_id = session_id
        if self.ended is None and self.status.startswith(("Connecting", "Starting")):
            self.status = "Waiting for the agent to start…"
        early, self._aside = [e for e in self._aside if e.get("session_id") == session_id], []
        for event in early:
            self._apply(event)
        self.version += 1
        return True

    def _mine(self, event: dict[str, Any]) -> bool:
        session = event.get("session_id")
        if self.session_id is not None:
            return session == self.session_id
        if core_name(event.get("type")) == "session.started" and _same_request(
            event.get("request_text"), self.request_text
        ):
            self.session_id = str(session)
            self._aside = [e for e in self._aside if e.get("session_id") == session]
            return True
        return False

    # -- events --------------------------------------------------------------------------------
    def apply(self, event: dict[str, Any]) -> bool:
        """Take one AAEP event; returns whether it belonged to this view's session and was new."""
        event_id = event.get("event_id")
        if not isinstance(event_id, str) or event_id in self._seen:
            return False
        if len(self._seen) >= MAX_SEEN:
            self._seen.clear()
        self._seen.add(event_id)
        if self._continues(event):
            self._cell_run(event)
            self.version += 1
            return True
        if not self._mine(event):
            if self.session_id is None and len(self._aside) < MAX_ASIDE:
                self._aside.append(event)
            return False
        early, self._aside = self._aside, []
        for held in early:  # events of our session that came before its start was recognised
            if held.get("session_id") == self.session_id:
                self._apply(held)
        self._apply(event)
        self.version += 1
        return True

    def _continues(self, event: dict[str, Any]) -> bool:
        """Whether *event* tells a cell this view's request left running."""
        return (
            self.session_id is not None
            and event.get("correlation_id") == self.session_id
            and event.get("session_id") != self.session_id
        )

    def _cell_run(self, event: dict[str, Any]) -> None:
        session, name, said = (
            str(event.get("session_id")),
            core_name(event.get("type")),
            summary(event),
        )
        if self.cell_runs.get(session):
            return  # that run was told to its end
        self.cell_runs.setdefault(session, False)
        if name == "progress.updated":
            self.bar = ProgressBar.from_event(event, said) or self.bar
            self.status = said or self.status
        elif name in TERMINAL:
            self.cell_runs[session] = True
            self.bar = self.progress = None
            failed = name != "session.completed"
            key = f"run-end:{event.get('event_id')}"
            self.items[key] = NoticeItem(
                key, "errored" if failed else "info", said or "The cell has ended."
            )
            self.status = said or "The cell has ended."
        elif name == "session.started" and said:
            self.status = said

    def _apply(self, event: dict[str, Any]) -> None:
        name = core_name(event.get("type"))
        said = summary(event)
        if self.ended is not None:
            return  # nothing follows a terminal event (AAEP §4.5); a late duplicate changes nothing
        if name == "session.started":
            self.status = "The agent started working on your request."
        elif name == "state.changed":
            self._state_changed(event, said)
        elif name == "output.streaming":
            key = f"answer:{event.get('output_id') or self.session_id}"
            item = self.items.get(key)
            if not isinstance(item, AnswerItem):
                item = self.items[key] = AnswerItem(key)
            if not item.complete:
                chunk = event.get("chunk")
                item.citations += citations_of(event, len(item.text))
                item.text += chunk if isinstance(chunk, str) else ""
                item.complete = event.get("complete") is True
        elif name == "tool.invoked":
            self._resolve_requests("resolved")
            call = event.get("tool_call_id")
            key = f"step:{call}" if isinstance(call, str) else self._key("step")
            self.items[key] = StepItem(
                key, tool=str(event.get("tool", "tool")), summary=said or "A step started."
            )
            self.progress = None
            self.bar = None
        elif name == "tool.completed":
            self._tool_completed(event, said)
        elif name == "progress.updated":
            progress = event.get("progress")
            description = progress.get("description") if isinstance(progress, dict) else None
            self.progress = (
                description if isinstance(description, str) and description else (said or None)
            )
            self.bar = ProgressBar.from_event(event, said) or self.bar
        elif name in ("awaiting.confirmation", "awaiting.clarification"):
            kind: Literal["confirmation", "clarification"] = (
                "confirmation" if name == "awaiting.confirmation" else "clarification"
            )
            key = f"request:{event.get('reply_token') or event.get('event_id')}"
            self.items[key] = RequestItem(key, event=dict(event), kind=kind)
            self.status = _STATE_TEXT["awaiting_input"]
        elif name == "handoff.requested":
            key = self._key("handoff")
            self.items[key] = NoticeItem(
                key,
                "handoff",
                said or f"The agent hands control back to you: {event.get('reason', '')}",
            )
        elif name in TERMINAL:
            self._ended(name, event, said)
        elif said:  # an unknown or extension type: its summary, if it has one
            key = self._key("info")
            self.items[key] = NoticeItem(key, "info", said)

    def _state_changed(self, event: dict[str, Any], said: str) -> None:
        before, after = event.get("from_state"), event.get("to_state")
        self.agent_state = str(after) if isinstance(after, str) else self.agent_state
        if before == "awaiting_input" and after != "awaiting_input":
            self._resolve_requests("resolved", said or None, at=epoch(event.get("timestamp")))
        self.status = _STATE_TEXT.get(
            self.agent_state, f"The agent is {self.agent_state.replace('_', ' ')}."
        )

    def _tool_completed(self, event: dict[str, Any], said: str) -> None:
        call, tool = event.get("tool_call_id"), event.get("tool")
        step = self.items.get(f"step:{call}") if isinstance(call, str) else None
        if not isinstance(step, StepItem):
            step = next(
                (
                    i
                    for i in reversed(self.items.values())
                    if isinstance(i, StepItem) and i.tool == tool and i.status == "running"
                ),
                None,
            )
        if step is None:
            return
        status = event.get("status")
        step.status = status if status in ("success", "error", "timeout") else "success"
        step.outcome = said if said and said != step.summary else ""
        message = event.get("error_message")
        step.error_message = message if isinstance(message, str) and message else None
        duration = event.get("duration_ms")
        step.duration_ms = (
            duration if isinstance(duration, int) and not isinstance(duration, bool) else None
        )
        self.progress = None
        self.bar = None

    def _ended(self, name: str, event: dict[str, Any], said: str) -> None:
        variant = name.removeprefix("session.")
        self.ended = variant
        self._resolve_requests("cancelled" if variant == "cancelled" else "resolved")
        for item in self.items.values():
            if isinstance(item, AnswerItem):
                item.complete = True
            elif isinstance(item, StepItem) and item.status == "running":
                item.status = "timeout"
        hint = event_text(event, "remediation_hint")
        text = (
            said
            or {
                "completed": "Done.",
                "errored": "The request failed.",
                "cancelled": "The request was stopped.",
            }[variant]
        )
        self.left_running = cells_left_running(event) if variant == "completed" else 0
        if hint and text.rstrip().endswith(hint.strip()):
            text = text.rstrip()[: -len(hint.strip())].rstrip() or text
        key = f"end:{event.get('event_id')}"
        self.items[key] = NoticeItem(key, variant, text, hint)  # type: ignore[arg-type]
        self.status = {"completed": "Done.", "errored": "Failed.", "cancelled": "Stopped."}[variant]
        self.progress = None
        self.bar = None

    def _resolve_requests(
        self, state: RequestState, outcome: str | None = None, *, at: float | None = None
    ) -> None:
        """Close the open requests; *outcome* is the producer's sentence about how (*at* its time)."""
        for item in self.items.values():
            if isinstance(item, RequestItem) and item.state in ("pending", "sending"):
                deadline = item.deadline()
                timed_out = at is not None and deadline is not None and at >= deadline - 0.5
                automatic = bool(outcome) and "automatically" in str(outcome)
                answered_here = item.state == "sending" or timed_out or automatic
                item.state = state
                text = outcome or item.outcome
                if state == "cancelled":
                    text = "Cancelled: the request ended before an answer."
                elif not text:
                    text = "Resolved."
                says_where = bool(outcome) and str(outcome).startswith(
                    ("Approved in", "Approved from")
                )
                if not answered_here and state == "resolved" and outcome and not says_where:
                    text = f"Answered elsewhere (for example in the side panel): {outcome}"
                item.outcome = text

    # -- the user's actions ---------------------------------------------------------------------
    def request(self, token: str) -> RequestItem | None:
        item = self.items.get(f"request:{token}")
        return item if isinstance(item, RequestItem) else None

    def mark_sending(self, token: str, value: Any) -> RequestItem | None:
        """The user answered *token* here; returns the request, or ``None`` when it can no
        longer be answered (already answered, anywhere, or the session ended)."""
        item = self.request(token)
        if item is None or not item.open or self.ended is not None:
            return None
        item.state, item.sent, item.problem = "sending", value, None
        item.outcome = "Sending your answer…"
        self.version += 1
        return item

    def reply_failed(self, token: str, message: str) -> None:
        """Sending failed: say why, and let the user answer again (here or in the panel)."""
        item = self.request(token)
        if item is None or item.state != "sending":
            return
        item.state, item.outcome = "pending", ""
        item.problem = (
            f"Your answer was not sent: {message} Try again, or answer in the side panel."
        )
        self.version += 1

    def error(self, text: str, hint: str | None = None) -> None:
        """A problem of the view itself (connection, handshake): shown with what to do."""
        key = self._key("error")
        self.items[key] = NoticeItem(key, "error", text, hint)
        self.status = "The live view stopped following the agent."
        self.version += 1

    def note(self, text: str) -> None:
        key = self._key("info")
        self.items[key] = NoticeItem(key, "info", text)
        self.version += 1

    def _key(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}:{self._counter}"


def _same_request(text: object, mine: str) -> bool:
    """Whether a ``session.started`` ``request_text`` is this view's request (the producer
    may clip or mask a long one, so a shared beginning of some length counts too)."""
    if not isinstance(text, str):
        return False
    a, b = " ".join(text.split()), " ".join(mine.split())
    if a == b:
        return True
    shorter = min(len(a), len(b))
    return shorter >= 60 and a[: shorter - 1] == b[: shorter - 1]
