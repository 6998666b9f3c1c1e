"""Chats and the sessions that run in them.

A chat belongs to one notebook and keeps its Anthropic message history across sessions, so
follow-up questions have context. Each user message starts one session, run as one
``asyncio.Task`` the runner holds; Stop cancels that task (the loop then closes the session
with ``session.cancelled``). Everything a subscriber needs goes out through the chat's own
:class:`Emitter`: AAEP events only, unless ``acknowledge_input`` puts the conformance
suite's non-AAEP ``user_input.accepted`` message in front of each session.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..aaep.broker import ReplyBroker, ReplyOrigin
from ..aaep.emitter import Event
from ..aaep.session import Producer, Session
from ..agent.approval import ApprovalPolicy
from ..agent.chat_context import ChatContext
from ..agent.control import Applies, Guidance, RunControl, turn_limit
from ..agent.grant_book import GrantBook
from ..agent.loop import AgentConfig, AgentLoop
from ..agent.run_state import SessionAgent, SessionResult
from ..agent.services import AgentServices, LeftRunning, SessionEdits
from ..agent.tools import ToolRegistry
from ..agent.usage import Usage
from ..errors import ChatBusy, InvalidInput, UnknownChat
from ..store.health import StoreHealth
from ..store.records import StoredChat
from .chat import EVENT_HISTORY_LIMIT, Chat
from .edit_records import EditRecords
from .persistence import CONTINUE_AFTER_ERROR, CONTINUE_TEXT, ChatPersistence, Discard
from .reading import chat_page, events_after, session_steps, stored_events

if TYPE_CHECKING:  # the SDK loads with the first model client (issue 31)
    import anthropic

log = logging.getLogger(__name__)


_UNNAMED = ReplyOrigin("program")

LOADED_CHATS = 50
"""Chats kept in memory when a store holds them all; the least recently used idle ones go first."""


class ChatRunner:
    """Creates chats, starts and stops their sessions, and routes replies.

    Parameters
    ----------
    client_factory
        Returns the ``AsyncAnthropic`` client to use (called per session, so a key set
        after start-up is picked up).
    registry_factory
        Returns the tools a chat offers (called per session).
    services
        The host's collaborators (the notebook service, the follower of long cell runs),
        handed to tools through ``ToolContext.services``.
    acknowledge_input
        Publish ``{"kind": "user_input.accepted", "session_id", "chat_id"}`` on the chat's
        stream before each session. Not an AAEP event: only the AAEP conformance suite needs
        it (it takes the session id from the next message on the stream and throws that
        message away, which would otherwise be ``session.started``). Off, subscribers see
        AAEP events only and the sender learns the session id from the answer to its request.
    """

    def __init__(
        self,
        *,
        client_factory: Callable[[], anthropic.AsyncAnthropic],
        registry_factory: Callable[[Chat], ToolRegistry],
        config: AgentConfig | None = None,
        producer: Producer | None = None,
        services: AgentServices | None = None,
        policy_factory: Callable[[], ApprovalPolicy] = ApprovalPolicy,
        broker: ReplyBroker | None = None,
        acknowledge_input: bool = False,
        persistence: ChatPersistence | None = None,
    ) -> None:
        self.acknowledge_input = acknowledge_input
        self.client_factory = client_factory
        self.registry_factory = registry_factory
        self.config = config or AgentConfig()
        self.producer = producer or Producer(model=self.config.model)
        self.services: AgentServices = services or AgentServices()
        self.policy_factory = policy_factory
        self.broker = broker or ReplyBroker()
        self._chats: dict[str, Chat] = {}
        self.persistence = persistence
        """Where chats are stored (``None``: memory only)."""
        self.edits = EditRecords(self)
        """What each session changes in its chat's notebook (undo, saving, lost edits)."""
        self.on_chat_loaded: Callable[[Chat], None] | None = None
        """Called with each chat read back from the store (the server attaches its streams)."""
        self.loaded_limit = LOADED_CHATS
        self.on_chat_closed: Callable[[str], None] | None = None
        """Called with a chat's id when it leaves memory (idle, followed by nobody): what it
        held open (an ACP agent's process) can go."""
        self.chosen_agent: Callable[[Chat], SessionAgent | None] | None = None
        """The coding agent a chat chose instead of ours (an ACP agent, ``jupyter_aaep.acp``), if any:
        its sessions run through it, with the same arguments and result as ``AgentLoop.run``."""
        self.grants: GrantBook | None = None
        """The person's standing permissions, for every session (``None``: none kept)."""

    # -- chats -------------------------------------------------------------------------------
    def create_chat(self, notebook_path: str | None, *, approval_mode: str | None = None) -> Chat:
        """A new chat, in the server's default approval mode unless *approval_mode* names one."""
        if notebook_path is not None and not isinstance(notebook_path, str):
            raise InvalidInput("notebook_path must be a string.")
        chat = Chat(f"chat_{secrets.token_hex(16)}", notebook_path, approval=self.policy_factory())
        if approval_mode is not None:
            chat.set_approval_mode(approval_mode)
        self._chats[chat.chat_id] = chat
        if self.persistence is not None:
            self.persistence.created(chat)
        self._evict()
        return chat

    def get(self, chat_id: str) -> Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = self._load(chat_id)
        if chat is None:
            raise UnknownChat(
                f"There is no chat with id {chat_id!r}. Create one with POST /aaep/v1/chats."
            )
        self._chats[chat_id] = self._chats.pop(chat_id)  # most recently used last
        return chat

    def _load(self, chat_id: str) -> Chat | None:
        """A stored chat back in memory (after a restart, or after it was evicted)."""
        if self.persistence is None or not isinstance(chat_id, str):
            return None
        chat = self.persistence.load(
            chat_id,
            lambda stored, emitter: Chat.from_stored(stored, emitter, self.policy_factory()),
            EVENT_HISTORY_LIMIT,
        )
        if chat is None:
            return None
        self._chats[chat_id] = chat
        if self.on_chat_loaded is not None:
            self.on_chat_loaded(chat)
        chat.baseline_subscribers = len(chat.emitter.subscribers)
        self._evict()
        return chat

    def _evict(self) -> None:
        """Keep at most ``loaded_limit`` chats in memory: drop the least recently used ones that
        are idle and that nobody follows (they stay in the store and come back on demand)."""
        if self.persistence is None or not self.persistence.ok:
            return
        excess = len(self._chats) - self.loaded_limit
        for chat in list(self._chats.values()):
            if excess <= 0:
                break
            followers = len(chat.emitter.subscribers) - chat.baseline_subscribers
            if chat.running or followers > 0:
                continue
            self.persistence.forget(chat)
            del self._chats[chat.chat_id]
            if self.on_chat_closed is not None:
                self.on_chat_closed(chat.chat_id)
            excess -= 1

    def page(
        self, notebook_path: str | None = None, *, limit: int = 20, before: str | None = None
    ) -> tuple[list[Chat | StoredChat], str | None]:
        """One page of chats, newest first, and the next page's cursor (see :func:`chat_page`)."""
        return chat_page(self._chats.values(), self.persistence, notebook_path, limit, before)

    @property
    def storage_problem(self) -> str | None:
        """Why chats are not being stored, or ``None`` when they are (or no store is used)."""
        return self.persistence.store.failure if self.persistence is not None else None

    def storage_changed(self, health: StoreHealth) -> None:
        """Storing stopped or started working again (called on the event loop): the chats that
        are running hear it now, the others with their next request (see ``store_notices``)."""
        if self.persistence is not None:
            self.persistence.notices.changed(health, list(self._chats.values()))

    def _refuse_if_notebook_held(self, chat: Chat) -> None:
        """One agent per notebook, across its chats: an outside agent at work on this notebook
        in another of its chats keeps the built-in agent from starting here."""
        if not chat.notebook_path:
            return
        for other in self.chats(chat.notebook_path):
            if other is not chat and other.running and other.held_by:
                raise ChatBusy(
                    f"{other.held_by} is working on {chat.notebook_path} right now, in another chat of "
                    "this notebook. Stop it there, or wait until it finishes, then send your request."
                )

    def notebook_moved(self, old: str, new: str) -> None:
        """A notebook (or a folder) under the server's root was renamed: its chats follow it."""
        for chat in self._chats.values():
            path = chat.notebook_path
            if path and (path == old or path.startswith(old + "/")):
                chat.notebook_path = new + path[len(old) :]
        if self.persistence is not None:
            self.persistence.moved(old, new)

    def chats(self, notebook_path: str | None = None) -> list[Chat]:
        return [
            c
            for c in self._chats.values()
            if notebook_path is None or c.notebook_path == notebook_path
        ]

    # -- sessions ------------------------------------------------------------------------------
    def submit(self, chat_id: str, text: Any, *, attachment: str | None = None) -> str:
        """Start a session for *text*; returns its session id at once.

        *attachment* (e.g. descriptions of kernel variables the request names) goes to the
        model after the text, in the same user message; people see only *text*.

        A new message while the running session waits for the user (a confirmation or a
        question, paused there or not) answers it the way a person means it: never mind, do
        this instead. The
        waiting session is cancelled (its request withdrawn, nothing runs) and the new one
        starts after it has closed. With ``acknowledge_input`` the acknowledgement of the new
        session goes out first (before the old session's ``session.cancelled``).
        """
        chat = self.get(chat_id)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("The message text must be a non-empty string.")
        previous: asyncio.Task[SessionResult] | None = None
        if chat.running:
            chat.refuse_if_held()
            if not chat.waiting_for_user:
                raise ChatBusy(
                    "The agent is still working on the previous request. Stop it or wait until it finishes."
                )
            previous = chat.task
            chat.control.cancelled_by = "user"
            chat.control.reason = "superseded_by_new_request"
        self._refuse_if_notebook_held(chat)
        producer = replace(self.producer, model=chat.model) if chat.model else self.producer
        agent = self.chosen_agent(chat) if self.chosen_agent is not None else None
        if agent is not None:  # its own model is its own business
            producer = replace(self.producer, agent_name=agent.name, model="outside-agent")
        session = Session(chat.emitter, producer, actor=agent.name if agent else "The agent")
        chat.session = session
        chat.control = RunControl()
        if chat.request_started(text) and self.persistence is not None:
            self.persistence.changed(chat)
        if self.acknowledge_input:
            chat.emitter.publish(
                {"kind": "user_input.accepted", "session_id": session.id, "chat_id": chat.chat_id}
            )
        if previous is not None:
            previous.cancel()
        chat.task = asyncio.ensure_future(
            self._run(chat, session, text, after=previous, attachment=attachment)
        )
        return session.id

    async def _run(
        self,
        chat: Chat,
        session: Session,
        text: str,
        *,
        after: asyncio.Task[SessionResult] | None = None,
        attachment: str | None = None,
    ) -> SessionResult:
        if after is not None:
            await asyncio.wait(
                [after]
            )  # the superseded session closes (and fixes the history) first
        record = self.edits.begin(chat, session)
        agent = self.chosen_agent(chat) if self.chosen_agent is not None else None
        loop: AgentLoop | SessionAgent
        if agent is not None:
            loop = agent
        else:
            ready = getattr(self.client_factory, "ready", None)
            if ready is not None:
                await ready()  # an SDK import under way on another thread ends first (issue 31)
            loop = AgentLoop(
                self.client_factory(),
                self.registry_factory(chat),
                broker=self.broker,
                config=chat.config_for(self.config),
            )
        context = self.context_for(chat, record, still_running=self._still_running(chat))
        try:
            result = await loop.run(
                session,
                chat.history,
                text,
                chat=context,
                control=chat.control,
                attachment=attachment,
            )
        finally:
            self.edits.end(chat)
            self._ended(chat, session)
        chat.results.append(result)
        if result.status != "completed":  # a completed session saved before it said "Done"
            await self.save_notebook(chat)
        return result

    def _still_running(self, chat: Chat) -> Callable[[], LeftRunning | None] | None:
        """What the chat's follower of long cell runs says at the end of a session, if any."""
        follower = self.services.long_runs
        if follower is None:
            return None
        return lambda: follower.still_running_note(chat.chat_id)

    async def save_notebook(self, chat: Chat) -> bool:
        """Put the chat's notebook on disk now (see :meth:`EditRecords.save`)."""
        return await self.edits.save(chat)

    def _ended(self, chat: Chat, session: Session) -> None:
        """The session closed (or its task was cut short): store the history and the outcome."""
        chat.session_ended(session)
        if self.persistence is not None:
            usage = chat.usage_report() if session.terminal_event else None
            self.persistence.session_ended(chat, session, usage)

    def continue_chat(self, chat_id: str) -> str:
        """Start a session that asks the model to carry on with the interrupted request."""
        chat = self.get(chat_id)
        if chat.running:
            raise ChatBusy(
                "The agent is already working in this chat; there is nothing to continue."
            )
        if not chat.can_continue or not chat.history:
            raise ChatBusy(
                "There is nothing to continue in this chat: its last request was not interrupted. "
                "Send a new message instead."
            )
        restarted = any(
            e.get("error_code") == "SERVER_RESTARTED" for e in chat.emitter.history[-3:]
        )
        return self.submit(chat_id, CONTINUE_TEXT if restarted else CONTINUE_AFTER_ERROR)

    def context_for(
        self,
        chat: Chat,
        record: SessionEdits | None,
        *,
        usage: Usage | None = None,
        still_running: Callable[[], LeftRunning | None] | None = None,
    ) -> ChatContext:
        """What a session of *chat* (the agent's, or an outside agent's burst) runs with."""
        return ChatContext(
            chat_id=chat.chat_id,
            notebook_path=chat.notebook_path,
            services=self.services,
            approval=chat.approval,
            usage=chat.usage if usage is None else usage,
            context=chat.context,
            save_changes=lambda: self.save_notebook(chat),
            check_changes=lambda: self.edits.lost_changes(record),
            edits_stored=lambda: self.edits.stored(chat),
            still_running=still_running,
            notices=chat.notices,
            grants=self.grants,
        )

    async def revert(self, chat_id: str, session_id: str | None = None) -> dict[str, Any]:
        """Take back what one session (the latest by default) changed, and only that.

        Each session's record is its own: another session's work, the built-in agent's or an
        outside agent's, is never reverted here, and each can still be undone afterwards. Only
        the session's own operations are reverted, and only where a cell still holds what it
        left; a cell someone changed since is kept and named (who, when a later session of any
        agent touched it).
        """
        chat = self.get(chat_id)
        if chat.running:
            who = chat.held_by or "The agent"
            raise ChatBusy(f"{who} is still working. Stop it before undoing its changes.")
        neighbours = self.chats(chat.notebook_path) if chat.notebook_path else []
        return await self.edits.undo(chat, session_id, neighbours)

    async def stop(
        self, chat_id: str, *, cancelled_by: str = "user", reason: str = "stopped_by_user"
    ) -> bool:
        """Stop the running session, if any; returns whether one was stopped."""
        return await self.get(chat_id).stop(cancelled_by, reason)

    def pause(self, chat_id: str) -> bool:
        """Ask the running session to pause at its next safe point; ``False`` when nothing runs."""
        chat = self.get(chat_id)
        return chat.running and chat.control.pause()

    def resume(self, chat_id: str) -> bool:
        """Resume a paused session (or cancel a pause not yet taken); ``False`` when not paused."""
        chat = self.get(chat_id)
        return chat.running and chat.control.resume()

    def guide(
        self,
        chat_id: str,
        text: Any,
        *,
        resume: bool = False,
        settings: Mapping[str, Any] | None = None,
    ) -> tuple[Guidance, Applies, str]:
        """Steer the running session: returns the guidance, when it applies and the session id.

        Settings apply at once (approval mode, turn cap); the text reaches the model at the
        next turn boundary, or on resume when paused (at once with *resume*). With nothing
        running, the guidance starts a new session like a message would.
        """
        chat = self.get(chat_id)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("The guidance text must be a non-empty string.")
        settings = dict(settings or {})
        limit = turn_limit(settings)
        if "approval_mode" in settings:
            self.set_approval_mode(chat_id, settings["approval_mode"])
        chat.refuse_if_held()
        if not chat.running:
            session_id = self.submit(chat_id, text)
            if limit is not None:
                chat.control.max_turns = limit
            item = Guidance(text=text, session_id=session_id, settings=settings, applied=True)
            chat.guidance.append(item)
            return item, "new_session", session_id
        assert chat.session is not None
        item = Guidance(text=text, session_id=chat.session.id, settings=settings)
        chat.guidance.append(item)
        applies = chat.control.guide(item)
        if resume and chat.control.resume():
            applies = "next_turn"
        return item, applies, chat.session.id

    def steps(self, chat_id: str, session_id: str) -> list[dict[str, Any]]:
        """The recorded steps of one of the chat's sessions (see :func:`session_steps`)."""
        return session_steps(self.get(chat_id), self.persistence, session_id)

    def reply(
        self, chat_id: str, reply: Mapping[str, Any], *, origin: ReplyOrigin = _UNNAMED
    ) -> bool:
        """Offer a confirmation/clarification reply; never raises for a bad reply. *origin* is
        where the server received it (how listeners hear who answered); unnamed, a program."""
        chat = self.get(chat_id)
        session_id = chat.session.id if chat.session else None
        if session_id is None:
            return False
        return self.broker.submit(reply, session_id=session_id, origin=origin)

    def set_model(self, chat_id: str, model: str | None, label: str | None = None) -> None:
        """Use *model* from the next session of this chat on (``None``: the server's default)."""
        chat = self.get(chat_id)
        chat.choose_model(None if model == self.config.model else model, label)
        if self.persistence is not None:
            self.persistence.changed(chat)

    def set_approval_mode(self, chat_id: str, mode: Any) -> None:
        chat = self.get(chat_id)
        chat.set_approval_mode(mode)
        if self.persistence is not None:
            self.persistence.changed(chat)

    def replay(self, chat_id: str, after_event_id: str | None = None) -> list[Event]:
        """Past messages of the chat, optionally only those after *after_event_id*."""
        return events_after(self.get(chat_id), self.persistence, after_event_id)

    def stored_events_after(self, chat_id: str, event_id: str) -> list[Event] | None:
        """Events after *event_id* from the store (older than what memory keeps); ``None`` if unknown."""
        return stored_events(self.persistence, chat_id, event_id)

    async def shutdown(self) -> None:
        """Stop every running session (server shutdown).

        Without a durable store they end as cancelled by the system. With one, they stay open
        in the store and the next start closes them as errored and offers Continue: their
        cancellation below is published nowhere (subscribers see their streams closed).
        """
        running = [c for c in self._chats.values() if c.running]
        if self.persistence is not None and self.persistence.ok and self.persistence.store.durable:
            for chat in running:
                await self.save_notebook(chat)
                self.persistence.freeze(chat)
                if chat.session is not None:
                    chat.session.emitter = Discard()
        await asyncio.gather(
            *(
                self.stop(c.chat_id, cancelled_by="system", reason="server_shutdown")
                for c in running
            ),
            return_exceptions=True,
        )
