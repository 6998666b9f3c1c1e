"""One model request of a session: built, kept inside the context window, streamed, counted.

The request carries the system prompt (with the notebook's rules files), the chat's context
and a moving prompt-cache breakpoint; its text streams through the coalescer as
``output.streaming``; its usage and cost are added to the session and the chat, and each
request is reported as a step for the store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..aaep.coalescer import OutputCoalescer
from ..aaep.events import Progress, ProgressUpdated, Summary
from ..words import plural
from ._loop_text import error_text as _error_text
from ._loop_text import with_moving_breakpoint as _with_moving_breakpoint
from .chat_context import ChatContext
from .citations import CitationRewriter
from .config import AgentConfig
from .context import CONTEXT_MANAGEMENT_BETA, ContextReport, estimate_tokens, parse_too_long
from .errors import describe_model_error
from .plan_gate import PlanGate
from .prompts import chat_context
from .run_state import Run
from .stop_reasons import stop_handling
from .tools import ToolRegistry
from .usage import ModelRequest, Usage

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)


class ModelTurns:
    """Sends a session's requests to the Messages API."""

    def __init__(
        self, client: anthropic.AsyncAnthropic, registry: ToolRegistry, config: AgentConfig
    ) -> None:
        self.client = client
        self.registry = registry
        self.config = config

    async def request(self, run: Run, history: list[dict[str, Any]], *, request_start: bool) -> Any:
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
            static = self._request(run.chat, [], rules=run.rules_prompt, plan=run.plan)
            fixed = estimate_tokens(static.get("tools") or []) + estimate_tokens(static["system"])
            self._announce(run, manager.prepare(history, fixed, request_start=request_start))
            estimate = manager.estimate(fixed, history)
            edit = manager.server_edit(estimate)
            params = self._request(run.chat, history, rules=run.rules_prompt, plan=run.plan)
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
        run: Run,
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

    def _announce(self, run: Run, report: ContextReport) -> None:
        """Tell the user, in one sentence, that earlier context was cleared or summarised."""
        if not report:
            return
        sentence = report.sentence()
        run.session.change_state(
            "compacting_context",
            Summary(normal=sentence, terse="Made room in the conversation.", detailed=sentence),
        )
        run.session.change_state("thinking")

    async def _stream_turn(self, run: Run, params: dict[str, Any], edit: Any) -> Any:
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

    async def _citations(self, run: Run) -> CitationRewriter:
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

    async def read_rules(self, run: Run) -> None:
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


def _request_text(stop: str | None, tools: int) -> str:
    return stop_handling(stop).step.format(tools=plural(tools, "tool"))
