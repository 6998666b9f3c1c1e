"""A Jupyter server with jupyter_aaep enabled, its model played by the scripted fake.

pytest-jupyter's fixtures are imported here (``pytest_plugins`` is only allowed in the root
conftest), so they and its async test runner apply to this folder only. The fake Messages
API runs on 127.0.0.1; the extension reaches it through ``ANTHROPIC_BASE_URL`` and
``ANTHROPIC_API_KEY``, set before the server starts, exactly as a user would.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *
from server_helpers import SSE, on_server_loop, wait_until

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

# isort: split
# One server per module marked shared_server, and fake_model (jupyter_aaep/testing/shared_server.py).
from jupyter_aaep.testing.shared_fixtures import *

TOOLS = "jupyter_aaep.testing.conformance_tools:CONFORMANCE_TOOLS"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> Any:
    """Every ``async def`` test here runs on the server's loop (see ``on_server_loop``)."""
    if collector.funcnamefilter(name) and inspect.iscoroutinefunction(obj):
        wrapped = on_server_loop(obj)
        setattr(collector.obj, name, wrapped)  # items look their function up on the module
        return list(collector._genfunctions(name, wrapped))
    return None


@pytest.fixture
def aaep_config() -> dict[str, Any]:
    """Overridden by tests that need other AAEPExtension settings."""
    return {}


@pytest.fixture
def jp_server_config(
    fake_model: FakeAnthropic, aaep_config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_model.api_key)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_aaep": True}},
        "AAEPExtension": {
            "model": "claude-test",
            "sse_keepalive_seconds": 0.5,
            "extra_tools": [TOOLS],
            **aaep_config,
        },
    }


@pytest.fixture
def extension(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["jupyter_aaep"]


@pytest.fixture
def api(jp_fetch: Any) -> Callable[..., Any]:
    """``await api("chats", method="POST", body={...})`` → (status, JSON body or None, headers)."""

    async def call(
        *parts: str,
        method: str = "GET",
        body: Any = None,
        raw: bytes | str | None = None,
        **kwargs: Any,
    ) -> tuple[int, Any, Any]:
        if body is not None:
            raw = json.dumps(body)
        if method == "POST" and raw is None:
            raw = b""
        response = await jp_fetch(
            "aaep", "v1", *parts, method=method, body=raw, raise_error=False, **kwargs
        )
        text = response.body.decode() if response.body else ""
        return response.code, (json.loads(text) if text else None), response.headers

    return call


@pytest.fixture
def new_chat(api: Callable[..., Any]) -> Callable[..., Any]:
    async def make(notebook_path: str = "analysis.ipynb") -> str:
        status, body, _ = await api("chats", method="POST", body={"notebook_path": notebook_path})
        assert status == 201, body
        return str(body["chat_id"])

    return make


@pytest.fixture
def sse(jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]) -> Callable[..., SSE]:
    """``async with sse(chat_id) as stream:`` reads a chat's SSE stream (``None`` = all chats)."""

    def open_stream(
        chat_id: str | None,
        *,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> SSE:
        path = f"aaep/v1/chats/{chat_id}/events" if chat_id else "aaep/v1/events"
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path}"
        return SSE(url, headers={**jp_auth_header, **(headers or {})}, params=params)

    return open_stream


@pytest.fixture
def ws(jp_ws_fetch: Any) -> Callable[..., Any]:
    async def connect(chat_id: str, **kwargs: Any) -> Any:
        return await jp_ws_fetch("aaep", "v1", "chats", chat_id, "ws", **kwargs)

    return connect


@pytest.fixture(params=["post", "websocket"])
def send(
    request: pytest.FixtureRequest, api: Callable[..., Any], ws: Callable[..., Any]
) -> Iterator[Callable[..., Any]]:
    """``await send(chat_id, message)`` → (status, answer or None): the message POSTed to the
    chat's ``/messages``, or sent as a WebSocket frame with a ``request_id`` whose answer is
    the frame echoing it. Tests that take it run over both transports; the answer is the same
    shape either way (only the socket's ``status`` and ``request_id`` are taken off)."""
    sockets: dict[str, Any] = {}
    count = iter(range(1, 1 << 30))

    async def over_post(chat_id: str, message: dict[str, Any]) -> tuple[int, Any]:
        status, body, _ = await api("chats", chat_id, "messages", method="POST", body=message)
        return status, body

    async def over_socket(chat_id: str, message: dict[str, Any]) -> tuple[int, Any]:
        if chat_id not in sockets:
            sockets[chat_id] = await ws(chat_id)
        request_id = f"req-{next(count)}"
        await sockets[chat_id].write_message(json.dumps({**message, "request_id": request_id}))
        while True:
            frame = await read_frame(sockets[chat_id], 10.0)
            assert frame is not None, "the socket closed before the answer"
            if frame.get("request_id") == request_id:
                break
        status = frame.pop("status")
        del frame["request_id"]
        if frame["kind"] == "error":
            return status, {"message": frame["message"]}
        return status, (None if status == 204 else frame)

    yield over_post if request.param == "post" else over_socket
    for connection in sockets.values():
        connection.close()


async def read_frame(connection: Any, timeout: float = 5.0) -> Any:
    message = await asyncio.wait_for(connection.read_message(), timeout)
    return None if message is None else json.loads(message)


async def frames_until(connection: Any, predicate: Any, timeout: float = 30.0) -> list[Any]:
    """Frames up to and including the first *predicate* accepts.

    The timeout is generous because it is only reached on failure: a server's first request
    builds the agent's parts and waits for the SDK import, which on a loaded machine has taken
    over 10 s (the handshake test timed out there)."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout
    while True:
        frame = await read_frame(connection, max(0.01, deadline - time.monotonic()))
        assert frame is not None, (
            f"socket closed; saw {[f.get('type', f.get('kind')) for f in seen]}"
        )
        seen.append(frame)
        if predicate(frame):
            return seen


__all__ = ["frames_until", "read_frame", "wait_until"]
