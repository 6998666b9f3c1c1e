"""How an agent session ends: completed, errored or cancelled, with exactly one terminal event.

Each ending closes what is open first (the streamed answer, unanswered ``tool_use`` blocks),
so the chat can go on; "Done" is said only after the agent's edits are on disk, and it is
honest about failed steps, unsaved changes and cells still running.
"""

from __future__ import annotations

from typing import Any

from ..aaep.broker import ReplyBroker
from ..aaep.events import SessionCancelled, SessionCompleted, SessionErrored, Summary
from ..words import elapsed_words
from ._loop_text import clip as _clip
from ._loop_text import done_phrase as _done_phrase
from ._loop_text import done_terse as _done_terse
from ._loop_text import errored_note as _errored_note
from ._loop_text import stopped_note as _stopped_note
from ._loop_text import tool_phrase as _tool_phrase
from .control import RunControl
from .errors import ModelFailure
from .history import append_user_blocks, close_open_tool_uses, close_stopped_request
from .run_state import Run, SessionResult

UNSAVED_NOTE = (
    "The notebook's latest changes are not on disk yet; Jupyter saves them within seconds."
)


async def save(run: Run) -> None:
    """Put the agent's edits on disk before the session says it is done (a stop of the
    server right after "Done" must not lose them); say so when that did not work."""
    save = run.chat.save_changes
    if save is None or not run.tool_labels:
        return
    if not await save():
        run.unsaved = True
    check = run.chat.check_changes
    if check is not None:
        run.lost = await check()


def completed(run: Run, *, note: str | None = None) -> SessionResult:
    run.close_output()
    planned = run.plan
    if planned is not None and planned.closing_note():  # which of the plan's steps ran
        note = " ".join(part for part in (planned.closing_note(), note) if part)
    answer = "\n\n".join(run.answers)
    used = _tool_phrase(run.tool_labels)
    unsaved = run.lost or (UNSAVED_NOTE if run.unsaved else None)
    done = _done_phrase(run.failed_labels, run.recovered_labels)
    left = run.chat.still_running() if run.chat.still_running is not None else None
    running = left.sentence if left is not None else None
    # Each step was heard as it happened: the normal ending does not list them again.
    normal = " ".join(part for part in (done, note, unsaved, running) if part)
    detailed = " ".join(part for part in (done, note, used, unsaved, running) if part)
    terse = _done_terse(run.failed_labels) or (
        "Done." if note is None and run.lost is None else "Done, with a note."
    )
    if running:
        terse = f"{terse} {running}"
    event = run.session.emit(
        SessionCompleted(
            summary=Summary(
                normal=normal,
                terse=terse,
                detailed=f"{detailed} Took {elapsed_words(run.session.elapsed_ms(run.started_ms) / 1000)}. "
                f"{run.usage.sentence()}",
            ),
            duration_ms=min(run.session.elapsed_ms(run.started_ms), 86_400_000),
            tool_invocations_count=len(run.tool_labels),
            output_summary=_clip(answer, 300) or None,
            extensions=(left.extension(),) if left is not None else (),
        )
    )
    return SessionResult("completed", answer, len(run.tool_labels), event, run.usage)


def errored(run: Run, history: list[dict[str, Any]], failure: ModelFailure) -> SessionResult:
    unfinished = run.output.text if run.output is not None else ""
    close_everything(run, history, "The session ended with an error before this tool ran.")
    # Like a stop: the request is closed with a note, so the next one is not merged into it.
    close_stopped_request(history, _errored_note(failure.message), partial=unfinished)
    detailed = f"{failure.message} {failure.hint}"
    if failure.request_id:
        detailed += f" Request id: {failure.request_id}."
    detailed += f" {run.usage.sentence()}"
    event = run.session.emit(
        SessionErrored(
            error_category=failure.category,
            error_code=failure.code,
            recoverable=failure.recoverable,
            remediation_hint=failure.hint,
            summary=Summary(
                normal=f"{failure.message} {failure.hint}",
                terse=failure.message,
                detailed=detailed,
            ),
        )
    )
    return SessionResult(
        "errored", "\n\n".join(run.answers), len(run.tool_labels), event, run.usage
    )


def cancelled(
    run: Run, history: list[dict[str, Any]], control: RunControl, broker: ReplyBroker
) -> None:
    unfinished = run.output.text if run.output is not None else ""
    close_everything(run, history, "The user stopped the session before this tool ran.")
    close_stopped_request(history, _stopped_note(control), partial=unfinished)
    broker.cancel_session(run.session.id)
    who = {"user": "You stopped the agent.", "timeout": "The agent ran out of time."}.get(
        control.cancelled_by, "The agent was stopped."
    )
    after = "Nothing else will run."
    if control.reason == "superseded_by_new_request":  # a new message while it waited for you
        who, after = (
            "Your new message replaced this request.",
            "What it was waiting for did not run.",
        )
    partial = "\n\n".join(run.answers)
    run.session.emit(
        SessionCancelled(
            cancelled_by=control.cancelled_by,
            cancellation_reason=control.reason,
            partial_result=_clip(partial, 1000) or None,
            summary=Summary(
                normal=f"{who} {after} Changes made so far are kept.",
                terse="Replaced." if control.reason == "superseded_by_new_request" else "Stopped.",
                detailed=f"{who} {after} Changes made so far are kept; "
                f"{_tool_phrase(run.tool_labels) or 'no tools had finished.'} {run.usage.sentence()}",
            ),
        )
    )


def close_everything(run: Run, history: list[dict[str, Any]], reason: str) -> None:
    """Leave no output open and no ``tool_use`` unanswered, so the chat can go on."""
    if run.output is not None and not run.session.closed:
        run.close_output()
    if run.dispatcher is not None and history and history[-1]["role"] == "assistant":
        append_user_blocks(history, run.dispatcher.finished_results())
        run.dispatcher.calls = []
    close_open_tool_uses(history, reason)
