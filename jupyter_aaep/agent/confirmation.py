"""Asking the person before a tool call, and the words for how the answer came.

The confirmation (``awaiting_input`` → ``awaiting.confirmation`` → wait → out of
``awaiting_input``) is one concept apart from running the call: it decides whether a
standing permission or the chat's setting answers at once, offers a permission, reminds
the person as the time runs out, and says who approved or rejected the step.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ..aaep.broker import Outcome, ReplyBroker
from ..aaep.events import AwaitingConfirmation, Progress, ProgressUpdated, RiskLevel, Summary
from ..aaep.ids import new_reply_token
from ..aaep.session import Session
from ..words import duration_words
from . import grant_gate
from .grants import Verdict
from .tools import ActionPreview, ToolSpec

if TYPE_CHECKING:
    from .chat_context import ChatContext
    from .control import RunControl


class Confirmations:
    """The approval requests of one session's tool calls."""

    def __init__(
        self,
        session: Session,
        broker: ReplyBroker,
        chat: ChatContext,
        control: RunControl | None,
    ) -> None:
        self.session = session
        self.broker = broker
        self.chat = chat
        self.control = control

    async def confirm(
        self,
        call_id: str,
        call_input: Any,
        spec: ToolSpec,
        preview: ActionPreview,
        standing: Verdict | None,
        *,
        policy: Any,
        setting: str,
    ) -> Outcome:
        """Ask before one call (or approve it on the person's behalf, said as such)."""
        session = self.session
        risk = risk_of(spec, preview)
        timeout = policy.timeout_for(risk)
        default = policy.default_decision(spec, risk)
        action = preview.action or preview.summary
        consequence = preview.consequence or _default_consequence(spec)
        # Decided before the request goes out, so it is announced as what it is: approved by
        # a standing permission or the chat's setting, never as a question to answer in time.
        grant = standing.grant if standing is not None else None
        automatic = grant is not None or policy.auto_approves(preview)
        token = new_reply_token()
        session.change_state(
            "awaiting_input",
            Summary(
                normal="Approving automatically."
                if automatic
                else f"{_waiting_who(session.actor)} for your approval: {preview.summary}",
                terse="Approving." if automatic else "Approval needed.",
            ),
        )
        extra: dict[str, Any] = {
            "tool_call_id": call_id,
            "tool": spec.name,
            **preview.extra_context,
        }
        if preview.risk_flags:
            extra["risk_flags"] = list(preview.risk_flags)
        if automatic:
            extra["auto_approved"] = True
        if grant is not None:
            extra["granted_by"] = grant_gate.granted_context(grant)
        elif not automatic:
            offers = grant_gate.offered(self.chat, token, spec, call_input, preview)
            if offers:
                extra["permission_offers"] = offers
        flags = f" Warning: {'; '.join(preview.risk_flags)}." if preview.risk_flags else ""
        if grant is not None:
            summary = grant_gate.granted_summary(grant, preview, risk, action)
        elif automatic:
            summary = Summary(
                normal=f"Approved automatically by {setting}: {action}",
                terse=f"Approved automatically: {preview.terse or preview.summary}",
                detailed=f"Approved automatically by {setting}, {risk} risk: {action} {consequence}{flags}",
            )
        else:
            # An outside agent's request says whose it is; our own agent's is the chat's default.
            needed = (
                "Approval needed"
                if session.actor == "The agent"
                else f"Approval needed for {session.actor}"
            )
            summary = Summary(
                normal=f"{needed}, {risk} risk: {action} {consequence}{flags} "
                f"If you do not answer within {duration_words(timeout, short=False)}, it will be {_past(default)}.",
                terse=f"Approve? {preview.terse or preview.summary}",
                detailed=f"{needed}, {risk} risk: {action} {consequence}{flags} "
                f"If nobody answers within {duration_words(timeout, short=False)}, the default is to {default} it.",
            )
        event = session.emit(
            AwaitingConfirmation(
                action=action,
                consequence=consequence,
                reply_token=token,
                timeout_seconds=timeout,
                default_decision=default,
                risk_level=risk,
                irreversible=spec.irreversible,
                reversibility="irreversible" if spec.irreversible else "reversible",
                allowed_replies=("accept", "reject"),
                extra_context=extra,
                summary=summary,
            )
        )
        request = self.broker.open_confirmation(event)
        if automatic:
            decided_by = f"grant:{grant.id}" if grant is not None else "auto:configured_policy"
            self.broker.resolve(request, "accept", decided_by=decided_by)
        countdown = (
            asyncio.ensure_future(self._countdown(request, timeout))
            if timeout > 60 and not automatic
            else None
        )
        try:
            outcome = await self.wait_for_reply(request)
        finally:
            if countdown is not None:
                countdown.cancel()
            grant_gate.forget(self.chat, token)
        if outcome.accepted and grant is not None:
            grant_gate.granted_record(session, grant, token, preview)
        elif outcome.accepted:
            # Short: the tool.invoked that follows says what runs.
            how = _approved_how(outcome, automatic=automatic)
            if automatic and setting != "this chat's setting":
                how = f"Approved automatically by {setting}."
            session.change_state(
                "calling_tool",
                Summary(
                    normal=how,
                    # a person's or the setting's approval is "Approved."; a program's keeps its name
                    terse=how
                    if outcome.origin is not None and outcome.origin.kind in ("client", "program")
                    else how.split(" by ")[0].rstrip(".") + ".",
                    detailed=f"{how} {preview.summary}",
                ),
            )
        else:
            why = _rejected_why(outcome)
            session.change_state(
                "thinking",
                Summary(normal=f"{why}: {preview.summary} It will not happen.", terse="Rejected."),
            )
        return outcome

    async def wait_for_reply(self, request: Any) -> Outcome:
        """Wait for the reply; a pause meanwhile takes effect at once, and a reply that came
        during the pause acts only after the resume (the session stays paused until then)."""
        control = self.control
        if control is None:
            return await self.broker.wait(request)
        control.waiting_for_reply = True
        try:
            control.pause_if_requested()
            outcome = await self.broker.wait(request)
        finally:
            control.waiting_for_reply = False
        await control.until_running()
        return outcome

    async def _countdown(self, request: Any, timeout: int) -> None:
        """Progress reminders at half and a tenth of the approval time left (§6.4.2); none
        while paused (the deadline moves on by the paused time, so the wait is recomputed)."""
        for fraction in (0.5, 0.1):
            while True:
                if self.control is not None:
                    await self.control.until_running()
                wait = (request.deadline.timestamp() - time.time()) - timeout * fraction
                if wait <= 0 or request.resolved:
                    break
                await asyncio.sleep(wait)
            if request.resolved or self.session.closed:
                return
            left = duration_words(int(timeout * fraction), short=False)
            self.session.emit(
                ProgressUpdated(
                    progress=Progress(
                        percent=round(100 * (1 - fraction)),
                        description=f"{left} left to approve or reject.",
                    ),
                    summary=Summary(
                        normal=f"Still waiting for your approval: {left} left.",
                        terse=f"{left} left.",
                    ),
                )
            )


def risk_of(spec: ToolSpec, preview: ActionPreview) -> RiskLevel:
    order = {"low": 0, "medium": 1, "high": 2}
    chosen = preview.risk_level or spec.risk_level
    return chosen if order[chosen] >= order[spec.risk_level] else spec.risk_level


def _default_consequence(spec: ToolSpec) -> str:
    if spec.irreversible:
        return "This cannot be undone."
    return "This changes your work; it can be undone."


def declined_text(outcome: Outcome, spec: ToolSpec) -> str:
    if outcome.resolution == "reply" and not spec.irreversible:
        # A change under review ("ask before every change"): nothing was touched.
        return (
            f"The user declined: they rejected this change, so {spec.name} was not applied and nothing "
            "was changed. Do not make the same change another way; ask what they would prefer."
        )
    if outcome.resolution == "reply":
        return f"The user declined: {spec.name} was not run. Do not try to achieve the same effect another way; ask what they prefer."
    if outcome.resolution == "timeout":
        return f"The user did not answer in time, so {spec.name} was not run (the default for this action is to reject)."
    if outcome.resolution == "unsubscribed":
        return (
            f"{spec.name} was not run: nobody was connected to approve it (no panel or listener "
            "was open). Tell the user what you wanted to do and ask them to open the panel."
        )
    return f"{spec.name} was not run: the approval request was withdrawn."


def _past(decision: str) -> str:
    return "approved" if decision == "accept" else "rejected"


_REJECTED_WHY = {
    "reply": "You rejected it",
    "timeout": "No answer in time, so it was rejected",
    "unsubscribed": "Nobody was connected to answer it, so it was rejected",
    "cancelled": "The request was withdrawn, so it was rejected",
}
"""How a confirmation that did not go ahead ended, by how its request was resolved."""

_APPROVED_BY_ORIGIN = {
    "panel": "Approved in the panel.",
    "notebook": "Approved from the notebook.",
    "program": "Approved by a program using your Jupyter login.",
    "policy": "Approved automatically by this chat's setting.",
}
"""Where an approval came from, as listeners hear it (a named client: "Approved by <name>.")."""


def _rejected_why(outcome: Outcome) -> str:
    """Who or what turned a confirmation down, as the start of a sentence."""
    origin = outcome.origin
    if outcome.resolution != "reply" or origin is None or origin.is_person:
        return _REJECTED_WHY.get(outcome.resolution, "You rejected it")
    if origin.kind == "client":
        return f"{origin.name} rejected it"
    return "A program using your Jupyter login rejected it"


def _waiting_who(actor: str) -> str:
    return "Waiting" if actor == "The agent" else f"{actor} is waiting"


def _approved_how(outcome: Outcome, *, automatic: bool) -> str:
    """Where an approval came from, as listeners hear it: from the server's own knowledge of
    the path the answer took, never from what the answer says about itself."""
    if automatic:
        return _APPROVED_BY_ORIGIN["policy"]
    if outcome.resolution != "reply":
        return "No answer in time; going ahead, as the default allows."
    origin = outcome.origin
    if origin is None:
        return "Approved."
    if origin.kind == "client":
        return f"Approved by {origin.name}."
    return _APPROVED_BY_ORIGIN[origin.kind]
