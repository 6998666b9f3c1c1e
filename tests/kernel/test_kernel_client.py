"""KernelClient against a small 127.0.0.1 stub: signing, errors as sentences, the SSE stream."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from jupyter_aaep.agent.tools import aaep_tool
from jupyter_aaep.kernel.client import KernelAPIError, KernelClient, _SSEParser
from jupyter_aaep.server.kernel_credentials import KernelCredentials

KERNEL = "0b1c2d3e-aaaa-bbbb-cccc-1234567890ab"
CREDENTIALS = KernelCredentials(b"the server's own secret")
SECRET = CREDENTIALS.for_kernel(KERNEL)


class Stub(BaseHTTPRequestHandler):
    """Checks the identity headers with the server's own check, then answers from ``routes``."""

    routes: ClassVar[dict[tuple[str, str], Any]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append(
            {"method": self.command, "path": self.path, "body": body, "headers": self.headers}
        )
        why = CREDENTIALS.check(
            self.headers.get("X-AAEP-Kernel-Id", ""),
            self.command,
            self.path,
            body,
            stamp=self.headers.get("X-AAEP-Kernel-Time", ""),
            nonce=self.headers.get("X-AAEP-Kernel-Nonce", ""),
            given=self.headers.get("X-AAEP-Kernel-Signature", ""),
        )
        if why is not None:
            return self._json(403, {"message": f"Refused: {why}."})
        route = self.routes.get((self.command, self.path.split("?")[0]))
        if route is None:
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"<html>not found</html>")
            return None
        if callable(route):
            return route(self)
        status, payload = route
        return self._json(status, payload)

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = _handle


@pytest.fixture
def stub() -> Iterator[tuple[str, type[Stub]]]:
    handler = type("Handler", (Stub,), {"routes": {}, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/base/", handler
    server.shutdown()
    server.server_close()
    thread.join(5)


def client_for(url: str, **kwargs: Any) -> KernelClient:
    return KernelClient(url, kwargs.get("secret", SECRET), kwargs.get("kernel", KERNEL), timeout=5)


def test_signed_calls_reach_the_endpoints(stub: tuple[str, type[Stub]]) -> None:
    url, handler = stub
    api = "/base/aaep/v1/kernel/"
    handler.routes.update(
        {
            ("GET", api + "status"): (200, {"status": "idle", "tools": []}),
            ("PUT", api + "tools/load_sales"): (200, {"name": "load_sales", "registered": True}),
            ("DELETE", api + "tools/load_sales"): (200, {}),
            ("POST", api + "requests"): (
                202,
                {"chat_id": "c1", "input_id": "i1", "status": "started"},
            ),
            ("POST", api + "messages"): (200, {"kind": "control.accepted"}),
            ("POST", api + "subscriptions"): (
                200,
                {"type": "subscription.confirmed", "subscription_id": "sub_1"},
            ),
            ("GET", api + "tools"): (200, {"tools": [{"name": "load_sales"}]}),
        }
    )

    @aaep_tool(risk_level="medium")
    def load_sales(region: str) -> None:
        """Load one region's sales."""

    client = client_for(url)
    assert client.status() == {"status": "idle", "tools": []}
    assert client.put_tool(load_sales) == {"name": "load_sales", "registered": True}
    put = handler.seen[-1]
    assert json.loads(put["body"])["risk_level"] == "medium"
    assert put["headers"]["Content-Type"] == "application/json"
    assert client.delete_tool("load_sales") == {}
    assert (
        client.start_request("Plot {df}", [{"name": "df", "description": "a frame"}])["input_id"]
        == "i1"
    )
    assert json.loads(handler.seen[-1]["body"]) == {
        "text": "Plot {df}",
        "context": [{"name": "df", "description": "a frame"}],
    }
    assert client.send({"kind": "control", "action": "stop"}) == {"kind": "control.accepted"}
    assert client.subscribe({"verbosity": "normal"})["subscription_id"] == "sub_1"
    assert client.tools() == [{"name": "load_sales"}]
    assert asyncio.run(client.request_async("GET", "status"))["status"] == "idle"
    assert {seen["method"] for seen in handler.seen} == {"GET", "PUT", "DELETE", "POST"}


def test_the_servers_sentence_is_the_error(stub: tuple[str, type[Stub]]) -> None:
    url, handler = stub
    handler.routes[("GET", "/base/aaep/v1/kernel/status")] = (
        409,
        {"message": "This kernel is not attached to a notebook."},
    )
    with pytest.raises(KernelAPIError, match="not attached to a notebook") as caught:
        client_for(url).status()
    assert caught.value.status == 409
    with pytest.raises(KernelAPIError, match="signature is wrong"):
        client_for(url, secret="wrong").status()
    with pytest.raises(
        KernelAPIError, match="signature is wrong"
    ):  # another kernel's id with my credential
        client_for(url, kernel="another-kernel").status()
    with pytest.raises(KernelAPIError, match=r"has no kernel API \(HTTP 404\)"):
        client_for(url).tools()
    with pytest.raises(KernelAPIError, match=r"answered HTTP 404 to DELETE aaep/v1/kernel/tools/x"):
        client_for(url).delete_tool("x")


def test_a_server_that_is_gone_is_named() -> None:
    with pytest.raises(
        KernelAPIError, match=r"at http://127.0.0.1:9/ does not answer .*Start JupyterLab again"
    ):
        KernelClient("http://127.0.0.1:9", SECRET, KERNEL, timeout=2).status()


def test_from_environment_says_what_is_missing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(KernelAPIError) as caught:
        KernelClient.from_environment(environ={})
    message = str(caught.value)
    assert "AAEP_SERVER_URL and AAEP_KERNEL_SECRET are not set" in message
    assert "scripts/start" in message and "restart this kernel" in message
    with pytest.raises(KernelAPIError, match="AAEP_KERNEL_SECRET is not set"):
        KernelClient.from_environment(environ={"AAEP_SERVER_URL": "http://127.0.0.1:1/"})
    env = {"AAEP_SERVER_URL": "http://127.0.0.1:1/", "AAEP_KERNEL_SECRET": SECRET}
    with pytest.raises(KernelAPIError, match="plain IPython"):
        KernelClient.from_environment(SimpleNamespace(), environ=env)
    shell = SimpleNamespace(kernel=SimpleNamespace(session=SimpleNamespace(key=b"connection-key")))
    import ipykernel.connect

    monkeypatch.setattr(
        ipykernel.connect, "get_connection_file", lambda: str(tmp_path / f"kernel-{KERNEL}.json")
    )
    client = KernelClient.from_environment(shell, environ=env)
    assert (client.kernel_id, client.secret, client.server_url) == (
        KERNEL,
        SECRET,
        "http://127.0.0.1:1/",
    )
    # The id the server put into the kernel's environment wins over the connection file's name.
    assert (
        KernelClient.from_environment(shell, environ={**env, "AAEP_KERNEL_ID": "given"}).kernel_id
        == "given"
    )
    monkeypatch.setattr(
        ipykernel.connect, "get_connection_file", lambda: str(tmp_path / "mine.json")
    )
    with pytest.raises(KernelAPIError, match="does not carry a kernel id"):
        KernelClient.from_environment(shell, environ=env)

    def no_file() -> str:
        raise RuntimeError("app not initialised")

    monkeypatch.setattr(ipykernel.connect, "get_connection_file", no_file)
    with pytest.raises(KernelAPIError, match="has no connection file"):
        KernelClient.from_environment(shell, environ=env)


def test_every_request_is_signed_once_and_a_replay_is_refused(stub: tuple[str, type[Stub]]) -> None:
    url, handler = stub
    handler.routes[("GET", "/base/aaep/v1/kernel/status")] = (200, {"status": "idle"})
    client = client_for(url)
    client.status()
    client.status()
    first, second = handler.seen[-2]["headers"], handler.seen[-1]["headers"]
    assert first["X-AAEP-Kernel-Nonce"] != second["X-AAEP-Kernel-Nonce"]
    assert "X-AAEP-Kernel-Secret" not in first  # the credential itself never travels
    import urllib.request

    replay = {k: v for k, v in first.items() if k.lower().startswith("x-aaep-")}
    request = urllib.request.Request(url + "aaep/v1/kernel/status", headers=replay)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 403 and b"already used" in caught.value.read()


def test_sse_parser_handles_split_frames_and_comments() -> None:
    parser = _SSEParser()
    assert parser.feed(b": keepalive\n\nevent: aaep.event\nid: e1\nda") == []
    assert parser.feed(b'ta: {"type": "a"}\n\ndata: {"kind": "x"}\n') == [("e1", {"type": "a"})]
    assert parser.feed(b"\ndata: not json\n\n") == [(None, {"kind": "x"})]


def test_event_stream_resumes_after_a_drop_and_ends_on_refusal(
    stub: tuple[str, type[Stub]],
) -> None:
    url, handler = stub
    connections: list[dict[str, Any]] = []

    def events(request: Stub) -> None:
        connections.append({"path": request.path, "last": request.headers.get("Last-Event-ID")})
        if len(connections) == 3:
            request._json(403, {"message": "The subscription is closed."})
            return
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.end_headers()
        n = len(connections)
        request.wfile.write(f'event: aaep.event\nid: e{n}\ndata: {{"n": {n}}}\n\n'.encode())
        request.wfile.flush()  # then the connection drops

    handler.routes[("GET", "/base/aaep/v1/kernel/events")] = events

    async def read() -> list[Any]:
        seen: list[Any] = []
        with pytest.raises(KernelAPIError, match="The subscription is closed."):
            async for message in client_for(url).events("sub_1"):
                seen.append(message)
        return seen

    assert asyncio.run(read()) == [{"n": 1}, {"n": 2}]
    assert connections[0] == {
        "path": "/base/aaep/v1/kernel/events?subscription_id=sub_1",
        "last": None,
    }
    assert connections[1]["last"] == "e1" and "last_event_id=e1" in connections[1]["path"]
    assert connections[2]["last"] == "e2"


def test_event_stream_can_be_closed_while_waiting(stub: tuple[str, type[Stub]]) -> None:
    url, handler = stub
    opened = threading.Event()
    release = threading.Event()

    def events(request: Stub) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.end_headers()
        request.wfile.write(b'data: {"hello": 1}\n\n')
        request.wfile.flush()
        opened.set()
        release.wait(10)

    handler.routes[("GET", "/base/aaep/v1/kernel/events")] = events

    async def read() -> Any:
        stream = client_for(url).events(None)
        iterator = stream.__aiter__()
        first = await asyncio.wait_for(iterator.__anext__(), 10)
        await stream.aclose()
        await iterator.aclose()
        return first

    try:
        assert asyncio.run(read()) == {"hello": 1}
    finally:
        release.set()
