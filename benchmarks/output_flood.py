"""A cell that floods its output, run by the agent, against a plain ``jupyter_client`` execute.

A real Jupyter server (jupyter-aaep + collaboration) runs in this process with a real python3
kernel. The flood cell writes ``--messages`` tqdm-like lines (``\\r`` + bar + flush: one IOPub
stream message each) at full speed, then stamps the wall-clock time its loop ended into a file.

- Baseline: the user's own client runs the same code with ``execute_interactive`` (every
  message read and counted): messages/s read, and the time from the loop's end to the reply.
- Agent: the scripted model asks to ``run_cell`` it (approved at once, a 600-second wait
  window): messages/s from the approval to ``tool.completed`` on the panel's SSE stream, and
  the time from the loop's end to that event (what the issue measured in minutes). Also the
  longest time the notebook file went unsaved during the run, and whether the saved file ends
  with the loop's last line.
- Memory (``--megabytes``, 0 to skip): the server's resident memory before, at its peak and
  after an agent run of a cell that prints that many megabytes of lines (the file keeps them),
  and how much of the output our registry of runs still holds (cut once the run is reported).
  "After" is once the collaboration room the agent opened has been released (60 s after the
  session by default; ``--release-seconds`` to shorten) and its shared document freed. The
  breakdown on the way (``_memory_breakdown.py``): rooms still open and their documents' sizes,
  what keeps a big shared notebook alive, big strings still held, glibc's own count of what is
  in use against what is freed but kept (``mallinfo2``, all arenas) with the resident main heap
  against other anonymous memory (threads' arenas, big blocks, Python's arenas), and what a
  ``malloc_trim`` by the benchmark gives back; rooms nobody is in that remain are then closed by
  the benchmark to show what they held. Python's blocks and glibc's in-use total back at their
  level before the run mean our copies are gone and what stays is the allocator's.
  The figures and what they showed are in docs/configuration.md (Memory after a big output).

``--profile`` prints the functions with the most own time during the agent's flood run.

Run: ``python benchmarks/output_flood.py [--messages 50000] [--megabytes 50] [--profile]
[--trace] [--release-seconds S] [--glibc-defaults]`` (``--trace``: tracemalloc, slow;
``--glibc-defaults``: the server leaves glibc's allocator as the environment set it, as
``c.AAEPExtension.tune_memory_allocator = False`` does; with ``MALLOC_ARENA_MAX=2`` in the
environment, as ``scripts/start`` sets, for the third configuration).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import itertools
import json
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any

import _memory_breakdown as breakdown
import zmq
import zmq.asyncio
from _kernel_bench import Bench, running_server
from typing_extensions import Self

FLOOD = (
    "import sys, time\n"
    "n = {n}\n"
    "for i in range(n + 1):\n"
    "    sys.stdout.write(f'\\r{{100 * i // n:3d}}%|{{\"#\" * (20 * i // n):20s}}| {{i}}/{{n}} [00:01<00:01]')\n"
    "    sys.stdout.flush()\n"
    "print()\n"
    "open({stamp!r}, 'w').write(repr(time.time()))"
)
GIVE_UP = 300.0
"""Seconds after which a run that has not ended is reported as such (the bug: minutes)."""
RELEASE_WAIT = 90.0
"""Seconds to wait for the agent's room to be released (the default delay is the collaboration
extension's ``document_cleanup_delay``, 60 s)."""
BIG = "for i in range({lines}):\n    print('%099d' % i)"


def _saved_text(root: Path, path: str) -> str:
    try:
        cells = json.loads((root / path).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    outputs = cells[0].get("outputs") or []
    return "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")


class SaveWatch:
    """Polls the notebook file's modification time on a thread; the longest gap between saves."""

    def __init__(self, path: Path) -> None:
        self.path, self.stamps, self._stop = path, [time.time()], threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        last = self.path.stat().st_mtime
        while not self._stop.wait(0.1):
            mtime = self.path.stat().st_mtime
            if mtime != last:
                last = mtime
                self.stamps.append(time.time())

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.stamps.append(time.time())

    def longest_gap(self, until: float) -> float:
        stamps = [s for s in self.stamps if s <= until] + [until]
        return max(b - a for a, b in itertools.pairwise(stamps))


async def baseline(client: Any, code: str, stamp: Path) -> tuple[int, float, float]:
    """(messages read, seconds, seconds from the loop's end to the reply)."""
    count = 0

    def hook(_msg: Any) -> None:
        nonlocal count
        count += 1

    started = time.perf_counter()
    reply = await client.execute_interactive(code, output_hook=hook, timeout=600)
    done = time.time()
    assert reply["content"]["status"] == "ok", reply["content"]
    return count, time.perf_counter() - started, done - float(stamp.read_text())


async def agent_run(bench: Bench, chat_id: str, profile: cProfile.Profile | None) -> float | None:
    """Approve the waiting run_cell; seconds until its tool.completed arrives on the stream
    (``None``: not within ``GIVE_UP`` seconds)."""
    await asyncio.wait_for(bench.next_event("awaiting.confirmation"), 60)
    completed = bench.next_event("tool.completed")
    if profile is not None:
        profile.enable()
    started = time.perf_counter()
    await bench.reply(chat_id, bench.last("awaiting.confirmation"))
    try:
        arrived = await asyncio.wait_for(completed, GIVE_UP)
    except TimeoutError:
        return None
    finally:
        if profile is not None:
            profile.disable()
    event = bench.last("tool.completed")
    assert event["status"] == "success", event
    return arrived - started


async def measure(
    messages: int,
    megabytes: int,
    profile: bool,
    trace: bool,
    release_seconds: float | None,
    tune: bool = True,
) -> None:
    from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

    async with running_server(run_cell_wait_seconds=600, tune_memory_allocator=tune) as bench:
        print(f"allocator: {breakdown.allocator_settings(tune)}")
        stamp = bench.root / "loop-ended.txt"
        code = FLOOD.format(n=messages, stamp=str(stamp))
        big = BIG.format(lines=megabytes * 10_000)
        kernel_id, user = await bench.notebook_kernel("flood.ipynb", [code])
        user.stop_channels()  # a client that reads nothing would only hold the kernel's queue
        # The baseline's client queues as many IOPub messages as the agent's does (the kernel
        # drops messages, even the idle status, for a reader over 1,000 behind: it would hang).
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.RCVHWM, 100_000)
        client = bench.app.kernel_manager.get_kernel(kernel_id).client(context=context)
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        bench.write_notebook("big.ipynb", [big])
        count, raw_seconds, raw_lag = await baseline(client, code, stamp)
        client.stop_channels()

        chat_id = (await bench.call("POST", "aaep/v1/chats", {"notebook_path": "flood.ipynb"}))[
            "chat_id"
        ]
        bench.fake.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="Done."))
        profiler = cProfile.Profile() if profile else None
        async with bench.panel(chat_id):
            ended = bench.next_event("session.completed")
            await bench.call(
                "POST",
                f"aaep/v1/chats/{chat_id}/messages",
                {"kind": "user_input", "text": "Run it."},
            )
            with SaveWatch(bench.root / "flood.ipynb") as saves:
                seconds = await agent_run(bench, chat_id, profiler)
                completed_at = time.time()
                loop_end = float(stamp.read_text())
                lag = completed_at - loop_end
                if seconds is not None:
                    await asyncio.wait_for(ended, 60)
                last_line = f"100%|{'#' * 20}| {messages}/{messages} [00:01<00:01]\n"
                waited = time.time()
                while time.time() - waited < 20 and not _saved_text(
                    bench.root, "flood.ipynb"
                ).endswith(last_line):
                    await asyncio.sleep(0.1)  # the room's autosave after the last change
                saved_after = time.time() - completed_at
        saved = _saved_text(bench.root, "flood.ipynb")
        print(
            f"flood cell: {messages:,} stream messages (\\r bar lines), same kernel, one run each"
        )
        print(
            f"raw execute_interactive: {count:,} messages in {raw_seconds:6.1f} s = "
            f"{count / raw_seconds:8,.0f} msg/s; loop end -> reply {raw_lag:6.2f} s"
        )
        if seconds is None:
            print(f"agent run_cell:          no tool.completed within {GIVE_UP:g} s (gave up)")
        else:
            print(
                f"agent run_cell:          {messages:,} messages in {seconds:6.1f} s = "
                f"{messages / seconds:8,.0f} msg/s; loop end -> tool.completed {lag:6.2f} s"
            )
        print(f"longest time without a save during the run: {saves.longest_gap(loop_end):5.1f} s")
        print(
            f"saved file ends with the last bar line: {saved.endswith(last_line)} "
            f"({saved_after:.1f} s after tool.completed)"
        )
        if profiler is not None:
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("tottime").print_stats(20)
            stats.sort_stats("cumulative").print_stats(40)
            print(text.getvalue())
        if megabytes and seconds is not None:
            await memory(bench, megabytes, profile, trace, release_seconds)


async def memory(
    bench: Bench, megabytes: int, profile: bool, trace: bool, release_seconds: float | None
) -> None:
    from jupyter_aaep.notebook._memory import TRIM_AFTER_SECONDS
    from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

    session = await bench.call(
        "POST",
        "api/sessions",
        {
            "path": "big.ipynb",
            "name": "big.ipynb",
            "type": "notebook",
            "kernel": {"name": "python3"},
        },
    )
    assert session["kernel"]["id"]
    chat_id = (await bench.call("POST", "aaep/v1/chats", {"notebook_path": "big.ipynb"}))["chat_id"]
    gc.collect()
    before = breakdown.rss_mb()
    print(f"  Python objects' blocks before the run: {sys.getallocatedblocks() / 1e6:.2f} M")
    print(f"  {breakdown.heap_line()}")
    peak = before
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, breakdown.rss_mb())
            await asyncio.sleep(0.05)

    sampler = asyncio.ensure_future(sample())
    traced = breakdown.start_tracing() if trace else None
    bench.fake.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="Done."))
    async with bench.panel(chat_id):
        ended = bench.next_event("session.completed")
        await bench.call(
            "POST", f"aaep/v1/chats/{chat_id}/messages", {"kind": "user_input", "text": "Run it."}
        )
        profiler = cProfile.Profile() if profile else None
        seconds = await agent_run(bench, chat_id, profiler)
        if seconds is not None:
            await asyncio.wait_for(ended, 120)
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
            print(text.getvalue())
    await asyncio.sleep(5.0)  # the autosave, and the server's trim 3 s after a big run
    stop.set()
    await sampler
    gc.collect()
    after = breakdown.rss_mb()
    took = "did not end" if seconds is None else f"{seconds:.1f} s"
    print(f"memory, a cell printing {megabytes} MB run by the agent ({took}):")
    print(f"  server RSS before {before:6.0f} MB, peak {peak:6.0f} MB")
    breakdown.report(bench.app, before, "5 s after the session ended")
    rooms = getattr(bench.extension.toolbox.notebooks.documents, "rooms", None)
    document = breakdown.room_document(bench.app, "big.ipynb")
    if rooms is not None and release_seconds is not None:
        rooms.idle_seconds = release_seconds
    waited = time.monotonic()
    while rooms is not None and "big.ipynb" not in rooms.released:
        if time.monotonic() - waited > RELEASE_WAIT:
            print(f"  the agent's room was not released within {RELEASE_WAIT:g} s")
            break
        await asyncio.sleep(0.5)
    else:
        if rooms is not None:
            print(
                f"  the agent's room released {time.monotonic() - waited + 5:.0f} s after the session"
            )
    gc.collect()
    after = breakdown.rss_mb()
    breakdown.report(bench.app, before, "after the release")
    if document is not None:
        since = time.monotonic()
        while document() is not None and time.monotonic() - since < RELEASE_WAIT:
            await asyncio.sleep(1.0)
            gc.collect()
        alive = "still alive" if document() is not None else "gone"
        gc.collect()
        gone = breakdown.rss_mb()
        print(
            f"  the released room's document {alive} {time.monotonic() - since:.0f} s later: "
            f"RSS {gone:6.0f} MB (+{gone - before:.0f})"
        )
        await asyncio.sleep(TRIM_AFTER_SECONDS + 1)  # the server's own trim once it is gone
        gc.collect()
        after = breakdown.rss_mb()
        print(f"  after the server's own trim: RSS {after:6.0f} MB (+{after - before:.0f})")
    if traced is not None:
        for line in breakdown.traced_growth(traced):
            print(f"    {line}")
    trimmed = breakdown.trim()
    print(f"  after a malloc_trim by this benchmark: {trimmed:6.0f} MB (+{trimmed - before:.0f})")
    closed = await breakdown.close_idle_rooms_by_hand(bench.app)
    if closed:
        print(f"  rooms nobody is in, closed by this benchmark: {closed}")
        breakdown.report(bench.app, before, "after closing them")
        released = breakdown.trim()
        print(f"  and after malloc_trim: {released:6.0f} MB (+{released - before:.0f})")
    size = (bench.root / "big.ipynb").stat().st_size / 1e6
    from jupyter_aaep.notebook._memory import output_chars

    run = bench.extension.toolbox.notebooks.runs.get("big.ipynb", "c1")
    kept = (
        output_chars(run.task.result().result.outputs)
        if run is not None and run.done and run.task.exception() is None
        else 0
    )
    print(
        f"  RESULT: after the run (its room released) +{after - before:.0f} MB (goal within 50); saved file {size:.0f} MB"
    )
    print(
        f"  our copy in the registry of runs: {kept / 1e6:.2f} M characters "
        f"(the run printed {megabytes * 10_000 * 100 / 1e6:.0f} M; the notebook keeps them all)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50_000, help="stream messages to send")
    parser.add_argument(
        "--megabytes", type=int, default=50, help="size of the big-output cell (0: skip)"
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="tracemalloc during the big run (slow; Python heap only)",
    )
    parser.add_argument(
        "--release-seconds",
        type=float,
        default=None,
        help="release the agent's rooms this long after their last use (default: the "
        "collaboration extension's document_cleanup_delay, 60 s)",
    )
    parser.add_argument(
        "--glibc-defaults",
        action="store_true",
        help="leave glibc's allocator as the environment set it (tune_memory_allocator=False)",
    )
    args = parser.parse_args()
    asyncio.run(
        measure(
            args.messages,
            args.megabytes,
            args.profile,
            args.trace,
            args.release_seconds,
            tune=not args.glibc_defaults,
        )
    )


if __name__ == "__main__":
    main()
