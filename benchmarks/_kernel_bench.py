"""Shared by the kernel benchmarks: a real Jupyter server with jupyter-aaep and collaboration in
this process (on 127.0.0.1, its model the scripted fake), a notebook with a real kernel started
through the sessions API, the panel's SSE stream, and the user's own kernel client.

Everything lives in a temporary folder (Jupyter's config, data and runtime directories too) and
is stopped at the end; nothing outside 127.0.0.1 is contacted.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOKEN = "benchmark-token"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


@dataclass
class Bench:
    """The running server and what the benchmarks drive."""

    app: Any
    fake: Any
    root: Path
    url: str
    extension: Any
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    _waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[float]]] = field(
        default_factory=list
    )

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        from tornado.httpclient import AsyncHTTPClient

        response = await AsyncHTTPClient().fetch(
            self.url + path,
            method=method,
            headers={"Authorization": f"token {TOKEN}"},
            body=None if body is None and method == "GET" else json.dumps(body or {}),
            request_timeout=60,
        )
        return json.loads(response.body) if response.body else None

    def write_notebook(self, path: str, sources: list[str]) -> None:
        cells = [
            {
                "cell_type": "code",
                "id": f"c{i + 1}",
                "source": s,
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
            for i, s in enumerate(sources)
        ]
        notebook = {
            "cells": cells,
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.root / path).write_text(json.dumps(notebook))

    async def notebook_kernel(self, path: str, sources: list[str]) -> tuple[str, Any]:
        """A session (kernel) for *path*, and the user's client to that kernel."""
        self.write_notebook(path, sources)
        session = await self.call(
            "POST",
            "api/sessions",
            {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}},
        )
        kernel_id = session["kernel"]["id"]
        client = self.app.kernel_manager.get_kernel(kernel_id).client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        return kernel_id, client

    def next_event(self, suffix: str) -> asyncio.Future[float]:
        """A future for the perf_counter time the panel's stream delivers the next *suffix* event."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((lambda e: str(e.get("type", "")).endswith(suffix), future))
        return future

    def _arrived(self, when: float, event: dict[str, Any]) -> None:
        self.seen.append((when, event))
        for waiter in list(self._waiters):
            predicate, future = waiter
            if not future.done() and predicate(event):
                future.set_result(when)
                self._waiters.remove(waiter)

    @asynccontextmanager
    async def panel(self, chat_id: str) -> AsyncIterator[None]:
        """The side panel's SSE stream of *chat_id*, read on a thread of its own (a browser is
        another process: its reading must not queue behind the server's work on this loop).
        Each event is stamped when its line arrives."""
        import httpx

        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def read() -> None:
            with (
                httpx.Client(timeout=None) as client,
                client.stream(
                    "GET",
                    f"{self.url}aaep/v1/chats/{chat_id}/events",
                    headers={"Authorization": f"token {TOKEN}"},
                ) as response,
            ):
                for line in response.iter_lines():
                    if stop.is_set():
                        return
                    if line.startswith("data: "):
                        loop.call_soon_threadsafe(
                            self._arrived, time.perf_counter(), json.loads(line[6:])
                        )

        reader = threading.Thread(target=read, name="panel-sse", daemon=True)
        reader.start()
        chat = self.extension.runner.get(chat_id)
        deadline = time.monotonic() + 10
        while (
            len(chat.emitter.subscribers) <= chat.baseline_subscribers
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(0.01)
        try:
            yield
        finally:
            stop.set()  # the thread ends at the next line or when the server closes the stream

    async def reply(self, chat_id: str, confirmation: dict[str, Any]) -> None:
        from jupyter_aaep.aaep.clock import SessionClock
        from jupyter_aaep.aaep.ids import new_subscription_id

        await self.call(
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {
                "type": "confirmation.reply",
                "reply_token": confirmation["reply_token"],
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
                "decision": "accept",
            },
        )

    def last(self, suffix: str) -> dict[str, Any]:
        return next(e for _, e in reversed(self.seen) if str(e.get("type", "")).endswith(suffix))


@asynccontextmanager
async def running_server(fake: Any = None, **aaep: Any) -> AsyncIterator[Bench]:
    """The server, with jupyter_aaep, jupyter_server_ydoc and jupyter_server_fileid, in this process
    (*aaep*: more ``AAEPExtension`` options). Its model is *fake* (started; anything with
    ``base_url``, ``api_key`` and ``stop()``, stopped at the end) or a ``FakeAnthropic`` on
    threads of this process."""
    with tempfile.TemporaryDirectory(prefix="aaep-bench-") as folder:
        base = Path(folder)
        root = base / "root"
        root.mkdir()
        for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
            os.environ[name] = str(base / name.lower())
        cwd = os.getcwd()
        os.chdir(base)  # collaboration rooms write .jupyter_ystore.db here
        from traitlets.config import Config

        from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

        if fake is None:
            fake = FakeAnthropic().start()
        os.environ["ANTHROPIC_BASE_URL"] = fake.base_url
        os.environ["ANTHROPIC_API_KEY"] = fake.api_key
        from jupyter_server.serverapp import ServerApp

        port = free_port()
        config = Config(
            {
                "ServerApp": {
                    "jpserver_extensions": {
                        "jupyter_aaep": True,
                        "jupyter_server_ydoc": True,
                        "jupyter_server_fileid": True,
                    }
                },
                "IdentityProvider": {"token": TOKEN},
                "SQLiteYStore": {"db_path": str(base / "rtc.db")},
                "BaseFileIdManager": {
                    "root_dir": str(root),
                    "db_path": str(base / "fid.db"),
                    "db_journal_mode": "OFF",
                },
                "AAEPExtension": {
                    "model": "claude-bench",
                    "db_path": ":memory:",
                    "max_turns": 500,
                    **aaep,
                },
            }
        )
        app = ServerApp.instance(
            port=port,
            port_retries=0,
            ip="127.0.0.1",
            open_browser=False,
            config=config,
            allow_root=True,
            root_dir=str(root),
            log_level="WARN",
        )
        app.init_signal = lambda: None
        app.initialize(argv=[], new_httpserver=True)
        await asyncio.sleep(0.05)  # the port is bound by a loop callback
        await app._post_start()  # the extensions' start hooks (exports AAEP_SERVER_URL for kernels)
        bench = Bench(
            app, fake, root, f"http://127.0.0.1:{port}/", app.web_app.settings["jupyter_aaep"]
        )
        try:
            yield bench
        finally:
            await app._cleanup()
            app.http_server.stop()
            fake.stop()
            ServerApp.clear_instance()
            os.chdir(cwd)


async def raw_executes(client: Any, code: str, rounds: int) -> list[float]:
    """Seconds of ``execute_interactive`` of *code* through a plain ``jupyter_client`` client."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        reply = await client.execute_interactive(code, output_hook=lambda _msg: None, timeout=60)
        times.append(time.perf_counter() - started)
        assert reply["content"]["status"] == "ok", reply["content"]
    return times
