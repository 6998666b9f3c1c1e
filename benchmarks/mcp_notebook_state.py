"""What reading a notebook costs an outside agent over MCP, against the built-in agent's own call.

A real Jupyter server (jupyter-aaep + collaboration) runs in this process with one notebook,
``state.ipynb`` (``--cells`` code cells, each with a short output). Built-in: the scripted model
calls ``get_notebook_state`` once per turn; the time is from ``tool.invoked`` to
``tool.completed`` as the chat publishes them (what the agent loop waits for). MCP: the
``mcp`` SDK's own client, in a process of its own as an outside agent is, calls ``get_notebook_state`` over Streamable HTTP with the Jupyter token; the time is
the client's whole round trip (HTTP, authentication, the SDK's session, the call queued in the
outside agent's session in the notebook's chat, narration, the SSE answer). The same notebook,
the same run: the two alternate in ``--phases`` phases of ``--rounds`` calls each (one notebook
works for one agent at a time). The first call of each phase is left out (it starts a session).

Printed: the built-in call (``tool_use`` in, ``tool_result`` out: what the agent loop waits
for, timed around the dispatcher) and within it the tool (``tool.invoked`` ->
``tool.completed``); the MCP round trip and within it the same two spans of its call in the
chat; and the ratio MCP round trip / built-in call (target at most 1.5x). The rest of the round
trip is HTTP, Jupyter's login check, the SDK's session on both sides and a second process
being scheduled: on a busy machine that last part dominates.

Run: ``python benchmarks/mcp_notebook_state.py [--rounds 30] [--phases 2] [--cells 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from _kernel_bench import TOKEN, median_ms, running_server

IDLE_SECONDS = 0.3
"""An outside agent's session ends this long after its last call, so the next phase can start."""


class Stamps:
    """``tool.invoked`` / ``tool.completed`` pairs of a chat, by perf_counter time."""

    def __init__(self) -> None:
        self.invoked: dict[str, float] = {}
        self.spans: list[float] = []
        self.completed = asyncio.Event()

    def deliver(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", ""))
        call = str(event.get("tool_call_id", ""))
        if kind.endswith("tool.invoked"):
            self.invoked[call] = time.perf_counter()
        elif kind.endswith("tool.completed") and call in self.invoked:
            self.spans.append(time.perf_counter() - self.invoked.pop(call))
            self.completed.set()

    def take(self) -> list[float]:
        spans, self.spans = self.spans, []
        return spans


async def builtin_phase(bench: Any, chat: Any, stamps: Stamps, rounds: int) -> list[float]:
    """One request of the built-in agent reading the notebook *rounds* + 1 times."""
    from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

    bench.fake.add(
        *[
            Turn(tool_uses=[ToolUse("get_notebook_state", {})], delay=0.02)
            for _ in range(rounds + 1)
        ],
        Turn(text="Read it."),
    )
    await bench.call(
        "POST",
        f"aaep/v1/chats/{chat.chat_id}/messages",
        {"kind": "user_input", "text": "Read the notebook."},
    )
    await until_idle(chat)
    return stamps.take()[1:]


CLIENT = """
import asyncio, json, sys, time
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

url, token, path, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

async def agent():
    http = create_mcp_http_client(headers={"Authorization": f"token {token}"})
    times = []
    async with http, streamable_http_client(url, http_client=http) as streams:
        async with ClientSession(
            streams[0], streams[1], client_info=Implementation(name="claude-code", version="2")
        ) as session:
            await session.initialize()
            pings = []
            for _ in range(rounds + 1):
                started = time.perf_counter()
                result = await session.call_tool("get_notebook_state", {"notebook_path": path})
                times.append(time.perf_counter() - started)
                assert not result.is_error, result
                started = time.perf_counter()
                await session.send_ping()
                pings.append(time.perf_counter() - started)
    print(json.dumps([times[1:], pings[1:]]))

asyncio.run(agent())
"""


async def mcp_phase(url: str, path: str, rounds: int) -> tuple[list[float], list[float]]:
    """An outside agent (the SDK's client, in a process of its own as Claude Code would be)
    reading the notebook *rounds* + 1 times over MCP, each read followed by an MCP ping (the
    transport's own round trip, which runs none of our code after Jupyter's login check)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLIENT,
        url,
        TOKEN,
        path,
        str(rounds),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await child.communicate()
    assert child.returncode == 0, "the MCP client failed"
    calls, pings = json.loads(out)
    return [float(t) for t in calls], [float(t) for t in pings]


async def until_idle(chat: Any) -> None:
    await asyncio.sleep(0.05)
    while chat.running:
        await asyncio.sleep(0.02)


def time_dispatches() -> dict[str, list[float]]:
    """Seconds of each ``ToolDispatcher.run_all`` (a tool_use in, its tool_result out: what the
    agent loop waits for), by who called: "built-in" or "outside"."""
    from jupyter_aaep.agent.dispatch import ToolDispatcher

    spans: dict[str, list[float]] = {"built-in": [], "outside": []}
    original = ToolDispatcher.run_all

    async def timed(self: Any, uses: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(self, uses)
        finally:
            who = "built-in" if self.session.actor == "The agent" else "outside"
            spans[who].append(time.perf_counter() - started)

    ToolDispatcher.run_all = timed  # type: ignore[method-assign]
    return spans


async def measure(rounds: int, phases: int, cells: int) -> None:
    dispatches = time_dispatches()
    async with running_server(mcp_idle_seconds=IDLE_SECONDS) as bench:
        path = "state.ipynb"
        bench.write_notebook(path, [f"value_{i} = {i} * 2\nprint(value_{i})" for i in range(cells)])
        chat_id = (await bench.call("POST", "aaep/v1/chats", {"notebook_path": path}))["chat_id"]
        chat = bench.extension.runner.get(chat_id)
        stamps = Stamps()
        chat.emitter.subscribe(stamps)
        url = f"{bench.url}aaep/v1/mcp"
        builtin: list[float] = []
        over_mcp: list[float] = []
        inside: list[float] = []
        builtin_calls: list[float] = []
        outside_calls: list[float] = []
        pings: list[float] = []
        for _ in range(phases):
            builtin += await builtin_phase(bench, chat, stamps, rounds)
            builtin_calls += dispatches["built-in"][1:]
            calls, pinged = await mcp_phase(url, path, rounds)
            over_mcp += calls
            pings += pinged
            await until_idle(chat)
            inside += stamps.take()[1:]
            outside_calls += dispatches["outside"][1:]
            for spans in dispatches.values():
                spans.clear()
        sizes = [
            len(str(e.get("summary_normal", "")))
            for e in chat.emitter.history
            if str(e.get("type", "")).endswith("tool.completed")
        ]
        assert sizes, "no call completed"
    call_ms, mcp_ms = median_ms(builtin_calls), median_ms(over_mcp)
    print(
        f"get_notebook_state on a {cells}-cell notebook, median of {len(builtin)} calls each, "
        "same notebook, same run"
    )
    print(f"built-in agent, tool_use -> tool_result (the whole call):   {call_ms:8.1f} ms")
    print(
        f"  of which the tool, tool.invoked -> tool.completed:       {median_ms(builtin):8.1f} ms"
    )
    print(f"MCP, the SDK's client in its own process, round trip:      {mcp_ms:8.1f} ms")
    print(
        f"  of which the call in the chat, tool_use -> tool_result:  {median_ms(outside_calls):8.1f} ms"
    )
    print(f"  of which the tool, tool.invoked -> tool.completed:       {median_ms(inside):8.1f} ms")
    print(f"MCP ping round trip (the transport alone, for scale):      {median_ms(pings):8.1f} ms")
    print(
        f"ratio MCP round trip / built-in call:                      {mcp_ms / call_ms:8.2f}x "
        "(target at most 1.5x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--phases", type=int, default=2)
    parser.add_argument("--cells", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(measure(args.rounds, args.phases, args.cells))


if __name__ == "__main__":
    main()
