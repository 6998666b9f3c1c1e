"""Standing permissions at the gate: what the dispatcher asks of them, and how it is said.

The dispatcher calls :func:`standing` where it decides whether a step asks. A deny refuses the
step without asking (:func:`refuse`); an allow answers the confirmation on the person's behalf
and every listener hears which permission did (:func:`granted_summary`, and the record
:func:`granted_record` on the ``state.changed`` that leaves ``awaiting_input``); otherwise a
card may offer grants with its approval (:func:`offered`).

The record is shaped like the ``confirmation.reply`` a person would have sent (``decision``,
``timestamp``, ``decided_by: "grant:<id>"``, ``decision_rationale``: the grant's words), carried
as the AAEP extension ``jaaep_permission`` since AAEP has no event for a reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..aaep.clock import ms_to_timestamp
from ..aaep.events import Extension, Progress, ProgressUpdated, StateChanged, Summary
from ..aaep.session import Session
from .grants import Grant, Verdict
from .tools import ActionPreview, ToolSpec

if TYPE_CHECKING:
    from .chat_context import ChatContext

PERMISSION_PREFIX = "jaaep_permission"
PERMISSION_CONTEXT = (
    "https://github.com/jupyter-aaep/jupyter-aaep/blob/main/docs/protocol.md#standing-permissions"
)
"""The context URI that declares the ``jaaep_permission`` extension (documented there)."""


def standing(
    chat: ChatContext, spec: ToolSpec, tool_input: Any, preview: ActionPreview
) -> Verdict | None:
    """What the person's standing permissions say of this step (``None``: nothing)."""
    book = chat.grants
    if book is None:
        return None
    return book.verdict(
        spec.name,
        tool_input if isinstance(tool_input, dict) else {},
        code=_code(spec, preview),
        flagged=bool(preview.risk_flags),
        chat_id=chat.chat_id,
        notebook_path=chat.notebook_path,
    )


def refuse(session: Session, grant: Grant, preview: ActionPreview) -> str:
    """Say that a deny stopped the step (never asked, never run); returns the model's text."""
    words = grant.words()
    said = f"Not done: {preview.summary.rstrip('.')}. Stopped by {words}."
    session.emit(
        ProgressUpdated(
            progress=Progress(description=said[:1000]),
            urgency="normal",
            summary=Summary(normal=said, terse="Not allowed by your rule."),
        )
    )
    return (
        f"Not run: the user's standing rule forbids this step ({words}). Do not try to reach "
        "the same result another way; tell the user what you wanted to do."
    )


def offered(
    chat: ChatContext, token: str, spec: ToolSpec, tool_input: Any, preview: ActionPreview
) -> list[dict[str, Any]]:
    """The grants a card offers with its approval, narrowest first
    (``extra_context.permission_offers``; empty: none)."""
    book = chat.grants
    if book is None:
        return []
    offers = book.offer(
        token,
        spec.name,
        tool_input if isinstance(tool_input, dict) else {},
        flagged=bool(preview.risk_flags),
        chat_id=chat.chat_id,
        notebook_path=chat.notebook_path,
    )
    return [offer.to_json(chat.notebook_path) for offer in offers]


def forget(chat: ChatContext, token: str) -> None:
    if chat.grants is not None:
        chat.grants.forget_offer(token)


def granted_summary(grant: Grant, preview: ActionPreview, risk: str, action: str) -> Summary:
    """The confirmation a grant answered, told as what it is: never a question."""
    words = grant.words()
    return Summary(
        normal=f"{preview.summary.rstrip('.')}: allowed by {words}.",
        terse=f"Allowed: {preview.terse or preview.summary}",
        detailed=f"Allowed by {words}, {risk} risk: {action}",
    )


def granted_context(grant: Grant) -> dict[str, Any]:
    """What ``extra_context.granted_by`` says of the grant (the panel shows its words)."""
    return {
        "id": grant.id,
        "rule": grant.rule,
        "scope": grant.scope,
        "words": grant.words(),
        "sentence": grant.sentence(),
    }


def granted_record(session: Session, grant: Grant, token: str, preview: ActionPreview) -> None:
    """Leave ``awaiting_input`` saying which grant approved, with the reply-shaped record."""
    how = f"Allowed by {grant.words()}."
    record = {
        "type": "confirmation.reply",
        "reply_token": token,
        "decision": "accept",
        "timestamp": ms_to_timestamp(session.now_ms()),
        "decided_by": f"grant:{grant.id}",
        "decision_rationale": how,
    }
    session.emit(
        StateChanged(
            from_state=session.state,
            to_state="calling_tool",
            summary=Summary(normal=how, terse="Allowed.", detailed=f"{how} {preview.summary}"),
            urgency="normal",
            extensions=(
                Extension(
                    PERMISSION_PREFIX,
                    PERMISSION_CONTEXT,
                    {"confirmation_reply": record, "permission": granted_context(grant)},
                ),
            ),
        )
    )


def _code(spec: ToolSpec, preview: ActionPreview) -> str | None:
    code = preview.extra_context.get("code") if spec.name == "run_cell" else None
    return code if isinstance(code, str) else None


__all__ = [
    "PERMISSION_CONTEXT",
    "PERMISSION_PREFIX",
    "forget",
    "granted_context",
    "granted_record",
    "granted_summary",
    "offered",
    "refuse",
    "standing",
]
