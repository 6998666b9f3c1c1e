"""Running the tool calls of one model turn, with approvals, in the order AAEP requires.

Per call: (confirmation if needed: ``awaiting_input`` → ``awaiting.confirmation`` → wait →
out of ``awaiting_input``) → ``tool.invoked`` → the side effect → ``tool.completed``. A
declined or timed-out call never emits ``tool.invoked``. Read-only calls of one turn that need
no approval run concurrently; everything else runs in order. Results come back in block order.
The asking lives in :mod:`.confirmation`, what tools may ask of the session in
:mod:`.tool_requests`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..aaep.broker import ReplyBroker
from ..aaep.events import (
    Summary,
    ToolCompleted,
    ToolInvoked,
)
from ..aaep.ids import new_call_id, safe_tool_name
from ..aaep.redaction import mask_for_model, mask_secrets, redact_arguments
from ..aaep.session import Session
from ..errors import ToolError
from . import grant_gate
from .bulk_changes import BulkChanges
from .confirmation import Confirmations, declined_text, risk_of
from .data_blocks import data_content
from .history import tool_result as _tool_result
from .plan_gate import REFUSED as _PLAN_REFUSED
from .plan_gate import PlanGate
from .tool_requests import ToolRequests
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
        self.control = control
        self.completed_labels: list[str] = []
        self.calls: list[_Call] = []
        self.bulk = BulkChanges()
        """This session's destructive changes so far (bulk ones always ask)."""
        self.confirmations = Confirmations(session, broker, chat, control)
        self.requests = ToolRequests(
            session,
            broker,
            chat,
            policy=lambda: self.policy,
            wait=self.confirmations.wait_for_reply,
            steps=self.completed_labels,
            on_handoff=on_handoff,
        )
        self.plan = (
            PlanGate(
                session,
                broker,
                chat,
                wait=self.confirmations.wait_for_reply,
                ask=self.requests.ask,
            )
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
            _ask=self.requests.ask,
            _progress=self.requests.progress,
            _handoff=self.requests.handoff,
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
        checked_input = False
        try:
            spec.check(use.input)
            checked_input = True
            if spec.conversational:  # answers the model itself (its errors included)
                await self._call_conversational(call, spec, ctx)
                return
            preview = await spec.describe(ctx, use.input)
        except ToolError as error:  # it could not start: listeners hear why
            label = spec.human_label()
            heard = (
                f"Could not {label}: {mask_secrets(str(error))}"
                if checked_input
                else f"The agent gave invalid input to {label}."
            )
            self._fail_visibly(call, spec.name, str(error), heard=heard)
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
                outcome = await self.confirmations.confirm(
                    call.call_id,
                    use.input,
                    spec,
                    preview,
                    standing,
                    policy=self.policy,
                    setting=self._setting(),
                )
                if not outcome.accepted:
                    call.result = _result(use.id, declined_text(outcome, spec), is_error=True)
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
        risk = risk_of(spec, preview)
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

    def _setting(self) -> str:
        """What approved a step on the person's behalf: the plan they approved, or the mode."""
        plan = self.plan
        return (
            "your plan" if plan is not None and plan.phase == "running" else "this chat's setting"
        )


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


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "A tool."
    return line[:4096]


_CELL_ID = re.compile(r"\s*\((?:cell )?id [^)\s]+\)")


def _for_listeners(text: str, spec: ToolSpec) -> str:
    """A tool's error in the user's words: no cell ids, the tool by what it does."""
    told = _CELL_ID.sub("", text)
    return (
        re.sub(rf"\b{re.escape(spec.name)}\b", spec.human_label(), told)
        if "_" in spec.name
        else told
    )


def _working(actor: str, spec: ToolSpec) -> Summary:
    """The state line while a step runs: who is doing what ("Claude Code is reading the
    notebook."), in the user's words, never a tool name."""
    return Summary(
        normal=f"{actor} is {spec.activity()}.",
        terse="Working.",
        detailed=f"{actor} is {spec.activity()}; its result follows.",
    )


def _source(spec: ToolSpec) -> str:
    """The source a tool's result is labelled with in its data block."""
    return f"the result of {spec.human_label()} ({spec.name})"
