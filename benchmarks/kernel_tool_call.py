"""What calling a notebook's ``@aaep_tool`` function through the agent costs, against calling the
same function with a plain ``jupyter_client`` execute.

A real Jupyter server (jupyter-aaep + collaboration) runs in this process with a real python3
kernel for ``tools.ipynb``; the user's client loads the extension and defines
``add_numbers`` with ``@aaep_tool`` (it registers with the server). Agent: the scripted model
calls ``add_numbers`` once per turn; the time is from ``tool.invoked`` to ``tool.completed`` as
the server publishes them (the server's own kernel client runs
``jupyter_aaep.kernel.runtime.call_tool_json`` silently and reads the JSON answer back).
Baseline: the user's client runs ``add_numbers(1, 2)`` with ``execute_interactive``. Each model
turn takes a moment to arrive, and one raw call runs in that gap, so both see the same load.

Printed: both medians and their ratio (target under 2x).

Run: ``python benchmarks/kernel_tool_call.py [--rounds 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from _kernel_bench import median_ms, raw_executes, running_server

DEFINE = '''
%load_ext jupyter_aaep
from jupyter_aaep import aaep_tool

@aaep_tool
def add_numbers(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b
'''


async def measure(rounds: int) -> None:
    from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

    async with running_server() as bench:
        _, client = await bench.notebook_kernel("tools.ipynb", ["print('tools')"])
        await raw_executes(client, DEFINE, 1)
        await raw_executes(client, "add_numbers(1, 2)", 3)  # warm the kernel
        chat_id = (await bench.call("POST", "aaep/v1/chats", {"notebook_path": "tools.ipynb"}))[
            "chat_id"
        ]
        chat = bench.extension.runner.get(chat_id)
        stamps: list[tuple[str, float]] = []
        finished = asyncio.Event()

        class Stamp:
            def deliver(self, event: dict[str, Any]) -> None:
                kind = ".".join(str(event.get("type", "")).split(".")[-2:])
                stamps.append((kind, time.perf_counter()))
                if kind == "tool.completed":
                    finished.set()

        chat.emitter.subscribe(Stamp())
        bench.fake.add(
            *[
                Turn(tool_uses=[ToolUse("add_numbers", {"a": i, "b": 2})], delay=0.15)
                for i in range(rounds + 1)
            ],
            Turn(text="Done."),
        )
        raw: list[float] = []
        await bench.call(
            "POST", f"aaep/v1/chats/{chat_id}/messages", {"kind": "user_input", "text": "Add."}
        )
        for _ in range(rounds + 1):
            await asyncio.wait_for(finished.wait(), 60)
            finished.clear()
            raw.extend(
                await raw_executes(client, "add_numbers(1, 2)", 1)
            )  # while the next turn is on its way
        while chat.running:
            await asyncio.sleep(0.05)
        client.stop_channels()
        completed = [
            e for e in chat.emitter.history if str(e.get("type", "")).endswith("tool.completed")
        ]
        assert all(e["status"] == "success" for e in completed), completed
    invoked = [t for kind, t in stamps if kind == "tool.invoked"]
    done = [t for kind, t in stamps if kind == "tool.completed"]
    agent = [end - start for start, end in zip(invoked, done)][1:]  # the first connects the client
    raw_ms, agent_ms = median_ms(raw[1:]), median_ms(agent)
    print(
        f"kernel tool add_numbers(a, b), median of {len(agent)} calls each, same kernel, same run"
    )
    print(f"raw jupyter_client execute_interactive('add_numbers(1, 2)'): {raw_ms:8.1f} ms")
    print(f"agent call, tool.invoked -> tool.completed:                {agent_ms:8.1f} ms")
    print(
        f"ratio agent / raw:                                         {agent_ms / raw_ms:8.2f}x (target < 2x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(measure(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
