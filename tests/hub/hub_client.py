"""Talking to a user's server through the hub's proxy: the AAEP API, SSE, WebSocket, a kernel."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from hub_harness import User
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id


def is_type(suffix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: str(message.get("type", "")).endswith(suffix)


async def api(
    user: User,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    base: str | None = None,
) -> httpx.Response:
    headers = {"Authorization": f"token {token or user.token}"}
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(
            method, (base or user.server_url) + path, json=body, headers=headers
        )


def confirmation_reply(event: dict[str, Any], decision: str = "accept") -> dict[str, Any]:
    return {
        "type": "confirmation.reply",
        "reply_token": event["reply_token"],
        "decision": decision,
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
    }


class SSEReader:
    """An AAEP event stream (text/event-stream) read with httpx, frame by frame."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.status = 0

    async def __aenter__(self) -> SSEReader:  # noqa: PYI034
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(60.0))
        self._context = self._client.stream(
            "GET",
            self.url,
            headers={"Authorization": f"token {self.token}", "Accept": "text/event-stream"},
        )
        self._response = await self._context.__aenter__()
        self.status = self._response.status_code
        self._lines = self._response.aiter_lines()
        return self

    async def next(self) -> dict[str, Any]:
        data: list[str] = []
        async for line in self._lines:
            if line.startswith("data: "):
                data.append(line[6:])
            elif not line and data:
                return json.loads("".join(data))  # type: ignore[no-any-return]
        raise EOFError("the stream ended")

    async def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []

        async def read() -> None:
            while True:
                seen.append(await self.next())
                if predicate(seen[-1]):
                    return

        await asyncio.wait_for(read(), timeout)
        return seen

    async def __aexit__(self, *exc: object) -> None:
        await self._context.__aexit__(None, None, None)
        await self._client.aclose()


async def websocket(
    user: User, path: str, *, subprotocols: list[str] | None = None
) -> WebSocketClientConnection:
    url = (user.server_url + path).replace("http://", "ws://", 1)
    request = HTTPRequest(url, headers={"Authorization": f"token {user.token}"})
    return await websocket_connect(request, subprotocols=subprotocols)


async def close(connection: WebSocketClientConnection) -> None:
    """Close and wait until the socket is really closed (else it is left for the garbage collector)."""
    connection.close()

    async def drain() -> None:
        while await connection.read_message() is not None:
            pass

    try:
        await asyncio.wait_for(drain(), 10)
    except asyncio.TimeoutError:
        pass
    stream = getattr(connection, "stream", None)
    if stream is not None and not stream.closed():
        stream.close()


async def frames_until(
    connection: WebSocketClientConnection,
    predicate: Callable[[dict[str, Any]], bool],
    timeout: float = 60,
) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        while True:
            frame = await connection.read_message()
            if frame is None:
                raise EOFError("the socket closed")
            seen.append(json.loads(frame))
            if predicate(seen[-1]):
                return

    await asyncio.wait_for(read(), timeout)
    return seen


async def run_in_kernel(
    user: User, kernel_id: str, code: str, timeout: float = 60
) -> tuple[str, list[str]]:
    """Execute *code* through the kernel's channels WebSocket (through the proxy); its text
    output (streams and plain-text results) and any error tracebacks' last lines."""
    connection = await websocket(user, f"api/kernels/{kernel_id}/channels")
    msg_id = uuid.uuid4().hex
    await connection.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "username": user.name,
                    "session": uuid.uuid4().hex,
                    "msg_type": "execute_request",
                    "version": "5.3",
                    "date": SessionClock().now(),
                },
                "parent_header": {},
                "metadata": {},
                "channel": "shell",
                "buffers": [],
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
            }
        )
    )
    text: list[str] = []
    errors: list[str] = []

    async def read() -> None:
        while True:
            frame = await connection.read_message()
            if frame is None:
                raise EOFError("the kernel socket closed")
            message = json.loads(frame)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            content = message["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                text.append(str(content.get("data", {}).get("text/plain", "")))
            elif kind == "error":
                errors.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return

    try:
        await asyncio.wait_for(read(), timeout)
    finally:
        await close(connection)
    return "".join(text), errors
