"""SIGINT without a terminal runs the server's own stop (how JupyterHub stops a server)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_aaep.server.signals import stop_on_sigint_without_tty


def test_the_process_ends_with_its_heap_frozen_after_the_other_exit_hooks() -> None:
    """Exit hooks run last-registered first: one registered before ours runs after it."""
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, flush=True))\n"
        "from jupyter_aaep.server.signals import end_without_collecting\n"
        "end_without_collecting(); end_without_collecting()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "frozen True" in done.stdout, done.stdout + done.stderr


class FakeServer:
    def __init__(self) -> None:
        self.stopped: list[int] = []

    def _signal_stop(self, sig: int, frame: object) -> None:
        self.stopped.append(sig)


def test_sigint_is_routed_to_the_servers_stop_and_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server = FakeServer()
        restore = stop_on_sigint_without_tty(server)
        assert restore is not None
        signal.raise_signal(signal.SIGINT)
        assert server.stopped == [signal.SIGINT]
        restore()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        # Someone else's handler is left alone.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert stop_on_sigint_without_tty(server) is None
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_a_real_server_without_a_terminal_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    """A jupyter server with the extension, stdin not a TTY: SIGINT ends it in seconds, and our
    shutdown is in its log."""
    command = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.port=0",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.token=t",
        f"--ServerApp.root_dir={tmp_path}",
        "--allow-root",
        f"--AAEPExtension.db_path={tmp_path / 'chats.sqlite3'}",
        "--AAEPExtension.kernel_autoload=False",
    ]
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
    }
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env
        )
        try:
            deadline = time.monotonic() + 90
            while (
                "is running at" not in log.read_text() and "Jupyter Server" not in log.read_text()
            ):
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()[
                    -3000:
                ]
                time.sleep(0.2)
            while "jupyter_aaep | extension was successfully loaded" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
            time.sleep(1.0)
            start = time.monotonic()
            process.send_signal(signal.SIGINT)
            process.wait(30)
            elapsed = time.monotonic() - start
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    text = log.read_text()
    assert "AAEP agent: shutting down the server at /; 0 running session(s) closed" in text, text[
        -3000:
    ]
    assert elapsed < 15
