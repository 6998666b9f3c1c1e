"""Cells a person runs: seen on the kernel's IOPub channel, so their end can be announced.

Why IOPub and not the shared document: the kernel broadcasts every execution to every
client, with exact start and end (``status`` busy/idle of the request), what it printed, its
error, and its widget messages (the only place a ``tqdm.notebook`` bar's progress can be
read). The shared document sees none of the widget traffic, shows ``execution_state`` only
when the browser sets it, and does not exist when no one has the notebook open. The one
thing IOPub lacks is *which cell* ran: ``execute_input`` carries the code, and the cell is
found by that source in the live notebook when the run is told (:mod:`~.service`).

One :class:`KernelWatch` per kernel, with its own client (its own session id, like the
executor's, so nobody else's replies are taken). Runs the agent itself started (requests of
the executor's clients, whose session ids it is told) and silent requests (no
``execute_input``) are ignored: the agent's runs are told by the tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_client.session import Session

from .progress import ProgressTracker

__all__ = ["KernelWatch", "PersonRun"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class PersonRun:
    """One execution someone else (a person, in JupyterLab) asked the kernel for."""

    msg_id: str
    code: str
    execution_count: int | None
    started_at: float
    tracker: ProgressTracker = field(default_factory=ProgressTracker)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    ended_at: float | None = None
    ended_by: Literal["idle", "died", "restarted"] | None = None

    def elapsed(self, now: float | None = None) -> float:
        end = (
            self.ended_at
            if self.ended_at is not None
            else (time.monotonic() if now is None else now)
        )
        return end - self.started_at

    def record(self, msg_type: str, content: dict[str, Any]) -> None:
        """Keep what the end sentence needs: errors, results, a bounded tail of printed text."""
        if msg_type == "error":
            self.outputs.append(
                {
                    "output_type": "error",
                    "ename": content.get("ename"),
                    "evalue": content.get("evalue"),
                    "traceback": [],
                }
            )
        elif msg_type == "execute_result":
            self.outputs.append(
                {"output_type": "execute_result", "data": content.get("data") or {}}
            )
        elif msg_type == "stream":
            text = str(content.get("text", ""))
            last = self.outputs[-1] if self.outputs else None
            if last is not None and last.get("output_type") == "stream":
                last["text"] = (last["text"] + text)[-4000:]
            else:
                self.outputs.append(
                    {"output_type": "stream", "name": content.get("name"), "text": text[-4000:]}
                )


RunCallback = Callable[[PersonRun], None]


class KernelWatch:
    """Follows one kernel's IOPub for executions others started.

    Parameters
    ----------
    kernel_manager
        The kernel's manager (``MultiKernelManager.get_kernel(id)``).
    own_sessions
        Returns the session ids of the agent's own clients (their runs are not a person's).
    on_start, on_end
        Called when a person's run starts and when it ends (``ended_by`` says how).
    """

    poll_seconds = 0.2

    def __init__(
        self,
        kernel_manager: Any,
        *,
        own_sessions: Callable[[], set[str]],
        on_start: RunCallback,
        on_end: RunCallback,
    ) -> None:
        self._km = kernel_manager
        self._own = own_sessions
        self._on_start, self._on_end = on_start, on_end
        self.current: PersonRun | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        self._token: Any = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._drop()

    def _drop(self) -> None:
        if self._client is not None:
            self._client.stop_channels()
        self._client = None

    def _connect(self) -> None:
        session = Session(
            key=self._km.session.key,
            signature_scheme=self._km.session.signature_scheme,
            username="jupyter-aaep-watch",
        )
        self._client = self._km.client(session=session)
        self._client.start_channels(shell=False, stdin=False, hb=False, control=False)
        self._token = self._process()

    def _process(self) -> Any:
        provisioner = getattr(self._km, "provisioner", None)
        return id(provisioner), getattr(provisioner, "pid", None)

    async def _watch(self) -> None:
        last_check = 0.0
        while True:
            if self._client is None:
                if getattr(self._km, "provisioner", None) is None or not await self._km.is_alive():
                    await asyncio.sleep(0.5)
                    continue
                self._connect()
            now = time.monotonic()
            if now - last_check >= 0.5:
                last_check = now
                if getattr(self._km, "provisioner", None) is None or not await self._km.is_alive():
                    self._end("died")
                    self._drop()
                    continue
                if self._process() != self._token:
                    self._end("restarted")
                    self._drop()
                    continue
            try:
                msg = await self._next()
            except Exception as error:  # noqa: BLE001 - a broken socket: reconnect
                log.debug("kernel watch reconnects after %s", error)
                self._drop()
                continue
            if msg is not None:
                self._handle(msg, time.monotonic())

    async def _next(self) -> dict[str, Any] | None:
        """The next IOPub message :meth:`_handle` acts on, decoded; ``None`` after a quiet
        ``poll_seconds`` or for a message it would ignore.

        Whether it acts is known from the header and the parent header alone (small JSON). The
        agent's own runs, whose every message jupyter_server's activity watcher and the
        executor's client decode as well, are so passed over without checking the signature
        or decoding the content: one decoding fewer on the server's loop for each of their
        messages. A message acted on is decoded and its signature checked in full."""
        socket = self._client.iopub_channel.socket
        if not await socket.poll(int(self.poll_seconds * 1000)):
            return None
        session = self._client.session
        _, frames = session.feed_identities(await socket.recv_multipart())
        # frames: signature, header, parent header, metadata, content, buffers
        if not self._wanted(session.unpack(frames[1]), session.unpack(frames[2])):
            return None
        message: dict[str, Any] = session.deserialize(frames)
        return message

    def _wanted(self, header: dict[str, Any], parent: dict[str, Any]) -> bool:
        """:meth:`_handle` does something with a message of *header* and *parent*."""
        msg_type = header.get("msg_type")
        if msg_type == "shutdown_reply":
            return True
        if msg_type == "execute_input":
            return parent.get("session") not in self._own()
        return self.current is not None and parent.get("msg_id") == self.current.msg_id

    def _handle(self, msg: dict[str, Any], now: float) -> None:
        parent = msg.get("parent_header") or {}
        msg_type, content = msg.get("msg_type", ""), msg.get("content") or {}
        if msg_type == "shutdown_reply":
            self._end("restarted")
            return
        if msg_type == "execute_input":
            if parent.get("session") in self._own():
                return
            self._end("idle")  # a run we missed the end of
            self.current = PersonRun(
                str(parent.get("msg_id", "")),
                str(content.get("code", "")),
                content.get("execution_count"),
                now,
            )
            self._on_start(self.current)
            return
        run = self.current
        if run is None or parent.get("msg_id") != run.msg_id:
            return
        if msg_type == "status" and content.get("execution_state") == "idle":
            self._end("idle")
            return
        run.tracker.feed(msg_type, content, now)
        run.record(msg_type, content)

    def _end(self, how: Literal["idle", "died", "restarted"]) -> None:
        run, self.current = self.current, None
        if run is None:
            return
        run.ended_at, run.ended_by = time.monotonic(), how
        self._on_end(run)
