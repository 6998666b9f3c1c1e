"""The HTTP transport under the fake: a threaded HTTP/1.1 server on 127.0.0.1.

It knows nothing about the Messages API. Each request goes to an ``App`` (the
``FakeAnthropic``), which calls back into the ``Handler`` to send JSON or a chunked
SSE stream. Threads rather than asyncio so the fake works whatever event loop the test
runs, or none; the app tracks live connections so ``stop()`` can cut them.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from ._wire import new_id

__all__ = ["Aborted", "App", "Handler", "Server"]


class Aborted(Exception):
    """The answer cannot go on: the client hung up or the server is stopping."""


class App(Protocol):
    """What the server needs from the fake."""

    def serve(self, handler: Handler) -> None: ...
    def track(self, handler: Handler) -> None: ...
    def untrack(self) -> None: ...


class Server(ThreadingHTTPServer):
    """Binds an OS-chosen port on 127.0.0.1 only."""

    daemon_threads = True
    block_on_close = False  # the app joins handler threads itself, with a deadline

    def __init__(self, app: App) -> None:
        self.app = app
        super().__init__(("127.0.0.1", 0), Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would call socket.getfqdn(), a DNS lookup we don't need.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class Handler(BaseHTTPRequestHandler):
    """One connection; kept alive across requests as the SDK's pool expects."""

    protocol_version = "HTTP/1.1"
    server: Server

    def setup(self) -> None:
        super().setup()
        self.server.app.track(self)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.app.untrack()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        self.server.app.serve(self)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    @property
    def lower_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline().strip():
                pass  # trailers
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        """Send a complete JSON answer; a client that left just closes the connection."""
        data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            self._start(status, "application/json", {**headers, "content-length": str(len(data))})
            self._write(data)
        except Aborted:
            self.close_connection = True

    def start_stream(self) -> None:
        self._start(
            200,
            "text/event-stream; charset=utf-8",
            {"cache-control": "no-cache", "transfer-encoding": "chunked"},
        )

    def write_chunk(self, data: bytes) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self._write(b"0\r\n\r\n")

    def peer_closed(self) -> bool:
        """True once the client has closed its end (readable, with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _start(self, status: int, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("request-id", new_id("req_011C", 20))
        for name, value in headers.items():
            self.send_header(name, value)
        try:
            self.end_headers()
        except (BrokenPipeError, ConnectionError) as e:
            raise Aborted from e

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionError) as e:
            raise Aborted from e
