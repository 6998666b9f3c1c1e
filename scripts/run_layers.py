"""The whole pytest run as independent layers side by side (``scripts/test`` without arguments).

Most of the suite's wall time is waiting: Jupyter servers and kernels starting, cells that run
for seconds, a browser drawing the panel. Serially that was 40 minutes on the 2-core machines
here while the cores stood mostly idle, so the folders are split into layers that share nothing
(each starts its own servers, kernels, browser and hub on ports of its own) and run as separate
pytest processes at once. Each writes its own coverage data, combined afterwards for the gate.

Four, because the machines have 2 cores and the suite keeps them busy (93 % of a run): on 29
November 2026 four layers took 16.7 min and 28.8 CPU-minutes of the machine, five (the browser
tests in two halves) 17.5 min and 32.3, every layer slower under the load; six, earlier, failed
three server tests under it. A fifth layer of only the two long-cell browser modules (2.5
minutes of mostly waiting, off the longest layer) was tried on 29 November too: 15.6 min and
29.2 CPU-minutes against 15.3 and 28.1 with four. With the cores busy, the other layers' work
already fills the browser tests' waits, so only less CPU shortens the run. ``scripts/test``
runs its type check and lint beside the layers.

Every line a layer prints is passed on at once, prefixed with the layer's name, and kept in
``test-output/<layer>.log``; at the end a table says each layer's time and result, and the tests
that failed once and ran again (in CI) are named. Exits 1 when any layer fails or runs no test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


@dataclass
class Layer:
    """A set of test folders or files run by one pytest process."""

    name: str
    paths: list[str]
    """Relative to the repository. A path inside another layer's (a module of tests/e2e, every
    folder inside tests) is left out of that layer's run (``--ignore``)."""
    process: subprocess.Popen[str] | None = None
    started: float = 0.0
    took: float = 0.0
    cpu: float = 0.0
    """Seconds of CPU (user + system) of the layer's pytest and every process it waited for."""
    summary: str = ""
    lines: list[str] = field(default_factory=list)


LAYERS = [
    # The browser tests: a real jupyter lab and Chromium (tests/e2e).
    Layer("browser", ["tests/e2e"]),
    # Jupyter servers in process and in subprocesses, the fuzz tests.
    Layer("server", ["tests/server"]),
    # Real kernels and live notebooks, outside agents over MCP and ACP.
    Layer("kernels", ["tests/notebook", "tests/kernel", "tests/interop"]),
    # Everything else: the protocol, engine, chats, store, MCP and ACP units, packaging and the
    # release, JupyterHub (the layer that ends first has room for the hub's 40 s).
    Layer("units", ["tests"]),
]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _command(layer: Layer) -> list[str]:
    command = [sys.executable, "-m", "pytest", "--cov=jupyter_aaep", "--cov-report="]
    command += ["-p", "no:cacheprovider"]  # the layers would write one cache at once
    command += ["--durations=15"]  # where a layer's time went, in every log
    command += layer.paths
    others = [path for other in LAYERS if other is not layer for path in other.paths]
    command += [
        f"--ignore={path}"
        for path in others
        if any(_inside(path, mine) and path != mine for mine in layer.paths)
    ]
    return command


def _relay(layer: Layer, log: Path) -> None:
    """Pass the layer's output on line by line, prefixed, and keep it in its log."""
    assert layer.process is not None and layer.process.stdout is not None
    prefix = f"[{layer.name}] "
    with log.open("w", encoding="utf-8") as kept:
        for line in layer.process.stdout:
            kept.write(line)
            layer.lines.append(line)
            sys.stdout.write(prefix + line)
            sys.stdout.flush()
    # wait4, not wait: the layer's CPU, its servers, kernels and browsers included, is the figure
    # that decides how many layers 2 cores can run side by side.
    _, status, usage = os.wait4(layer.process.pid, 0)
    layer.process.returncode = os.waitstatus_to_exitcode(status)
    layer.took = time.monotonic() - layer.started
    layer.cpu = usage.ru_utime + usage.ru_stime


def _final_line(lines: list[str]) -> str:
    """pytest's last line: ``=== 5 passed, 1 skipped in 12.3s ===``."""
    for line in reversed(lines):
        if line.startswith("=") and (" in " in line or "no tests ran" in line):
            return line.strip("= \n")
    return "(no summary: the process ended early)"


def main() -> int:
    out = ROOT / "test-output"
    out.mkdir(exist_ok=True)
    for old in ROOT.glob(".coverage*"):
        old.unlink()
    missing = [path for layer in LAYERS for path in layer.paths if not (ROOT / path).exists()]
    if missing:
        print(f"Layer paths that do not exist: {', '.join(missing)}", file=sys.stderr)
        return 1
    relays = []
    for layer in LAYERS:
        env = {**os.environ, "COVERAGE_FILE": str(ROOT / f".coverage.{layer.name}")}
        layer.started = time.monotonic()
        layer.process = subprocess.Popen(
            _command(layer),
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        relay = threading.Thread(target=_relay, args=(layer, out / f"{layer.name}.log"))
        relay.start()
        relays.append(relay)
    failed = []
    for layer, relay in zip(LAYERS, relays, strict=True):
        assert layer.process is not None
        relay.join()
        status = layer.process.returncode
        layer.summary = _final_line(layer.lines)
        if status != 0:
            failed.append((layer, status))
    print()
    print("Layer     Minutes  CPU min  Result")
    for layer in LAYERS:
        print(f"{layer.name:<9} {layer.took / 60:7.1f}  {layer.cpu / 60:7.1f}  {layer.summary}")
    print(f"CPU, every layer: {sum(layer.cpu for layer in LAYERS) / 60:.1f} min")
    reruns = [
        line.split(maxsplit=1)[1].strip()
        for each in LAYERS
        for line in each.lines
        if line.startswith("RERUN ")
    ]
    if reruns:
        # CI runs a failed test once more (tests/conftest.py): each of these is a race to fix.
        print(f"Failed once and ran again ({len(reruns)}):")
        for test in reruns:
            print(f"  {test}")
    for layer, status in failed:
        why = "no tests ran" if status == 5 else f"pytest exited {status}"
        print(
            f"The {layer.name} layer failed ({why}): test-output/{layer.name}.log", file=sys.stderr
        )
    if failed:
        return 1
    data = [str(ROOT / f".coverage.{layer.name}") for layer in LAYERS]
    subprocess.run([sys.executable, "-m", "coverage", "combine", "-q", *data], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
