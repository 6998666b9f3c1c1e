"""The agent loop: one user request = one AAEP session, driven by the model's ``stop_reason``.

Each turn streams one model message; text deltas become ``output.streaming`` chunks through
the coalescer; what each ``stop_reason`` leads to (run the tools and ask again, send again
after a ``pause_turn``, finish, or fail with a sentence) is one table, ``stop_reasons.py``.
Every ``tool_use`` gets a ``tool_result``, whatever happened to it. The session ends with
exactly one terminal event: completed, errored (with a hint a person can act on) or cancelled (the run's task was cancelled; no tool or output is left open);
the endings are ``session_end.py``, one model request (built, streamed, counted) is
``model_turn.py``, what a session keeps as it runs is ``run_state.py``.

Before each model request the conversation is kept inside the context window (``context.py``:
clearing old tool results in batches, the server's context editing where offered, compaction),
with one announcement when that happened; each request carries a moving prompt-cache
breakpoint on its last block. Token usage and its estimated cost are added up per session and
per chat (``usage.py``); an optional chat budget ends the session before the next request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..aaep.broker import ReplyBroker
from ..aaep.events import (
    SessionStarted,
    Summary,
)
from ..aaep.ids import safe_tool_name
from ..aaep.redaction import mask_secrets
from ..aaep.session import Session
from ._loop_text import was_declined as _was_declined
from .chat_context import ChatContext
from .config import DEFAULT_MODEL, AgentConfig
from .context import (
    ContextManager,
    ContextTooLarge,
    dedupe_results,
)
from .control import RunControl
from .dispatch import ToolDispatcher
from .errors import ModelFailure, describe_model_error
from .history import (
    append_assistant,
    append_user_blocks,
    append_user_text,
)
from .model_turn import ModelTurns
from .run_state import Run, SessionResult
from .session_end import cancelled, completed, errored, save
from .stop_reasons import stop_handling
from .tools import ToolRegistry
from .usage import dollars

if TYPE_CHECKING:  # loaded with the first model client, never by importing the loop (issue 31)
    import anthropic

__all__ = ["DEFAULT_MODEL", "AgentConfig", "AgentLoop", "SessionResult"]
"""The loop's settings live in :mod:`.config`, what :meth:`AgentLoop.run` returns in :mod:`.run_state`."""

log = logging.getLogger(__name__)


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
        self.model = ModelTurns(client, registry, self.config)

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
        run = Run(session=session, chat=chat, started_ms=session.now_ms(), control=control)
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
        await self.model.read_rules(run)
        import anthropic  # already loaded: the client this session uses is the SDK's

        try:
            return await self._turns(run, history, dispatcher)
        except ContextTooLarge as error:
            return errored(
                run,
                history,
                ModelFailure("requires_user", "CONTEXT_TOO_LARGE", True, str(error), error.hint),
            )
        except asyncio.CancelledError:
            cancelled(run, history, control, self.broker)
            raise
        except anthropic.AnthropicError as error:
            log.warning("model request failed: %s", error)
            return errored(run, history, describe_model_error(error, model=self.config.model))
        except Exception as error:  # keep the session well-formed whatever broke
            log.exception("agent loop failed")
            return errored(run, history, describe_model_error(error, model=self.config.model))
        finally:
            self.broker.cancel_session(session.id)
            manager.finish_request()

    # -- turns ---------------------------------------------------------------------------
    async def _turns(
        self, run: Run, history: list[dict[str, Any]], dispatcher: ToolDispatcher
    ) -> SessionResult:
        session, control = run.session, run.control
        turn = 0
        while turn < (control.max_turns or self.config.max_turns):
            over = self._over_budget(run)
            if over is not None:
                return errored(run, history, over)
            await control.checkpoint()  # a safe point: between model turns
            self._steer(run, history)
            session.change_state("thinking")
            message = await self.model.request(run, history, request_start=turn == 0)
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
                    await save(run)
                    return completed(run, note=f"Handed control back to you: {run.handoff_reason}")
                continue
            if handling.next == "send_again":
                continue
            if handling.next == "fail":
                assert handling.failure is not None
                await save(run)
                return errored(run, history, handling.failure)
            if control.pause_requested:
                await (
                    control.checkpoint()
                )  # paused before the end: guidance sent meanwhile still counts
            if control.queue:
                continue  # guidance that came during the last turn: the model answers it next
            await save(run)
            note = (
                handling.note.format(max_tokens=self.config.max_tokens) if handling.note else None
            )
            return completed(run, note=note)
        limit = control.max_turns or self.config.max_turns
        return errored(
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

    def _steer(self, run: Run, history: list[dict[str, Any]]) -> None:
        """Add the guidance queued since the last request, after any tool results, as steering."""
        taken = run.control.take_guidance()
        if not taken:
            return
        blocks = [{"type": "text", "text": item.message_text()} for item in taken]
        append_user_blocks(history, blocks)
        if run.context is not None:
            run.context.grew(blocks)

    def _over_budget(self, run: Run) -> ModelFailure | None:
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

    def _on_handoff(self, run: Run) -> Any:
        def record(reason: str) -> None:
            run.handoff_reason = reason

        return record


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


def _using(model: str | None) -> str:
    return f" Using {model}." if model else ""


def _in_notebook(chat: ChatContext) -> str:
    return f" in {chat.notebook_path}" if chat.notebook_path else ""
