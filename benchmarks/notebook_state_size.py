"""How big is what ``get_notebook_state`` sends the model, next to the raw notebook JSON?

Builds a realistic 100-cell data-science notebook — markdown, plots (``image/png``), big
dataframes (``text/html`` plus ``text/plain``), long training logs, a traceback — and prints
the raw ``.ipynb`` size, the size of ``get_notebook_state``'s text, their ratio, and whether
every cell id is listed within the 32 000-character budget.

Run: ``python benchmarks/notebook_state_size.py [--cells 100]``. It needs no Jupyter server:
the tool reads a local shared document through the same code path the server uses.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import struct
import time
import zlib
from types import SimpleNamespace
from typing import Any

import nbformat
from jupyter_ydoc import YNotebook

from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolContext
from jupyter_aaep.notebook.documents import LiveNotebook
from jupyter_aaep.notebook.service import NotebookService
from jupyter_aaep.tools.notebook import get_notebook_state

BUDGET = 32_000


def fake_png(width: int, height: int, rng: random.Random, noise: float = 0.05) -> str:
    """A plot-sized PNG (mostly flat colour with some noise, so it compresses like a chart)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = []
    for _ in range(height):
        row = bytearray(b"\x00")
        for _ in range(width):
            row += (
                bytes(rng.randrange(256) for _ in range(3))
                if rng.random() < noise
                else b"\xff\xff\xff"
            )
        rows.append(bytes(row))
    png = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    )
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def dataframe(rows: int, cols: int, rng: random.Random) -> dict[str, str]:
    header = ["", *[f"feature_{c}" for c in range(cols)]]
    body = [[str(r), *[f"{rng.gauss(0, 1):.4f}" for _ in range(cols)]] for r in range(rows)]
    plain = "\n".join("  ".join(f"{v:>10}" for v in line) for line in [header, *body])
    html = (
        "<div><style scoped>.dataframe tbody tr th {vertical-align: top;}</style>"
        '<table border="1" class="dataframe"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in header)
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{v}</td>" for v in line) + "</tr>" for line in body)
        + "</tbody></table></div>"
    )
    return {"text/html": html, "text/plain": plain}


def make_notebook(n_cells: int = 100, seed: int = 0) -> nbformat.NotebookNode:
    """A notebook like the ones people ask for help with: long, with heavy outputs."""
    rng = random.Random(seed)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    png = fake_png(640, 480, rng)
    for i in range(n_cells):
        kind = i % 10
        if kind == 0:
            cell = nbformat.v4.new_markdown_cell(
                f"## Step {i // 10 + 1}: explore the data\n\n" + "Notes. " * rng.randrange(5, 60)
            )
        elif kind in (1, 5):
            source = "\n".join(
                f"df_{i}['col_{j}'] = df_{i}['col_{j}'].fillna(0)  # clean {j}"
                for j in range(rng.randrange(3, 40))
            )
            cell = nbformat.v4.new_code_cell(
                f"df_{i} = load('part_{i}.parquet')\n{source}\ndf_{i}.describe()"
            )
            cell.outputs = [
                nbformat.v4.new_output(
                    "execute_result",
                    data=dataframe(rng.randrange(20, 60), 8, rng),
                    execution_count=i,
                )
            ]
        elif kind in (2, 6, 8):
            cell = nbformat.v4.new_code_cell(
                f"fig, ax = plt.subplots()\nax.plot(x_{i}, y_{i})\nax.set_title('Figure {i}')"
            )
            cell.outputs = [
                nbformat.v4.new_output(
                    "display_data",
                    data={"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"},
                ),
            ]
        elif kind == 3:
            cell = nbformat.v4.new_code_cell(
                f"for epoch in range(300):\n    loss = train(model_{i})\n    print(epoch, loss)"
            )
            log = "".join(
                f"epoch {e:3d}  loss {1 / (e + 1):.6f}  acc {min(0.99, e / 300):.4f}\n"
                for e in range(300)
            )
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=log)]
        elif kind == 9 and i == 49:
            cell = nbformat.v4.new_code_cell("model.fit(X, y)")
            trace = [
                f"\x1b[0;31m---------\x1b[0m\nFile \x1b[0;32m/site-packages/lib/mod_{k}.py:{k * 10}\x1b[0m, in \x1b[0;36mfunc_{k}\x1b[0m\n    call_{k}()"
                for k in range(12)
            ]
            cell.outputs = [
                nbformat.v4.new_output(
                    "error",
                    ename="ValueError",
                    evalue="Input contains NaN",
                    traceback=[*trace, "\x1b[0;31mValueError\x1b[0m: Input contains NaN"],
                )
            ]
        else:
            cell = nbformat.v4.new_code_cell(f"x_{i} = compute({i})\nx_{i}")
            cell.outputs = [
                nbformat.v4.new_output(
                    "execute_result",
                    data={
                        "text/plain": f"array([{', '.join(str(rng.random())[:6] for _ in range(30))}])"
                    },
                    execution_count=i,
                )
            ]
        cell["id"] = f"cell-{i:03d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


class _LocalService(NotebookService):
    """Just enough of ``NotebookService`` for the read tool: a local shared document, no server."""

    state_budget = BUDGET

    def __init__(self, nb: nbformat.NotebookNode) -> None:
        super().__init__(SimpleNamespace(), state_budget=BUDGET)  # type: ignore[arg-type]
        self._doc = YNotebook()
        self._doc.set(json.loads(nbformat.writes(nb)))

    async def open(self, path: str) -> LiveNotebook:
        return LiveNotebook(path, self._doc)

    async def kernel(self, path: str) -> None:
        return None


async def measure(nb: nbformat.NotebookNode, *, budget: int = BUDGET) -> dict[str, Any]:
    service = _LocalService(nb)
    service.state_budget = budget
    ctx = ToolContext(
        tool_call_id="bench",
        notebook_path="analysis.ipynb",
        services=AgentServices(notebook=service),
    )
    started = time.perf_counter()
    result = await get_notebook_state(ctx)
    elapsed = time.perf_counter() - started
    text = result.content
    assert isinstance(text, str)
    raw = nbformat.writes(nb)
    ids = [c["id"] for c in nb.cells]
    return {
        "cells": len(nb.cells),
        "raw_chars": len(raw),
        "state_chars": len(text),
        "ratio": len(text) / len(raw),
        "all_ids_listed": all(f"id {cell_id} " in text for cell_id in ids),
        "within_budget": len(text) <= budget,
        "seconds": elapsed,
        "text": text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--show", action="store_true", help="print the state text too")
    args = parser.parse_args()
    figures = asyncio.run(measure(make_notebook(args.cells)))
    print(f"cells:                 {figures['cells']}")
    print(f"raw .ipynb JSON:       {figures['raw_chars']:,} characters")
    print(f"get_notebook_state:    {figures['state_chars']:,} characters (budget {BUDGET:,})")
    print(f"ratio:                 {figures['ratio']:.4f} ({1 / figures['ratio']:.0f}× smaller)")
    print(f"every cell id listed:  {figures['all_ids_listed']}")
    print(f"rendered in:           {figures['seconds'] * 1000:.0f} ms")
    if args.show:
        print(figures["text"])


if __name__ == "__main__":
    main()
