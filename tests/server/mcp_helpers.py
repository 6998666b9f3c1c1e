"""The MCP SDK's own client against the server's ``aaep/v1/mcp`` endpoint, and approvals by a person.

Imported by the MCP test modules; the server is the live-notebook one of ``kernel_helpers``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from kernel_helpers import live_server_config  # noqa: F401 - re-exported for the MCP tests
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id

T = TypeVar("T")


def mcp_url(port: int, base_url: str) -> str:
    return f"http://127.0.0.1:{port}{base_url}aaep/v1/mcp"


@asynccontextmanager
async def mcp_client(
    url: str, headers: dict[str, str], *, name: str = "claude-code"
) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session, introducing itself as *name*."""
    http = create_mcp_http_client(headers=headers)
    async with http, streamable_http_client(url, http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(
            read, write, client_info=Implementation(name=name, version="2.1.0")
        ) as session:
            await session.initialize()
            yield session


async def off_loop(agent: Callable[[], Awaitable[T]]) -> T:
    """Run an MCP client coroutine on a loop of its own in a thread, as a separate agent process
    would: the SDK client on the server's own loop (where these tests run) never gets answers."""
    return await asyncio.to_thread(lambda: asyncio.run(agent()))


def reply(confirmation: dict[str, Any], decision: str, key: str | None = None) -> dict[str, Any]:
    """A person's answer, as the panel sends it: with the *key* of its stream (``panel_key``);
    without one, it is a program's answer (refused for an outside agent's own request)."""
    body = {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decision": decision,
    }
    if key is not None:
        body["stream_key"] = key
    return body


def is_type(suffix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: str(m.get("type", "")).endswith(suffix)


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def agent_calls(
    url: str,
    headers: dict[str, str],
    *calls: tuple[str, dict[str, Any]],
    progress: list[str] | None = None,
    cancel: threading.Event | None = None,
    hold: threading.Event | None = None,
    client_name: str = "claude-code",
) -> Any:
    """An outside agent making *calls* in order over one MCP session; returns their results.
    With *cancel*, the last call is cancelled once the event is set (the SDK sends notifications/cancelled)."""

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress.append(message or "")

    async def agent() -> list[Any]:
        results = []
        async with mcp_client(url, headers, name=client_name) as client:
            for name, arguments in calls:
                call = asyncio.ensure_future(
                    client.call_tool(name, arguments, progress_callback=on_progress)
                )
                if cancel is not None and (name, arguments) == calls[-1]:
                    while not cancel.is_set():
                        await asyncio.sleep(0.05)
                    call.cancel()
                    await asyncio.sleep(1.0)  # the cancellation reaches the server
                    results.append(None)
                    continue
                results.append(await call)
            while hold is not None and not hold.is_set():  # stay connected until told
                await asyncio.sleep(0.05)
        return results

    return asyncio.ensure_future(off_loop(agent))
