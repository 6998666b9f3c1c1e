"""A coding agent's process and the JSON-RPC it speaks on stdio (ACP v1: one JSON object a line).

Why our own and not the ``agent-client-protocol`` package: the client side of ACP is three
requests (``initialize``, ``session/new``, ``session/prompt``), one notification each way and
a handful of requests from the agent; what matters here is the process (its own process group,
a private stderr log, no orphan whatever happens), and that is plain asyncio. Standard library
only, so the adapter can be tested without a server.

Requests from the agent are answered by ``on_request`` in a task of their own (a permission can
wait minutes for a person while updates keep flowing); notifications go to ``on_notify`` in
order, on the reading task.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["AgentExited", "AgentProcess", "RpcError"]

MAX_LINE = 32 << 20
"""Longest line read from the agent (32 MiB: a file read back whole, a long diff)."""
STOP_GRACE = 3.0
"""Seconds the agent gets to leave after its stdin closes, and again after SIGTERM."""

OnRequest = Callable[[str, dict[str, Any]], Awaitable[Any]]
OnNotify = Callable[[str, dict[str, Any]], None]


class RpcError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class AgentExited(RpcError):
    """The agent's process ended (or could not start) before it answered."""

    def __init__(self, message: str) -> None:
        super().__init__(-32000, message)


class AgentProcess:
    """One agent process: start it, call it, answer it, stop it (with its whole process group).

    Parameters
    ----------
    command, args, env, cwd
        What to run; *env* is the whole environment (the caller decides what it keeps).
    stderr_path
        Where the agent's stderr goes (a private log: it may print paths and prompts).
    on_request, on_notify
        The client's side of the protocol.
    """

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        stderr_path: str,
        on_request: OnRequest,
        on_notify: OnNotify,
    ) -> None:
        self.command = command
        self.args = args
        self.env = dict(env)
        self.cwd = cwd
        self.stderr_path = stderr_path
        self.on_request = on_request
        self.on_notify = on_notify
        self.process: asyncio.subprocess.Process | None = None
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._write_lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def start(self) -> None:
        """Start the process in its own session (so a stop reaches its children too)."""
        fd = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=fd,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                limit=MAX_LINE,
            )
        finally:
            os.close(fd)
        self._reader = asyncio.ensure_future(self._read())

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and wait for its result; :class:`RpcError` for an error answer."""
        self._next_id += 1
        number = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[number] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(number, None)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        process = self.process
        if process is None or process.stdin is None or process.returncode is not None:
            raise AgentExited("The agent's process is not running.")
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        async with self._write_lock:
            try:
                process.stdin.write(data)
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as error:
                raise AgentExited("The agent's process closed its input.") from error

    async def _read(self) -> None:
        process = self.process
        assert process is not None and process.stdout is not None
        why = "The agent's process ended."
        try:
            while True:
                try:
                    line = await process.stdout.readline()
                except ValueError:  # a line over MAX_LINE: the stream cannot be framed any more
                    why = "The agent sent a message too large to read."
                    break
                if not line:
                    break
                self._dispatch(line)
        finally:
            code = process.returncode
            if code is None:
                with contextlib.suppress(asyncio.TimeoutError):
                    code = await asyncio.wait_for(process.wait(), 1.0)
            if code not in (None, 0):
                why = f"The agent's process ended with exit status {code}."
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(AgentExited(why))

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("ACP agent wrote a line that is not JSON; ignored: %.120r", line)
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if isinstance(method, str):
            raw = message.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            if "id" in message:
                task = asyncio.ensure_future(self._answer(message["id"], method, params))
                self._handlers.add(task)
                task.add_done_callback(self._handlers.discard)
            else:
                try:
                    self.on_notify(method, params)
                except Exception:  # one bad update never stops the stream
                    log.exception("ACP notification %s could not be handled", method)
            return
        future = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(
                    int(error.get("code", -32603)), str(error.get("message")), error.get("data")
                )
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, number: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = await self.on_request(method, params)
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "result": result}
        except RpcError as error:
            answer = {
                "jsonrpc": "2.0",
                "id": number,
                "error": {"code": error.code, "message": str(error)},
            }
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the agent always gets an answer
            log.exception("ACP request %s failed", method)
            answer = {
                "jsonrpc": "2.0",
                "id": number,
                "error": {"code": -32603, "message": f"The client failed: {type(error).__name__}"},
            }
        with contextlib.suppress(AgentExited):
            await self._send(answer)

    async def stop(self) -> None:
        """End the process and its children: stdin closed, then SIGTERM, then SIGKILL, each
        after :data:`STOP_GRACE` seconds, to the whole process group."""
        process = self.process
        for task in list(self._handlers):
            task.cancel()
        if process is None:
            return
        if process.returncode is None:
            if process.stdin is not None:
                with contextlib.suppress(Exception):
                    process.stdin.close()
            for sent in (None, signal.SIGTERM, signal.SIGKILL):
                if sent is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, sent)
                try:
                    await asyncio.wait_for(process.wait(), STOP_GRACE)
                    break
                except asyncio.TimeoutError:
                    continue
        # Children that outlived the adapter (Claude Code under node) go with its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if self._reader is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._reader, STOP_GRACE)
