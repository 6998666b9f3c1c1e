"""What the extension costs a server nobody has opened the agent in: start time, RSS and CPU.

Starts a real ``jupyter server`` (with JupyterLab, as a user gets it) on 127.0.0.1, alternately
with the extension enabled and disabled (``ServerApp.jpserver_extensions``), so machine noise
hits both. For each start: seconds until ``/api/status`` answers, the process's RSS and the CPU
seconds it used once it is idle, and whether the pydantic core (which the Anthropic and MCP SDKs
load) is mapped into it. Prints the medians and the differences (issue 31: at most 0.5 s and
15 MB). The extension's first request is then timed too: what a person pays when they open the
panel (the SDK import, once).

Run: ``python benchmarks/server_start.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

TOKEN = "benchmark-token"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def maps_pydantic(pid: int) -> bool:
    return "pydantic_core" in Path(f"/proc/{pid}/maps").read_text()


def compile_package(package: Path | None = None) -> None:
    """Write the package's bytecode (the one this interpreter imports unless *package* is
    given), as ``pip install`` does: a checkout run with ``PYTHONDONTWRITEBYTECODE`` (or by
    users who cannot write to it, as the hub's are) compiles every module changed since its last
    bytecode at every start, which no installed server pays and which would be counted as the
    extension's start cost."""
    import compileall

    if package is None:
        import jupyter_aaep

        package = Path(jupyter_aaep.__file__).parent
    compileall.compile_dir(str(package), quiet=1)


def start_once(folder: Path, *, enabled: bool, first_request: bool) -> dict[str, float]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={folder}",
        "--allow-root",
        f"--AAEPExtension.db_path={folder / 'chats.sqlite3'}",
        "--AAEPExtension.kernel_autoload=False",  # never write the shared environment's config
    ]
    if not enabled:
        command.append("--ServerApp.jpserver_extensions={'jupyter_aaep': False}")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "AAEP_"))},
        "HOME": str(folder),
        "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
        "ANTHROPIC_API_KEY": "sk-ant-benchmark-not-used",
    }
    headers = {"Authorization": f"token {TOKEN}"}
    log = open(folder / f"server-{port}.log", "wb")  # noqa: SIM115 - closed below
    began = time.monotonic()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
    )
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError((folder / f"server-{port}.log").read_text()[-3000:])
            try:
                if (
                    httpx.get(
                        f"http://127.0.0.1:{port}/api/status", headers=headers, timeout=5
                    ).status_code
                    == 200
                ):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        ready = time.monotonic() - began
        time.sleep(3.0)  # start-up work scheduled on the loop runs now, or never
        result = {
            "ready_s": ready,
            "rss_mb": rss_mb(process.pid),
            "cpu_s": cpu_seconds(process.pid),
            "pydantic": float(maps_pydantic(process.pid)),
        }
        if enabled and first_request:
            began = time.monotonic()
            answer = httpx.post(
                f"http://127.0.0.1:{port}/aaep/v1/chats", headers=headers, json={}, timeout=60
            )
            result["first_chat_s"] = time.monotonic() - began
            assert answer.status_code in (200, 201), answer.text
            result["rss_after_chat_mb"] = rss_mb(process.pid)
        return result
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    compile_package()
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="aaep-start-") as tmp:
        for round_ in range(args.rounds):
            for enabled in (True, False) if round_ % 2 == 0 else (False, True):
                folder = Path(tmp) / f"{round_}-{enabled}"
                folder.mkdir()
                runs[enabled].append(start_once(folder, enabled=enabled, first_request=True))
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    for key, unit in (("ready_s", "s"), ("rss_mb", "MB"), ("cpu_s", "CPU s")):
        on = statistics.median(r[key] for r in runs[True])
        off = statistics.median(r[key] for r in runs[False])
        print(
            f"{key:8} enabled {on:7.2f} {unit}  disabled {off:7.2f} {unit}  difference {on - off:+.2f}"
        )
    print(
        "pydantic mapped at idle: enabled",
        [bool(r["pydantic"]) for r in runs[True]],
        "disabled",
        [bool(r["pydantic"]) for r in runs[False]],
    )
    print(
        f"first chat request (POST /aaep/v1/chats) median "
        f"{statistics.median(r['first_chat_s'] for r in runs[True]):.2f} s; RSS after it "
        f"{statistics.median(r['rss_after_chat_mb'] for r in runs[True]):.1f} MB"
    )


if __name__ == "__main__":
    main()
