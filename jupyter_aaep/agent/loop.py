"""The agent loop: one user request = one AAEP session, driven by the model's ``stop_reason``.

Each turn streams one model message; text deltas become ``output.streaming`` chunks through
the coalescer; what each ``stop_reason`` leads to (run the tools and ask again, send again
after a ``pause_turn``, finish, or fail with a sentence) is one table, ``stop_reasons.py``.
Every ``tool_use`` gets a ``tool_result``, whatever happened to it. The session ends with
exactly one terminal event: completed, errored (with a hint a person can act on) or cancelled (the run's task was cancelled; no tool or output is left open).

Before each model request the conversation is kept inside the context window (``context.py``:
clearing old tool results in batches, the server's context editing where offered, compaction),
with one announcement when that happened; each request carries a moving prompt-cache
breakpoint on its last block. Token usage and its estimated cost are added up per session and
per chat (``usage.py``); an optional chat budget ends the session before the next request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..aaep.broker import ReplyBroker
from ..aaep.coalescer import Boundary, OutputCoalescer
from ..aaep.events import (
    Progress,
    ProgressUpdated,
    SessionCancelled,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    Summary,
)
from ..aaep.ids import safe_tool_name
from ..aaep.redaction import mask_secrets
from ..aaep.session import Session
from ..words import elapsed_words, plural
from ._loop_text import clip as _clip
from ._loop_text import done_phrase as _done_phrase
from ._loop_text import done_terse as _done_terse
from ._loop_text import error_text as _error_text
from ._loop_text import errored_note as _errored_note
from ._loop_text import stopped_note as _stopped_note
from ._loop_text import tool_phrase as _tool_phrase
from ._loop_text import was_declined as _was_declined
from ._loop_text import with_moving_breakpoint as _with_moving_breakpoint
from .chat_context import ChatContext
from .citations import CitationRewriter
from .context import (
    CONTEXT_MANAGEMENT_BETA,
    ContextManager,
    ContextReport,
    ContextSettings,
    ContextTooLarge,
    dedupe_results,
    estimate_tokens,
    parse_too_long,
)
from .control import RunControl
from .dispatch import ToolDispatcher
from .errors import ModelFailure, describe_model_error
from .history import (
    append_assistant,
    append_user_blocks,
    append_user_text,
    close_open_tool_uses,
    close_stopped_request,
)
from .plan_gate import PlanGate
from .prompts import SYSTEM_PROMPT, chat_context
from .stop_reasons import stop_handling
from .tools import ToolRegistry
from .usage import ModelRequest, PriceTable, Usage, dollars

if TYPE_CHECKING:  # loaded with the first model client, never by importing the loop (issue 31)
    import anthropic

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-5-5"


@dataclass
class AgentConfig:
    """Model settings; the server maps its traitlets onto this."""

    model: str = DEFAULT_MODEL
    max_tokens: int = 8192
    max_turns: int = 25
    """Model turns per request before the session stops with a clear message."""
    system_prompt: str = SYSTEM_PROMPT
    extra_instructions: str = ""
    prompt_caching: bool = True
    cache_conversation: bool = True
    """A moving cache breakpoint on the last block of each request, so every turn reads the
    conversation so far from the prompt cache (needs ``prompt_caching``)."""
    output_boundary: Boundary = "sentence"
    context: ContextSettings = field(default_factory=ContextSettings)
    prices: PriceTable = field(default_factory=PriceTable)
    budget_usd: float | None = None
    """Estimated cost at which a chat stops asking the model; ``None`` for no budget."""
    announce_model: str | None = None
    """The model's name, said when the session starts ("Using Claude Sonnet 4.5."): set for
    the first session after the user chose a model."""


UNSAVED_NOTE = (
    "The notebook's latest changes are not on disk yet; Jupyter saves them within seconds."
)


@dataclass
class SessionResult:
    status: Literal["completed", "errored", "cancelled"]
    answer: str
    tool_calls: int
    terminal_event: dict[str, Any] | None
    usage: Usage = field(default_factory=Usage)


@dataclass
class _Run:
    """Mutable bookkeeping of one session."""

    session: Session
    chat: ChatContext
    started_ms: int
    output: OutputCoalescer | None = None
    answers: list[str] = field(default_factory=list)
    tool_labels: list[str] = field(default_factory=list)
    failed_labels: list[str] = field(default_factory=list)
    """Steps that ran (or could not start) and failed; told in the summary so "Done" stays honest."""
    recovered_labels: list[str] = field(default_factory=list)
    """Failed steps whose kind worked later in the request (the agent fixed what failed)."""
    handoff_reason: str | None = None
    dispatcher: ToolDispatcher | None = None
    usage: Usage = field(default_factory=Usage)
    context: ContextManager | None = None
    unsaved: bool = False
    """The notebook could not be saved before the end (it is, moments later, by autosave)."""
    lost: str | None = None
    """The agent's edits another program's write to the file took away (said at the end)."""
    control: RunControl = field(default_factory=RunControl)
    rules_prompt: str = ""
    """The rules files that apply to this notebook, as the system prompt carries them."""

    def close_output(self) -> None:
        if self.output is not None:
            self.output.finish()
            if self.output.text.strip():
                self.answers.append(self.output.text)
            self.output = None


class AgentLoop:
    """Runs sessions against the Messages API with a tool registry and a reply broker."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        registry: ToolRegistry,
        *,
        broker: ReplyBroker,
        config: AgentConfig | None = None,
    ) -> None:
        self.client = client
        self.registry = registry
        self.broker = broker
        self.config = config or AgentConfig()

    async def run(
        self,
        session: Session,
        history: list[dict[str, Any]],
        user_text: str,
        *,
        chat: ChatContext | None = None,
        control: RunControl | None = None,
        attachment: str | None = None,
    ) -> SessionResult:
        """Answer *user_text* in *session*, extending *history* in place.

        *attachment* follows the text in the model's user message but not in the events.
        """
        chat = chat or ChatContext()
        control = control or RunControl()
        run = _Run(session=session, chat=chat, started_ms=session.now_ms(), control=control)
        cfg = self.config
        manager = ContextManager(
            cfg.context, chat.context, model=cfg.model, max_tokens=cfg.max_tokens
        )
        run.context = manager
        session.emit(
            SessionStarted(
                summary=Summary(
                    normal="Started working on your request." + _using(cfg.announce_model),
                    terse="Started." + _using(cfg.announce_model),
                    detailed=f"Started working on your request{_in_notebook(chat)}, "
                    f"with {len(self.registry)} tools available.{_using(cfg.announce_model)}",
                ),
                request_text=mask_secrets(user_text)[:4000],
                requested_by="user",
                tools_available=tuple(self.registry.names()),
            )
        )
        if chat is not None:
            chat.tell_notices(session)
        control.bind(session, self.broker)
        append_user_text(history, user_text if not attachment else f"{user_text}\n\n{attachment}")
        dispatcher = ToolDispatcher(
            self.registry,
            self.broker,
            session,
            chat,
            on_handoff=self._on_handoff(run),
            control=control,
            plan=chat.approval.mode == "plan",
        )
        run.dispatcher = dispatcher
        await self._read_rules(run)
        import anthropic  # already loaded: the client this session uses is the SDK's

        try:
            return await self._turns(run, history, dispatcher)
        except ContextTooLarge as error:
            return self._errored(
                run,
                history,
                ModelFailure("requires_user", "CONTEXT_TOO_LARGE", True, str(error), error.hint),
            )
        except asyncio.CancelledError:
            self._cancelled(run, history, control)
            raise
        except anthropic.AnthropicError as error:
            log.warning("model request failed: %s", error)
            return self._errored(run, history, describe_model_error(error, model=self.config.model))
        except Exception as error:  # keep the session well-formed whatever broke
            log.exception("agent loop failed")
            return self._errored(run, history, describe_model_error(error, model=self.config.model))
        finally:
            self.broker.cancel_session(session.id)
            manager.finish_request()

    # -- turns ---------------------------------------------------------------------------
    async def _turns(
        self, run: _Run, history: list[dict[str, Any]], dispatcher: ToolDispatcher
    ) -> SessionResult:
        session, control = run.session, run.control
        turn = 0
        while turn < (control.max_turns or self.config.max_turns):
            over = self._over_budget(run)
            if over is not None:
                return self._errored(run, history, over)
            await control.checkpoint()  # a safe point: between model turns
            self._steer(run, history)
            session.change_state("thinking")
            message = await self._model_turn(run, history, request_start=turn == 0)
            turn += 1
            handling = stop_handling(message.stop_reason)
            manager = run.context
            assert manager is not None
            manager.grew(
                append_assistant(
                    history, message.content, keep_tool_use=handling.next == "run_tools"
                )
            )
            if handling.next == "run_tools":
                uses = [b for b in message.content if getattr(b, "type", None) == "tool_use"]
                results = await dispatcher.run_all(uses)
                run.tool_labels.extend(dispatcher.completed_labels)
                failed, worked = _outcome_labels(dispatcher)
                for label in worked:
                    if label in run.failed_labels:
                        run.failed_labels.remove(label)
                        run.recovered_labels.append(label)
                run.failed_labels.extend(failed)
                dispatcher.completed_labels.clear()
                if manager.enabled:
                    results = dedupe_results(history, results)
                manager.grew(results)
                append_user_blocks(history, results)
                dispatcher.calls = []  # answered in the history: nothing of this turn is open
                if run.handoff_reason is not None:
                    await self._save(run)
                    return self._completed(
                        run, note=f"Handed control back to you: {run.handoff_reason}"
                    )
                continue
            if handling.next == "send_again":
                continue
            if handling.next == "fail":
                assert handling.failure is not None
                await self._save(run)
                return self._errored(run, history, handling.failure)
            if control.pause_requested:
                await (
                    control.checkpoint()
                )  # paused before the end: guidance sent meanwhile still counts
            if control.queue:
                continue  # guidance that came during the last turn: the model answers it next
            await self._save(run)
            note = (
                handling.note.format(max_tokens=self.config.max_tokens) if handling.note else None
            )
            return self._completed(run, note=note)
        limit = control.max_turns or self.config.max_turns
        return self._errored(
            run,
            history,
            ModelFailure(
                "requires_user",
                "TURN_LIMIT_REACHED",
                True,
                f"Stopped after {limit} model turns, the limit for one request.",
                "The work so far is kept. Send a follow-up such as 'continue' to carry on, "
                "or raise the limit with c.AAEPExtension.max_turns.",
            ),
        )

    def _steer(self, run: _Run, history: list[dict[str, Any]]) -> None:
        """Add the guidance queued since the last request, after any tool results, as steering."""
        taken = run.control.take_guidance()
        if not taken:
            return
        blocks = [{"type": "text", "text": item.message_text()} for item in taken]
        append_user_blocks(history, blocks)
        if run.context is not None:
            run.context.grew(blocks)

    async def _model_turn(
        self, run: _Run, history: list[dict[str, Any]], *, request_start: bool
    ) -> Any:
        """One model request, with the context kept inside the window and the usage counted.

        Retries once the server refuses context editing (then the client clears), and up to
        twice after "prompt is too long" (recalibrated and compacted), so a long chat never dies
        of its length; a request too big on its own raises :class:`ContextTooLarge`.
        """
        manager = run.context
        assert manager is not None
        too_long = 0
        while True:
            # the system prompt and tools, which every request repeats
            static = self._request(run.chat, [], rules=run.rules_prompt, plan=_plan(run))
            fixed = estimate_tokens(static.get("tools") or []) + estimate_tokens(static["system"])
            self._announce(run, manager.prepare(history, fixed, request_start=request_start))
            estimate = manager.estimate(fixed, history)
            edit = manager.server_edit(estimate)
            params = self._request(run.chat, history, rules=run.rules_prompt, plan=_plan(run))
            started = time.monotonic()
            try:
                message = await self._stream_turn(run, params, edit)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._record_request(run, started, error=error)
                import anthropic  # already loaded by the client that raised

                if not isinstance(error, anthropic.BadRequestError):
                    raise
                text = _error_text(error)
                if edit is not None and "context_management" in text:
                    log.info(
                        "the model server does not offer context editing; clearing on this side"
                    )
                    manager.refused()
                    continue
                sizes = parse_too_long(text)
                if sizes is None or too_long >= 2 or not manager.enabled:
                    raise
                too_long += 1
                manager.too_long(sent_estimate=estimate, actual=sizes[0], maximum=sizes[1])
                continue
            if edit is not None:
                manager.accepted()
            one = run.usage.add(message.usage, self.config.prices.for_model(self.config.model))
            run.chat.usage.merge(one)
            self._record_request(
                run,
                started,
                usage=one,
                stop=message.stop_reason,
                tools=sum(getattr(b, "type", None) == "tool_use" for b in message.content),
            )
            manager.observe(
                history,
                sent_estimate=estimate,
                prompt_tokens=one.prompt_tokens,
                edits=getattr(message, "context_management", None),
            )
            return message

    def _record_request(
        self,
        run: _Run,
        started: float,
        *,
        usage: Usage | None = None,
        stop: str | None = None,
        tools: int = 0,
        error: Exception | None = None,
    ) -> None:
        """Report one model request as a step (for the store's per-step records)."""
        failure = (
            describe_model_error(error, model=self.config.model).message
            if error is not None
            else None
        )
        run.chat.usage.request_finished(
            ModelRequest(
                session_id=run.session.id,
                model=self.config.model,
                status="error" if error is not None else "success",
                latency_ms=int((time.monotonic() - started) * 1000),
                usage=usage,
                text=_request_text(stop, tools) if error is None else "The model request failed.",
                error=failure,
            )
        )

    def _announce(self, run: _Run, report: ContextReport) -> None:
        """Tell the user, in one sentence, that earlier context was cleared or summarised."""
        if not report:
            return
        sentence = report.sentence()
        run.session.change_state(
            "compacting_context",
            Summary(normal=sentence, terse="Made room in the conversation.", detailed=sentence),
        )
        run.session.change_state("thinking")

    def _over_budget(self, run: _Run) -> ModelFailure | None:
        budget = self.config.budget_usd
        spent = run.chat.usage.cost_usd
        if budget is None or spent < budget:
            return None
        return ModelFailure(
            "requires_user",
            "BUDGET_REACHED",
            True,
            f"Stopped: this chat has used about {dollars(spent)} of its {dollars(budget)} budget.",
            "The work so far is kept. Start a new chat, or raise the budget with "
            "c.AAEPExtension.chat_budget_usd, then send 'continue'.",
        )

    async def _stream_turn(self, run: _Run, params: dict[str, Any], edit: Any) -> Any:
        session = run.session
        if edit is not None:
            opened: Any = self.client.beta.messages.stream(
                **params, context_management=edit, betas=[CONTEXT_MANAGEMENT_BETA]
            )
        else:
            opened = self.client.messages.stream(**params)
        async with opened as stream:
            async for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    if run.output is None:
                        session.change_state("writing_output")
                        run.output = OutputCoalescer(
                            session,
                            boundary=self.config.output_boundary,
                            rewrite=await self._citations(run),
                        )
                    run.output.feed(event.delta.text)
                elif (
                    event.type == "content_block_start"
                    and event.content_block.type != "text"
                    and run.output is not None
                ):
                    run.close_output()
                    session.change_state("thinking")
            message = await stream.get_final_message()
        run.close_output()
        return message

    async def _citations(self, run: _Run) -> CitationRewriter:
        """The rewriter of this answer's cell citations, with the cells' numbers as it starts."""
        provider = run.chat.services.cell_numbers
        path = run.chat.notebook_path
        numbers: Mapping[str, int] = {}
        if provider is not None and path:
            try:
                numbers = await provider(path)
            except Exception:  # noqa: BLE001 - without numbers a citation reads as a missing cell
                log.warning("the notebook's cell numbers could not be read for citations")
        return CitationRewriter(numbers)

    async def _read_rules(self, run: _Run) -> None:
        """The notebook's rules files into the system prompt; the person hears which apply
        the first time and whenever that changes (never silently, never fatal)."""
        provider = run.chat.services.rules
        path = run.chat.notebook_path
        if provider is None or not path:
            return
        try:
            applied = await provider(path)
        except Exception:  # a rules file must never stop a request
            log.exception("reading the rules files failed")
            return
        run.rules_prompt = applied.prompt_text()
        told = run.chat.context
        if told.rules_told == applied.signature:
            return
        first = told.rules_told is None
        told.rules_told = applied.signature
        sentence = applied.sentence()
        if not sentence or (first and not applied.rules and not applied.problems):
            return
        run.session.emit(
            ProgressUpdated(
                progress=Progress(description=sentence),
                urgency="normal",
                summary=Summary(normal=sentence, terse=sentence, detailed=sentence),
            )
        )

    def _request(
        self,
        chat: ChatContext,
        history: list[dict[str, Any]],
        *,
        rules: str = "",
        plan: PlanGate | None = None,
    ) -> dict[str, Any]:
        cfg = self.config
        # Rules change rarely: they go with the cached system prompt, before the chat's context.
        static = (
            cfg.system_prompt
            + (f"\n{cfg.extra_instructions}" if cfg.extra_instructions else "")
            + rules
        )
        static_block: dict[str, Any] = {"type": "text", "text": static}
        if cfg.prompt_caching:
            static_block["cache_control"] = {"type": "ephemeral"}
        dynamic = chat_context(chat.notebook_path)
        if plan is not None and plan.note():
            dynamic = f"{dynamic}\n{plan.note()}"
        params: dict[str, Any] = {
            "model": cfg.model,
            "max_tokens": cfg.max_tokens,
            "system": [static_block, {"type": "text", "text": dynamic}],
            "messages": _with_moving_breakpoint(history)
            if cfg.prompt_caching and cfg.cache_conversation
            else history,
        }
        if plan is not None:  # one fixed list per phase of the plan (the prompt cache holds)
            params["tools"] = plan.model_tools(self.registry, cache=cfg.prompt_caching)
        elif len(self.registry):
            params["tools"] = self.registry.model_tools(cache=cfg.prompt_caching)
        return params

    def _on_handoff(self, run: _Run) -> Any:
        def record(reason: str) -> None:
            run.handoff_reason = reason

        return record

    # -- endings -------------------------------------------------------------------------
    async def _save(self, run: _Run) -> None:
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

    def _completed(self, run: _Run, *, note: str | None = None) -> SessionResult:
        run.close_output()
        planned = _plan(run)
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

    def _errored(
        self, run: _Run, history: list[dict[str, Any]], failure: ModelFailure
    ) -> SessionResult:
        unfinished = run.output.text if run.output is not None else ""
        self._close_everything(
            run, history, "The session ended with an error before this tool ran."
        )
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

    def _cancelled(self, run: _Run, history: list[dict[str, Any]], control: RunControl) -> None:
        unfinished = run.output.text if run.output is not None else ""
        self._close_everything(run, history, "The user stopped the session before this tool ran.")
        close_stopped_request(history, _stopped_note(control), partial=unfinished)
        self.broker.cancel_session(run.session.id)
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
                    terse="Replaced."
                    if control.reason == "superseded_by_new_request"
                    else "Stopped.",
                    detailed=f"{who} {after} Changes made so far are kept; "
                    f"{_tool_phrase(run.tool_labels) or 'no tools had finished.'} {run.usage.sentence()}",
                ),
            )
        )

    def _close_everything(self, run: _Run, history: list[dict[str, Any]], reason: str) -> None:
        """Leave no output open and no ``tool_use`` unanswered, so the chat can go on."""
        if run.output is not None and not run.session.closed:
            run.close_output()
        if run.dispatcher is not None and history and history[-1]["role"] == "assistant":
            append_user_blocks(history, run.dispatcher.finished_results())
            run.dispatcher.calls = []
        close_open_tool_uses(history, reason)


def _request_text(stop: str | None, tools: int) -> str:
    return stop_handling(stop).step.format(tools=plural(tools, "tool"))


def _outcome_labels(dispatcher: ToolDispatcher) -> tuple[list[str], list[str]]:
    """Labels of this turn's calls that failed and of those that worked. A failure is an error
    result that is not a step the user declined (a declined or unanswered approval is the
    user's choice, not a failure)."""
    failed: list[str] = []
    worked: list[str] = []
    for call in dispatcher.calls:
        result = call.result
        name = call.spec.name if call.spec is not None else ""
        if result is None or _was_declined(result.get("content"), name):
            continue
        label = call.spec.human_label() if call.spec is not None else safe_tool_name(call.use.name)
        (failed if result.get("is_error") else worked).append(label)
    return failed, worked


def _plan(run: _Run) -> PlanGate | None:
    return run.dispatcher.plan if run.dispatcher is not None else None


def _using(model: str | None) -> str:
    return f" Using {model}." if model else ""


def _in_notebook(chat: ChatContext) -> str:
    return f" in {chat.notebook_path}" if chat.notebook_path else ""
