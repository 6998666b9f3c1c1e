"""What one agent session keeps as it runs, and what it gives back when it ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..aaep.coalescer import OutputCoalescer
from ..aaep.session import Session
from .chat_context import ChatContext
from .context import ContextManager
from .control import RunControl
from .usage import Usage

if TYPE_CHECKING:
    from .dispatch import ToolDispatcher
    from .plan_gate import PlanGate


@dataclass
class SessionResult:
    status: Literal["completed", "errored", "cancelled"]
    answer: str
    tool_calls: int
    terminal_event: dict[str, Any] | None
    usage: Usage = field(default_factory=Usage)


@dataclass
class Run:
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

    @property
    def plan(self) -> PlanGate | None:
        """The request's plan in plan mode."""
        return self.dispatcher.plan if self.dispatcher is not None else None


class SessionAgent(Protocol):
    """What runs a session: :class:`~.loop.AgentLoop`, or another coding agent a chat chose
    instead of ours (an ACP agent, see ``ChatRunner.chosen_agent``)."""

    @property
    def name(self) -> str: ...

    async def run(
        self,
        session: Session,
        history: list[dict[str, Any]],
        user_text: str,
        *,
        chat: ChatContext | None = None,
        control: RunControl | None = None,
        attachment: str | None = None,
    ) -> SessionResult: ...
