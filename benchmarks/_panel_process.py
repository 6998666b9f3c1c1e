"""The side panel, as a benchmark drives it, in a process of its own (a browser is one): it
reads a chat's events on the WebSocket, on SSE or on both, sends an approval the way the panel
does on each (a frame on the socket; a POST beside SSE), and can run code on the kernel through
the server's kernel WebSocket, as a cell run in JupyterLab goes.

Arrivals and sends are stamped with ``time.monotonic()``, the clock the server's process stamps
publications with (one clock for the machine on Linux; see ``_bench_processes``). A frame is
stamped as its bytes arrive, before it is parsed.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
import traceback
import uuid
from datetime import datetime, timezone
from multiprocessing.connection import Connection
from typing import Any

from _bench_processes import _SPAWN, _answer, run_child
from typing_extensions import Self

HANDSHAKE = {
    "type": "subscription.request",
    "aaep_version": "1.0.0",
    "subscriber_id": "benchmark-panel",
    "capabilities": {"supports_confirmation_reply": True},
}
"""The panel's first frame on the WebSocket (the server sends nothing before it)."""


class Panel:
    """The panel of *chat_id* on *transports* (``"ws"``, ``"sse"``), with JupyterLab's kernel
    WebSocket to *kernel_id* if one is given. One command at a time: each answer is read before
    the next."""

    def __init__(
        self,
        url: str,
        token: str,
        chat_id: str,
        transports: tuple[str, ...],
        kernel_id: str | None = None,
    ) -> None:
        self._conn, child = _SPAWN.Pipe()
        self._process = _SPAWN.Process(
            target=run_child,
            args=(child, _panel, url, token, chat_id, transports, kernel_id),
            daemon=True,
        )

    async def __aenter__(self) -> Self:
        self._process.start()
        await _answer(self._conn, "the panel's process")
        return self

    async def __aexit__(self, *_: object) -> None:
        self._conn.send(("stop",))
        while self._process.is_alive():  # the server answers the closing handshakes meanwhile
            await asyncio.sleep(0.01)
        self._process.join()

    def send_reply(self, via: str, reply: dict[str, Any]) -> None:
        """Send *reply* now, on the socket (``via="ws"``) or by POST (``"sse"``); its send
        time comes with ``sent()``. Not awaited, so nothing polls while the server works."""
        self._conn.send(("reply", via, reply))

    async def sent(self) -> float:
        """When the last reply was sent (``time.monotonic()``), once the server answered it."""
        return float(await _answer(self._conn, "the panel's process"))

    async def arrivals(self) -> list[tuple[float, str, str]]:
        """(arrival, transport, event type) of every event since the last call."""
        self._conn.send(("collect",))
        found = await _answer(self._conn, "the panel's process")
        return [(float(when), str(via), str(kind)) for when, via, kind in found]

    async def execute(self, code: str) -> float:
        """Seconds from sending an ``execute_request`` of *code* on the kernel WebSocket to its
        reply and the kernel's return to idle (what ``execute_interactive`` waits for)."""
        self._conn.send(("execute", code))
        return float(await _answer(self._conn, "the panel's process"))


async def _panel(
    conn: Connection,
    url: str,
    token: str,
    chat_id: str,
    transports: tuple[str, ...],
    kernel_id: str | None,
) -> None:
    import httpx
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    ws_url = url.replace("http", "ws", 1)
    arrivals: list[tuple[float, str, str]] = []
    answers: dict[str, asyncio.Future[None]] = {}

    def heard(when: float, transport: str, text: str) -> None:
        message = json.loads(text)
        if "request_id" in message:  # the answer to a reply sent on the socket
            future = answers.pop(str(message["request_id"]), None)
            if future is not None and not future.done():
                if message.get("kind") == "error":
                    future.set_exception(RuntimeError(f"the reply was refused: {message}"))
                else:
                    future.set_result(None)
        else:
            arrivals.append((when, transport, str(message.get("type", ""))))

    decoder = codecs.getincrementaldecoder("utf-8")()
    pending = [""]

    def chunk(data: bytes) -> None:
        now = time.monotonic()
        *frames, pending[0] = (pending[0] + decoder.decode(data)).split("\n\n")
        for frame in frames:
            for line in frame.splitlines():
                if line.startswith("data: "):
                    heard(now, "sse", line[6:])

    http = AsyncHTTPClient()
    if "sse" in transports:
        reading = asyncio.ensure_future(
            http.fetch(
                HTTPRequest(
                    f"{url}aaep/v1/chats/{chat_id}/events",
                    headers=headers,
                    streaming_callback=chunk,
                    request_timeout=3600,
                ),
                raise_error=False,
            )
        )
        reading.add_done_callback(lambda f: f.cancelled() or f.exception())  # closed at the end
    socket = None
    if "ws" in transports:
        socket = await websocket_connect(
            HTTPRequest(f"{ws_url}aaep/v1/chats/{chat_id}/ws", headers=headers),
            subprotocols=["aaep.v1"],
        )
        await socket.write_message(json.dumps({**HANDSHAKE, "request_id": "handshake"}))

        async def read_socket() -> None:
            while (text := await socket.read_message()) is not None:
                heard(time.monotonic(), "ws", str(text))

        asyncio.ensure_future(read_socket())
    kernel = None
    if kernel_id is not None:
        kernel = await _KernelSocket.open(
            f"{ws_url}api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}", headers
        )
    posts = httpx.AsyncClient(headers=headers, timeout=60)  # keeps its connection, as a browser
    (await posts.get(f"{url}aaep/v1/chats/{chat_id}")).raise_for_status()  # the panel's load
    count = 0

    async def reply(via: str, body: dict[str, Any]) -> float:
        nonlocal count
        if via == "ws":
            assert socket is not None, "the panel was started without the WebSocket"
            count += 1
            request_id = f"panel-{count}"
            answered = answers[request_id] = asyncio.get_running_loop().create_future()
            started = time.monotonic()
            await socket.write_message(json.dumps({**body, "request_id": request_id}))
            await asyncio.wait_for(answered, 60)
            return started
        started = time.monotonic()
        answer = await posts.post(f"{url}aaep/v1/chats/{chat_id}/messages", json=body)
        answer.raise_for_status()
        return started

    async def run(command: tuple[Any, ...]) -> None:
        try:
            if command[0] == "reply":
                result: Any = await reply(command[1], command[2])
            elif command[0] == "execute":
                assert kernel is not None, "the panel was started without the kernel's socket"
                result = await kernel.execute(command[1])
            else:  # collect
                result = list(arrivals)
                arrivals.clear()
        except Exception:  # noqa: BLE001 - sent to the parent, which raises it
            conn.send(("error", traceback.format_exc()))
        else:
            conn.send(("ok", result))

    commands: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))
    conn.send(("ok", "ready"))
    while (command := await commands.get())[0] != "stop":
        asyncio.ensure_future(run(command))
    loop.remove_reader(conn.fileno())
    for open_socket in (socket, kernel and kernel.socket):
        if open_socket is not None:
            open_socket.close()
    http.close()
    await posts.aclose()


class _KernelSocket:
    """JupyterLab's connection to a kernel: the server's ``api/kernels/{id}/channels``
    WebSocket, in its JSON form (no subprotocol offered)."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.session = uuid.uuid4().hex
        self._waiting: dict[str, tuple[asyncio.Future[None], set[str]]] = {}
        asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str, headers: dict[str, str]) -> _KernelSocket:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        return cls(await websocket_connect(HTTPRequest(url, headers=headers)))

    async def _read(self) -> None:
        while (text := await self.socket.read_message()) is not None:
            message = json.loads(text)
            parent = message.get("parent_header", {}).get("msg_id")
            waiting = self._waiting.get(parent)
            if waiting is None:
                continue  # another client's run (the agent's), forwarded to every socket
            kind = message["header"]["msg_type"]
            if kind == "status" and message["content"]["execution_state"] == "idle":
                waiting[1].discard("idle")
            elif kind == "execute_reply":
                assert message["content"]["status"] == "ok", message["content"]
                waiting[1].discard("reply")
            if not waiting[1]:
                waiting[0].set_result(None)
                del self._waiting[parent]

    async def execute(self, code: str) -> float:
        msg_id = uuid.uuid4().hex
        done = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = (done, {"reply", "idle"})
        message = {
            "header": {
                "msg_id": msg_id,
                "msg_type": "execute_request",
                "username": "benchmark",
                "session": self.session,
                "date": datetime.now(timezone.utc).isoformat(),
                "version": "5.3",
            },
            "parent_header": {},
            "metadata": {},
            "content": {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
            "channel": "shell",
            "buffers": [],
        }
        started = time.monotonic()
        await self.socket.write_message(json.dumps(message))
        await asyncio.wait_for(done, 60)
        return time.monotonic() - started
