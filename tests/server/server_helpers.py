"""Test clients for the AAEP transports: an SSE reader (httpx) and small waiting helpers."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Frame:
    """One SSE frame: its ``event:`` and ``id:`` lines and the parsed ``data:`` JSON."""

    data: dict[str, Any]
    event: str | None = None
    id: str | None = None
    raw: str = ""


@dataclass
class SSE:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] | None = None
    frames: list[Frame] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)

    async def __aenter__(self) -> SSE:  # noqa: PYI034
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0))
        self._queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._stream = self._client.stream(
            "GET", self.url, headers=self.headers, params=self.params
        )
        response = await self._stream.__aenter__()
        self.status = response.status_code
        self.response_headers = dict(response.headers)
        self._response = response
        self._task = asyncio.ensure_future(self._read(response))
        return self

    async def _read(self, response: httpx.Response) -> None:
        lines: list[str] = []
        try:
            async for line in response.aiter_lines():
                if line:
                    lines.append(line)
                    continue
                self._frame(lines)
                lines = []
        except (httpx.HTTPError, asyncio.CancelledError):
            pass
        finally:
            self._queue.put_nowait(None)

    def _frame(self, lines: list[str]) -> None:
        event = ident = None
        data: list[str] = []
        for line in lines:
            if line.startswith(":"):
                self.comments.append(line)
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            assert len(data) == 1, f"multi-line data: {lines}"
            frame = Frame(json.loads(data[0]), event, ident, "\n".join(lines))
            self.frames.append(frame)
            self._queue.put_nowait(frame)

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        frame = await asyncio.wait_for(self._queue.get(), timeout)
        if frame is None:
            raise EOFError("the stream ended")
        return frame.data

    async def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """Messages up to and including the first that matches."""
        seen: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.next(max(0.01, deadline - loop.time()))
            seen.append(message)
            if predicate(message):
                return seen

    async def ended(self, timeout: float = 5.0) -> bool:
        """Whether the server closed the stream (reads and drops what is left)."""
        try:
            await asyncio.wait_for(self._task, timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        await self._stream.__aexit__(None, None, None)
        await self._client.aclose()


def of_type(suffix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda message: str(message.get("type", "")).endswith(suffix)


def types(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("type") or m.get("kind")).removeprefix("aaep:agent.") for m in messages]


async def wait_until(
    condition: Callable[[], bool], timeout: float = 5.0, what: str = "condition"
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def on_server_loop(test: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """Run an ``async def`` test on the Jupyter server's own loop (``jp_asyncio_loop``).

    pytest-jupyter serves on that loop, while pytest-asyncio (``asyncio_mode = "auto"``)
    would run the test on a loop of its own, where the server never answers. The wrapper is a
    plain function, so pytest-asyncio leaves it alone; marks and parameters are kept.
    """
    signature = inspect.signature(test)
    extra = "jp_asyncio_loop" not in signature.parameters

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        loop = kwargs.pop("jp_asyncio_loop") if extra else kwargs["jp_asyncio_loop"]
        return loop.run_until_complete(test(*args, **kwargs))

    parameters = list(signature.parameters.values())
    if extra:
        parameters.append(inspect.Parameter("jp_asyncio_loop", inspect.Parameter.KEYWORD_ONLY))
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    del run.__wrapped__  # type: ignore[attr-defined]  # pytest must see the sync signature
    return run


PANEL_HANDSHAKE: dict[str, Any] = {
    "type": "subscription.request",
    "aaep_version": "1.0.0",
    "subscriber_id": "jupyter-aaep-panel",
    "subscriber_name": "JupyterLab AAEP panel",
    "capabilities": {"supports_confirmation_reply": True, "supports_clarification_reply": True},
    "extensions": {"jupyter_aaep": {"stream_key": True}},
}
"""The panel's ``subscription.request`` (labextension/src/handshake.ts), asking for its key."""


async def panel_key(api: Callable[..., Any], stream: Any, chat_id: str) -> str:
    """Handshake as the panel for the open SSE *stream* of *chat_id* (the in-band POST the
    panel sends on SSE) and return the stream key the server sends on that stream."""
    status, body, _ = await api("chats", chat_id, "messages", method="POST", body=PANEL_HANDSHAKE)
    assert status == 201, body
    assert "stream_key" not in json.dumps(body), "the key travels on the stream only"
    frames = await stream.until(lambda m: m.get("kind") == "stream.key")
    return str(frames[-1]["stream_key"])
