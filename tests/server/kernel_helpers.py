"""A real Jupyter server with jupyter-aaep and collaboration, real kernels started through its
sessions API (so they get AAEP_SERVER_URL and their own AAEP_KERNEL_SECRET as in JupyterLab), and a
stand-in for the user: a kernel client of the test that runs cells in those kernels.

Imported by the kernel test modules with ``from kernel_helpers import *`` (fixtures included).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from server_helpers import wait_until
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from jupyter_aaep.server.kernel_handlers import kernel_signature
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic
from jupyter_aaep.testing.shared_server import settle_restarts


@pytest.fixture(autouse=True)
def _private_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Collaboration rooms write .jupyter_ystore.db in the current directory: one per test."""
    monkeypatch.chdir(tmp_path)


def live_server_config(
    fake_model: Any, root: Path, monkeypatch: Any, **aaep: Any
) -> dict[str, Any]:
    """Jupyter with jupyter-aaep and collaboration on the fake model, plus AAEPExtension options."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_model.api_key)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_aaep": True,
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
            }
        },
        "SQLiteYStore": {"db_path": str(root / ".rtc_test.db")},
        "BaseFileIdManager": {
            "root_dir": str(root),
            "db_path": str(root / ".fid_test.db"),
            "db_journal_mode": "OFF",
        },
        "YDocExtension": {"document_save_delay": 0.2, "document_cleanup_delay": 60},
        "AAEPExtension": {
            "model": "claude-test",
            "sse_keepalive_seconds": 0.5,
            "db_path": ":memory:",
            **aaep,
        },
    }


@pytest.fixture
def jp_server_config(
    fake_model: FakeAnthropic, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    return live_server_config(fake_model, jp_root_dir, monkeypatch)


def write_notebook(root: Path, path: str, sources: list[str]) -> str:
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i + 1}",
            "source": source,
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
        for i, source in enumerate(sources)
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / path).write_text(json.dumps(notebook))
    return path


@dataclass
class UserKernel:
    """A notebook's kernel, and the user's own client to it (as JupyterLab's)."""

    kernel_id: str
    path: str
    session_id: str | None
    client: Any
    printed: list[str] = field(default_factory=list)

    async def run(self, code: str, timeout: float = 60) -> str:
        """Run a cell as the user; what it printed (stdout, stderr, results, errors)."""
        seen: list[str] = []

        def hook(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                seen.append(content["text"])
            elif message["msg_type"] in ("execute_result", "display_data"):
                seen.append(str(content.get("data", {}).get("text/plain", "")))
            elif message["msg_type"] == "error":
                seen.append(f"{content['ename']}: {content['evalue']}")

        reply = await self.client.execute_interactive(code, output_hook=hook, timeout=timeout)
        text = "".join(seen)
        self.printed.append(text)
        assert reply["content"]["status"] == "ok", text
        return text

    def send(self, code: str) -> str:
        """Start a cell without waiting for it (the user pressed Run); its message id."""
        return str(self.client.execute(code))

    @property
    def key(self) -> bytes:
        return bytes(self.client.session.key)


class Kernels:
    """Starts notebook kernels through the sessions API and shuts them down at the end."""

    def __init__(self, jp_fetch: Any, serverapp: Any, root: Path) -> None:
        self.jp_fetch = jp_fetch
        self.serverapp = serverapp
        self.root = root
        self.started: list[UserKernel] = []

    async def notebook(
        self, path: str = "k.ipynb", sources: list[str] | None = None, *, load: bool = True
    ) -> UserKernel:
        write_notebook(self.root, path, sources or ["print('hello')"])
        body = {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
        session = json.loads(
            (await self.jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body
        )
        return await self._connect(session["kernel"]["id"], path, session["id"], load)

    async def bare(self) -> UserKernel:
        """A kernel no notebook uses (POST /api/kernels)."""
        kernel = json.loads(
            (
                await self.jp_fetch(
                    "api", "kernels", method="POST", body=json.dumps({"name": "python3"})
                )
            ).body
        )
        return await self._connect(kernel["id"], "", None, True)

    async def _connect(
        self, kernel_id: str, path: str, session_id: str | None, load: bool
    ) -> UserKernel:
        client = await self._ready_client(kernel_id)
        kernel = UserKernel(kernel_id, path, session_id, client)
        self.started.append(kernel)
        if load:
            await kernel.run("%load_ext jupyter_aaep")
        return kernel

    async def _ready_client(self, kernel_id: str, wait: float = 120) -> Any:
        """The person's client, once the kernel answers. A kernel can die at its start: with test
        layers side by side, another process may take a port between jupyter_client choosing it
        and the kernel binding it. Jupyter's restarter then starts it again on new ports, and
        JupyterLab follows; so does this client, with the kernel's new connection."""
        deadline = time.monotonic() + wait
        manager = self.serverapp.kernel_manager.get_kernel(kernel_id)
        while True:
            client = manager.client()
            client.start_channels()
            try:
                await client.wait_for_ready(timeout=60)
                return client
            except RuntimeError as error:
                client.stop_channels()
                if "died" not in str(error) or time.monotonic() > deadline:
                    raise
            pid = getattr(manager.provisioner, "pid", None)
            while getattr(manager.provisioner, "pid", None) == pid or not manager.ready.done():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"kernel {kernel_id} died at its start and did not restart")
                await asyncio.sleep(0.25)

    async def close(self) -> None:
        await settle_restarts(self.serverapp.kernel_manager)
        for kernel in self.started:
            kernel.client.stop_channels()
            if kernel.kernel_id in self.serverapp.kernel_manager:
                await self.serverapp.kernel_manager.shutdown_kernel(kernel.kernel_id, now=True)


@pytest.fixture
def kernels(
    jp_fetch: Any, jp_serverapp: Any, jp_root_dir: Path, jp_asyncio_loop: asyncio.AbstractEventLoop
) -> Any:
    started = Kernels(jp_fetch, jp_serverapp, jp_root_dir)
    yield started
    jp_asyncio_loop.run_until_complete(started.close())


@pytest.fixture
def kernel_api(jp_http_port: int, jp_base_url: str, extension: Any) -> Callable[..., Any]:
    """``await kernel_api(kernel, "tools/x", method="PUT", body={...})`` → (status, JSON), signed as
    that kernel with its own credential; ``key=``, ``kernel_id=``, ``stamp=``, ``nonce=``,
    ``query=`` and ``headers=`` forge the parts (``sent`` in the answer's list of headers is
    kept on ``call.last`` for replays)."""

    async def call(
        kernel: UserKernel | None,
        path: str,
        *,
        method: str = "GET",
        body: Any = None,
        key: bytes | None = None,
        kernel_id: str | None = None,
        stamp: str | None = None,
        nonce: str | None = None,
        query: str = "",
        headers: dict[str, str] | None = None,
        sign: bool = True,
        replay: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        url_path = f"{jp_base_url}aaep/v1/kernel/{path}" + (f"?{query}" if query else "")
        data = b"" if body is None else json.dumps(body).encode()
        sent: dict[str, str] = {}
        if replay is not None:
            sent = dict(replay)
        elif kernel is not None or kernel_id is not None:
            ident = kernel_id or (kernel.kernel_id if kernel else "")
            sent["X-AAEP-Kernel-Id"] = ident
            if sign:
                signing_key = (
                    key
                    if key is not None
                    else (
                        extension.kernel_credentials.for_kernel(kernel.kernel_id).encode()
                        if kernel
                        else b""
                    )
                )
                stamp_ = stamp if stamp is not None else f"{time.time():.3f}"
                nonce_ = nonce if nonce is not None else uuid.uuid4().hex
                sent["X-AAEP-Kernel-Time"] = stamp_
                sent["X-AAEP-Kernel-Nonce"] = nonce_
                sent["X-AAEP-Kernel-Signature"] = kernel_signature(
                    signing_key, method, url_path, data, stamp=stamp_, nonce=nonce_
                )
        sent.update(headers or {})
        call.last = dict(sent)  # type: ignore[attr-defined]
        request = HTTPRequest(
            f"http://127.0.0.1:{jp_http_port}{url_path}",
            method=method,
            headers=sent,
            body=data if method in ("POST", "PUT") else None,
            request_timeout=30,
        )
        try:
            response = await AsyncHTTPClient().fetch(request)
        except HTTPClientError as error:
            response = error.response
            assert response is not None
        text = response.body.decode() if response.body else ""
        return response.code, (json.loads(text) if text else None)

    return call


async def wait_idle(extension: Any, chat_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Wait until the chat's session ended; its AAEP events."""
    chat = extension.runner.get(chat_id)
    await wait_until(
        lambda: not chat.running and chat.session is not None,
        timeout=timeout,
        what="the session to end",
    )
    return [e for e in chat.emitter.history if "@context" in e]


def of(events: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    return [e for e in events if str(e.get("type", "")).endswith(suffix)]


def tool_results(fake: FakeAnthropic, index: int = -1) -> list[dict[str, Any]]:
    """The tool_result blocks of one request the fake model received (the last by default)."""
    content = fake.requests[index].body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    """A tool result's text as the model read it, inside its data block (issue 16)."""
    from jupyter_aaep.agent.data_blocks import unwrap

    content = block.get("content")
    if isinstance(content, list):
        return unwrap([part for part in content if isinstance(part, dict)])
    return unwrap(str(content))


def new_name() -> str:
    return f"nb_{uuid.uuid4().hex[:8]}.ipynb"


__all__ = [
    "Kernels",
    "UserKernel",
    "_private_cwd",
    "jp_server_config",
    "kernel_api",
    "kernels",
    "new_name",
    "of",
    "result_text",
    "tool_results",
    "wait_idle",
    "write_notebook",
]
