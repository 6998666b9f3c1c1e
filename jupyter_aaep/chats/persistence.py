"""What the runner stores, when, and how a stored chat comes back (see ``store/chat_store.py``).

Kept apart from ``runner.py`` so the runner only calls a few hooks: every event a chat's
emitter publishes is queued for the store by a subscriber, the model history is saved at
each model turn (on the ``thinking`` state change, when it grew) and when a session ends,
and sessions a stopped server left running are closed as ``session.errored`` at start-up.
Per-step records come from the same places: a tool's from its ``tool.completed`` event, a
model request's from the chat's usage (which the loop tells of every request).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..aaep.emitter import Emitter, Event
from ..aaep.events import OutputStreaming, SessionErrored, Summary, ToolCompleted
from ..aaep.session import Producer, Session
from ..agent.history import close_open_tool_uses
from ..agent.usage import ModelRequest
from ..store.chat_store import ChatStore
from ..store.records import StepRecord, StoredChat
from ..store.roots import CellIds, RootedChats
from .chat import Chat, now_iso
from .store_notices import StoreNotices

log = logging.getLogger(__name__)

EditCheck = Callable[[str, dict[str, Any]], "list[str] | None"]
"""``(notebook path, stored edit record) -> the edits the file lacks`` (``None``: not checked)."""

RESTART_CODE = "SERVER_RESTARTED"
OUTSIDE_RESTART_CODE = "OUTSIDE_AGENT_SERVER_RESTARTED"
RESTART_HINT = "Choose Continue to pick up where the agent stopped."
CONTINUE_TEXT = (
    "[The Jupyter server stopped while you were working on my previous request; this is an "
    "automatic message.] Continue that request from where you stopped. Check the notebook's "
    "current state first: your last step may or may not have been applied."
)
CONTINUE_AFTER_ERROR = (
    "[The previous request ended with an error; this is an automatic message.] Continue that "
    "request from where you stopped."
)


class Discard(Emitter):
    """Publishes nothing: a session cut short by a server shutdown, whose end the next start records."""

    def publish(self, event: Event) -> None:
        return None


def snapshot_json(record: Any) -> dict[str, Any]:
    """A session's edit record as stored (the notebook service gives records a ``to_json``)."""
    to_json = getattr(record, "to_json", None)
    return dict(to_json()) if callable(to_json) else dict(record)


@dataclass
class _Writer:
    """Subscribed to one chat's emitter: queues each event and the history at turn boundaries."""

    persistence: ChatPersistence
    chat: Chat
    saved_length: int = -1
    active: bool = True

    def deliver(self, event: Event) -> None:
        if not self.active:
            return
        store = self.persistence.store
        chat = self.chat
        store.append_event(chat.chat_id, event)
        kind = event.get("type")
        if kind == "aaep:agent.session.started":
            store.session_started(
                chat.chat_id, str(event["session_id"]), str(event.get("timestamp"))
            )
            self.persistence.notices.session_started(chat)
        elif kind == "aaep:agent.state.changed" and event.get("to_state") == "thinking":
            self.save_history()
        elif kind == "aaep:agent.tool.completed":
            store.add_step(chat.chat_id, tool_step(event))

    def model_request(self, record: ModelRequest) -> None:
        """One model request finished: queue its step record (tokens only when it succeeded)."""
        if not self.active:
            return
        usage = record.usage
        self.persistence.store.add_step(
            self.chat.chat_id,
            StepRecord(
                session_id=record.session_id,
                kind="model_request",
                status=record.status,
                name=record.model,
                text=record.text,
                latency_ms=record.latency_ms,
                error=record.error,
                input_tokens=usage.input_tokens if usage else None,
                output_tokens=usage.output_tokens if usage else None,
                cache_read_tokens=usage.cache_read_tokens if usage else None,
                cache_write_tokens=usage.cache_write_tokens if usage else None,
                created=now_iso(),
            ),
        )

    def save_history(self) -> None:
        """At a turn boundary: the previous turn's results are in the history now."""
        chat = self.chat
        if len(chat.history) != self.saved_length:
            self.saved_length = len(chat.history)
            chat.updated = now_iso()
            self.persistence.store.save_history(chat.chat_id, chat.history, updated=chat.updated)


class ChatPersistence:
    """The runner's link to a :class:`ChatStore`.

    Parameters
    ----------
    file_id
        The notebook's file id (a chat follows its notebook's renames by it); only from a
        store kept per root, so the same file name under two roots never shares one.
    root
        The server's root, resolved: only its chats are listed, loaded and recovered here
        (:mod:`~jupyter_aaep.store.roots`); ``None``: the store serves one server (every chat is its own).
    cell_ids
        The ids of the cells a notebook's file holds, to adopt chats older versions stored.
    """

    def __init__(
        self,
        store: ChatStore,
        *,
        file_id: Callable[[str], str | None] | None = None,
        root: str | None = None,
        cell_ids: CellIds | None = None,
    ) -> None:
        self.store = store
        self.file_id = file_id or (lambda _path: None)
        self.roots = RootedChats(store, root, cell_ids)
        self._writers: dict[str, _Writer] = {}
        self.notices = StoreNotices(store)
        """Tells the chats when storing stops and starts working again."""

    @property
    def ok(self) -> bool:
        return self.store.ok

    # -- chats -------------------------------------------------------------------------------------
    # -- which chats are this root's (see :mod:`~jupyter_aaep.store.roots`) ----------------------
    def unrooted_note(self) -> str | None:
        return self.roots.unrooted_note()

    def moved(self, old: str, new: str) -> None:
        """A notebook (or a folder) under this root was renamed: its stored chats follow it."""
        self.store.move_notebook(self.roots.root, old, new)

    def created(self, chat: Chat) -> None:
        if chat.notebook_path:
            chat.file_id = self._file_id(chat.notebook_path)
        self.store.save_chat(chat.to_stored(root=self.roots.root))
        self.watch(chat)

    def file_id_of(self, path: str) -> str | None:
        return self._file_id(path)

    def _file_id(self, path: str) -> str | None:
        try:
            return self.file_id(path)
        except Exception as error:  # noqa: BLE001 - no file id yet; the path alone still works
            log.debug("no file id for %s: %s", path, error)
            return None

    def changed(self, chat: Chat) -> None:
        """Title, approval mode or ``can_continue`` changed."""
        chat.updated = now_iso()
        self.store.save_chat(chat.to_stored(root=self.roots.root))

    def watch(self, chat: Chat) -> None:
        writer = _Writer(self, chat, saved_length=len(chat.history))
        self._writers[chat.chat_id] = writer
        chat.emitter.subscribe(writer)
        chat.usage.on_request = writer.model_request

    def forget(self, chat: Chat) -> None:
        """The chat leaves memory (evicted); its writer stops."""
        writer = self._writers.pop(chat.chat_id, None)
        if writer is not None:
            writer.active = False

    def session_ended(self, chat: Chat, session: Session, usage: dict[str, Any] | None) -> None:
        """Save the history and the session's outcome once it has closed (or was cut short)."""
        writer = self._writers.get(chat.chat_id)
        if writer is not None and not writer.active:
            return
        chat.updated = now_iso()
        self.store.save_history(chat.chat_id, chat.history, updated=chat.updated)
        if writer is not None:
            writer.saved_length = len(chat.history)
        terminal = session.terminal_event
        status = str(terminal["type"]).rsplit(".", 1)[-1] if terminal else "errored"
        if usage is not None and isinstance(
            usage.get("sessions"), list
        ):  # this session's, not every earlier one's
            usage = {
                **usage,
                "sessions": [s for s in usage["sessions"] if s.get("session_id") == session.id],
            }
        self.store.session_ended(session.id, status, chat.updated, terminal, usage)
        self.store.save_chat(chat.to_stored(root=self.roots.root))

    def snapshot_taken(self, chat: Chat, session_id: str, record: Any) -> None:
        """The session changed the notebook: store its edit record (replacing the previous one)."""
        self.store.save_snapshot(chat.chat_id, session_id, snapshot_json(record))

    async def written(self, timeout: float) -> None:
        """Wait, off the event loop, until what is queued so far is in the database (not
        while the store is not saving: its writes wait in memory, and the person was told)."""
        if self.store.ok:
            await asyncio.to_thread(self.store.flush, timeout)

    def snapshots_dropped(self, chat: Chat, session_ids: list[str]) -> None:
        self.store.drop_snapshots(chat.chat_id, session_ids)

    def freeze(self, chat: Chat) -> None:
        """Server shutdown with a session running: store the history as it is and stop writing,
        so the session stays open in the store and the next start closes it as errored."""
        writer = self._writers.get(chat.chat_id)
        if writer is not None:
            writer.save_history()
            writer.active = False

    # -- loading -----------------------------------------------------------------------------------
    def title_of(self, chat_id: str) -> str | None:
        """A stored chat's title, read without its events (``None``: none, or not this root's)."""
        stored = self.store.read.load_chat(chat_id)
        if stored is None or not self.roots.ours(stored):
            return None
        return stored.title or None

    def load(
        self, chat_id: str, make: Callable[[StoredChat, Emitter], Chat], history_limit: int
    ) -> Chat | None:
        """The stored chat with its history, recent events (for replay) and edit records (for undo)."""
        read = self.store.read
        stored = read.load_chat(chat_id)
        if stored is None or not self.roots.ours(stored):
            return None  # another root's chat is not this server's to show or continue
        emitter = Emitter(history_limit=history_limit)
        emitter.restore_history(read.events(chat_id, last=history_limit))
        chat = make(stored, emitter)
        chat.snapshots.update(read.snapshots(chat_id))  # only undoable ones (store.reader)
        self.watch(chat)
        return chat

    # -- recovery ----------------------------------------------------------------------------------
    def recover(self, producer: Producer, *, check_edits: EditCheck | None = None) -> list[str]:
        """Close every session a stopped server left running, as ``session.errored``
        (transient, recoverable), in its chat's stored event log; returns their ids.

        *check_edits* compares a session's stored edit record with the notebook's file and
        names the edits the file lacks (``None``: it could not look); the closing event says
        what was found, never that the work is kept without having checked it.
        """
        closed = []
        for stored in self.store.read.running_sessions(self.roots.root):
            last = self.store.read.last_session_event(stored.session_id)
            if last is None:  # nothing of it was published: there is nothing to close
                self.store.session_ended(stored.session_id, "errored", now_iso(), None, None)
                continue
            events = self.store.read.session_events(stored.session_id)
            outside = outside_agent_of(events)
            speaker = producer if outside is None else replace(producer, agent_name=outside)
            session = Session(Emitter(), speaker, session_id=stored.session_id)
            session.restore(
                state=self.store.read.session_states(stored.session_id),
                next_sequence=int(last.get("sequence_number", -1)) + 1,
            )
            closing = _close_open_work(session, events)
            found = self._edits_on_disk(
                stored.chat_id, stored.session_id, check_edits, who=outside or "the agent"
            )
            if outside is not None:
                # Its own model drives it: nothing here can continue it (Continue would be 409).
                event = session.emit(_outside_agent_stopped(outside, events, closing, found))
            else:
                message = "The Jupyter server stopped while the agent was working on this request."
                event = session.emit(
                    SessionErrored(
                        error_category="transient",
                        error_code=RESTART_CODE,
                        recoverable=True,
                        remediation_hint=RESTART_HINT,
                        summary=Summary(
                            normal=f"{message} {found} {RESTART_HINT}",
                            terse="Interrupted by a server restart.",
                            detailed=f"{message} {found} {RESTART_HINT}",
                        ),
                    )
                )
            for done in [*closing, event]:
                self.store.append_event(stored.chat_id, done)
                if done.get("type") == "aaep:agent.tool.completed":
                    self.store.add_step(stored.chat_id, tool_step(done))
            self.store.session_ended(stored.session_id, "errored", now_iso(), event, None)
            chat = self.store.read.load_chat(stored.chat_id) if outside is None else None
            if chat is not None:
                close_open_tool_uses(
                    chat.history, "The server stopped before this tool's result was recorded."
                )
                chat.can_continue = True
                chat.updated = now_iso()
                self.store.save_chat(chat)
                self.store.save_history(chat.chat_id, chat.history, updated=chat.updated)
            closed.append(stored.session_id)
            log.warning(
                "AAEP: session %s of chat %s (%s) was running when the server stopped; it is "
                "closed as errored%s.",
                stored.session_id,
                stored.chat_id,
                outside or "the agent",
                "" if outside else " and can be continued",
            )
        if (
            self.store.ok
        ):  # otherwise the closings wait in memory and land once the database can be written
            self.store.flush()
        return closed

    def _edits_on_disk(
        self,
        chat_id: str,
        session_id: str,
        check_edits: EditCheck | None,
        *,
        who: str = "the agent",
    ) -> str:
        """One sentence on whether the interrupted session's notebook edits reached the file."""
        body = self.store.read.snapshots(chat_id).get(session_id)
        if body is None:  # none, or not undoable (``store.reader.UNDOABLE``)
            return f"{who[:1].upper()}{who[1:]} had not changed the notebook in this request."
        missing = None
        if check_edits is not None:
            try:
                missing = check_edits(str(body.get("path") or ""), body)
            except Exception as error:  # noqa: BLE001 - said as "could not be checked"
                log.warning(
                    "could not compare session %s's edits with the notebook file: %s",
                    session_id,
                    error,
                )
        if missing is None:
            return (
                f"Whether {who}'s last changes reached the notebook's file could not be checked; "
                "look at the notebook before continuing."
            )
        if not missing:
            return f"{who[:1].upper()}{who[1:]}'s changes until then are in the notebook's file."
        shown = "; ".join(missing[:5]) + (
            f"; and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        return f"These changes by {who} may be missing from the notebook's file: {shown}."


def outside_agent_of(events: list[Event]) -> str | None:
    """The outside agent (MCP client) whose session these stored events are, by its
    ``session.started`` (``requested_by: "agent:<name>"``); ``None`` for the chat's own agent."""
    for event in events:
        if event.get("type") == "aaep:agent.session.started":
            by = str(event.get("requested_by") or "")
            return by.removeprefix("agent:") or None if by.startswith("agent:") else None
    return None


def _outside_agent_stopped(
    name: str, events: list[Event], closing: list[Event], found: str
) -> SessionErrored:
    """How an outside agent's session cut by a server stop ends: told as its own request, with
    what ran, and no Continue (its own model decides whether to ask again)."""
    cut = any(e.get("type") == "aaep:agent.tool.completed" for e in closing)
    done = sum(
        e.get("type") == "aaep:agent.tool.completed" and e.get("status") == "success"
        for e in events
    )
    if cut:
        what = "the step it was taking was cut short, and whether it finished is unknown."
    else:
        what = "nothing it asked for ran." if not done else "nothing more it asked for ran."
    earlier = ""
    if done:
        earlier = (
            " Its earlier step is kept." if done == 1 else f" Its {done} earlier steps are kept."
        )
    normal = f"{name}'s request stopped when the server stopped; {what}{earlier}"
    hint = f"Ask {name} again if you still want it done."
    return SessionErrored(
        error_category="transient",
        error_code=OUTSIDE_RESTART_CODE,
        recoverable=False,
        remediation_hint=hint,
        summary=Summary(
            normal=normal,
            terse=f"{name} was stopped by a server restart.",
            detailed=f"{normal} {found} {hint}",
        ),
    )


def tool_step(event: Event) -> StepRecord:
    """The step record of one ``tool.completed`` event."""
    duration = event.get("duration_ms")
    return StepRecord(
        session_id=str(event.get("session_id")),
        kind="tool",
        status=str(event.get("status")),
        name=str(event.get("tool") or ""),
        text=str(event.get("summary_normal") or ""),
        latency_ms=duration if isinstance(duration, int) else None,
        error=str(event["error_message"]) if event.get("error_message") else None,
        created=str(event.get("timestamp")) if event.get("timestamp") else None,
    )


def _close_open_work(session: Session, events: list[Event]) -> list[Event]:
    """Finish what the stopped session left open (an output, tool calls), so its stream stays
    well-formed: every output completed and every invocation answered before the end."""
    outputs: dict[str, tuple[int, bool]] = {}
    tools: dict[str, str] = {}
    for event in events:
        kind = str(event.get("type", "")).removeprefix("aaep:agent.")
        if kind == "output.streaming":
            end = int(event.get("position", 0)) + len(str(event.get("chunk", "")))
            outputs[str(event.get("output_id") or "")] = (end, bool(event.get("complete")))
        elif kind == "tool.invoked" and event.get("tool_call_id"):
            tools[str(event["tool_call_id"])] = str(event.get("tool"))
        elif kind == "tool.completed":
            tools.pop(str(event.get("tool_call_id")), None)
    closing: list[Event] = []
    for output_id, (end, complete) in outputs.items():
        if not complete:
            closing.append(
                session.emit(
                    OutputStreaming(
                        chunk="", position=end, complete=True, output_id=output_id or None
                    )
                )
            )
    if tools:
        changed = session.change_state("calling_tool")
        if changed is not None:
            closing.append(changed)
    for call_id, tool in tools.items():
        closing.append(
            session.emit(
                ToolCompleted(
                    tool=tool,
                    status="error",
                    tool_call_id=call_id,
                    duration_ms=0,
                    error_message="The server stopped while this tool ran; whether it finished is unknown.",
                    summary=Summary(
                        normal=f"{tool} was interrupted by a server restart.", terse="Interrupted."
                    ),
                )
            )
        )
    return closing
