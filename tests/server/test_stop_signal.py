"""SIGINT without a terminal runs the server's own stop (how JupyterHub stops a server)."""

from __future__ import annotations

import signal
import subprocess
import sys

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


# A real server stopped by SIGINT without a terminal: test_stop_anytime.py, running-int (the
# same command, stdin not a TTY), which also checks the shutdown line and that it takes < 15 s.
