"""Running the tool calls of one model turn, with approvals, in the order AAEP requires.

Per call: (confirmation if needed: ``awaiting_input`` → ``awaiting.confirmation`` → wait →
out of ``awaiting_input``) → ``tool.invoked`` → the side effect → ``tool.completed``. A
declined or timed-out call never emits ``tool.invoked``. Read-only calls of one turn that need
no approval run concurrently; everything else runs in order. Results come back in block order.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..aaep.broker import Outcome, ReplyBroker
from ..aaep.events import (
    AwaitingClarification,
    AwaitingConfirmation,
    Choice,
    HandoffRequested,
    Progress,
    ProgressUpdated,
    RiskLevel,
    Summary,
    ToolCompleted,
    ToolInvoked,
)
from ..aaep.ids import new_call_id, new_reply_token, safe_tool_name
from ..aaep.redaction import mask_for_model, mask_secrets, redact_arguments
from ..aaep.session import Session
from ..errors import ToolError
from ..words import duration_words
from . import grant_gate
from .bulk_changes import BulkChanges
from .data_blocks import data_content
from .grants import Verdict
from .history import tool_result as _tool_result
from .plan_gate import REFUSED as _PLAN_REFUSED
from .plan_gate import PlanGate
from .tools import (
    ActionPreview,
    StaleApproval,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolSpec,
)

if TYPE_CHECKING:
    from .chat_context import ChatContext
    from .control import RunControl

log = logging.getLogger(__name__)

MAX_APPROVAL_ROUNDS = 3


@dataclass
class _Call:
    use: Any
    """The model's ``tool_use`` block."""
    spec: ToolSpec | None
    call_id: str = field(default_factory=new_call_id)
    result: dict[str, Any] | None = None

    @property
    def concurrent(self) -> bool:
        spec = self.spec
        return bool(
            spec and spec.read_only and not spec.conversational and not spec.require_confirmation
        )


class ToolDispatcher:
    """Executes tool calls for one session."""

    def __init__(
        self,
        registry: ToolRegistry,
        broker: ReplyBroker,
        session: Session,
        chat: ChatContext,
        *,
        on_handoff: Callable[[str], None],
        control: RunControl | None = None,
        plan: bool = False,
    ) -> None:
        self.registry = registry
        self.broker = broker
        self.session = session
        self.chat = chat
        self.on_handoff = on_handoff
        self.control = control
        self.completed_labels: list[str] = []
        self.calls: list[_Call] = []
        self.bulk = BulkChanges()
        """This session's destructive changes so far (bulk ones always ask)."""
        self.plan = (
            PlanGate(session, broker, chat, wait=self._wait_for_reply, ask=self._ask)
            if plan
            else None
        )
        """The request's plan in plan mode (the built-in agent's requests only)."""

    @property
    def policy(self) -> Any:
        if self.plan is not None:
            return self.plan.policy(self.chat.approval)
        return self.chat.approval

    def _spec(self, name: str) -> ToolSpec | None:
        found = self.plan.tool(name) if self.plan is not None else None
        return found or self.registry.get(name)

    async def run_all(self, uses: Sequence[Any]) -> list[dict[str, Any]]:
        self.calls = [_Call(use, self._spec(use.name)) for use in uses]
        index = 0
        while index < len(self.calls):
            if self.control is not None:
                await self.control.checkpoint()  # a safe point: between tools
            group = [self.calls[index]]
            if group[0].concurrent:
                while (
                    index + len(group) < len(self.calls)
                    and self.calls[index + len(group)].concurrent
                ):
                    group.append(self.calls[index + len(group)])
            if len(group) == 1:
                await self._run(group[0])
                if self.plan is not None:  # a step of a running plan that failed stops and asks
                    await self.plan.after_call(group[0].spec, group[0].result)
            else:
                await asyncio.gather(*(self._run(call) for call in group))
            index += len(group)
        return [call.result for call in self.calls if call.result is not None]

    def finished_results(self) -> list[dict[str, Any]]:
        """Results of calls that already finished (kept when a session stops mid-turn)."""
        return [call.result for call in self.calls if call.result is not None]

    # -- one call -------------------------------------------------------------------------
    async def _run(self, call: _Call) -> None:
        use, spec = call.use, call.spec
        ctx = ToolContext(
            tool_call_id=call.call_id,
            chat_id=self.chat.chat_id,
            session_id=self.session.id,
            notebook_path=self.chat.notebook_path,
            reader=self.chat.reader,
            services=self.chat.services,
            _ask=self._ask,
            _progress=self._progress,
            _handoff=self._handoff,
        )
        if spec is None:
            available = ", ".join(self.registry.names()) or "none"
            self._fail_visibly(
                call,
                safe_tool_name(use.name),
                f"There is no tool named {use.name}. Available tools: {available}.",
                heard=f"The agent asked for a tool that does not exist: {safe_tool_name(use.name)}.",
            )
            return
        if self.plan is not None and not self.plan.allows(spec):
            # Refused before anything is described or asked: the model was never offered it.
            call.result = _result(use.id, _PLAN_REFUSED, is_error=True)
            return
        try:
            spec.check(use.input)
        except ToolError as error:
            self._fail_visibly(
                call,
                spec.name,
                str(error),
                heard=f"The agent gave invalid input to {spec.human_label()}.",
            )
            return
        if spec.conversational:
            await self._call_conversational(call, spec, ctx)
            return
        try:
            preview = await spec.describe(ctx, use.input)
        except ToolError as error:
            self._fail_visibly(
                call,
                spec.name,
                str(error),
                heard=f"Could not {spec.human_label()}: {mask_secrets(str(error))}",
            )
            return
        checked = self.bulk.check(preview)
        bulk_flags, preview = checked.risk_flags[len(preview.risk_flags) :], checked
        for _round in range(MAX_APPROVAL_ROUNDS):
            ctx.approved_fingerprint = None
            standing = grant_gate.standing(self.chat, spec, use.input, preview)  # grants
            if standing is not None and standing.denied:
                text = grant_gate.refuse(self.session, standing.grant, preview)
                call.result = _result(use.id, text, is_error=True)
                return
            if self.policy.needs_confirmation(spec, preview):
                outcome = await self._confirm(call, spec, preview, standing)
                if not outcome.accepted:
                    call.result = _result(use.id, _declined_text(outcome, spec), is_error=True)
                    return
                ctx.approved_fingerprint = preview.fingerprint
            try:
                await self._invoke(call, spec, preview, ctx)
                return
            except StaleApproval:
                # A fresh id: the retried invocation is a new one for listeners and the checker.
                call.call_id = ctx.tool_call_id = new_call_id()
                preview = await spec.describe(ctx, use.input)
                if bulk_flags:  # still a bulk change: it asks again
                    preview = replace(
                        preview,
                        risk_flags=(*preview.risk_flags, *bulk_flags),
                        requires_confirmation=True,
                    )
        call.result = _result(
            use.id,
            "Not run: the code kept changing while waiting for approval. Ask the user what to do.",
            is_error=True,
        )

    async def _invoke(
        self, call: _Call, spec: ToolSpec, preview: ActionPreview, ctx: ToolContext
    ) -> None:
        session = self.session
        session.change_state("calling_tool", _working(session.actor, spec), routine=True)
        risk = _risk(spec, preview)
        session.emit(
            ToolInvoked(
                tool=spec.name,
                tool_call_id=call.call_id,
                description=_first_line(spec.description),
                args_summary=preview.args_summary or redact_arguments(call.use.input).summary(),
                risk_level=risk,
                irreversible=spec.irreversible,
                summary=Summary(
                    normal=preview.summary, terse=preview.terse, detailed=preview.detail
                ),
            )
        )
        started = time.monotonic()
        try:
            result = await spec.call(ctx, call.use.input)
        except StaleApproval:
            self._complete(
                call,
                spec,
                started,
                "error",
                "Not run: the code changed after it was approved. Asking again.",
            )
            raise
        except ToolError as error:
            await self._edits_stored()
            self._complete(call, spec, started, "error", str(error))
            call.result = _result(
                call.use.id, data_content(_source(spec), str(error)), is_error=True
            )
            return
        except asyncio.CancelledError:
            self._complete(call, spec, started, "error", "Stopped before it finished.")
            raise
        except Exception as error:
            log.exception("tool %s failed", spec.name)
            message = f"{spec.name} failed unexpectedly: {type(error).__name__}: {error}"
            await self._edits_stored()
            self._complete(call, spec, started, "error", message)
            call.result = _result(call.use.id, message, is_error=True)
            return
        await self._edits_stored()
        status = "error" if result.is_error else "success"
        # A tool that ran and failed (a cell that raised) is a failed step for listeners too.
        reason = None
        if result.is_error:
            reason = result.error_message or result.summary or "The tool reported an error."
        self._complete(call, spec, started, status, reason, result)
        # What a tool brings back (files, cells, outputs, variables) is data, never instructions.
        call.result = _result(
            call.use.id, data_content(_source(spec), result.content), is_error=result.is_error
        )

    async def _edits_stored(self) -> None:
        """A tool's completion is told only once the edits it made are in the chat store."""
        if self.chat.edits_stored is not None:
            await self.chat.edits_stored()

    def _complete(
        self,
        call: _Call,
        spec: ToolSpec,
        started: float,
        status: str,
        error: str | None,
        result: ToolResult | None = None,
    ) -> None:
        if self.session.state != "calling_tool":
            self.session.change_state("calling_tool")
        label = spec.human_label()
        # The error text is written for the model (ids, tool names); listeners get it in
        # their words (docs/NARRATION.md).
        told = _for_listeners(error, spec) if error else None
        if result is not None and result.summary:
            heard = mask_secrets(result.summary)  # a kernel or MCP tool writes its own summary
        elif status == "success":
            heard = f"Finished: {label}."
        else:
            heard = f"{label.capitalize()} failed: {mask_secrets(told or 'no details')}"
        self.session.emit(
            ToolCompleted(
                tool=spec.name,
                status=status,  # type: ignore[arg-type]
                tool_call_id=call.call_id,
                duration_ms=min(int((time.monotonic() - started) * 1000), 86_400_000),
                error_message=mask_secrets(told)[:4000] if told else None,
                summary=Summary(
                    normal=heard,
                    terse=mask_secrets(result.terse)
                    if result is not None and result.terse
                    else ("Done." if status == "success" else "Failed."),
                    detailed=mask_secrets(result.detail)
                    if result is not None and result.detail
                    else None,
                ),
            )
        )
        if status == "success":
            self.completed_labels.append(label)

    def _fail_visibly(self, call: _Call, tool: str, message: str, *, heard: str) -> None:
        """A call that cannot start still gets a paired invoked/completed, so listeners hear it."""
        session = self.session
        session.change_state("calling_tool")
        session.emit(
            ToolInvoked(
                tool=tool,
                tool_call_id=call.call_id,
                summary=Summary(normal=heard),
                risk_level="low",
                irreversible=False,
            )
        )
        session.emit(
            ToolCompleted(
                tool=tool,
                status="error",
                tool_call_id=call.call_id,
                duration_ms=0,
                error_message=mask_secrets(message)[:4000],
                summary=Summary(normal=heard, terse="Tool failed."),
            )
        )
        call.result = _result(call.use.id, message, is_error=True)

    async def _call_conversational(self, call: _Call, spec: ToolSpec, ctx: ToolContext) -> None:
        try:
            result = await spec.call(ctx, call.use.input)
        except ToolError as error:
            call.result = _result(call.use.id, str(error), is_error=True)
            return
        call.result = _result(call.use.id, result.content, is_error=result.is_error)

    # -- approval ---------------------------------------------------------------------------
    async def _confirm(
        self, call: _Call, spec: ToolSpec, preview: ActionPreview, standing: Verdict | None = None
    ) -> Outcome:
        session, policy = self.session, self.policy
        risk = _risk(spec, preview)
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
            "tool_call_id": call.call_id,
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
            offer = grant_gate.offered(self.chat, token, spec, call.use.input, preview)
            if offer is not None:
                extra["permission_offer"] = offer
        flags = f" Warning: {'; '.join(preview.risk_flags)}." if preview.risk_flags else ""
        if grant is not None:
            summary = grant_gate.granted_summary(grant, preview, risk, action)
        elif automatic:
            summary = Summary(
                normal=f"Approved automatically by {self._setting()}: {action}",
                terse=f"Approved automatically: {preview.terse or preview.summary}",
                detailed=f"Approved automatically by {self._setting()}, {risk} risk: {action} {consequence}{flags}",
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
            outcome = await self._wait_for_reply(request)
        finally:
            if countdown is not None:
                countdown.cancel()
            grant_gate.forget(self.chat, token)
        if outcome.accepted and grant is not None:
            grant_gate.granted_record(session, grant, token, preview)
        elif outcome.accepted:
            # Short: the tool.invoked that follows says what runs.
            how = _approved_how(outcome, automatic=automatic)
            if automatic and self._setting() != "this chat's setting":
                how = f"Approved automatically by {self._setting()}."
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

    def _setting(self) -> str:
        """What approved a step on the person's behalf: the plan they approved, or the mode."""
        plan = self.plan
        return (
            "your plan" if plan is not None and plan.phase == "running" else "this chat's setting"
        )

    async def _wait_for_reply(self, request: Any) -> Outcome:
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

    # -- services offered to tools ------------------------------------------------------------
    async def _ask(
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
        timeout = self.policy.clarification_timeout
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
        outcome = await self._wait_for_reply(self.broker.open_clarification(event))
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

    def _progress(
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

    async def _handoff(self, reason: str, *, needs: str | None) -> None:
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
                        "tools_used": list(self.completed_labels),
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


def _result(
    tool_use_id: str, content: str | list[dict[str, Any]], *, is_error: bool
) -> dict[str, Any]:
    """A ``tool_result`` for the model, with credentials masked (AAEP §10).

    Tool output is what a cell printed, an error's text, a file's lines: a key printed by
    code must not travel to the model provider. The masking is the model-facing one
    (:func:`mask_for_model`): hashes and ``max_tokens = 100`` stay readable, or the model
    could not work on the code it reads. Image blocks pass unchanged.
    """
    return _tool_result(tool_use_id, _masked(content), is_error=is_error)


def _masked(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return mask_for_model(content)[0]
    return [
        {**block, "text": mask_for_model(block["text"])[0]}
        if block.get("type") == "text" and isinstance(block.get("text"), str)
        else block
        for block in content
    ]


def _risk(spec: ToolSpec, preview: ActionPreview) -> RiskLevel:
    order = {"low": 0, "medium": 1, "high": 2}
    chosen = preview.risk_level or spec.risk_level
    return chosen if order[chosen] >= order[spec.risk_level] else spec.risk_level


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "A tool."
    return line[:4096]


def _default_consequence(spec: ToolSpec) -> str:
    if spec.irreversible:
        return "This cannot be undone."
    return "This changes your work; it can be undone."


def _declined_text(outcome: Outcome, spec: ToolSpec) -> str:
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


_CELL_ID = re.compile(r"\s*\((?:cell )?id [^)\s]+\)")


def _for_listeners(text: str, spec: ToolSpec) -> str:
    """A tool's error in the user's words: no cell ids, the tool by what it does."""
    told = _CELL_ID.sub("", text)
    return (
        re.sub(rf"\b{re.escape(spec.name)}\b", spec.human_label(), told)
        if "_" in spec.name
        else told
    )


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


def _working(actor: str, spec: ToolSpec) -> Summary:
    """The state line while a step runs: who is doing what ("Claude Code is reading the
    notebook."), in the user's words, never a tool name."""
    return Summary(
        normal=f"{actor} is {spec.activity()}.",
        terse="Working.",
        detailed=f"{actor} is {spec.activity()}; its result follows.",
    )


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


def _source(spec: ToolSpec) -> str:
    """The source a tool's result is labelled with in its data block."""
    return f"the result of {spec.human_label()} ({spec.name})"
