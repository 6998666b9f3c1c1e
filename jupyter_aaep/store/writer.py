"""The chat store's writer thread: batches, retries with backoff, a bounded queue, pruning.

Why this shape:

- the event loop only puts writes on a queue; one thread owns the writing connection and
  commits whatever piled up in one transaction (a burst of events costs one commit);
- a write that fails because of the database's surroundings (another program holds it,
  the disk is full, the file is read-only) is not lost: the batch is rolled back and kept,
  and the thread tries again with a growing pause (up to ``retry_max_seconds``), reopening
  the connection unless the cause is a lock. While it fails, new writes wait in memory;
  when a write succeeds again they all land, in order, in one transaction;
- memory is bounded: the chats, their message history, session outcomes and undo
  snapshots are *state* (a later write of the same thing replaces a queued one, so they stay
  few), while the event log and step records grow with every step: at most
  ``queue_limit`` of those wait, and beyond that the oldest are given up and counted;
- the store's health changes (saving → not saving with a cause → saving) are reported to
  ``on_health`` from this thread, once per change;
- the thread prunes by the retention policy in small transactions between batches of
  writes: one transaction per turn while writes keep coming (so pruning keeps pace with a
  busy chat), more while nothing waits, never longer than a fraction of a second.

Standard library only.
"""

from __future__ import annotations

import collections
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

from .health import StoreHealth, classify
from .retention import RetentionPolicy, prune_step, release_space

log = logging.getLogger("jupyter_aaep.store.chat_store")

Run = Callable[[sqlite3.Connection], object]

RETRY_FIRST_SECONDS = 0.1
PRUNE_BUDGET_SECONDS = 0.2
"""Longest a pruning pass runs before it gives the thread back to waiting writes."""


@dataclass
class Write:
    """One queued change."""

    run: Run
    key: Hashable | None = None
    """A later write with the same key replaces this one while both wait (same place in the order)."""
    log: bool = False
    """Part of the event log (events, steps): bounded, given up first."""
    chat_id: str | None = None
    cancels: tuple[Hashable, ...] = ()
    """Keys of waiting writes this one makes pointless (a dropped snapshot's save)."""


@dataclass
class _Pending:
    state: dict[Hashable, Write] = field(default_factory=dict)
    events: collections.deque[Write] = field(default_factory=collections.deque)

    def __len__(self) -> int:
        return len(self.state) + len(self.events)


class _Stop:
    pass


STOP = _Stop()

_BUGS = (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)
"""Errors of one write itself (a bug), not of the disk: that write is dropped, the others go on."""


class StoreWriter:
    """Owns the writing connection (opened lazily by *open_connection*) and the queue."""

    def __init__(
        self,
        path: str,
        open_connection: Callable[[], sqlite3.Connection],
        *,
        lock: threading.Lock,
        on_health: Callable[[StoreHealth], None] | None = None,
        queue_limit: int = 20000,
        retry_max_seconds: float = 5.0,
        retention: RetentionPolicy | None = None,
    ) -> None:
        self.path = path
        self._open = open_connection
        self._lock = lock
        self.on_health = on_health
        self.queue_limit = max(1, queue_limit)
        self.retry_max_seconds = max(RETRY_FIRST_SECONDS, retry_max_seconds)
        self.retention = retention or RetentionPolicy()
        self.health = StoreHealth()
        self.conn: sqlite3.Connection | None = None
        self.inbox: queue.SimpleQueue[Write | threading.Event | _Stop] = queue.SimpleQueue()
        self._pending = _Pending(events=collections.deque(maxlen=self.queue_limit))
        self._waiters: list[threading.Event] = []
        self._dirty: set[str] = set()
        self._last_prune = 0.0
        self._prune_more = False
        self._backoff = 0.0
        self._next_try = 0.0
        self._serial = 0
        self.thread = threading.Thread(target=self._main, name="aaep-chat-store", daemon=True)

    # -- health ----------------------------------------------------------------------------------
    def set_health(self, health: StoreHealth) -> None:
        changed = health.saving != self.health.saving
        self.health = health
        if changed and self.on_health is not None:
            try:
                self.on_health(health)
            except Exception:  # pragma: no cover - telling must not stop the writer
                log.exception("AAEP chat store: announcing a change of the store's health failed")

    def failed(self, error: BaseException, *, quiet: bool = False) -> None:
        """A write (or opening the database) failed: remember why and when to try again
        (*quiet*: the caller logs it in its own words)."""
        cause = classify(error, self.path)
        if (
            cause != "locked" and self.conn is not None and self.path != ":memory:"
        ):  # reopen: a fixed file mode or disk needs a new handle
            try:
                self.conn.close()
            except sqlite3.Error:  # pragma: no cover
                pass
            self.conn = None
        self._backoff = min(max(self._backoff * 2, RETRY_FIRST_SECONDS), self.retry_max_seconds)
        self._next_try = time.monotonic() + self._backoff
        was_saving = self.health.saving
        self.set_health(
            replace(
                self.health, saving=False, cause=cause, detail=str(error), queued=len(self._pending)
            )
        )
        if was_saving and self.health.problem and not quiet:
            log.warning("AAEP chat store: %s (%s: %s)", self.health.problem, self.path, error)

    # -- the queue -------------------------------------------------------------------------------
    def _take(self, item: Write | threading.Event | _Stop) -> bool:
        """Put one inbox item in its place; True for the stop signal."""
        if isinstance(item, _Stop):
            return True
        if isinstance(item, threading.Event):
            self._waiters.append(item)
            return False
        pending = self._pending
        for key in item.cancels:
            pending.state.pop(key, None)
        if item.log:
            if len(pending.events) == self.queue_limit:
                if not self.health.dropped:
                    log.warning(
                        "AAEP chat store: more than %d steps wait to be saved; the oldest are given up "
                        "(messages and session outcomes are kept).",
                        self.queue_limit,
                    )
                self.health = replace(self.health, dropped=self.health.dropped + 1)
            pending.events.append(item)
        else:
            key = item.key
            if key is None:
                self._serial += 1
                key = ("write", self._serial)
            pending.state[key] = item  # an existing key keeps its place in the order
        return False

    def _gather(self, timeout: float | None) -> bool:
        try:
            first = (
                self.inbox.get(timeout=timeout)
                if timeout is None or timeout > 0
                else self.inbox.get_nowait()
            )
        except queue.Empty:
            return False
        stop = self._take(first)
        while True:
            try:
                stop = self._take(self.inbox.get_nowait()) or stop
            except queue.Empty:
                return stop

    # -- writing ---------------------------------------------------------------------------------
    def _attempt(self) -> bool:
        pending = self._pending
        writes = [*pending.state.values(), *pending.events]
        with self._lock:
            try:
                if self.conn is None:
                    self.conn = self._open()
                conn = self.conn
                conn.execute("BEGIN IMMEDIATE")
                for write in writes:
                    try:
                        write.run(conn)
                    except _BUGS:
                        log.exception("AAEP chat store: a write was refused and is dropped")
                    except sqlite3.Error:
                        raise
                    except Exception:  # a bug in one write must not lose the others
                        log.exception("AAEP chat store: a write failed and is dropped")
                conn.execute("COMMIT")
            except sqlite3.Error as error:
                if self.conn is not None:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                self.failed(error)
                return False
        self._dirty.update(w.chat_id for w in pending.events if w.chat_id)
        pending.state.clear()
        pending.events.clear()
        self._backoff = 0.0
        if not self.health.saving:
            recovered = StoreHealth(saving=True, dropped=self.health.dropped)
            log.info("AAEP chat store: saving chats again (%s).", self.path)
            self.set_health(recovered)
        self.health = replace(self.health, dropped=0)
        return True

    def _release(self) -> None:
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()

    # -- pruning ---------------------------------------------------------------------------------
    def _prune(self) -> None:
        """One pruning pass when it is due (or unfinished): at least one small transaction, more
        while nothing waits to be written, within a short time budget."""
        policy = self.retention
        now = time.monotonic()
        if not policy.active or self.conn is None:
            return
        if not self._prune_more and now - self._last_prune < policy.interval_seconds:
            return
        self._last_prune = now
        deadline = now + PRUNE_BUDGET_SECONDS
        deleted = steps = 0
        while steps == 0 or (self.inbox.empty() and time.monotonic() < deadline):
            steps += 1
            with self._lock:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    deleted = prune_step(self.conn, policy, self._dirty)
                    self.conn.execute("COMMIT")
                except sqlite3.Error as error:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    log.info("AAEP chat store: pruning old events waits (%s).", error)
                    return
            if not deleted:
                break
        self._prune_more = bool(
            deleted
        )  # cut short by a write or the budget: go on at the next turn
        with self._lock:
            try:
                release_space(self.conn)
            except sqlite3.Error as error:  # pragma: no cover - space comes back at the next pass
                log.info("AAEP chat store: giving free space back to the disk waits (%s).", error)

    # -- the thread ------------------------------------------------------------------------------
    def _main(self) -> None:
        stopping = False
        while True:
            if stopping:
                timeout: float | None = 0.0
            elif not self._pending:
                idle = 0.0 if self._prune_more else max(self.retention.interval_seconds, 0.05)
                timeout = None if not self.retention.active else idle
            elif self.health.saving:
                timeout = 0.0
            else:
                timeout = max(0.0, self._next_try - time.monotonic())
            stopping = self._gather(timeout) or stopping
            if self._pending and (
                self.health.saving or stopping or time.monotonic() >= self._next_try
            ):
                self._attempt()
            if not self._pending:
                self._release()
                if self.health.saving and not stopping:
                    self._prune()
            if stopping:
                if self._pending:
                    log.warning(
                        "AAEP chat store: %d changes could not be saved before the server stopped "
                        "(%s).",
                        len(self._pending),
                        self.health.problem or "the database could not be written",
                    )
                self._release()
                return


__all__ = ["STOP", "StoreWriter", "Write"]
