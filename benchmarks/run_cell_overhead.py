"""What the agent adds to running a trivial cell, against a plain ``jupyter_client`` execute.

Who runs where, as in real use:

- The Jupyter server (jupyter-aaep + collaboration) runs in this process with a real python3
  kernel for ``bench.ipynb`` (``_kernel_bench.running_server``).
- The model, the scripted fake Messages API, runs in a process of its own
  (``_bench_processes.FakeProcess``). After ``tool.completed`` the agent at once asks the model
  again; the streamed answer is read on this server's loop, as it would be from the real
  service, while the event goes out.
- The panel runs in a process of its own (``_panel_process.Panel``), as a browser does. It reads
  the chat's events on the WebSocket (the panel's transport) and on SSE (its fallback), both
  open throughout, and answers each approval as the panel does on each: a frame with a
  ``request_id`` on the socket, or a POST (on a kept-alive connection) beside SSE; the rounds
  alternate between the two (``--transport ws|sse`` for one alone). Both streams subscribed means
  each event is written twice: a little against the agent.

Clock: ``time.monotonic()`` in every process (one clock for the machine on Linux), so the
panel's stamp of the approval's send and of ``tool.completed``'s arrival, and the server's stamp
of its publication, are comparable.

Agent: the scripted model asks to ``run_cell`` the cell ``x = 1``; the time is from the panel's
send of the approval to ``tool.completed``: published by the server, and arrived at the panel
(what a person waits for after pressing Approve). Marks on the way (this process): the server
has the reply (the POST's handler made, or the frame read), ``tool.invoked`` published, the
executor starts, the kernel is asked (the output area cleared), the kernel has answered (reply
and idle in, before the outputs are written), the executor returns.

Baseline: ``execute_interactive`` of the same code on the same kernel, by a ``jupyter_client``
client in the server's process over ZMQ: the path the agent's own executor takes to the kernel,
so the ratio is what the agent adds on top of a round trip it cannot avoid. A person's own run
in JupyterLab goes through the server's kernel WebSocket instead; ``--lab`` times that from the
panel's process (the kernel socket open throughout, so the server also forwards every run's
messages to it): 48.9 ms against 12.6 raw at load 1.9, about 40 ms of it between the kernel's
``busy`` and its next message on that socket, which TCP_NODELAY on every socket did not change
(a matter of jupyter_server or the kernel, not of this project). A baseline that large would
hide what the agent adds, so it is printed for reference only. One baseline run (each kind)
goes while the agent waits for each approval, so both see the same machine load; the first
agent round (client connection, first document open) is left out.

Printed: the load average, medians of each and of each mark, the ratios (goal: arrival at most
2x raw). ``--profile`` prints the functions with the most own time during the agent's rounds
(cProfile; its run's times are not comparable). ``--nagle`` puts back the previous behaviour
of the event streams (below).

Run: ``python benchmarks/run_cell_overhead.py [--rounds 20] [--transport both|ws|sse] [--lab]
[--nagle] [--profile]``

Before (until 2026-11-29) the panel's SSE reader was a thread of this process and the fake
model's threads were here too, competing with the server's loop for the interpreter lock, and
the approval was POSTed from this loop: at load ~4.8 raw 10.3 ms, published 20.3 (1.97x),
arrived 24.9 (2.41x); earlier runs 1.03-2.05x. The "before" rounds of that version (a
``kernel_info`` probe before each run, ``asyncio.wait_for`` in the SSE handler, no yield before
the next model request) are gone: those fixes are merged and what they saved is in this
file's git history; the last two mattered while the SSE handler wrote only from its send loop,
and it now writes in the publisher's step (not measured again); and their patches reached into
private names that issue 32's split of the packages moves. The previous version also printed
the SSE handler's move to writing in the publisher's step: arrival 1.82-2.98x -> 1.03-2.05x.

Nagle's algorithm (2026-11-29): with the panel reading in its own process, ``tool.completed``
reached it on the WebSocket 18-29 ms after its publication (arrival 3.10x, 3.90x and 4.18x raw,
loads 5.7, 1.4 and 1.5; in some rounds not before the agent's next approval request): the
server wrote a small frame while the previous one was unacknowledged, and Nagle's algorithm
held it until the panel's delayed acknowledgement (up to 40 ms on Linux, 200 on Windows). The
chat's WebSocket and SSE streams now set TCP_NODELAY (``server/sse.py``'s ``send_at_once``):
1-3 ms. SSE showed no such delay here (its reader sends nothing back), and is set for the
same reason. ``--nagle`` turns it back off.

Measured (2026-11-29, the shared 2-core machine, 20 rounds a run, 10 per transport), arrival
against raw, WebSocket / SSE: 1.54 / 1.78 (load 2.2), 1.46 / 1.87 (2.4), 1.52 / 1.91 (2.3),
1.60 / 1.87 (2.1), 1.39 / 1.87 (1.9, ``--lab``), 1.63 / 1.97 (1.8), 1.50 / 1.80 (3.0), 1.60 /
1.67 (7.7), 1.52 / 1.64 (5.2), 1.31 / 2.08 (5.3), 1.55 / 2.05 (6.9); and with the kernelspec's
display name kept (below) 1.62 / 1.84 (4.4), 1.73 / 2.03 (4.9), 1.59 / 1.85 (4.8), 1.71 / 2.04
(5.0). One transport alone (``--transport``, 20 rounds, the panel as it runs: one stream): SSE
1.87 (4.6) and 1.76 (5.1), WebSocket 1.31 (5.5) and 1.48 (5.2). Raw 9.3-17.4 ms. The goal is
met on the WebSocket (the panel's transport) in every run, with room; by POST and SSE (its
fallback) narrowly, and missed by 2-4 % in four of fifteen runs with both streams open, all at
loads of 4.9 to 6.9 (the second stream costs SSE's rounds a write per event).

Where the time goes (differences of the marks' medians over the six runs at loads 1.8-2.4;
WebSocket, SSE in brackets): the server has the reply 0.4-0.6 ms after its send (1.8-2.4: the
POST's client, httpx in the panel's process, and the connection); ``tool.invoked`` 0.9-2.0
later (2.0-3.7: the POST's authentication and handler); the executor starts 2.3-2.7 later
(2.1-3.4: the tool opened the shared document twice, each a file check and a file-id SQLite
lookup, and the writer a third time to clear the output area: now one open for all three,
below; and finds the kernel through the session manager; it read every kernelspec from disk for
a display name, about 0.6 ms, now kept per kernel in ``notebook/_sessions.py``: 1.8-2.7 ms at
loads 4.4-5.0); the output area is cleared in 0.5-0.6; the kernel's own run 9.5-11.8
(10.1-13.0), as raw; outputs written and the result made in 0.2-0.4; published 0.6-1.0 later
(0.6-1.6); arrived 0.9-2.8 after that (0.5-1.2). The agent adds 5.8-9.2 ms on the WebSocket,
7.8-12.8 by POST. A profile (``--profile``) shows no function that dominates: socket writes,
event serialisation, and each of the kernel's messages decoded three times in this process
(jupyter_server's activity watcher, ``notebook/kernel_watch.py`` and the executor's client).
The POST's extra over a socket frame is jupyter_server's and tornado's (authentication, the
response's headers and write before the agent's task runs; ours is a fraction of a
millisecond).

One open, two decodings (2026-11-29). A profile of 20 rounds (cProfile, load 12.6) counted,
per round, 3.15 opens of the shared document (``notebook/documents.py``'s ``open``: the tool's
check of the cell, ``NotebookService.start_cell``, and the cell writer clearing the outputs)
and 3.2 SQLite statements of the file-id service; and the kernel watch decoded 3.1 IOPub
messages in full, all the agent's own, which it ignores. Now run_cell hands its notebook to
``start_cell``, which hands it to the writer (``tests/notebook/test_run_cell_cost.py`` counts
one open a run), and the watch reads a message's header and parent header alone unless it
acts on it (a person's run, a shutdown): after, 1.1 opens, 1.25 SQLite statements and 0.5
full decodes by the watch a round (those of the baseline's runs, a person's to it). What that
saves is small: an open took 0.17 ms (median of 106 timed in a run at load 15.6; 0.04 in a
loop of 400), a full decode 68-75 us of CPU against 7 for the two headers; about 0.3-0.6 ms a
run, below what these loaded runs can resolve. Each of the agent's kernel messages is still
decoded twice: by jupyter_server's activity watcher (its own tracking, left alone) and by the
executor's client (jupyter_client's ``deserialize``, which also parses the dates in both
headers, never read by us). One reader for the executor and the watch would save only the
watch's receive and header parse of each message now, and route the executor's IOPub through
the watch. The rest of the agent's share (the same profile, under load, so only the order is
meaningful): publishing each event (``aaep/session.py``'s ``emit``: serialising it, writing
it to both streams, storing it in the chat store) and the executor's IOPub pump. (The
profile's window also holds the start of the agent's next model request, after the mark.)
Measured before and after this change, three runs each alternating (before, after, ...),
arrival against raw, WebSocket / SSE (load): before 1.67 / 1.89 (10.0), 2.26 / 2.59 (10.2),
2.06 / 2.03 (9.8); after 2.03 / 1.90 (9.4), 1.66 / 2.04 (10.7), 1.42 / 1.60 (10.0). Raw 10.2-22.8
ms in these runs: at loads of ten on two cores the spread between runs (the agent's added
12-21 ms before, 6-24 after) is some fifty times the saving, so these runs neither show it
nor rule it out; the counts above are what pins it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from _bench_processes import FakeProcess
from _kernel_bench import TOKEN, median_ms, raw_executes, running_server
from _panel_process import Panel
from agent_speed import Stamps

CODE = "x = 1"


class Published(Stamps):
    """``Stamps`` that also keeps the last event of each type (the approval's reply token)."""

    def __init__(self, emitter: Any) -> None:
        self.last: dict[str, dict[str, Any]] = {}
        super().__init__(emitter)

    def stamp(self, event: dict[str, Any]) -> None:
        self.last[".".join(str(event.get("type", "")).split(".")[-2:])] = event
        super().stamp(event)


STAGES = (
    "the server has the reply",
    "tool.invoked published",
    "the executor starts",
    "the kernel is asked",
    "the kernel has answered",
    "the executor returns",
    "tool.completed published",
    "tool.completed arrived",
)
"""The marks of one agent round, each from the approval's send (``time.monotonic()``)."""


@dataclass
class Figures:
    load: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    lab: list[float] = field(default_factory=list)
    agent: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    """By transport, each round's marks (``STAGES``), seconds after the approval's send."""


def reply_to(confirmation: dict[str, Any]) -> dict[str, Any]:
    """The panel's approving answer to *confirmation* (``chatSession.ts``'s ``reply``)."""
    from jupyter_aaep.aaep.clock import SessionClock
    from jupyter_aaep.aaep.ids import new_subscription_id

    return {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "decision": "accept",
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decided_by": "user:jupyterlab",
    }


def mark_runs(executor: Any, marks: dict[str, float]) -> None:
    """Mark in *marks* where each run of *executor* is: started, the kernel asked (the output
    area cleared), the kernel's answer in (before the outputs are written), returned."""
    real = executor.execute

    async def execute(kernel_id: str, code: str, sink: Any, **options: Any) -> Any:
        marks["the executor starts"] = time.monotonic()
        begin, finish = sink.begin, sink.finish

        async def begun() -> None:
            await begin()
            marks["the kernel is asked"] = time.monotonic()

        async def finished(count: int | None) -> None:
            marks["the kernel has answered"] = time.monotonic()
            await finish(count)

        sink.begin, sink.finish = begun, finished
        try:
            return await real(kernel_id, code, sink, **options)
        finally:
            marks["the executor returns"] = time.monotonic()

    executor.execute = execute


def mark_replies(marks: dict[str, float]) -> None:
    """Mark when the server first handles a message: the POST's handler is made (its headers
    read) or the socket's frame is read."""
    from jupyter_aaep.server.handlers import MessagesHandler
    from jupyter_aaep.server.websocket import ChatSocketHandler

    initialize, on_message = MessagesHandler.initialize, ChatSocketHandler.on_message

    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        marks.setdefault("the server has the reply", time.monotonic())
        initialize(self, *args, **kwargs)

    async def read(self: Any, message: str | bytes) -> None:
        marks.setdefault("the server has the reply", time.monotonic())
        await on_message(self, message)

    MessagesHandler.initialize = made  # type: ignore[method-assign]
    ChatSocketHandler.on_message = read  # type: ignore[method-assign]


def with_nagle() -> None:
    """The previous behaviour (``--nagle``): event streams leave Nagle's algorithm on."""
    from jupyter_aaep.server import sse
    from jupyter_aaep.server.websocket import ChatSocketHandler

    sse.send_at_once = lambda _connection: None
    ChatSocketHandler.set_nodelay = lambda _self, _value: None  # type: ignore[method-assign]


async def measure(args: argparse.Namespace, profiler: cProfile.Profile | None) -> Figures:
    from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

    if args.nagle:
        with_nagle()
    transports = ("ws", "sse") if args.transport == "both" else (args.transport,)
    out = Figures(load=[os.getloadavg()[0]])
    async with running_server(fake=FakeProcess()) as bench:
        kernel_id, client = await bench.notebook_kernel("bench.ipynb", [CODE])
        await raw_executes(client, CODE, 3)  # warm the kernel
        chat_id = (await bench.call("POST", "aaep/v1/chats", {"notebook_path": "bench.ipynb"}))[
            "chat_id"
        ]
        chat = bench.extension.runner.get(chat_id)
        stamps = Published(chat.emitter)
        marks: dict[str, float] = {}
        mark_runs(bench.extension.toolbox.notebooks.executor, marks)
        mark_replies(marks)
        total = args.rounds + 1  # the first round connects the executor and opens the document
        bench.fake.add(
            *[Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]) for _ in range(total)],
            Turn(text="Done."),
        )
        lab = kernel_id if args.lab else None
        async with Panel(bench.url, TOKEN, chat_id, transports, lab) as panel:
            deadline = time.monotonic() + 10
            while (
                len(chat.emitter.subscribers) < chat.baseline_subscribers + len(transports)
                and time.monotonic() < deadline
            ):
                await asyncio.sleep(0.01)
            for _ in range(3 if args.lab else 0):
                await panel.execute(CODE)  # warm JupyterLab's path
            asked = stamps.next("awaiting.confirmation")
            ended = stamps.next("session.completed")
            await bench.call(
                "POST",
                f"aaep/v1/chats/{chat_id}/messages",
                {"kind": "user_input", "text": "Run it."},
            )
            await asyncio.wait_for(asked, 60)
            for round_ in range(total):
                via = transports[round_ % len(transports)]
                if round_:  # the baselines while the agent waits for the approval
                    for baseline in ("raw", "lab")[: 1 + args.lab][:: 1 if round_ % 2 else -1]:
                        if baseline == "raw":
                            out.raw.extend(await raw_executes(client, CODE, 1))
                        else:
                            out.lab.append(await panel.execute(CODE))
                reply = reply_to(stamps.last["awaiting.confirmation"])
                asked = stamps.next("awaiting.confirmation")
                invoked, completed = stamps.next("tool.invoked"), stamps.next("tool.completed")
                marks.clear()
                if profiler is not None and round_:
                    profiler.enable()
                panel.send_reply(via, reply)
                done = await asyncio.wait_for(completed, 60)
                if profiler is not None:
                    profiler.disable()
                # Only now read the panel's answers: nothing polls its pipe while the server works.
                await asyncio.wait_for(asked if round_ < total - 1 else ended, 60)
                sent = await panel.sent()
                got, waited = await panel.arrivals(), time.monotonic() + 10
                while not any(a[1] == via and a[2].endswith("tool.completed") for a in got):
                    assert time.monotonic() < waited, (round_, via, got)
                    await asyncio.sleep(0.05)  # held back on its way (--nagle)
                    got += await panel.arrivals()
                arrived = [a for a in got if a[1] == via and a[2].endswith("tool.completed")]
                assert stamps.last["tool.completed"]["status"] == "success", stamps.last
                assert len(arrived) == 1, (round_, via, got)
                if not round_:
                    continue
                marks["tool.invoked published"] = invoked.result()
                marks["tool.completed published"] = done
                marks["tool.completed arrived"] = arrived[0][0]
                out.agent.setdefault(via, []).append({k: v - sent for k, v in marks.items()})
                out.load.append(os.getloadavg()[0])
        client.stop_channels()
    return out


def report(args: argparse.Namespace, out: Figures, profiler: cProfile.Profile | None) -> None:
    raw = median_ms(out.raw)
    print(f"trivial cell {CODE!r}, same kernel, {args.rounds} interleaved rounds (medians)")
    print(f"load average (1-minute) during the run: {statistics.median(out.load):.1f}")
    print(f"raw execute_interactive, the server's process, ZMQ ({len(out.raw)}):  {raw:6.1f} ms")
    if out.lab:
        lab = median_ms(out.lab)
        print(f"JupyterLab's path, the kernel's WebSocket ({len(out.lab)}):       {lab:6.1f} ms")
    for via, rounds in out.agent.items():
        how = "sent on the WebSocket, read there" if via == "ws" else "POSTed, read on SSE"
        print(f"agent run_cell, from the approval's send ({how}; {len(rounds)} runs):")
        for stage in STAGES:
            at = median_ms([r[stage] for r in rounds])
            ratio = f"{at / raw:5.2f}x raw" if stage.startswith("tool.completed") else ""
            print(f"  {stage + ':':32} {at:6.1f} ms  {ratio}")
        arrived = median_ms([r["tool.completed arrived"] for r in rounds])
        print(f"  goal (arrival at most 2x raw):   {'met' if arrived <= 2 * raw else 'MISSED'}")
        if out.lab:
            print(f"  arrival against JupyterLab's path: {arrived / median_ms(out.lab):5.2f}x")
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        print(text.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="agent rounds (and baseline runs)")
    parser.add_argument(
        "--transport",
        choices=("both", "ws", "sse"),
        default="both",
        help="the panel's event stream: both (rounds alternate), the WebSocket or SSE alone",
    )
    parser.add_argument(
        "--lab",
        action="store_true",
        help="also JupyterLab's kernel WebSocket, open throughout, timed as a reference",
    )
    parser.add_argument(
        "--nagle", action="store_true", help="the previous behaviour: Nagle's algorithm left on"
    )
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.profile else None
    report(args, asyncio.run(measure(args, profiler)), profiler)


if __name__ == "__main__":
    main()
