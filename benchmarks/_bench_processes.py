"""What runs beside the server in a benchmark, each in a process of its own as in real use: the
scripted fake Messages API (the real service is remote) and a group of WebSocket clients (a
browser is another process). In the server's process their threads would compete with the
server's event loop for the interpreter lock, which no real browser or model service does.

Times are ``time.monotonic()``: CLOCK_MONOTONIC on Linux, one clock for the whole machine, so a
client's arrival stamp and the server's publication stamp can be subtracted across processes.
The server's loop waits for these processes by polling their pipes (``_answer``), never by a
blocking read: the clients connect to that very loop.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from typing_extensions import Self

_SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter, no copy of the server


async def _answer(conn: Connection, what: str, timeout: float = 60) -> Any:
    """The child's next message, waited for without holding up this process's loop."""
    deadline = time.monotonic() + timeout
    while not conn.poll():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer within {timeout:.0f} s")
        await asyncio.sleep(0.005)
    return _unpack(conn.recv(), what)


def _unpack(reply: tuple[str, Any], what: str) -> Any:
    """A child answers ``("ok", value)`` or ``("error", its traceback)``."""
    status, value = reply
    if status != "ok":
        raise RuntimeError(f"{what} failed:\n{value}")
    return value


class FakeProcess:
    """``FakeAnthropic`` in its own process, scripted over a pipe. Each request's arrival is
    stamped on the shared clock, so a baseline can start its own request at the same moment."""

    def __init__(self) -> None:
        self._conn, child = _SPAWN.Pipe()
        self._process = _SPAWN.Process(target=_serve_fake, args=(child,), daemon=True)
        self._process.start()
        self.base_url, self.api_key = self._call("start")

    def _call(self, *command: Any) -> Any:
        """One command and its answer. Blocking, so only between measurements (each takes
        about a millisecond), never while the server must answer someone."""
        self._conn.send(command)
        if not self._conn.poll(60):
            raise RuntimeError("the fake model's process did not answer within 60 s")
        return _unpack(self._conn.recv(), "the fake model's process")

    def add(self, *turns: Any) -> None:
        self._call("add", turns)

    def count(self) -> int:
        """How many requests the fake has recorded."""
        return int(self._call("count"))

    def bodies(self, first: int) -> list[dict[str, Any]]:
        """The bodies of the requests recorded from the *first*-th on."""
        return list(self._call("bodies", first))

    def arrivals(self, first: int) -> list[float]:
        """When (``time.monotonic()``) each request from the *first*-th on reached the fake."""
        return list(self._call("arrivals", first))

    def stop(self) -> None:
        if self._process.is_alive():
            try:
                self._call("stop")
            finally:
                self._process.join(5)
        if self._process.is_alive():
            self._process.kill()


def _serve_fake(conn: Connection) -> None:
    from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

    arrived: list[float] = []

    class Stamped(FakeAnthropic):
        def serve(self, handler: Any) -> None:
            if handler.command == "POST":  # a model call (recorded), not a model list
                arrived.append(time.monotonic())
            super().serve(handler)

    fake = Stamped()
    while True:
        command, *args = conn.recv()
        try:
            if command == "start":
                fake.start()
                reply: Any = (fake.base_url, fake.api_key)
            elif command == "add":
                fake.add(*args[0])
                reply = None
            elif command == "count":
                reply = len(fake.requests)
            elif command == "bodies":
                reply = [r.body for r in fake.requests[args[0] :]]
            elif command == "arrivals":
                reply = arrived[args[0] :]
            else:
                fake.stop()
                conn.send(("ok", None))
                return
        except Exception:  # noqa: BLE001 - sent to the parent, which raises it
            conn.send(("error", traceback.format_exc()))
        else:
            conn.send(("ok", reply))


class Clients:
    """*count* WebSocket clients of *url* in a process of their own; each stamps every frame
    on arrival (before parsing it, as the measurement wants the arrival).

    ``handshake``: the frame each client sends on opening (our server sends nothing before
    one; a bare broadcast needs none)."""

    def __init__(
        self, url: str, count: int, *, headers: dict[str, str], handshake: dict[str, Any] | None
    ) -> None:
        self.count = count
        self._conn, child = _SPAWN.Pipe()
        self._process = _SPAWN.Process(
            target=run_child, args=(child, _clients, url, count, headers, handshake), daemon=True
        )

    async def __aenter__(self) -> Self:
        self._process.start()
        await _answer(self._conn, "the WebSocket clients' process")
        return self

    async def __aexit__(self, *_: object) -> None:
        self._conn.send("stop")
        while self._process.is_alive():  # the server answers the closing handshakes meanwhile
            await asyncio.sleep(0.01)
        self._process.join()

    async def collect(self) -> list[list[tuple[float, str]]]:
        """Per client, every (arrival time, frame) since the last collection."""
        self._conn.send("collect")
        return list(await _answer(self._conn, "the WebSocket clients' process"))


def run_child(conn: Connection, main: Any, *args: Any) -> None:
    """A child process's body: ``main(conn, *args)`` on a loop of its own; a failure goes to the
    parent as ``("error", traceback)``, which raises it (``_unpack``)."""
    try:
        asyncio.run(main(conn, *args))
    except Exception:  # noqa: BLE001 - sent to the parent, which raises it
        conn.send(("error", traceback.format_exc()))


async def _clients(
    conn: Connection,
    url: str,
    count: int,
    headers: dict[str, str],
    handshake: dict[str, Any] | None,
) -> None:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    sockets = [await websocket_connect(HTTPRequest(url, headers=headers)) for _ in range(count)]
    frames: list[list[tuple[float, str]]] = [[] for _ in range(count)]

    async def read(index: int, socket: Any) -> None:
        while True:
            text = await socket.read_message()
            if text is None:
                return
            frames[index].append((time.monotonic(), text))

    if handshake is not None:
        for socket in sockets:
            await socket.write_message(json.dumps(handshake))
    readers = [asyncio.ensure_future(read(i, s)) for i, s in enumerate(sockets)]
    commands: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))
    conn.send(("ok", "ready"))
    while await commands.get() == "collect":
        conn.send(("ok", [list(f) for f in frames]))
        for f in frames:
            f.clear()
    loop.remove_reader(conn.fileno())
    for socket in sockets:
        socket.close()
    for reader in readers:
        reader.cancel()
