"""A burst: one outside agent's calls on one notebook, served as one session of its chat.

:class:`Burst` is the record :class:`~.outside_agents.OutsideAgents` keeps per notebook (its
owner, its queue of :class:`OutsideCall`, when it was last active); the functions below end its
session in a sentence a person understands: finished, stopped, failed, or a withdrawn request,
and answer the calls still waiting when it ends.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ..aaep.events import SessionCancelled, SessionCompleted, SessionErrored, Summary
from ..aaep.session import Session
from ..agent.tool_use import ToolUse
from ..chats.chat import Chat
from ..words import plural


@dataclass
class OutsideCall:
    """One queued call and where its result goes."""

    use: ToolUse
    done: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    task: asyncio.Task[list[dict[str, Any]]] | None = None


@dataclass
class Burst:
    chat: Chat
    client_key: str
    client_name: str
    session: Session
    owner: str = ""
    """Whose agent it is (``credential:<id>`` or ``client:<name>``): the same owner takes over."""
    in_flight: int = 0
    """Calls sent and not yet answered (queued, waiting for a person, or running)."""
    queue: asyncio.Queue[OutsideCall] = field(default_factory=asyncio.Queue)
    last_activity: float = field(default_factory=time.monotonic)
    ending: bool = False
    closing: bool = False
    """It takes no more calls: idle long enough, left, stopped or failed; its session is ending."""


END: Any = OutsideCall.__new__(OutsideCall)
"""Put in a burst's queue to wake it when its client leaves."""


def error_block(text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": "", "content": text, "is_error": True}


# -- endings, said ---------------------------------------------------------------------------
def withdrawn(burst: Burst) -> None:
    session = burst.session
    if session.state == "awaiting_input" and not session.closed:
        session.change_state(
            "thinking",
            Summary(
                normal=f"{burst.client_name} withdrew its request; nothing ran.",
                terse="Withdrawn.",
            ),
        )


def completed(burst: Burst, steps: list[str], started: int, saved: bool) -> dict[str, Any]:
    count = len(steps)
    did = plural(count, "step") if count else "no steps"
    unsaved = "" if saved else " Its changes may not be saved to disk yet."
    listed = f" ({', '.join(dict.fromkeys(steps))})" if steps else ""
    return burst.session.emit(
        SessionCompleted(
            summary=Summary(
                normal=f"{burst.client_name} finished: {did}.{unsaved}",
                terse="Done.",
                detailed=f"{burst.client_name} finished working on {burst.chat.notebook_path}: "
                f"{did}{listed}.{unsaved}",
            ),
            duration_ms=min(burst.session.elapsed_ms(started), 86_400_000),
            tool_invocations_count=count,
        )
    )


def cancelled(burst: Burst, steps: list[str]) -> None:
    control, session = burst.chat.control, burst.session
    if session.closed:
        return
    who = "You stopped" if control.cancelled_by == "user" else "The server stopped"
    session.emit(
        SessionCancelled(
            cancelled_by=control.cancelled_by,
            cancellation_reason=control.reason,
            summary=Summary(
                normal=f"{who} {burst.client_name}. Nothing else it asks for will run. Changes made so far are kept.",
                terse="Stopped.",
                detailed=f"{who} {burst.client_name} after {len(steps)} steps. Its next calls are refused "
                "until the stop is over; changes made so far are kept (Undo reverts them).",
            ),
        )
    )


def errored(burst: Burst, error: Exception) -> None:
    session = burst.session
    if session.closed or not session.started:
        return
    session.emit(
        SessionErrored(
            error_category="unknown",
            error_code="OUTSIDE_AGENT_FAILED",
            recoverable=False,  # nothing here continues it (Continue is the agent's own)
            remediation_hint="Its next call starts again; the server log has the details.",
            summary=Summary(
                normal=f"{burst.client_name}'s work stopped on an error in the server: "
                f"{type(error).__name__}. Its next step starts again.",
                terse="Error.",
            ),
        )
    )


def fail_waiting(
    burst: Burst, current: OutsideCall | None, text: str, error: Exception | None = None
) -> None:
    stopped = error_block(
        text.format(who=burst.client_name, error=type(error).__name__ if error else "")
    )
    if current is not None and not current.done.done():
        current.done.set_result(stopped)
    while not burst.queue.empty():
        item = burst.queue.get_nowait()
        if item is not END and not item.done.done():
            item.done.set_result(stopped)
