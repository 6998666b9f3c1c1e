"""What storing chats costs the agent: events persisted per second and the loop's turn rate.

Two figures, both measured in this run:

1. Raw store throughput: AAEP-sized events queued with ``ChatStore.append_event`` as fast as
   the caller can, then flushed; events per second until they are on disk (WAL, one writer
   thread, one transaction per batch).
2. The agent loop against the scripted model on 127.0.0.1, one chat of requests that each
   take three tool turns, run with and without a store on a database file, alternating the
   two so machine noise hits both. Printed: turns per second for each and the slowdown
   (target: under 10 %).

Run: ``python benchmarks/persistence.py``
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import anthropic

from jupyter_aaep import aaep_tool
from jupyter_aaep.aaep import Emitter, Producer, Session, SessionStarted, Summary
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.chats.persistence import ChatPersistence
from jupyter_aaep.chats.runner import ChatRunner
from jupyter_aaep.store.chat_store import ChatStore
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

EVENTS = 20_000
REQUESTS = 12
TOOL_TURNS = 3
ROUNDS = 3


@aaep_tool(risk_level="low")
async def read_cells(start: int) -> str:
    """Read some cells.

    Parameters
    ----------
    start : int
        First cell.
    """
    return "\n".join(f"cell {start + i}: x = {i} * 2" for i in range(40))


def store_throughput(folder: Path) -> float:
    store = ChatStore(str(folder / "throughput.sqlite3"))
    emitter = Emitter()
    session = Session(emitter, Producer(model="benchmark"))
    events = []
    emitter.subscribe(type("Keep", (), {"deliver": lambda self, e: events.append(e)})())
    session.emit(SessionStarted(summary=Summary("Started.")))
    for index in range(EVENTS - 1):
        session.change_state("thinking" if index % 2 else "calling_tool")
    started = time.perf_counter()
    for event in events:
        store.append_event("chat_bench", event)
    store.flush(120)
    elapsed = time.perf_counter() - started
    store.close()
    return len(events) / elapsed


async def turn_rate(fake: FakeAnthropic, store: ChatStore | None) -> float:
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
    runner = ChatRunner(
        client_factory=lambda: client,
        config=AgentConfig(model="claude-bench"),
        registry_factory=lambda chat: ToolRegistry([*conversation_tools(), read_cells]),
        persistence=ChatPersistence(store) if store is not None else None,
    )
    chat = runner.create_chat("bench.ipynb")
    for request in range(REQUESTS):
        fake.add(
            *[
                Turn(text="Reading.", tool_uses=[ToolUse("read_cells", {"start": t * 40})])
                for t in range(TOOL_TURNS)
            ],
            Turn(text=f"Answer {request}: all cells read."),
        )
    started = time.perf_counter()
    for request in range(REQUESTS):
        runner.submit(chat.chat_id, f"Read the notebook, pass {request}.")
        assert chat.task is not None
        result = await chat.task
        assert result.status == "completed", result
    if store is not None:
        store.flush(60)
    elapsed = time.perf_counter() - started
    await client.close()
    return REQUESTS * (TOOL_TURNS + 1) / elapsed


async def loop_figures(folder: Path) -> tuple[list[float], list[float], int]:
    without: list[float] = []
    with_db: list[float] = []
    events = 0
    async with FakeAnthropic() as fake:
        for round_ in range(ROUNDS):
            without.append(await turn_rate(fake, None))
            store = ChatStore(str(folder / f"loop{round_}.sqlite3"))
            with_db.append(await turn_rate(fake, store))
            events = len(store.read.events(store.read.list_chats()[0].chat_id))
            store.close()
    return without, with_db, events


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rate = store_throughput(folder)
        without, with_db, events = asyncio.run(loop_figures(folder))
    plain, stored = statistics.median(without), statistics.median(with_db)
    print(
        f"store throughput: {rate:,.0f} events/s persisted ({EVENTS} events, WAL, one writer thread)"
    )
    print(f"agent loop without the database: {plain:.1f} turns/s (median of {ROUNDS})")
    print(
        f"agent loop with the database:    {stored:.1f} turns/s (median of {ROUNDS}; {events} events stored per run)"
    )
    print(f"slowdown: {(1 - stored / plain) * 100:+.1f} % (target: under 10 %)")


if __name__ == "__main__":
    main()
