"""Does the chat database stay bounded, what does storing cost the event loop, and how fast does
storing resume after another program lets go of the database?

Three figures, all measured in this run on real SQLite files:

1. Soak: 5,000 short sessions (a one-sentence request and answer each) over 10 chats through
   the persistence layer (``jupyter_aaep/testing/store_soak.py``), with a retention limit of
   1 MB of events per chat, and the same without any limit. Printed: the database's size
   (file + WAL) and the largest chat's event log against the limit.
2. Write latency: what the caller (the event loop) spends per event when the event is queued
   for the writer thread, against committing it itself (one INSERT + COMMIT, WAL,
   synchronous=NORMAL), and the queued cost while another process holds the database.
3. Recovery: another process holds an EXCLUSIVE transaction for ``--lock-seconds``; with the
   server's default settings (5 s lock wait, retries up to every 5 s) the time from its release
   until the writes queued meanwhile are on disk.

Run: ``python benchmarks/store_health.py [--sessions 5000] [--lock-seconds 8]``.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_aaep.store.chat_store import ChatStore
from jupyter_aaep.store.retention import RetentionPolicy
from jupyter_aaep.testing.store_soak import soak

HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""

EVENT = {
    "@context": "https://aaep-protocol.org/context/v1",
    "type": "aaep:agent.output.streaming",
    "event_id": "evt_0",
    "session_id": "sess_bench",
    "chunk": "The mean is 21.4 degrees. " * 4,
    "position": 0,
    "complete": False,
    "summary_normal": "x" * 200,
}


def mb(size: float) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def used_bytes(path: Path) -> int:
    """The database's pages in use (page count less free pages): what the data takes."""
    with sqlite3.connect(path) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        return int((pages - free) * conn.execute("PRAGMA page_size").fetchone()[0])


def soak_figures(folder: Path, sessions: int) -> None:
    print(f"1. Soak: {sessions} sessions over 10 chats")
    for limit in (1.0, 0.0):
        path = folder / f"soak-{limit}.sqlite3"
        store = ChatStore(
            str(path), retention=RetentionPolicy(keep_mb_per_chat=limit, interval_seconds=1.0)
        )
        # In steps, so the figures show whether the database keeps growing once the limit is reached.
        steps = sorted({max(1, sessions // 5), max(1, sessions // 2), sessions})
        done, growth = 0, []
        for step in steps:
            result = soak(store, sessions=step - done, chats=10, settle_seconds=60)
            done = step
            growth.append(f"{mb(used_bytes(path))} after {step}")
        store.close()
        main = (folder / f"soak-{limit}.sqlite3").stat().st_size
        if limit:
            print(
                f"   limit {limit:.0f} MB per chat: file {mb(result.file_bytes)} while open (WAL included), "
                f"{mb(main)} after close; largest chat's events {mb(result.largest_chat_event_bytes)} "
                f"(limit {mb(limit * 1024 * 1024)}); {result.events_kept} events kept; {result.seconds:.1f} s"
                f" for the last {steps[-1] - steps[-2] if len(steps) > 1 else sessions}"
            )
            print(f"   data in the file (pages in use): {'; '.join(growth)} sessions")
        else:
            print(
                f"   no limit:           file {mb(result.file_bytes)} while open, {mb(main)} after close; "
                f"largest chat's events {mb(result.largest_chat_event_bytes)}; {result.events_kept} events kept"
            )
            print(f"   data in the file (pages in use): {'; '.join(growth)} sessions")


def direct_latency(path: Path, count: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, chat_id TEXT, event_id TEXT, "
        "session_id TEXT, body TEXT)"
    )
    import json

    started = time.perf_counter()
    for number in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO events (chat_id, event_id, session_id, body) VALUES (?, ?, ?, ?)",
            ("chat_b", f"evt_{number}", "sess_bench", json.dumps(EVENT)),
        )
        conn.execute("COMMIT")
    conn.close()
    return (time.perf_counter() - started) / count


def queued_latency(store: ChatStore, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        store.append_event("chat_b", EVENT)
    return (time.perf_counter() - started) / count


def hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def latency_figures(folder: Path, count: int = 3000) -> None:
    direct = statistics.median(
        direct_latency(folder / f"direct{n}.sqlite3", count) for n in range(3)
    )
    store = ChatStore(str(folder / "queued.sqlite3"))
    queued = statistics.median(queued_latency(store, count) for _ in range(3))
    assert store.flush(60)
    locker = hold(Path(store.path), 3.0)
    during = queued_latency(store, count)
    locker.wait()
    locker.stdout.close()  # type: ignore[union-attr]
    assert store.flush(60)
    store.close()
    print(f"2. Write latency on the caller (per event, median of 3 × {count}):")
    print(
        f"   committing itself {direct * 1e6:.0f} µs; queued {queued * 1e6:.1f} µs "
        f"(ratio {direct / queued:.0f} : 1); queued while another process holds the database "
        f"{during * 1e6:.1f} µs"
    )


def recovery_figures(folder: Path, lock_seconds: float, trials: int = 3) -> None:
    times = []
    for trial in range(trials):
        store = ChatStore(str(folder / f"recover{trial}.sqlite3"))
        store.append_event("chat_r", EVENT)
        assert store.flush()
        locker = hold(Path(store.path), lock_seconds)
        for _ in range(100):
            store.append_event("chat_r", EVENT)
        locker.wait()
        locker.stdout.close()  # type: ignore[union-attr]
        released = time.monotonic()
        assert store.flush(60)
        times.append(time.monotonic() - released)
        store.close()
    print(
        f"3. Recovery after a {lock_seconds:.0f} s foreign lock (defaults: 5 s lock wait, retries up to 5 s apart):"
    )
    print(
        f"   queued writes on disk {', '.join(f'{t:.2f}' for t in times)} s after the release "
        f"(median {statistics.median(times):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--lock-seconds", type=float, default=8.0)
    args = parser.parse_args()
    logging.getLogger("jupyter_aaep").setLevel(
        logging.ERROR
    )  # the lock's warnings are expected here
    with tempfile.TemporaryDirectory() as folder:
        soak_figures(Path(folder), args.sessions)
        latency_figures(Path(folder))
        recovery_figures(Path(folder), args.lock_seconds)


if __name__ == "__main__":
    main()
