"""The fan-out measurement's parts that run in the server's process (``agent_speed.py``):
the bare tornado broadcast it is compared with, the timing of our sockets' writes, and the
latencies from publication stamps (``time.monotonic()``, as the clients' process stamps)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Broadcast:
    """The baseline: a bare tornado WebSocket server that sends each message to every client."""

    def __init__(self) -> None:
        from _kernel_bench import free_port
        from tornado.web import Application
        from tornado.websocket import WebSocketHandler

        clients: list[Any] = []
        self.clients = clients

        class Handler(WebSocketHandler):
            def open(self, *args: Any, **kwargs: Any) -> None:
                clients.append(self)

            def on_close(self) -> None:
                if self in clients:
                    clients.remove(self)

        self.port = free_port()
        self.server = Application([("/ws", Handler)]).listen(self.port, address="127.0.0.1")

    def send(self, text: str) -> None:
        for client in self.clients:
            client.write_message(text)

    def stop(self) -> None:
        self.server.stop()


def latencies(published: dict[str, float], frames: list[list[tuple[float, str]]]) -> list[float]:
    """Publication -> arrival for every (message, client) with a known publication time."""
    found = []
    for received in frames:
        for arrived, text in received:
            sent = published.get(str(json.loads(text).get("event_id")))
            if sent is not None:
                found.append(arrived - sent)
    return found


@contextmanager
def socket_writes() -> Iterator[list[tuple[float, str]]]:
    """(time, frame) of every frame our WebSocket handler writes meanwhile, stamped once the
    frame is handed to the socket (tornado writes at once when the socket is free)."""
    from jupyter_aaep.server.websocket import ChatSocketHandler

    writes: list[tuple[float, str]] = []
    inherited = ChatSocketHandler.write_message

    def write(self: Any, message: Any, binary: bool = False) -> Any:
        sent = inherited(self, message, binary)
        writes.append((time.monotonic(), message))
        return sent

    ChatSocketHandler.write_message = write  # type: ignore[method-assign]
    try:
        yield writes
    finally:
        del ChatSocketHandler.write_message  # the inherited one again


def last_writes(published: dict[str, float], writes: list[tuple[float, str]]) -> list[float]:
    """Per message, publication -> its write to the last socket (the server's own part)."""
    last: dict[str, float] = {}
    for when, text in writes:
        event_id = str(json.loads(text).get("event_id"))
        if event_id in published:
            last[event_id] = max(when, last.get(event_id, when))
    return [when - published[event_id] for event_id, when in last.items()]
