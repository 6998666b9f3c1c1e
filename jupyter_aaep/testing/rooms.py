"""A collaborator in a notebook's room, as JupyterLab joins it: for tests that type while the
agent works (the person's keystrokes must all survive)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Provider
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect


class TornadoChannel:
    """A pycrdt ``Channel`` over a tornado websocket: the browser's side of a room."""

    def __init__(self, websocket: Any, path: str) -> None:
        self._websocket = websocket
        self._path = path

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> TornadoChannel:
        return self

    async def __anext__(self) -> bytes:
        message = await self._websocket.read_message()
        if message is None:
            raise StopAsyncIteration
        return bytes(message) if not isinstance(message, str) else message.encode()

    async def send(self, message: bytes) -> None:
        await self._websocket.write_message(message, binary=True)

    async def recv(self) -> bytes:
        return await self.__anext__()


async def join_room(
    fetch: Callable[..., Awaitable[Any]],
    path: str,
    *,
    port: int,
    base_url: str,
    auth_header: dict[str, str],
) -> tuple[WebSocketClientConnection, str]:
    """Open the notebook's collaboration session (``fetch`` is pytest-jupyter's ``jp_fetch``)
    and connect to its room; returns the websocket and the room's name."""
    response = await fetch(
        "api",
        "collaboration",
        "session",
        path,
        method="PUT",
        body=json.dumps({"format": "json", "type": "notebook"}),
    )
    session = json.loads(response.body.decode())
    room = f"json:notebook:{session['fileId']}"
    url = (
        f"ws://127.0.0.1:{port}{base_url}api/collaboration/room/{room}"
        f"?sessionId={session['sessionId']}"
    )
    websocket = await websocket_connect(HTTPRequest(url, headers=dict(auth_header)))
    return websocket, room


@asynccontextmanager
async def synced(
    websocket: WebSocketClientConnection, room: str, doc: YNotebook | None = None
) -> AsyncIterator[YNotebook]:
    """*doc* (a new ``YNotebook`` by default) kept in sync with the room until the block ends;
    the websocket is closed then."""
    doc = doc if doc is not None else YNotebook()
    try:
        async with Provider(doc.ydoc, TornadoChannel(websocket, room)) as provider:
            await asyncio.wait_for(provider.synced.wait(), 10)
            for _ in range(100):  # the cells arrive just after the sync step
                if len(doc.ycells) > 0:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the notebook's room never sent its cells")
            yield doc
    finally:
        websocket.close()


__all__ = ["TornadoChannel", "join_room", "synced"]
