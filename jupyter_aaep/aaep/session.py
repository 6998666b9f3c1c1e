"""One AAEP session: stamps envelopes and guards the session-level rules.

Every event of a session goes through :meth:`Session.emit`, which adds the envelope
(``@context``, ids, a non-decreasing millisecond timestamp, the producer, an explicit urgency,
the sequence number, localization hints) and refuses what the protocol forbids: events after
the terminal one, a second ``session.started``, a state change that does not continue from the
current state.
"""

from __future__ import annotations

from dataclasses import dataclass

from .clock import SessionClock
from .emitter import Emitter, Event
from .events import (
    TERMINAL_TYPES,
    EventPayload,
    SessionStarted,
    StateChanged,
    Summary,
)
from .ids import is_valid_id, new_event_id, new_session_id

AAEP_CONTEXT = "https://aaep-protocol.org/context/v1"
AAEP_VERSION = "1.0.0"


class SessionClosed(RuntimeError):
    """An event was emitted after the session's terminal event."""


@dataclass(frozen=True)
class Producer:
    """Who is speaking: the closed ``producer`` object of every envelope."""

    agent_id: str = "jupyter-aaep"
    agent_version: str = "0.1.0"
    agent_name: str = "Jupyter notebook agent"
    model: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {
            "agent_id": self.agent_id,
            "agent_version": self.agent_version,
            "agent_name": self.agent_name,
        }
        if self.model:
            out["model"] = self.model
        return out


STATE_PHRASES: dict[str, tuple[str, str]] = {
    # state: (terse, normal) — what a listener hears when the agent enters this state
    "idle": ("Idle.", "The agent is idle."),
    "thinking": ("Thinking.", "The agent is thinking."),
    "calling_tool": ("Working.", "The agent is using a tool."),
    "writing_output": ("Answering.", "The agent is writing its answer."),
    "awaiting_input": ("Waiting for you.", "The agent is waiting for your answer."),
    "paused": ("Paused.", "The agent is paused."),
}


def state_summary(to_state: str, actor: str = "The agent") -> Summary:
    """What a listener hears when *actor* ("The agent", "Claude Code") enters *to_state*."""
    terse, normal = STATE_PHRASES.get(
        to_state,
        (
            f"{to_state.replace('_', ' ').capitalize()}.",
            f"The agent is now {to_state.replace('_', ' ')}.",
        ),
    )
    if actor != "The agent" and normal.startswith("The agent "):
        normal = actor + normal[len("The agent") :]
    return Summary(normal=normal, terse=terse)


class Session:
    """Emits the events of one session, in order, through an :class:`Emitter`.

    Parameters
    ----------
    emitter
        Where the stamped events go.
    producer
        The envelope's ``producer`` object.
    session_id
        A ``sess_…`` id; a fresh one by default.
    language
        BCP 47 tag of the human-readable text this producer writes.
    actor
        Who listeners hear at work in this session's state changes: "The agent" for our own
        agent, an outside agent's name ("Claude Code") for its sessions.
    """

    def __init__(
        self,
        emitter: Emitter,
        producer: Producer,
        *,
        session_id: str | None = None,
        language: str = "en-US",
        actor: str = "The agent",
    ) -> None:
        if session_id is not None and not is_valid_id("sess", session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        self.id = session_id or new_session_id()
        self.emitter = emitter
        self.producer = producer
        self.language = language
        self.actor = actor
        self.state = "idle"
        self.started = False
        self.terminal_event: Event | None = None
        self._clock = SessionClock()
        self._sequence = 0

    @property
    def closed(self) -> bool:
        return self.terminal_event is not None

    def emit(self, payload: EventPayload, *, correlation_id: str | None = None) -> Event:
        """Stamp *payload* with the envelope, publish it and return the event."""
        event_type = payload.event_type
        if self.closed:
            raise SessionClosed(f"{event_type} after the end of session {self.id}")
        if isinstance(payload, SessionStarted):
            if self.started:
                raise RuntimeError(f"session {self.id} already started")
            self.started = True
        elif not self.started:
            raise RuntimeError(f"{event_type} before session.started in {self.id}")
        if isinstance(payload, StateChanged):
            if payload.from_state != self.state:
                raise RuntimeError(
                    f"state change from {payload.from_state!r} but the session is in {self.state!r}"
                )
            self.state = payload.to_state

        event: Event = {
            "@context": AAEP_CONTEXT,
            "type": event_type,
            "event_id": new_event_id(),
            "session_id": self.id,
            "timestamp": self._clock.now(),
            "producer": self.producer.to_json(),
            "aaep_version": AAEP_VERSION,
            "urgency": payload.resolved_urgency(),
            "sequence_number": self._sequence,
            "localization_hints": {"primary_language": self.language, "text_direction": "ltr"},
        }
        if payload.extensions:
            contexts = list(dict.fromkeys(x.context for x in payload.extensions))
            event["@context"] = [AAEP_CONTEXT, *contexts]
            event["extensions"] = {x.prefix: dict(x.data) for x in payload.extensions}
        body = payload.to_payload()
        if any(key.startswith("summary_") for key in body):
            event["verbosity"] = "normal"
        if correlation_id:
            event["correlation_id"] = correlation_id
        event.update(body)
        self._sequence += 1
        if event_type in TERMINAL_TYPES:
            self.terminal_event = event
        self.emitter.publish(event)
        return event

    def restore(self, *, state: str, next_sequence: int) -> None:
        """Pick up a session another process started (read back from storage), so the event
        that closes it continues its sequence numbers from its last state."""
        self.started = True
        self.state = state
        self._sequence = next_sequence

    def change_state(
        self, to_state: str, summary: Summary | None = None, *, routine: bool | None = None
    ) -> Event | None:
        """Move to *to_state* with a ``state.changed`` event; nothing if already there.

        *routine* (a background event) defaults to: a move into thinking/calling_tool with no
        summary of its own; a move with its own summary (an approval decided, a question
        answered) is worth hearing unless the caller says it is routine.
        """
        if to_state == self.state or self.closed:
            return None
        if routine is None:
            routine = summary is None and to_state in ("thinking", "calling_tool")
        return self.emit(
            StateChanged(
                from_state=self.state,
                to_state=to_state,
                summary=summary or state_summary(to_state, self.actor),
                urgency="background" if routine else "normal",
            )
        )

    def elapsed_ms(self, since_ms: int) -> int:
        return max(0, self._clock.now_ms() - since_ms)

    def now_ms(self) -> int:
        return self._clock.now_ms()
