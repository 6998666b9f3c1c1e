"""What a running tool may ask of the session: a question, progress, a hand-off.

A tool reaches these through its :class:`~.tools.ToolContext`; each becomes AAEP events
in the person's words (``awaiting.clarification``, ``progress.updated``,
``handoff.requested``), with secrets masked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aaep.broker import Outcome, ReplyBroker
from ..aaep.events import (
    AwaitingClarification,
    Choice,
    HandoffRequested,
    Progress,
    ProgressUpdated,
    Summary,
)
from ..aaep.ids import new_reply_token
from ..aaep.redaction import mask_secrets
from ..aaep.session import Session
from ..words import duration_words

if TYPE_CHECKING:
    from .chat_context import ChatContext


@dataclass
class ToolRequests:
    """The services one session offers its tools."""

    session: Session
    broker: ReplyBroker
    chat: ChatContext
    policy: Callable[[], Any]
    """The approval policy in force now (a plan changes it as it runs)."""
    wait: Callable[[Any], Awaitable[Outcome]]
    steps: list[str]
    """The labels of the steps finished so far (the dispatcher's list, told in a hand-off)."""
    on_handoff: Callable[[str], None]

    async def ask(
        self, question: str, *, choices: list[str] | None, context: str | None, default: str | None
    ) -> Any:
        session = self.session
        back_to = session.state if session.state != "awaiting_input" else "thinking"
        session.change_state(
            "awaiting_input",
            Summary(normal="Waiting for your answer to a question.", terse="Question for you."),
        )
        options = tuple(dict.fromkeys(c for c in (choices or []) if c))[:32]
        kinds = ("multiple_choice", "freetext") if len(options) >= 2 else ("freetext",)
        timeout = self.policy().clarification_timeout
        shown_question = mask_secrets(question)
        listed = f" Choices: {', '.join(options)}." if len(options) >= 2 else ""
        event = session.emit(
            AwaitingClarification(
                question=shown_question,
                reply_token=new_reply_token(),
                timeout_seconds=timeout,
                accepted_response_kinds=kinds,  # type: ignore[arg-type]
                choices=tuple(Choice(value=o, label=o) for o in options)
                if len(options) >= 2
                else None,
                context=mask_secrets(context)[:4096] if context else None,
                default_response=default,
                summary=Summary(
                    normal=f"Question for you: {shown_question}{listed}",
                    terse="Question for you.",
                    detailed=f"The agent asks: {shown_question}{listed} It waits {duration_words(timeout, short=False)} for your answer.",
                ),
            )
        )
        outcome = await self.wait(self.broker.open_clarification(event))
        answered = outcome.resolution == "reply"
        session.change_state(
            back_to,
            Summary(
                normal="Thanks, got your answer."
                if answered
                else "No answer in time; the agent goes on without it.",
                terse="Answered." if answered else "No answer.",
            ),
        )
        return outcome.value

    def progress(
        self,
        description: str,
        *,
        percent: float | None,
        step: int | None,
        total_steps: int | None,
        eta_seconds: float | None = None,
        announce: bool | None = None,
        summary: str | None = None,
    ) -> None:
        if self.session.closed:
            return
        said = mask_secrets(summary or description)
        self.session.emit(
            ProgressUpdated(
                progress=Progress(
                    percent=percent,
                    step=step,
                    total_steps=total_steps,
                    description=mask_secrets(description)[:1000],
                ),
                summary=Summary(normal=said),
                eta_ms=None if eta_seconds is None else min(int(eta_seconds * 1000), 86_400_000),
                urgency=None if announce is None else ("normal" if announce else "background"),
            )
        )

    async def handoff(self, reason: str, *, needs: str | None) -> None:
        session = self.session
        session.change_state(
            "handing_off", Summary(normal="Handing control back to you.", terse="Handing off.")
        )
        shown = mask_secrets(reason)
        need_text = f" It needs: {mask_secrets(needs)}." if needs else ""
        session.emit(
            HandoffRequested(
                reason=shown,
                target_kind="human",
                urgency_for_handoff="medium",
                packaged_context={
                    k: v
                    for k, v in {
                        "notebook_path": self.chat.notebook_path,
                        "needs": mask_secrets(needs) if needs else None,
                        "tools_used": list(self.steps),
                    }.items()
                    if v
                },
                summary=Summary(
                    normal=f"The agent hands control back to you: {shown}{need_text}",
                    terse="Your turn: the agent needs you.",
                ),
            )
        )
        self.on_handoff(shown)
