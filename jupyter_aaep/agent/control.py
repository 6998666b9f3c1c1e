"""Steering a running session from outside: stop, pause, resume and guidance.

The runner holds one :class:`RunControl` per session and the loop checks it at its safe
points (before each model request and between tools). Nothing polls: a paused loop waits on
an :class:`asyncio.Event` that :meth:`RunControl.resume` sets, and guidance waits in a queue
that the loop drains at the very next turn boundary. While the session waits for a reply,
a pause takes effect at once and freezes the reply's timeout in the broker.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from ..aaep.broker import ReplyBroker
from ..aaep.events import CancelledBy, Progress, ProgressUpdated, Summary
from ..aaep.redaction import mask_secrets
from ..aaep.session import Session
from ..errors import InvalidInput

STEERING_PREFIX = "[Steering from the user while you work]"
STOPPED_NOTE = "[Stopped by the user before finishing.]"
ERRORED_NOTE = "[This request ended with an error before it was finished: {reason} Do not pick it up again unless the user asks.]"
PAUSED = Summary(
    normal="Paused. Nothing more will happen until you resume; you can still send guidance.",
    terse="Paused.",
    detailed="Paused at a safe point. Nothing more will happen until you resume; you can still send "
    "guidance, and a pending question or approval stays open without its time running out.",
)
MAX_TURNS_LIMIT = 500

Applies = Literal["next_turn", "on_resume", "new_session"]


def turn_limit(settings: dict[str, Any]) -> int | None:
    """The turn cap a piece of guidance sets (``settings.max_turns``), checked; ``None`` if none."""
    limit = settings.get("max_turns")
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TURNS_LIMIT:
        raise InvalidInput(
            f"settings.max_turns must be a whole number from 1 to {MAX_TURNS_LIMIT}."
        )
    return limit


@dataclass
class Guidance:
    """One piece of guidance sent while a session works (listed in the chat view)."""

    text: str
    session_id: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    guidance_id: str = field(default_factory=lambda: f"gd_{secrets.token_hex(8)}")
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    )
    applied: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "guidance_id": self.guidance_id,
            "session_id": self.session_id,
            "text": self.text,
            "created": self.created,
            "applied": self.applied,
        }

    def message_text(self) -> str:
        """The text block the model reads, marked so it knows the user steered mid-work."""
        return f"{STEERING_PREFIX} {self.text}"


@dataclass
class RunControl:
    """How a session is steered from outside.

    Stop: set the reason, then cancel the run's task. Pause, resume and guidance: call the
    methods; the loop calls :meth:`bind` when the session starts and :meth:`checkpoint` at its
    safe points.
    """

    cancelled_by: CancelledBy = "user"
    reason: str = "stopped_by_user"
    max_turns: int | None = None
    """A turn cap set by guidance mid-run (``None``: the configured one)."""
    session: Session | None = None
    broker: ReplyBroker | None = None
    pause_requested: bool = False
    paused_from: str | None = None
    """The state the session left for ``paused`` (``None`` while not paused)."""
    waiting_for_reply: bool = False
    queue: list[Guidance] = field(default_factory=list)
    _running: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return self.paused_from is not None

    def bind(self, session: Session, broker: ReplyBroker) -> None:
        """Attach the started session; guidance queued before it started gets its receipt now."""
        self.session = session
        self.broker = broker
        for guidance in self.queue:
            self._receipt(guidance, "next_turn")

    # -- pause / resume ----------------------------------------------------------------------
    def pause(self) -> bool:
        """Ask for a pause; it happens at the next safe point (at once while waiting for a reply)."""
        if self.session is None or self.session.closed:
            return False
        self.pause_requested = True
        if self.waiting_for_reply and not self.paused:
            self._enter_pause()
        return True

    def resume(self) -> bool:
        """Continue where the session stopped; ``False`` when it was neither paused nor about to be."""
        if self.paused:
            session = self.session
            assert session is not None
            back, self.paused_from = self.paused_from or "thinking", None
            self.pause_requested = False
            if self.broker is not None:
                self.broker.resume_session(session.id)
            session.change_state(back, Summary(normal="Resumed.", terse="Resumed."))
            self._running.set()
            return True
        if self.pause_requested:
            self.pause_requested = False
            return True
        return False

    def _enter_pause(self) -> None:
        session = self.session
        assert session is not None
        self.paused_from = session.state
        self._running.clear()
        if self.broker is not None:
            self.broker.pause_session(session.id)
        session.change_state("paused", PAUSED)

    def pause_if_requested(self) -> None:
        """Enter ``paused`` now if a pause was asked for and has not happened yet."""
        if (
            self.pause_requested
            and not self.paused
            and self.session is not None
            and not self.session.closed
        ):
            self._enter_pause()

    async def checkpoint(self) -> None:
        """A safe point: pause here when asked, and return once resumed.

        It always yields to the event loop once, so what the last step published (a
        ``tool.completed``) reaches the streams before the next model request's CPU work.
        """
        self.pause_if_requested()
        await asyncio.sleep(0)
        await self._running.wait()

    async def until_running(self) -> None:
        """Wait while paused (a reply that arrived during a pause acts after the resume)."""
        await self._running.wait()

    # -- guidance ------------------------------------------------------------------------------
    def guide(self, guidance: Guidance) -> Applies:
        """Queue guidance for the next turn boundary and announce its receipt."""
        self.queue.append(guidance)
        limit = guidance.settings.get("max_turns")
        if isinstance(limit, int):
            self.max_turns = limit
        applies: Applies = "on_resume" if self.paused else "next_turn"
        # Before the session has started (it waits for the one it supersedes to close), the
        # receipt goes out when it starts (bind), so the user always hears one.
        self._receipt(guidance, applies)
        return applies

    def _receipt(self, guidance: Guidance, applies: Applies) -> None:
        """Say that *guidance* arrived and when it applies (only on a started, open session)."""
        session = self.session
        if session is None or session.closed:
            return
        shown = mask_secrets(guidance.text)
        clipped = shown if len(shown) <= 120 else shown[:119].rstrip() + "…"
        when = (
            "It applies when you resume."
            if applies == "on_resume"
            else "It applies at the next step."
        )
        session.emit(
            ProgressUpdated(
                progress=Progress(description=f"Guidance received: {clipped}"[:1000]),
                summary=Summary(
                    normal=f"Guidance received: {clipped}. {when}",
                    terse="Guidance received.",
                    detailed=f"Guidance received: {shown[:2000]}. {when}",
                ),
            )
        )

    def take_guidance(self) -> list[Guidance]:
        """Everything queued, marked applied (the loop adds it to the next request)."""
        taken, self.queue = self.queue, []
        for item in taken:
            item.applied = True
        return taken
