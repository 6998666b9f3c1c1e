"""What the agent adds to running a trivial cell, against a plain ``jupyter_client`` execute.

A real Jupyter server (jupyter-aaep + collaboration) runs in this process with a real python3
kernel for ``bench.ipynb``. Baseline: the user's own client runs ``x = 1`` with
``execute_interactive`` on that kernel. Agent: the scripted model asks to ``run_cell`` the cell
``x = 1``; the time is from the approval reply (POST to the chat's messages endpoint) to
``tool.completed``: when the server publishes it, and when it arrives on the panel's SSE stream
(what a person waits for after pressing Approve). The rounds are interleaved (one raw execute
while the agent waits for each approval), so both see the same machine load; the first agent
round (client connection, first document open) is left out.

Every other agent round runs the previous behaviour, to show what the fixes saved: a
``kernel_info`` probe before each run even when the server knows the kernel is idle; the SSE
handler waiting for each message through ``asyncio.wait_for`` (an extra task, two more loop
iterations); and no yield between a tool's end and the next model request.

Printed: medians of each, the ratios (target under 2x), and where the agent's time goes.
``--profile`` also prints the functions with the most own time during the agent's rounds.

Run: ``python benchmarks/run_cell_overhead.py [--rounds 20] [--profile]``

Publication -> arrival on the SSE stream (2026-11-29, main against the change alternating in
one batch, 10 rounds each): the SSE handler wrote a message only when its send loop next ran,
after the agent's synchronous work that follows ``tool.completed`` (the next model request is
built before the first await), 1.3-18 ms later (loads 4-14). It now writes in the publisher's
step, as the WebSocket does: 0.5-2.4 ms, what is left being the panel's reading thread waiting
for the interpreter lock. Arrival ratios old -> new: 2.98 -> 1.03 (load 11-12), 2.52 -> 1.55
(14), 2.46 -> 1.43 (4.3-5.6), 1.99 -> 2.05 (5.3-6.5; that run's publication alone was 2.00x),
1.82 -> 1.76 (6.5-6.8). The arrival now follows the publication (the half of this figure the
change does not touch: the raw execute's own time varies 12-49 ms between runs here).
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
                got = await panel.arrivals()
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
