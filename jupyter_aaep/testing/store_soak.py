"""Many short sessions through the persistence layer, fast: for the retention soak test and benchmark.

Each session is what a one-sentence request leaves in the store: ``session.started``, the
state changes, a streamed answer in a few chunks, ``session.completed``, the model history
and the session's outcome. They are published through real :class:`Session` objects into
chats watched by a real :class:`ChatPersistence`, so the store sees exactly what the runner
would make it write, without the model round trips.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass

from ..aaep.emitter import Emitter
from ..aaep.events import OutputStreaming, SessionCompleted, SessionStarted, Summary
from ..aaep.session import Producer, Session
from ..chats.chat import Chat
from ..chats.persistence import ChatPersistence
from ..store.chat_store import ChatStore

ANSWER = (
    "The mean temperature in the cleaned table is 21.4 degrees, two tenths above last week's, "
    "and no reading falls outside the expected range. "
)


@dataclass
class SoakResult:
    sessions: int
    seconds: float
    file_bytes: int
    """The database file with its WAL, after the last prune."""
    largest_chat_event_bytes: int
    """The largest chat's stored event log (sum of event bodies)."""
    events_kept: int
    queue_microseconds: float
    """Mean time the caller spent per queued event (the event loop's cost of storing)."""


def one_session(chat: Chat, persistence: ChatPersistence, producer: Producer, number: int) -> None:
    session = Session(chat.emitter, producer)
    chat.session = session
    session.emit(
        SessionStarted(
            summary=Summary(normal="Started working on your request."),
            request_text=f"Request {number}: what is the mean temperature?",
        )
    )
    session.change_state("thinking")
    session.change_state("writing_output")
    text = ANSWER * 2
    position = 0
    for start in range(0, len(text), 80):
        chunk = text[start : start + 80]
        session.emit(
            OutputStreaming(
                chunk=chunk, position=position, complete=False, coalesce_hint="sentence"
            )
        )
        position += len(chunk)
    session.emit(
        OutputStreaming(chunk="", position=position, complete=True, coalesce_hint="completion")
    )
    session.emit(SessionCompleted(summary=Summary(normal="Done.", terse="Done.")))
    chat.history += [
        {"role": "user", "content": f"Request {number}"},
        {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]},
    ]
    del chat.history[:-40]  # what the loop's context management keeps, roughly
    persistence.session_ended(chat, session, None)


def soak(
    store: ChatStore, *, sessions: int, chats: int = 10, settle_seconds: float = 30.0
) -> SoakResult:
    """Run *sessions* short sessions spread over *chats*, then wait for pruning to catch up."""
    persistence = ChatPersistence(store)
    producer = Producer(model="soak")
    made = []
    for index in range(chats):
        chat = Chat(
            chat_id=f"chat_soak{index}",
            notebook_path=f"soak{index}.ipynb",
            emitter=Emitter(history_limit=0),
        )
        persistence.created(chat)
        made.append(chat)
    queued = 0.0
    events = 0

    class Count:
        def deliver(self, event: object) -> None:
            nonlocal events
            events += 1

    for chat in made:
        chat.emitter.subscribe(Count())
    started = time.perf_counter()
    for number in range(sessions):
        tick = time.perf_counter()
        one_session(made[number % chats], persistence, producer, number)
        queued += time.perf_counter() - tick
    store.flush(60)
    seconds = time.perf_counter() - started
    bound = store_bound(store)
    deadline = time.monotonic() + settle_seconds
    largest = largest_chat_bytes(store.path)
    while bound and largest > bound and time.monotonic() < deadline:
        time.sleep(0.1)
        largest = largest_chat_bytes(store.path)
    if bound:  # a quiet pass gives free pages back
        time.sleep(min(2 * store._writer.retention.interval_seconds + 0.5, settle_seconds))
    with sqlite3.connect(store.path) as conn:
        kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    return SoakResult(
        sessions=sessions,
        seconds=seconds,
        file_bytes=file_bytes(store.path),
        largest_chat_event_bytes=largest,
        events_kept=kept,
        queue_microseconds=queued / max(events, 1) * 1e6,
    )


def store_bound(store: ChatStore) -> int:
    return store._writer.retention.chat_bytes


def largest_chat_bytes(path: str) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT max(size) FROM (SELECT sum(length(body)) AS size FROM events GROUP BY chat_id)"
        )
        return int(row.fetchone()[0] or 0)


def file_bytes(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


__all__ = ["SoakResult", "file_bytes", "largest_chat_bytes", "one_session", "soak"]
