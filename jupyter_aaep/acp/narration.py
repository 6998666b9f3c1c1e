"""What an ACP agent's ``session/update`` notifications are heard as: AAEP events.

A pure mapping over one AAEP :class:`Session` (no process, no server), tested with recorded
ACP messages. The agent's words stream as our own answer does (sentence-coalesced
``output.streaming``); each tool call is one step told by its kind and title, as our own steps
are ("Claude Code is editing notes.txt", "Claude Code ran a command: failed"), never by an id or
a tool name; a ``plan`` is read as a numbered list once and then as "step 2 of 5 done".

Calls of our own notebook tools (through our MCP server) are not told here: our server runs
them through its dispatcher, which tells them (and asks for them) in this same session.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..aaep.coalescer import OutputCoalescer
from ..aaep.events import Progress, ProgressUpdated, Summary, ToolCompleted, ToolInvoked
from ..aaep.session import Session

__all__ = ["Narrator", "ToolCall", "is_notebook_tool", "tool_words"]

NOTEBOOK_SERVER = "notebook"
"""The name our MCP server has in the agent's ``mcpServers`` (its tools: ``mcp__notebook__*``)."""

_DOING = {  # kind: (doing, did, wants to)
    "read": ("is reading", "read", "read"),
    "edit": ("is editing", "edited", "edit"),
    "delete": ("is deleting", "deleted", "delete"),
    "move": ("is moving", "moved", "move"),
    "search": ("is searching", "searched", "search"),
    "execute": ("is running a command", "ran a command", "run a command"),
    "think": ("is thinking it over", "thought it over", "think it over"),
    "fetch": ("is fetching", "fetched", "fetch"),
    "switch_mode": ("is switching mode", "switched mode", "switch mode"),
}
_PLAN_STATUS = {"pending": "to do", "in_progress": "in progress", "completed": "done"}


@dataclass
class ToolCall:
    """What the agent told of one tool call so far."""

    call_id: str
    kind: str = "other"
    title: str = ""
    tool: str = ""
    status: str = "pending"
    invoked: bool = False
    ended: bool = False
    refused: bool = False
    """The person rejected it (the rejection was told; the agent's "failed" is not told again)."""
    started_ms: int = 0
    raw_input: dict[str, Any] = field(default_factory=dict)

    @property
    def aaep_id(self) -> str | None:
        """The call's id in AAEP's form (``call_`` + letters and digits), for pairing only."""
        kept = re.sub(r"[^A-Za-z0-9]", "", self.call_id)[-64:]
        return f"call_{kept}" if kept else None


def is_notebook_tool(call: ToolCall | dict[str, Any]) -> bool:
    """Whether this is one of our notebook tools (reached through our MCP server)."""
    if isinstance(call, ToolCall):
        names = (call.tool, call.title)
    else:
        meta = (call.get("_meta") or {}).get("claudeCode") or {}
        names = (str(meta.get("toolName") or ""), str(call.get("title") or ""))
    prefix = f"mcp__{NOTEBOOK_SERVER}__"
    return any(n.startswith(prefix) or f"{NOTEBOOK_SERVER} (MCP)" in n for n in names)


def _short(title: str, cwd: str) -> str:
    """The title with the working folder taken out of paths (``/home/me/work/x.txt`` → ``x.txt``)."""
    if cwd:
        title = title.replace(cwd.rstrip(os.sep) + os.sep, "")
    title = " ".join(title.split())
    return title if len(title) <= 120 else title[:119] + "…"


def tool_words(agent: str, call: ToolCall, cwd: str = "") -> tuple[str, str, str]:
    """(while it runs, once it ran, what it asks for) for a step: "Claude Code is editing
    x.txt", "Claude Code edited x.txt", "edit x.txt"."""
    doing, did, wants = _DOING.get(call.kind, ("is using a tool", "used a tool", "use a tool"))
    title = _short(call.title, cwd)
    if call.kind == "execute":
        tail = f": {title}" if title and title != "Terminal" else ""
    else:
        tail = f" {title}" if title else ""
        # Titles like "Read notes.txt" repeat the verb: keep the object only.
        first, _, rest = title.partition(" ")
        if rest and first.lower() in ("read", "write", "edit", "delete", "move", "find", "grep"):
            tail = f" {rest}"
    return f"{agent} {doing}{tail}.", f"{agent} {did}{tail}", f"{wants}{tail}"


class Narrator:
    """Turns one ACP session's updates into AAEP events in *session*.

    Parameters
    ----------
    session
        The AAEP session the events go to (already started).
    agent
        Who is heard working ("Claude Code").
    cwd
        The agent's working folder (taken out of the paths it names).
    """

    def __init__(self, session: Session, agent: str, *, cwd: str = "") -> None:
        self.session = session
        self.agent = agent
        self.cwd = cwd
        self.calls: dict[str, ToolCall] = {}
        self.output: OutputCoalescer | None = None
        self.answer: list[str] = []
        self.plan: list[tuple[str, str]] = []
        self.steps: list[str] = []
        self.failed: list[str] = []
        self.used_tokens: int | None = None
        self.window: int | None = None
        self.cost: tuple[float, str] | None = None

    # -- the stream of updates -------------------------------------------------------------------
    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if self.session.closed:
            return
        if kind == "agent_message_chunk":
            content = update.get("content") or {}
            if content.get("type") == "text" and content.get("text"):
                self._say(str(content["text"]))
        elif kind in ("tool_call", "tool_call_update"):
            self._tool(update)
        elif kind == "plan":
            self._plan(update.get("entries") or [])
        elif kind == "usage_update":
            self._usage(update)
        elif kind == "current_mode_update":
            mode = str(update.get("currentModeId") or "")
            if mode:
                self.finish_output()
                self.session.emit(
                    ProgressUpdated(
                        progress=Progress(description=f"Mode: {mode}"),
                        summary=Summary(
                            normal=f"{self.agent} switched to its {mode} mode.", terse=mode
                        ),
                    )
                )
        # agent_thought_chunk, available_commands_update, user_message_chunk: nothing to say

    def _say(self, text: str) -> None:
        if self.output is None:
            self.session.change_state("writing_output")
            self.output = OutputCoalescer(self.session)
        self.output.feed(text)

    def finish_output(self) -> None:
        """Close the streamed answer (before a step, a question or the end)."""
        if self.output is not None:
            self.output.finish()
            if self.output.text.strip():
                self.answer.append(self.output.text)
            self.output = None
            self.session.change_state("thinking")

    def call_for(self, update: dict[str, Any]) -> ToolCall:
        call_id = str(update.get("toolCallId") or "")
        call = self.calls.get(call_id)
        if call is None:
            call = self.calls[call_id] = ToolCall(call_id)
        if update.get("kind"):
            call.kind = str(update["kind"])
        if update.get("title"):
            call.title = str(update["title"])
        meta = (update.get("_meta") or {}).get("claudeCode") or {}
        if meta.get("toolName"):
            call.tool = str(meta["toolName"])
        if isinstance(update.get("rawInput"), dict) and update["rawInput"]:
            call.raw_input = dict(update["rawInput"])
        return call

    def _tool(self, update: dict[str, Any]) -> None:
        call = self.call_for(update)
        status = str(update.get("status") or "")
        if status:
            call.status = status
        if is_notebook_tool(call) or call.ended:
            return
        if status == "in_progress":
            self.invoke(call)
        elif status in ("completed", "failed"):
            self._end(call, ok=status == "completed", update=update)

    def invoke(self, call: ToolCall) -> None:
        """Tell that the step runs now (once; an approved step, or one that needed no approval)."""
        if call.invoked or is_notebook_tool(call):
            return
        self.finish_output()
        doing, _, _ = tool_words(self.agent, call, self.cwd)
        call.invoked = True
        call.started_ms = self.session.now_ms()
        self.session.change_state("calling_tool")
        self.session.emit(
            ToolInvoked(
                tool=call.tool or call.kind,
                tool_call_id=call.aaep_id,
                description=doing,
                args_summary=_short(call.title, self.cwd) or None,
                summary=Summary(normal=doing, terse=doing.removeprefix(f"{self.agent} ")),
            )
        )

    def _end(self, call: ToolCall, *, ok: bool, update: dict[str, Any]) -> None:
        call.ended = True
        if call.refused:
            return  # the rejection was told: "It will not happen."
        if not call.invoked:
            self.invoke(call)
        _, did, _ = tool_words(self.agent, call, self.cwd)
        said = f"{did}." if ok else f"{did}: failed."
        self.steps.append(did.removeprefix(f"{self.agent} "))
        if not ok:
            self.failed.append(did.removeprefix(f"{self.agent} "))
        error = None if ok else (_text_of(update) or "The step failed.")[:500]
        self.session.emit(
            ToolCompleted(
                tool=call.tool or call.kind,
                status="success" if ok else "error",
                tool_call_id=call.aaep_id,
                duration_ms=self.session.elapsed_ms(call.started_ms),
                error_message=error,
                summary=Summary(
                    normal=said if ok else f"{said} {error}",
                    terse="Done." if ok else "Failed.",
                ),
            )
        )
        self.session.change_state("thinking")

    def _plan(self, entries: list[Any]) -> None:
        plan = [
            (str(e.get("content") or "").strip(), str(e.get("status") or "pending"))
            for e in entries
            if isinstance(e, dict)
        ]
        if not plan:
            return
        self.finish_output()
        total = len(plan)
        done = sum(1 for _, status in plan if status == "completed")
        if not self.plan or [c for c, _ in plan] != [c for c, _ in self.plan]:
            listed = " ".join(
                f"{i}. {content} ({_PLAN_STATUS.get(status, status)})."
                for i, (content, status) in enumerate(plan, 1)
            )
            normal = f"{self.agent}'s plan, {total} steps: {listed}"
            terse = f"Plan: {total} steps."
        else:
            before = {c for c, s in self.plan if s == "completed"}
            newly = [i for i, (c, s) in enumerate(plan, 1) if s == "completed" and c not in before]
            if not newly:
                self.plan = plan
                return
            normal = f"Step {newly[-1]} of {total} done: {plan[newly[-1] - 1][0]}."
            terse = f"Step {newly[-1]} of {total} done."
        self.plan = plan
        self.session.emit(
            ProgressUpdated(
                progress=Progress(
                    percent=round(100 * done / total),
                    step=done or None,
                    total_steps=total,
                    description=normal[:500],
                ),
                summary=Summary(normal=normal, terse=terse),
            )
        )

    def _usage(self, update: dict[str, Any]) -> None:
        used, size = update.get("used"), update.get("size")
        if isinstance(used, int):
            self.used_tokens = used
        if isinstance(size, int):
            self.window = size
        cost = update.get("cost")
        if isinstance(cost, dict) and isinstance(cost.get("amount"), (int, float)):
            self.cost = (float(cost["amount"]), str(cost.get("currency") or "USD"))

    def usage_words(self) -> str:
        """How much of its context the agent used and what it cost, if it said."""
        parts = []
        if self.used_tokens is not None and self.window:
            parts.append(f"{self.used_tokens:,} of {self.window:,} context tokens used")
        if self.cost is not None:
            amount, currency = self.cost
            parts.append(
                f"cost about ${amount:.2f}"
                if currency == "USD"
                else f"cost {amount:.2f} {currency}"
            )
        return ("; ".join(parts) + ".") if parts else ""


def _text_of(update: dict[str, Any]) -> str:
    """The text an update carries (a failed step's message)."""
    raw = update.get("rawOutput")
    if isinstance(raw, str) and raw.strip():
        return raw.strip()
    for block in update.get("content") or []:
        inner = block.get("content") if isinstance(block, dict) else None
        if isinstance(inner, dict) and inner.get("type") == "text":
            return str(inner.get("text") or "").strip("`\n ")
    return ""
