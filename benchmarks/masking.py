"""What keeping secrets out of a tool result costs, against scanning it with every pattern.

Every tool result the model reads goes through ``mask_for_model`` and every sentence
listeners hear through ``mask_secrets``. Each secret pattern skips text that lacks its
literal ("sk-", "password", "://", …); the baseline, measured in the same run, runs every
pattern on the whole text as before. Texts: a notebook listing as ``get_notebook_state``
writes it (30 and 300 cells), the same with one line that holds a pattern's literal
("3 tests passed"), the same with non-ASCII text ("°C"), and one with a real key in it.
Printed: median milliseconds of each, and the speed-up.

Run: ``python benchmarks/masking.py [--rounds 30]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from jupyter_aaep.aaep import redaction
from jupyter_aaep.aaep.redaction import mask_for_model, mask_secrets


def listing(cells: int, extra: str = "") -> str:
    return "\n".join(
        f"# Cell {i} (code, id 5f0c{i:04d}-aa11-4b2c)\nvalue_{i} = {i} * 2\n"
        f"print(f'value {{value_{i}}} °C')\nOutput: value {i * 2}{extra}\n"
        for i in range(cells)
    )


def median_ms(masker: Callable[[str], object], text: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        masker(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    texts = {
        "30 cells": listing(30).replace("°", "deg "),
        "300 cells": listing(300).replace("°", "deg "),
        "300 cells, 'passed' once": listing(300).replace("°", "deg ") + "\n3 tests passed\n",
        "300 cells, non-ASCII": listing(300),
        "300 cells, a key in one": listing(300) + "\nkey = 'sk-ant-abcdefghijklmnop1234'\n",
    }
    every = redaction._worth_scanning
    print(f"median of {rounds} rounds, ms: pre-checked / every pattern (baseline) = speed-up")
    for name, text in texts.items():
        for masker in (mask_for_model, mask_secrets):
            fast = median_ms(masker, text, rounds)
            redaction._worth_scanning = lambda _text: lambda _pattern: True  # type: ignore[assignment]
            try:
                slow = median_ms(masker, text, rounds)
            finally:
                redaction._worth_scanning = every  # type: ignore[assignment]
            print(
                f"{name:28} {len(text) // 1024:4d} KB {masker.__name__:15}"
                f"{fast:8.2f} / {slow:8.2f} = {slow / fast:5.1f}x"
            )


if __name__ == "__main__":
    main()
