"""What ``read_file`` costs on a huge file, against the naive read the agent would otherwise do.

A 50 MB CSV is written to a temporary Jupyter root. The tool (through a real
``AsyncFileContentsManager``, as on the server) reads only a bounded head; the baseline is what
a cell like ``open(path).read().splitlines()[:20]`` does: read and split the whole file. Printed:
median time of each, their ratio, and the characters returned to the model.

Run: ``python benchmarks/read_file_huge.py``
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from jupyter_server.services.contents.filemanager import AsyncFileContentsManager

from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolContext
from jupyter_aaep.notebook.service import NotebookService
from jupyter_aaep.tools._file_tools import read_file

SIZE = 50 * 1024 * 1024
ROUNDS = 5


def write_csv(path: Path) -> None:
    row = "2025-01-01,north,12345.67,some free text in a column\n"
    with open(path, "w") as handle:
        handle.write("date,region,amount,comment\n")
        while handle.tell() < SIZE:
            handle.write(row * 10_000)


def baseline(path: Path) -> tuple[float, int]:
    times, kept = [], 0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        with open(path) as handle:
            kept = len("\n".join(handle.read().splitlines()[:21]))
        times.append(time.perf_counter() - started)
    return statistics.median(times), kept


async def tool(root: Path) -> tuple[float, int]:
    contents = AsyncFileContentsManager(root_dir=str(root))
    service = NotebookService(SimpleNamespace(contents_manager=contents))  # type: ignore[arg-type]
    ctx = ToolContext(tool_call_id="bench", services=AgentServices(notebook=service))
    times, kept = [], 0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        result = await read_file(ctx, path="big.csv", max_lines=20)
        times.append(time.perf_counter() - started)
        kept = len(str(result.content))
    return statistics.median(times), kept


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_csv(root / "big.csv")
        naive, naive_chars = baseline(root / "big.csv")
        ours, our_chars = asyncio.run(tool(root))
    print(f"file: {SIZE / 1024 / 1024:.0f} MB CSV, median of {ROUNDS} runs")
    print(
        f"naive whole-file read + split:  {naive * 1000:8.1f} ms  ({naive_chars:,} characters kept)"
    )
    print(
        f"read_file (bounded head):       {ours * 1000:8.1f} ms  ({our_chars:,} characters to the model)"
    )
    print(f"ratio read_file / naive:        {ours / naive:8.3f}")


if __name__ == "__main__":
    main()
