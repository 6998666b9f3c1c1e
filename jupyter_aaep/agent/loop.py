"""The agent loop: one user request = one AAEP session, driven by the model's ``stop_reason``.

Each turn streams one model message; text deltas become ``output.streaming`` chunks through
the coalescer, and the loop continues only while ``stop_reason == "tool_use"`` (or
``pause_turn``). Every ``tool_use`` gets a ``tool_result``, whatever happened to it. The
session ends with exactly one terminal event: completed, errored (with a hint a person can
act on) or cancelled (the run's task was cancelled; no tool or output is left open).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic

from ..aaep.broker import ReplyBroker
from ..aaep.coalescer import Boundary, OutputCoalescer
from ..aaep.events import (
    CancelledBy,
    SessionCancelled,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    Summary,
)
from ..aaep.redaction import mask_secrets
from ..aaep.session import Session
from .approval import ApprovalPolicy
from .dispatch import ToolDispatcher
from .errors import ModelFailure, describe_model_error
from .history import append_assistant, append_user_blocks, append_user_text, close_open_tool_uses
from .prompts import SYSTEM_PROMPT, chat_context
from .tools import ToolRegistry

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
    output_boundary: Boundary = "sentence"


@dataclass
class ChatContext:
    """What the loop knows about the chat a session runs in."""

    chat_id: str | None = None
    notebook_path: str | None = None
    services: Mapping[str, Any] = field(default_factory=dict)
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)


@dataclass
class RunControl:
    """How a session is stopped from outside: set the reason, then cancel the run's task."""

    cancelled_by: CancelledBy = "user"
    reason: str = "stopped_by_user"


@dataclass
class SessionResult:
    status: Literal["completed", "errored", "cancelled"]
    answer: str
    tool_calls: int
    terminal_event: dict[str, Any] | None


@dataclass
class _Run:
    """Mutable bookkeeping of one session."""

    session: Session
    chat: ChatContext
    started_ms: int
    output: OutputCoalescer | None = None
    answers: list[str] = field(default_factory=list)
    tool_labels: list[str] = field(default_factory=list)
    handoff_reason: str | None = None
    dispatcher: ToolDispatcher | None = None

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
    ) -> SessionResult:
        """Answer *user_text* in *session*, extending *history* in place."""
        chat = chat or ChatContext()
        control = control or RunControl()
        run = _Run(session=session, chat=chat, started_ms=session.now_ms())
        session.emit(
            SessionStarted(
                summary=Summary(
                    normal="Started working on your request.",
                    terse="Started.",
                    detailed=f"Started working on your request{_in_notebook(chat)}, "
                    f"with {len(self.registry)} tools available.",
                ),
                request_text=mask_secrets(user_text)[:4000],
                requested_by="user",
                tools_available=tuple(self.registry.names()),
            )
        )
        append_user_text(history, user_text)
        dispatcher = ToolDispatcher(self.registry, self.broker, session, chat, on_handoff=self._on_handoff(run))
        run.dispatcher = dispatcher
        try:
            return await self._turns(run, history, dispatcher)
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

    # -- turns ---------------------------------------------------------------------------
    async def _turns(self, run: _Run, history: list[dict[str, Any]], dispatcher: ToolDispatcher) -> SessionResult:
        session = run.session
        for _turn in range(self.config.max_turns):
            session.change_state("thinking")
            message = await self._stream_turn(run, history)
            stop = message.stop_reason
            append_assistant(history, message.content, keep_tool_use=stop == "tool_use")
            if stop == "tool_use":
                uses = [b for b in message.content if getattr(b, "type", None) == "tool_use"]
                results = await dispatcher.run_all(uses)
                run.tool_labels.extend(dispatcher.completed_labels)
                dispatcher.completed_labels.clear()
                append_user_blocks(history, results)
                if run.handoff_reason is not None:
                    return self._completed(run, note=f"Handed control back to you: {run.handoff_reason}")
                continue
            if stop == "pause_turn":
                continue
            if stop == "max_tokens":
                return self._completed(
                    run,
                    note=f"The answer was cut off at the length limit of {self.config.max_tokens} tokens. "
                    "Ask me to continue if you need the rest.",
                )
            if stop == "refusal":
                return self._completed(run, note="The model declined this request. Try rephrasing it.")
            return self._completed(run)
        return self._errored(
            run,
            history,
            ModelFailure(
                "requires_user",
                "TURN_LIMIT_REACHED",
                True,
                f"Stopped after {self.config.max_turns} model turns, the limit for one request.",
                "The work so far is kept. Send a follow-up such as 'continue' to carry on, "
                "or raise the limit with c.AAEPExtension.max_turns.",
            ),
        )

    async def _stream_turn(self, run: _Run, history: list[dict[str, Any]]) -> Any:
        session = run.session
        async with self.client.messages.stream(**self._request(run.chat, history)) as stream:
            async for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    if run.output is None:
                        session.change_state("writing_output")
                        run.output = OutputCoalescer(session, boundary=self.config.output_boundary)
                    run.output.feed(event.delta.text)
                elif event.type == "content_block_start" and event.content_block.type != "text":
                    if run.output is not None:
                        run.close_output()
                        session.change_state("thinking")
            message = await stream.get_final_message()
        run.close_output()
        return message

    def _request(self, chat: ChatContext, history: list[dict[str, Any]]) -> dict[str, Any]:
        cfg = self.config
        static = cfg.system_prompt + (f"\n{cfg.extra_instructions}" if cfg.extra_instructions else "")
        static_block: dict[str, Any] = {"type": "text", "text": static}
        if cfg.prompt_caching:
            static_block["cache_control"] = {"type": "ephemeral"}
        params: dict[str, Any] = {
            "model": cfg.model,
            "max_tokens": cfg.max_tokens,
            "system": [static_block, {"type": "text", "text": chat_context(chat.notebook_path)}],
            "messages": history,
        }
        if len(self.registry):
            params["tools"] = self.registry.model_tools(cache=cfg.prompt_caching)
        return params

    def _on_handoff(self, run: _Run) -> Any:
        def record(reason: str) -> None:
            run.handoff_reason = reason

        return record

    # -- endings -------------------------------------------------------------------------
    def _completed(self, run: _Run, *, note: str | None = None) -> SessionResult:
        run.close_output()
        answer = "\n\n".join(run.answers)
        used = _tool_phrase(run.tool_labels)
        normal = " ".join(part for part in ("Done.", note, used) if part)
        event = run.session.emit(
            SessionCompleted(
                summary=Summary(
                    normal=normal,
                    terse="Done." if note is None else "Done, with a note.",
                    detailed=f"{normal} Took {_seconds(run.session.elapsed_ms(run.started_ms))}.",
                ),
                duration_ms=min(run.session.elapsed_ms(run.started_ms), 86_400_000),
                tool_invocations_count=len(run.tool_labels),
                output_summary=_clip(answer, 300) or None,
            )
        )
        return SessionResult("completed", answer, len(run.tool_labels), event)

    def _errored(self, run: _Run, history: list[dict[str, Any]], failure: ModelFailure) -> SessionResult:
        self._close_everything(run, history, "The session ended with an error before this tool ran.")
        detailed = f"{failure.message} {failure.hint}"
        if failure.request_id:
            detailed += f" Request id: {failure.request_id}."
        event = run.session.emit(
            SessionErrored(
                error_category=failure.category,
                error_code=failure.code,
                recoverable=failure.recoverable,
                remediation_hint=failure.hint,
                summary=Summary(normal=f"{failure.message} {failure.hint}", terse=failure.message, detailed=detailed),
            )
        )
        return SessionResult("errored", "\n\n".join(run.answers), len(run.tool_labels), event)

    def _cancelled(self, run: _Run, history: list[dict[str, Any]], control: RunControl) -> None:
        self._close_everything(run, history, "The user stopped the session before this tool ran.")
        self.broker.cancel_session(run.session.id)
        who = {"user": "You stopped the agent.", "timeout": "The agent ran out of time."}.get(
            control.cancelled_by, "The agent was stopped."
        )
        partial = "\n\n".join(run.answers)
        run.session.emit(
            SessionCancelled(
                cancelled_by=control.cancelled_by,
                cancellation_reason=control.reason,
                partial_result=_clip(partial, 1000) or None,
                summary=Summary(
                    normal=f"{who} Nothing else will run. Changes made so far are kept.",
                    terse="Stopped.",
                    detailed=f"{who} Nothing else will run. Changes made so far are kept; "
                    f"{_tool_phrase(run.tool_labels) or 'no tools had finished.'}",
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


def _in_notebook(chat: ChatContext) -> str:
    return f" in {chat.notebook_path}" if chat.notebook_path else ""


def _tool_phrase(labels: list[str]) -> str:
    if not labels:
        return ""
    unique = list(dict.fromkeys(labels))
    shown = ", ".join(unique[:5]) + (" and more" if len(unique) > 5 else "")
    count = len(labels)
    return f"Used {count} tool{'s' if count != 1 else ''}: {shown}."


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} seconds"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
