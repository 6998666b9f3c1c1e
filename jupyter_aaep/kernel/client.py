"""``KernelClient``: how a kernel talks to the jupyter-aaep server that started it.

Every request carries the kernel's id, a timestamp, a fresh nonce and an HMAC-SHA256 signature
over ``METHOD \\n PATH \\n TIME \\n NONCE \\n BODY``, keyed with this kernel's own credential
(``AAEP_KERNEL_SECRET``, put into this kernel's environment alone by the server when it started
the kernel, and moved into memory at first use by :mod:`.credential`). The server accepts each
signature once, within a short window: a kernel can act only on its own notebook's chats, and a
captured request cannot be sent again.

The magic uses the blocking methods (``urllib``: short calls to a local server); the live view
reads events with :meth:`KernelClient.events`, an async iterator on tornado's HTTP client that
leaves the kernel's event loop free. Every failure is a :class:`KernelAPIError` whose message
is one sentence for the user (the server's own sentence when it sent one).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

__all__ = ["EventStream", "KernelAPIError", "KernelClient", "sign"]

API = "aaep/v1/kernel/"
SETUP_HINT = (
    "Open the notebook in JupyterLab started with the jupyter-aaep extension "
    "(scripts/start in a clone of jupyter-aaep, or jupyter lab after pip install jupyter-aaep), "
    "then restart this kernel from there."
)


class KernelAPIError(Exception):
    """A kernel API call failed; ``str(error)`` is a sentence that says what to do."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def sign(key: bytes, method: str, path: str, body: bytes, *, stamp: str, nonce: str) -> str:
    """The ``X-AAEP-Kernel-Signature`` of one request (hex HMAC-SHA256)."""
    message = f"{method.upper()}\n{path}\n{stamp}\n{nonce}\n".encode() + body
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _kernel_id(shell: Any, env: Mapping[str, str]) -> str:
    """This kernel's id (given by the server, else from its connection file's name), or a
    :class:`KernelAPIError` saying what is missing."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or getattr(kernel, "session", None) is None:
        raise KernelAPIError(
            "%aaep works in a Jupyter kernel, and this is plain IPython (no kernel "
            "connection). " + SETUP_HINT
        )
    given = env.get("AAEP_KERNEL_ID")
    if given:
        return given
    try:
        from ipykernel.connect import get_connection_file

        filename = os.path.basename(get_connection_file())
    except Exception as error:  # not started as a kernel: no connection file at all
        raise KernelAPIError(
            f"This kernel has no connection file ({error}), so the server cannot tell "
            "which notebook it belongs to. " + SETUP_HINT
        ) from error
    match = re.fullmatch(r"kernel-(.+)\.json", filename)
    if not match:
        raise KernelAPIError(
            f"This kernel's connection file {filename!r} does not carry a kernel id "
            "(kernel-<id>.json), so the server cannot tell which notebook it belongs "
            "to. " + SETUP_HINT
        )
    return match.group(1)


class KernelClient:
    """Signed calls to ``aaep/v1/kernel/...`` of the server at *server_url*."""

    def __init__(
        self, server_url: str, secret: str, kernel_id: str, *, timeout: float = 15.0
    ) -> None:
        self.server_url = server_url if server_url.endswith("/") else server_url + "/"
        self.secret = secret
        self.kernel_id = kernel_id
        self.timeout = timeout
        self.chat_id: str | None = None
        """The chat this client's requests address (``?chat_id=``); the notebook's newest when unset."""

    @classmethod
    def from_environment(
        cls, shell: Any = None, environ: Mapping[str, str] | None = None
    ) -> KernelClient:
        """The client for this kernel; a :class:`KernelAPIError` names what is missing."""
        from .credential import take

        env = os.environ if environ is None else environ
        url, secret = env.get("AAEP_SERVER_URL"), take(environ)
        missing = [
            name
            for name, value in (("AAEP_SERVER_URL", url), ("AAEP_KERNEL_SECRET", secret))
            if not value
        ]
        if missing:
            raise KernelAPIError(
                f"%aaep cannot reach the jupyter-aaep server: {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not set in this kernel, so it was not started by a "
                "Jupyter server with the jupyter-aaep extension. " + SETUP_HINT
            )
        if shell is None:
            from IPython import get_ipython

            shell = get_ipython()
        kernel_id = _kernel_id(shell, env)
        assert url and secret
        return cls(url, secret, kernel_id)

    # -- plumbing --------------------------------------------------------------------------------
    def url(self, path: str, query: Mapping[str, str | None] | None = None) -> str:
        url = urljoin(self.server_url, API + path)
        params = {
            k: v for k, v in {"chat_id": self.chat_id, **(query or {})}.items() if v is not None
        }
        return url + ("?" + urlencode(params) if params else "")

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        """The identity headers for one request to *url* (signed over its path and query, with
        a fresh nonce: call this once per request sent)."""
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        stamp, nonce = f"{time.time():.3f}", secrets.token_hex(16)
        return {
            "X-AAEP-Kernel-Id": self.kernel_id,
            "X-AAEP-Kernel-Time": stamp,
            "X-AAEP-Kernel-Nonce": nonce,
            "X-AAEP-Kernel-Signature": sign(
                self.secret.encode(), method, path, body, stamp=stamp, nonce=nonce
            ),
        }

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str | None] | None = None,
    ) -> Any:
        """One blocking call; the parsed JSON answer (``None`` when empty)."""
        url = self.url(path, query)
        data = b"" if body is None else json.dumps(body).encode()
        headers = self.headers(method, url, data)
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            url,
            data=data if method not in ("GET", "DELETE") else None,
            headers=headers,
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _parse(response.read())
        except urllib.error.HTTPError as error:
            raise self._http_error(method, path, error.code, error.read()) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise KernelAPIError(
                f"The jupyter-aaep server at {self.server_url} does not answer ({reason}); it "
                "may have stopped. Start JupyterLab again and restart this kernel."
            ) from None

    def _http_error(self, method: str, path: str, status: int, body: bytes) -> KernelAPIError:
        message = None
        try:
            parsed = json.loads(body or b"null")
            if isinstance(parsed, dict):
                message = parsed.get("message") or parsed.get("reason")
        except ValueError:
            pass
        if not message and status == 404 and path in ("status", "tools", "requests"):
            message = (
                f"The server at {self.server_url} has no kernel API (HTTP 404): its jupyter-aaep is too "
                "old or not enabled. Update jupyter-aaep and restart JupyterLab."
            )
        if not message:
            message = f"The jupyter-aaep server answered HTTP {status} to {method} {API}{path}."
        return KernelAPIError(str(message), status=status)

    # -- the API ---------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The notebook's chat: status, model configuration, tools, pending requests."""
        return dict(self.request("GET", "status") or {})

    def tools(self) -> list[dict[str, Any]]:
        """The kernel tools the server knows for this notebook."""
        return list((self.request("GET", "tools") or {}).get("tools", []))

    def put_tool(self, spec: Any) -> dict[str, Any]:
        """Register (or replace) a kernel tool: a :class:`ToolSpec` or its ``(name, payload)``."""
        name, payload = (spec.name, spec.declaration()) if hasattr(spec, "func") else spec
        return dict(self.request("PUT", "tools/" + quote(name, safe=""), payload) or {})

    def delete_tool(self, name: str) -> dict[str, Any]:
        return dict(self.request("DELETE", "tools/" + quote(name, safe="")) or {})

    def start_request(
        self, text: str, context: list[dict[str, str]] | None = None
    ) -> dict[str, Any]:
        """Start a session in the notebook's chat (guidance while one runs): chat_id, input_id, status."""
        return dict(
            self.request("POST", "requests", {"text": text, "context": list(context or [])}) or {}
        )

    def subscribe(self, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The Level 3 handshake: the server's answer to a ``subscription.request``."""
        return dict(self.request("POST", "subscriptions", dict(capabilities or {})) or {})

    def send(self, message: Mapping[str, Any]) -> Any:
        """A reply or control message (``confirmation.response``, ``control``, ``guidance``...)."""
        return self.request("POST", "messages", dict(message))

    async def request_async(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str | None] | None = None,
    ) -> Any:
        """:meth:`request` without blocking the event loop (for the live view's buttons)."""
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.request(method, path, body, query=query)
        )

    def events(self, subscription_id: str | None, last_event_id: str | None = None) -> EventStream:
        """The notebook chat's events as an async iterator of parsed JSON messages (SSE)."""
        return EventStream(self, subscription_id, last_event_id)


def _parse(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        raise KernelAPIError("The jupyter-aaep server sent an answer that is not JSON.") from None


class EventStream:
    """``async for message in client.events(sid):`` — every SSE ``data:`` message, parsed.

    AAEP events and the server's other messages (handshake answers, replay notices) come as
    dicts; keepalive comments are skipped. ``last_event_id`` follows the stream, so a dropped
    connection is resumed where it stopped (up to ``retries`` times in a row); a refusal
    (4xx) ends the iteration with a :class:`KernelAPIError`. ``await stream.aclose()`` ends it.
    """

    def __init__(
        self,
        client: KernelClient,
        subscription_id: str | None,
        last_event_id: str | None = None,
        *,
        retries: int = 5,
    ) -> None:
        self.client = client
        self.subscription_id = subscription_id
        self.last_event_id = last_event_id
        self.retries = retries
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        self._task = asyncio.ensure_future(self._run())
        try:
            while True:
                item = await self._queue.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # closing anyway
                await task

    async def _run(self) -> None:
        failures = 0
        try:
            while not self._closed:
                received = await self._connect()
                if self._closed:
                    break
                failures = 0 if received else failures + 1
                if failures > self.retries:
                    raise KernelAPIError(
                        "The connection to the jupyter-aaep server's event stream keeps "
                        "dropping; the view stopped following it. Check that JupyterLab "
                        "is still running."
                    )
                await asyncio.sleep(min(0.25 * 2**failures, 5.0))
        except KernelAPIError as error:
            self._queue.put_nowait(error)
        finally:
            self._queue.put_nowait(_END)

    async def _connect(self) -> bool:
        """One connection; whether it delivered anything. Raises on a refusal."""
        from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

        url = self.client.url(
            "events", {"subscription_id": self.subscription_id, "last_event_id": self.last_event_id}
        )
        headers = self.client.headers("GET", url, b"")
        headers["Accept"] = "text/event-stream"
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        parser = _SSEParser()
        status: list[int] = []
        error_body = bytearray()
        delivered = [False]

        def on_header(line: str) -> None:
            if line.startswith("HTTP/"):
                status[:] = [int(line.split()[1])]

        def on_chunk(chunk: bytes) -> None:
            if status and status[0] != 200:
                error_body.extend(chunk[: 4096 - len(error_body)])
                return
            for ident, message in parser.feed(chunk):
                if ident:
                    self.last_event_id = ident
                delivered[0] = True
                self._queue.put_nowait(message)

        http = AsyncHTTPClient(force_instance=True)
        request = HTTPRequest(
            url,
            headers=headers,
            connect_timeout=10,
            request_timeout=0,
            header_callback=on_header,
            streaming_callback=on_chunk,
        )
        try:
            await http.fetch(request)
        except HTTPClientError as error:
            if error.code == 599 or (500 <= error.code < 600):
                return delivered[0]
            raise self.client._http_error("GET", "events", error.code, bytes(error_body)) from None
        except OSError:
            return delivered[0]
        finally:
            http.close()
        return delivered[0]


_END = object()


class _SSEParser:
    """Incremental SSE framing: yields ``(id, parsed data)`` per complete message."""

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, Any]]:
        self._buffer += chunk.decode("utf-8", errors="replace")
        out: list[tuple[str | None, Any]] = []
        *lines, self._buffer = self._buffer.split("\n")
        for raw in lines:
            line = raw.removesuffix("\r")
            if not line:
                if self._data:
                    try:
                        out.append((self._id, json.loads("\n".join(self._data))))
                    except ValueError:
                        pass  # not JSON: not ours to show
                self._data, self._id = [], None
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "data":
                    self._data.append(value)
                elif field == "id":
                    self._id = value
        return out
