"""A server stopped at any moment shuts down without a traceback and runs every cleanup that
applies (issue 31): while it starts (before and after the extension links and loads, at random
moments), once the agent was used, and while a session waits on the model.

Each case starts a real ``jupyter server`` on 127.0.0.1 with the extension, without a terminal
(as JupyterHub's spawner does), sends SIGINT (what the hub sends) or SIGTERM at that point, and
reads the server's whole log.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

pytestmark = pytest.mark.slow

TOKEN = "stop-anytime"
LINKED = "jupyter_aaep | extension was successfully linked"
LOADED = "jupyter_aaep | extension was successfully loaded"
RUNNING = "is running at"
SHUTDOWN = "AAEP agent: shutting down the server"
KNOWN_ELSEWHERE = re.compile(
    r"jupyter_server_ydoc/websocketserver\.py.*WebsocketServer not running", re.DOTALL
)
"""jupyter_server_ydoc's room cleaner raises this on every shutdown (not ours; reported there)."""


class Server:
    def __init__(self, folder: Path, model: FakeAnthropic | None = None) -> None:
        self.folder = folder
        self.port = _free_port()
        self.log_path = folder / "server.log"
        env = {
            "HOME": str(folder),
            "PATH": "/usr/bin:/bin",
            "JUPYTER_RUNTIME_DIR": str(folder / "rt"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "PYTHONUNBUFFERED": "1",
        }
        if model is not None:
            env |= {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": model.api_key}
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in finish()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={folder}",
                "--allow-root",
                f"--AAEPExtension.db_path={folder / 'chats.sqlite3'}",
                "--AAEPExtension.model=claude-test",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, marker: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while marker not in self.log():
            assert self.process.poll() is None, f"the server exited early:\n{self.log()[-3000:]}"
            assert time.monotonic() < deadline, f"no {marker!r} in the log:\n{self.log()[-3000:]}"
            time.sleep(0.05)

    def api(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return httpx.request(
            method,
            f"http://127.0.0.1:{self.port}/aaep/v1/{path}",
            headers={"Authorization": f"token {TOKEN}"},
            timeout=60,
            **kwargs,  # type: ignore[arg-type]
        )

    def stop(self, sig: signal.Signals) -> str:
        """Send *sig*; the server must be gone within 30 s. Returns its log."""
        start = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(30)
            self.stop_seconds = time.monotonic() - start
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._log.close()
        return self.log()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tracebacks(log: str) -> list[str]:
    """Each traceback in *log* (up to the next log line), except the known one of another package."""
    found = []
    for block in re.split(r"(?=Traceback \(most recent call last\))", log)[1:]:
        block = re.split(r"\n\[[A-Z] ", block)[0]
        if not KNOWN_ELSEWHERE.search(block):
            found.append(block)
    return found


def assert_clean(log: str, *, extension_loaded: bool) -> None:
    assert tracebacks(log) == [], log[-6000:]
    assert "could not" not in log.split(SHUTDOWN)[-1], log[-3000:]  # every cleanup step ran
    if extension_loaded:
        assert SHUTDOWN in log, log[-3000:]


@pytest.mark.parametrize(
    ("marker", "delay", "sig"),
    [
        (LINKED, 0.0, signal.SIGINT),
        (LINKED, 0.0, signal.SIGTERM),
        (LOADED, 0.0, signal.SIGINT),
        (RUNNING, 0.0, signal.SIGINT),
        (LINKED, random.uniform(0.0, 1.5), signal.SIGINT),
        (LINKED, random.uniform(0.0, 1.5), signal.SIGTERM),
    ],
    ids=["linked-int", "linked-term", "loaded-int", "running-int", "random-int", "random-term"],
)
def test_a_server_stopped_while_it_starts_shuts_down_cleanly(
    tmp_path: Path, marker: str, delay: float, sig: signal.Signals
) -> None:
    server = Server(tmp_path)
    server.wait_for(marker)
    time.sleep(delay)
    loaded = LOADED in server.log()
    log = server.stop(sig)
    assert_clean(log, extension_loaded=loaded or LOADED in log)
    if marker == RUNNING:  # a running server, no terminal, SIGINT: what a process manager does
        assert "AAEP agent: shutting down the server at /; 0 running session(s) closed" in log
        assert server.stop_seconds < 15, server.stop_seconds


def test_a_server_stopped_right_after_the_agent_was_first_used_closes_its_parts(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path)
    server.wait_for(RUNNING)
    answer = server.api("POST", "chats", json={"notebook_path": "a.ipynb"})
    assert answer.status_code == 201, answer.text
    log = server.stop(signal.SIGINT)
    assert_clean(log, extension_loaded=True)
    assert "0 running session(s) closed" in log


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_server_stopped_during_a_session_closes_it_cleanly(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with FakeAnthropic([Turn(text="Working on it, slowly.", stall_after_chunks=1)]) as model:
        server = Server(tmp_path, model)
        server.wait_for(RUNNING)
        chat = server.api("POST", "chats", json={"notebook_path": "a.ipynb"}).json()["chat_id"]
        answer = server.api(
            "POST", f"chats/{chat}/messages", json={"kind": "user_input", "text": "hello"}
        )
        assert answer.status_code == 202, answer.text
        deadline = time.monotonic() + 60
        while not model.requests:  # the model is streaming, stalled after its first chunk
            assert time.monotonic() < deadline, server.log()[-3000:]
            time.sleep(0.05)
        time.sleep(0.3)
        log = server.stop(sig)
    assert_clean(log, extension_loaded=True)
    assert "1 running session(s) closed" in log, log[-3000:]
