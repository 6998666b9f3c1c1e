"""What reading a notebook costs an outside agent over MCP, against the built-in agent's own call.

A real Jupyter server (jupyter-aaep + collaboration) runs in this process with one notebook,
``state.ipynb`` (``--cells`` code cells, each with a short output). Built-in: the scripted model
calls ``get_notebook_state`` once per turn; the time is from ``tool.invoked`` to
``tool.completed`` as the chat publishes them (what the agent loop waits for). MCP: the
``mcp`` SDK's own client, in a thread with its own event loop as a separate agent process
would be, calls ``get_notebook_state`` over Streamable HTTP with the Jupyter token; the time is
the client's whole round trip (HTTP, authentication, the SDK's session, the call queued in the
outside agent's session in the notebook's chat, narration, the SSE answer). The same notebook,
the same run: the two alternate in ``--phases`` phases of ``--rounds`` calls each (one notebook
works for one agent at a time). The first call of each phase is left out (it starts a session).

Printed: both medians, the MCP call's time inside the server (``tool.invoked`` ->
``tool.completed`` of its own session), and the ratio MCP / built-in (target at most 1.5x).

Run: ``python benchmarks/mcp_notebook_state.py [--rounds 30] [--phases 2] [--cells 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import threading
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


def mcp_phase(url: str, path: str, rounds: int) -> list[float]:
    """An outside agent (the SDK's client) reading the notebook *rounds* + 1 times over MCP."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    async def agent() -> list[float]:
        http = create_mcp_http_client(headers={"Authorization": f"token {TOKEN}"})
        times = []
        async with http, streamable_http_client(url, http_client=http) as streams:  # noqa: SIM117
            async with ClientSession(
                streams[0], streams[1], client_info=Implementation(name="claude-code", version="2")
            ) as session:
                await session.initialize()
                for _ in range(rounds + 1):
                    started = time.perf_counter()
                    result = await session.call_tool("get_notebook_state", {"notebook_path": path})
                    times.append(time.perf_counter() - started)
                    assert not result.is_error, result
        return times[1:]

    out: list[list[float]] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(agent())), name="mcp-agent")
    thread.start()
    thread.join()
    return out[0]


async def until_idle(chat: Any) -> None:
    await asyncio.sleep(0.05)
    while chat.running:
        await asyncio.sleep(0.02)


async def measure(rounds: int, phases: int, cells: int) -> None:
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
        for _ in range(phases):
            builtin += await builtin_phase(bench, chat, stamps, rounds)
            over_mcp += await asyncio.to_thread(mcp_phase, url, path, rounds)
            await until_idle(chat)
            inside += stamps.take()[1:]
        sizes = [
            len(str(e.get("summary_normal", "")))
            for e in chat.emitter.history
            if str(e.get("type", "")).endswith("tool.completed")
        ]
        assert sizes, "no call completed"
    builtin_ms, mcp_ms, inside_ms = median_ms(builtin), median_ms(over_mcp), median_ms(inside)
    print(
        f"get_notebook_state on a {cells}-cell notebook, median of {len(builtin)} calls each, "
        "same notebook, same run"
    )
    print(f"built-in agent, tool.invoked -> tool.completed:        {builtin_ms:8.1f} ms")
    print(f"MCP (SDK client, Streamable HTTP), whole round trip:   {mcp_ms:8.1f} ms")
    print(f"  of which inside the server, invoked -> completed:    {inside_ms:8.1f} ms")
    print(
        f"ratio MCP / built-in:                                  {mcp_ms / builtin_ms:8.2f}x "
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
