"""What the agent loop does when the model stops, for every stop reason the Messages API defines.

One table, :data:`STOP_REASONS`, gives each ``stop_reason`` the loop's next move and the words
people hear; ``tests/agent/test_stop_reasons.py`` proves it covers every value of the installed
SDK's ``StopReason``. A reason this version does not know (a newer service) ends the session
with an error that says so: it is never reported as done, because nobody knows whether it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import ModelFailure

NextMove = Literal["run_tools", "send_again", "finish", "fail"]
"""``run_tools``: answer the ``tool_use`` blocks, then ask again; ``send_again``: the service
paused a long turn, send the conversation as it is so the model goes on; ``finish``: the
session is done (with a note when there is something to know); ``fail``: the session ends
with :attr:`StopHandling.failure`."""


@dataclass(frozen=True)
class StopHandling:
    """How the loop handles one stop reason."""

    next: NextMove
    step: str
    """The model request's own record (the steps endpoint): what this request did. ``{tools}``
    is replaced by the count of tools asked for ("2 tools")."""
    note: str | None = None
    """For ``finish``: said after "Done."; ``{max_tokens}`` is replaced by the answer limit."""
    failure: ModelFailure | None = None
    """For ``fail``: the ``session.errored`` fields."""


STOP_REASONS: dict[str, StopHandling] = {
    "end_turn": StopHandling("finish", "The model answered."),
    "tool_use": StopHandling("run_tools", "The model asked for {tools}."),
    "stop_sequence": StopHandling("finish", "The model stopped at one of its stop sequences."),
    "max_tokens": StopHandling(
        "finish",
        "The model's answer reached its length limit.",
        note="The answer was cut off at the length limit of {max_tokens} tokens. "
        "Ask me to continue if you need the rest.",
    ),
    "pause_turn": StopHandling(
        "send_again", "The model paused a long turn; it was asked again to go on."
    ),
    "refusal": StopHandling(
        "fail",
        "The model declined the request.",
        failure=ModelFailure(
            "requires_user",
            "MODEL_DECLINED",
            True,
            "The model declined this request.",
            "Try rephrasing it, or ask for something else.",
        ),
    ),
    "model_context_window_exceeded": StopHandling(
        "fail",
        "The model ran out of room in its context window.",
        failure=ModelFailure(
            "requires_user",
            "CONTEXT_WINDOW_EXCEEDED",
            True,
            "This conversation has grown too long for the model, so its answer was cut off.",
            "The work so far is kept. Start a new chat for the next step; the notebook keeps "
            "everything done so far.",
        ),
    ),
}
"""Every stop reason of the Messages API, in the order the API reference lists them."""

_UNKNOWN_FAILURE = ModelFailure(
    "unknown",
    "UNKNOWN_STOP_REASON",
    True,
    "The model stopped for a reason this version of the agent does not know, so its answer "
    "may be incomplete.",
    "The work so far is kept. Send 'continue' to carry on, and update jupyter-aaep.",
)


def stop_handling(stop_reason: str | None) -> StopHandling:
    """The table's entry for *stop_reason*; an unknown (or missing) one fails, never finishes."""
    known = STOP_REASONS.get(stop_reason or "")
    if known is not None:
        return known
    return StopHandling(
        "fail",
        f"The model stopped for a reason this version does not know: {stop_reason or 'none given'}.",
        failure=_UNKNOWN_FAILURE,
    )


__all__ = ["STOP_REASONS", "NextMove", "StopHandling", "stop_handling"]
