"""Outside agents at work in a notebook's chat: their calls, heard and approved like ours.

Why this shape: an outside agent (Claude Code, Codex, … over MCP) sends tool calls one by one
with no session of its own. We group a client's calls on one notebook into a *burst*: one AAEP
session in the notebook's chat, opened by its first call ("Claude Code is working on
analysis.ipynb") and closed when it has been idle for ``idle_seconds`` or disconnects. The
burst is the chat's running task, exactly as a session of the built-in agent is, so everything
the chat offers applies to it unchanged: Stop cancels the task, Pause holds the next call,
replies reach its confirmations, Undo takes back its own changes (its session's edit record,
tagged with its name: the built-in agent's undo never takes its work back, nor it the agent's). Each call runs
through the same :class:`ToolDispatcher` as the built-in agent's calls (approval policy,
narration, event order), inside the burst's task.

One notebook, one worker at a time: while the built-in agent or another outside agent works in
the chat, a call is refused with a sentence saying who is working (never interleaved silently).
But the same agent is no stranger: each ``claude -p`` run is a new MCP session, so a burst has
an *owner* (the credential it came with, else the client's name under the person's login), and
a new session of the same owner takes over an idle burst (no call in flight, none waiting for
a person, not paused): the old one ends as it would at its idle time, the new one starts at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from ..aaep.events import (
    SessionStarted,
    Summary,
)
from ..aaep.session import Session
from ..agent.control import RunControl
from ..agent.dispatch import ToolDispatcher
from ..agent.loop import SessionResult
from ..agent.tool_use import ToolUse
from ..agent.tools import ToolRegistry
from ..agent.usage import Usage
from ..chats.chat import Chat
from ..chats.runner import ChatRunner
from ..errors import ToolError
from ._bursts import (
    END,
    Burst,
    OutsideCall,
    cancelled,
    completed,
    error_block,
    errored,
    fail_waiting,
    withdrawn,
)

log = logging.getLogger(__name__)

HostedCalls = Callable[[str, str, dict[str, Any], str], Awaitable[dict[str, Any]]]
"""Runs one call (notebook path, tool, arguments, call id) where its host says; its result block."""

__all__ = ["HostedCalls", "OutsideAgents"]


class OutsideAgents:
    """Runs outside agents' tool calls in their notebooks' chats.

    Parameters
    ----------
    runner
        The chat runner: chats, their broker, persistence, snapshots.
    registry_factory
        The tools a chat offers (the same factory the built-in agent's sessions use).
    attach_chat
        Called with a chat created here, so streams that follow every chat see it.
    idle_seconds
        How long a client may stay silent before its burst (session) ends.
    """

    def __init__(
        self,
        runner: ChatRunner,
        registry_factory: Callable[[Chat], ToolRegistry],
        *,
        attach_chat: Callable[[Chat], None] | None = None,
        idle_seconds: float = 30.0,
    ) -> None:
        self.runner = runner
        self.registry_factory = registry_factory
        self.attach_chat = attach_chat
        self.idle_seconds = idle_seconds
        self._bursts: dict[str, Burst] = {}
        """Open bursts by chat id."""
        self._counter = 0
        self.hosts: dict[str, HostedCalls] = {}
        """Owners (``credential:<id>``) whose calls run in a session already open for them: a
        coding agent a chat hosts over ACP (``jupyter_aaep.acp``) works inside the AAEP session of
        the person's message, not in a burst of its own (which its own chat's session would
        refuse as someone else at work)."""

    # -- finding the chat ------------------------------------------------------------------
    def chat_for(self, notebook_path: str) -> Chat:
        """The chat the panel shows for this notebook (its newest), or a new one."""
        page, _ = self.runner.page(notebook_path, limit=1)
        if page:
            return self.runner.get(page[0].chat_id)
        chat = self.runner.create_chat(notebook_path)
        if self.attach_chat is not None:
            self.attach_chat(chat)
        return chat

    # -- calls -----------------------------------------------------------------------------
    async def call(
        self,
        *,
        client_key: str,
        client_name: str,
        notebook_path: str,
        tool: str,
        arguments: dict[str, Any],
        on_waiting: Callable[[str], Awaitable[None]] | None = None,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """Run one call in the notebook's chat and return its ``tool_result`` block.

        Raises :class:`ToolError` (a sentence for the client's model) when someone else is
        working in that chat. Cancelling this coroutine withdraws the call: a pending
        confirmation is taken back and nothing runs.
        """
        hosted = self.hosts.get(owner or "")
        if hosted is not None:
            self._counter += 1
            return await hosted(notebook_path, tool, arguments, f"toolu_mcp_{self._counter:06d}")
        chat = self.chat_for(notebook_path)
        burst = await self._burst_for(
            chat, client_key, client_name, owner or f"client:{client_name}"
        )
        burst.in_flight += 1  # before any await: a takeover never ends a burst with a call in it
        self._counter += 1
        item = OutsideCall(ToolUse(id=f"toolu_mcp_{self._counter:06d}", name=tool, input=arguments))
        burst.last_activity = time.monotonic()
        await burst.queue.put(item)
        watcher = (
            asyncio.ensure_future(self._watch(burst, item, on_waiting)) if on_waiting else None
        )
        try:
            return await asyncio.shield(item.done)
        except asyncio.CancelledError:
            item.done.cancel()
            if item.task is not None:
                item.task.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            burst.in_flight -= 1
            burst.last_activity = time.monotonic()

    def disconnected(self, client_key: str) -> None:
        """The client closed its MCP session: its bursts end once their calls are done."""
        for burst in list(self._bursts.values()):
            if burst.client_key == client_key:
                burst.ending = True
                burst.queue.put_nowait(END)

    def revoked(self, credential_id: str) -> None:
        """A credential was revoked: its bursts end once their calls are done (its next call is
        refused at the door anyway)."""
        for burst in list(self._bursts.values()):
            if burst.owner == f"credential:{credential_id}":
                burst.ending = True
                burst.queue.put_nowait(END)

    def working(self, notebook_path: str) -> str | None:
        """Who is working on that notebook through MCP now, if anyone."""
        for burst in self._bursts.values():
            if burst.chat.notebook_path == notebook_path:
                return burst.client_name
        return None

    async def close(self) -> None:
        """Server shutdown: end every burst."""
        for burst in list(self._bursts.values()):
            task = burst.chat.task
            if task is not None and not task.done():
                burst.chat.control.cancelled_by = "system"
                burst.chat.control.reason = "server_shutdown"
                task.cancel()
                await asyncio.wait([task], timeout=5)

    # -- bursts ----------------------------------------------------------------------------
    @staticmethod
    def _idle(burst: Burst) -> bool:
        """No call in flight, none waiting for a person, not paused by them: safe to end now."""
        return (
            burst.in_flight == 0
            and burst.session.state != "awaiting_input"
            and not burst.chat.control.paused
        )

    async def _burst_for(self, chat: Chat, client_key: str, client_name: str, owner: str) -> Burst:
        burst = self._bursts.get(chat.chat_id)
        task = chat.task
        same_agent = burst is not None and (burst.client_key == client_key or burst.owner == owner)
        if (
            burst is not None
            and same_agent
            and task is not None
            and not task.done()
            and (
                burst.closing
                or burst.ending
                or (burst.client_key != client_key and self._idle(burst))  # a takeover
            )
        ):
            # The same agent is back as its session closes (idle, or it reconnected), or in a new
            # MCP session while its old one is idle (a second `claude -p`): the old session ends
            # as at its idle time, and the new one starts once it has closed, never refused as
            # someone else's.
            if not (burst.closing or burst.ending):
                burst.ending = True
                burst.queue.put_nowait(END)
            await asyncio.wait([task])
            self._released(burst, task)
            burst = self._bursts.get(chat.chat_id)
        if burst is not None and not burst.ending and not burst.closing and chat.running:
            if burst.client_key == client_key:
                return burst
            raise ToolError(
                f"{burst.client_name} is working on {chat.notebook_path} right now, and one agent works on a "
                "notebook at a time. Try again when it has finished (about "
                f"{int(self.idle_seconds)} seconds after its last step)."
            )
        for other in (chat, *self.runner.chats(chat.notebook_path)):
            if not other.running:
                continue
            if other.held_by:  # another outside agent, in another chat of the notebook
                raise ToolError(
                    f"{other.held_by} is working on {chat.notebook_path} right now, and one agent works on a "
                    "notebook at a time. Try again when it has finished."
                )
            raise ToolError(
                f"The notebook's own agent is working on {chat.notebook_path} right now, and one agent works on "
                "a notebook at a time. Try again when it has finished, or ask the person to stop it."
            )
        # The outside agent speaks through this server; its model is its own business (not known here).
        producer = replace(self.runner.producer, agent_name=client_name, model="outside-agent")
        session = Session(chat.emitter, producer, actor=client_name)
        burst = Burst(
            chat=chat, client_key=client_key, client_name=client_name, session=session, owner=owner
        )
        chat.session = session
        chat.control = RunControl()
        chat.held_by = client_name
        self._bursts[chat.chat_id] = burst
        chat.task = started = asyncio.ensure_future(self._serve(burst))
        # Held until the task is over (its last save included), so whoever is refused meanwhile
        # hears who is working.
        started.add_done_callback(lambda _: self._released(burst, started))
        return burst

    async def _serve(self, burst: Burst) -> SessionResult:
        chat, session, runner = burst.chat, burst.session, self.runner
        where = chat.notebook_path or "this notebook"
        registry = self.registry_factory(chat)
        started = session.now_ms()
        steps: list[str] = []
        current: OutsideCall | None = None
        try:
            session.emit(
                SessionStarted(
                    summary=Summary(
                        normal=f"{burst.client_name} is working on {where}.",
                        terse=f"{burst.client_name} is working.",
                        detailed=f"{burst.client_name}, an outside agent connected over MCP, is working on {where}. "
                        "Its steps are announced here and ask for your approval as the agent's do.",
                    ),
                    request_text=f"{burst.client_name} connected over MCP.",
                    requested_by=f"agent:{burst.client_name}"[:200],
                    tools_available=tuple(registry.names()),
                )
            )
            chat.control.bind(session, runner.broker)
            record = runner.edits.begin(
                chat, session
            )  # its edits are saved soon and undone like the agent's
            context = runner.context_for(chat, record, usage=Usage())
            # What this connection was shown is its own (never the built-in agent's), across bursts.
            context.reader = f"outside:{burst.client_key}"
            context.tell_notices(session)  # e.g. a program switched the chat's mode meanwhile
            dispatcher = ToolDispatcher(
                registry,
                runner.broker,
                session,
                context,
                on_handoff=lambda _reason: None,
                control=chat.control,
            )
            while True:
                item = await self._next(burst)
                if item is None:
                    burst.closing = True
                    break
                if item.done.done():  # withdrawn while queued: nothing runs
                    continue
                current = item
                item.task = asyncio.ensure_future(dispatcher.run_all([item.use]))
                await asyncio.wait([item.task])
                current = None
                steps.extend(dispatcher.completed_labels)
                dispatcher.completed_labels.clear()
                if item.task.cancelled():
                    withdrawn(burst)
                    continue
                results = item.task.result()
                if session.state == "calling_tool":  # its own model decides what comes next
                    session.change_state("thinking")
                if not item.done.done():
                    item.done.set_result(
                        results[0] if results else error_block("The call produced no result.")
                    )
                burst.last_activity = time.monotonic()
        except asyncio.CancelledError:
            if current is not None and current.task is not None:
                current.task.cancel()
                await asyncio.wait([current.task])
            cancelled(burst, steps)
            fail_waiting(
                burst,
                current,
                "The person watching the notebook stopped {who}; this step did not "
                "run. Do not retry it unless they ask you to.",
            )
            raise
        except Exception as error:  # keep the chat usable and the client answered whatever broke
            log.exception("an outside agent's session failed")
            errored(burst, error)
            fail_waiting(
                burst,
                current,
                "This step failed in the Jupyter server ({error}); the person "
                "watching the notebook was told.",
                error=error,
            )
            return SessionResult("errored", "", len(steps), burst.session.terminal_event, Usage())
        finally:
            burst.closing = True
            runner.broker.cancel_session(session.id)
            runner.edits.end(chat)
            runner._ended(chat, session)
        saved = await runner.save_notebook(chat)
        event = completed(burst, steps, started, saved)
        return SessionResult("completed", "", len(steps), event, Usage())

    async def _next(self, burst: Burst) -> OutsideCall | None:
        """The next call, or ``None`` when the client has been idle long enough or left."""
        while True:
            left = self.idle_seconds - (time.monotonic() - burst.last_activity)
            if burst.queue.empty() and (left <= 0 or burst.ending):
                return None
            try:
                item = await asyncio.wait_for(burst.queue.get(), timeout=max(left, 0.01))
            except asyncio.TimeoutError:
                continue
            if item is END:
                continue
            return item

    async def _watch(
        self, burst: Burst, item: OutsideCall, on_waiting: Callable[[str], Awaitable[None]]
    ) -> None:
        """While the call waits for a person (or a pause), tell the client now and then."""
        while not item.done.done():
            await asyncio.sleep(2.0)
            session = burst.session
            if session.state == "awaiting_input":
                await on_waiting(
                    "Waiting for the person watching the notebook to approve or reject this step."
                )
            elif burst.chat.control.paused:
                await on_waiting(
                    "Paused by the person watching the notebook; it will go on when they resume."
                )

    def _released(self, burst: Burst, task: asyncio.Task[Any]) -> None:
        """Its task is over (its last save included): the notebook is free for others."""
        chat = burst.chat
        if self._bursts.get(chat.chat_id) is burst:
            del self._bursts[chat.chat_id]
        if chat.task is task:
            chat.held_by = None
