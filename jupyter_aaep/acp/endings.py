"""How a coding agent's AAEP session ends, in words: finished, stopped, failed, or refused.

Plain functions over the session, its narrator and the chat's history (the agent's answer is
kept there as an assistant turn, so a later session of ours, or a new ACP session, has it).
"""

from __future__ import annotations

from typing import Any

from ..aaep.events import SessionCancelled, SessionCompleted, SessionErrored, Summary
from ..aaep.session import Session
from ..agent.control import RunControl
from ..agent.loop import SessionResult
from ..agent.usage import Usage
from .narration import Narrator

__all__ = ["cancelled", "ended", "errored", "remember"]


def remember(name: str, history: list[dict[str, Any]], narrator: Narrator) -> str:
    """Close the streamed answer and keep it in the chat's history; the answer's text."""
    narrator.finish_output()
    text = "\n\n".join(narrator.answer).strip()
    history.append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": text or f"({name} gave no written answer.)"}],
        }
    )
    return text


def ended(
    name: str,
    session: Session,
    narrator: Narrator,
    history: list[dict[str, Any]],
    stop_reason: str,
    started: int,
    *,
    usage: Usage | None = None,
) -> SessionResult:
    """The prompt's answer came back: the closing line for its ``stopReason``."""
    answer = remember(name, history, narrator)
    if stop_reason == "cancelled":
        cancelled(name, session, narrator, history, None, remembered=True)
        return SessionResult(
            "cancelled", answer, len(narrator.steps), session.terminal_event, usage or Usage()
        )
    if stop_reason == "max_turn_requests":
        return errored(
            name,
            session,
            narrator,
            history,
            f"{name} stopped: it reached its limit of steps for one request. Send "
            "'continue' to carry on.",
            remembered=True,
            code="TURN_LIMIT_REACHED",
        )
    closing = {
        "end_turn": f"{name} finished.",
        "max_tokens": f"{name} finished, but its answer was cut off at its length limit.",
        "refusal": f"{name} declined to do this.",
    }.get(stop_reason, f"{name} finished.")
    did = len(narrator.steps)
    failed = (
        f" {len(narrator.failed)} failed: {'; '.join(narrator.failed)}." if narrator.failed else ""
    )
    steps = f" {did} step{'s' if did != 1 else ''}.{failed}" if did else ""
    usage_said = narrator.usage_words()
    event = session.emit(
        SessionCompleted(
            summary=Summary(
                normal=f"{closing}{steps}",
                terse="Done." if stop_reason == "end_turn" else closing,
                detailed=f"{closing}{steps} {usage_said}".strip(),
            ),
            duration_ms=min(session.elapsed_ms(started), 86_400_000),
            tool_invocations_count=did,
            output_summary=answer[:500] or None,
        )
    )
    return SessionResult("completed", answer, did, event, usage or Usage())


def errored(
    name: str,
    session: Session,
    narrator: Narrator,
    history: list[dict[str, Any]],
    sentence: str,
    *,
    remembered: bool = False,
    code: str = "AGENT_UNAVAILABLE",
) -> SessionResult:
    """The agent could not start or stopped answering: one sentence saying what to do."""
    answer = narrator.answer and "\n\n".join(narrator.answer) or ""
    if not remembered:
        answer = remember(name, history, narrator)
    event = session.emit(
        SessionErrored(
            error_category="unknown" if code != "TURN_LIMIT_REACHED" else "requires_user",
            error_code=code,
            recoverable=code == "TURN_LIMIT_REACHED",
            remediation_hint=sentence[:500],
            summary=Summary(normal=sentence, terse="Error."),
        )
    )
    return SessionResult("errored", answer, len(narrator.steps), event, Usage())


def cancelled(
    name: str,
    session: Session,
    narrator: Narrator,
    history: list[dict[str, Any]],
    control: RunControl | None,
    *,
    remembered: bool = False,
) -> None:
    """Stopped by the person or the server (or the agent answered ``cancelled``)."""
    if session.closed:
        return
    if not remembered:
        remember(name, history, narrator)
    by = control.cancelled_by if control is not None else "user"
    who = "You stopped" if by == "user" else "The server stopped"
    session.emit(
        SessionCancelled(
            cancelled_by=by,
            cancellation_reason=control.reason if control is not None else "stopped_by_user",
            summary=Summary(
                normal=f"{who} {name}. Nothing else it asked for will run; "
                "changes made so far are kept.",
                terse="Stopped.",
            ),
        )
    )
