"""Our own client to each notebook kernel: made ready, watched for death and restarts.

The executor never borrows the kernel manager's client: each kernel gets a private client
with its own session id (sharing the manager's identity would cut the browser off its
replies) and its own ZMQ context with a deep IOPub queue. A kernel whose process was replaced
(a restart, an auto-restart after a crash) is noticed by its process token, and the client is
made again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import zmq
import zmq.asyncio
from jupyter_client.session import Session

from ._iopub import IopubBacklog
from .errors import KernelBusy, KernelDied, KernelError
from .kernel_run import Displays

Ending = Literal["died", "restarted", "shut down"]


class KernelGone(Exception):
    """The kernel died, restarted or was shut down while we waited on it."""

    def __init__(self, how: Ending) -> None:
        super().__init__(how)
        self.how = how


@dataclass
class KernelLine:
    """One kernel's queue (agent runs never interleave) and our private client to it."""

    kernel_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    client: Any = None
    token: tuple[int, Any] | None = None
    deaths: int = 0
    """The kernel's auto-restarts counted when ``token`` was taken (see ``KernelClients.deaths``)."""
    ready: bool = False
    displays: Displays = field(default_factory=dict)
    iopub: IopubBacklog | None = None

    async def take(self, timeout: float | None, busy: str) -> None:
        """Wait for the kernel's earlier agent request; :class:`KernelBusy` (*busy*) after *timeout*."""
        if not self.lock.locked():  # free: no wait_for task (two loop turns) before every run
            await self.lock.acquire()
            return
        try:
            await asyncio.wait_for(self.lock.acquire(), timeout)
        except TimeoutError:
            raise KernelBusy(busy) from None


class KernelClients:
    """The private clients of every kernel the executor has used."""

    iopub_queue = 100_000
    """IOPub messages a client's queue holds while the pump catches up (see ``_zmq_context``)."""

    def __init__(
        self, kernels: Callable[[], Any], *, ready_timeout: float, restart_wait: float
    ) -> None:
        self._kernels = kernels
        self.ready_timeout = ready_timeout
        self.restart_wait = restart_wait
        self.lines: dict[str, KernelLine] = {}
        self._context: Any = None
        self.deaths: dict[str, int] = {}
        """Per kernel, how often Jupyter's restarter replaced a process that died: a replaced
        process then reads as a death, not as a restart someone asked for, however late the run
        looks (on a loaded machine the new process can be up before the run checks)."""
        self._watched: dict[str, tuple[Any, Callable[[], None]]] = {}

    @property
    def kernels(self) -> Any:
        """The server's kernel manager."""
        return self._kernels()

    def line(self, kernel_id: str) -> KernelLine:
        return self.lines.setdefault(kernel_id, KernelLine(kernel_id))

    def own_sessions(self) -> set[str]:
        """Session ids of our clients: requests from them are the agent's, not a person's."""
        return {
            line.client.session.session for line in self.lines.values() if line.client is not None
        }

    def process_token(self, kernel_id: str) -> tuple[int, Any] | None:
        """What identifies the kernel's current process; ``None`` when the kernel is gone.

        It changes whenever the process is replaced (restart, auto-restart), so state that
        lives in the kernel (kernel tools) can be dropped when it no longer matches.
        """
        if kernel_id not in self.kernels:
            return None
        return token_of(self.kernels.get_kernel(kernel_id))

    async def check_alive(self, line: KernelLine) -> None:
        """:class:`KernelGone` when the kernel is no longer the process our client talks to."""
        kernels = self.kernels
        if line.kernel_id not in kernels:
            raise KernelGone("shut down")
        km = kernels.get_kernel(line.kernel_id)
        if getattr(km, "provisioner", None) is None or not await km.is_alive():
            raise KernelGone("died")
        if token_of(km) != line.token:
            raise KernelGone(
                "died" if self.deaths.get(line.kernel_id, 0) != line.deaths else "restarted"
            )

    def gone(self, line: KernelLine, gone: KernelGone) -> KernelDied:
        """The error to raise for a kernel that went away; its client is dropped."""
        self.drop(line)
        return KernelDied(death_message(gone.how))

    async def ready(self, line: KernelLine) -> Any:
        """Our own client to the kernel, waiting for an auto-restart if the kernel just died (also
        while it starts: a kernel that lost a port to another process dies before it answers, and
        Jupyter's restarter starts it again on new ports)."""
        deadline = time.monotonic() + self.restart_wait
        while True:
            km = await self._alive(line, deadline)
            token = token_of(km)
            if line.client is None or line.token != token:
                self.drop(line)
                session = Session(
                    key=km.session.key,
                    signature_scheme=km.session.signature_scheme,
                    username="jupyter-aaep",
                )
                # Own session id: never the manager's identity. Own ZMQ context: a deeper IOPub queue.
                line.client = km.client(session=session, context=self._zmq_context())
                line.client.start_channels()
                line.token, line.ready = token, False
                line.deaths = self._watch_deaths(line.kernel_id, km)
            if line.ready:
                return line.client
            try:
                await line.client.wait_for_ready(timeout=self.ready_timeout)
            except RuntimeError as error:
                line.ready = False
                if "died" in str(error) and time.monotonic() < deadline:
                    self.drop(line)  # the restarter's new process gets a new client
                    continue
                raise KernelError(
                    f"The kernel did not answer within {self.ready_timeout:g} seconds ({error}). "
                    "Call restart_kernel and try again."
                ) from None
            line.ready = True
            return line.client

    async def _alive(self, line: KernelLine, deadline: float) -> Any:
        """The kernel's manager once its process runs; :class:`KernelDied` when it does not come
        back by *deadline*."""
        while True:
            if line.kernel_id not in self.kernels:
                raise KernelDied(death_message("shut down"))
            km = self.kernels.get_kernel(line.kernel_id)
            if getattr(km, "provisioner", None) is not None and await km.is_alive():
                return km
            if time.monotonic() > deadline or getattr(km, "execution_state", "") == "dead":
                raise KernelDied(
                    "The kernel is not running: it died and did not come back. Call restart_kernel "
                    "to start it again (its variables are lost), then run the cells that set them up."
                )
            await asyncio.sleep(0.25)

    def _zmq_context(self) -> Any:
        """Our clients' ZMQ context. The kernel drops IOPub messages for a reader more than a
        queue behind (1,000 by default), which during a flood can be an output or the run's idle
        status; our queue holds ``iopub_queue`` messages instead."""
        if self._context is None:
            self._context = zmq.asyncio.Context()
            self._context.setsockopt(zmq.RCVHWM, self.iopub_queue)
        return self._context

    @staticmethod
    def drop(line: KernelLine) -> None:
        if line.client is not None:
            line.client.stop_channels()
        line.client, line.ready, line.iopub = None, False, None

    def _watch_deaths(self, kernel_id: str, km: Any) -> int:
        """Count the restarter's restarts of *kernel_id* (its ``"restart"`` callbacks fire only for
        a process that died, never for a restart asked for); the count so far."""
        if self._watched.get(kernel_id, (None,))[0] is not km:

            def died() -> None:
                self.deaths[kernel_id] = self.deaths.get(kernel_id, 0) + 1

            km.add_restart_callback(died, "restart")
            self._watched[kernel_id] = (km, died)
        return self.deaths.get(kernel_id, 0)

    def close(self) -> None:
        """Close our clients (the kernels themselves belong to the user's sessions)."""
        for line in self.lines.values():
            self.drop(line)
        self.lines.clear()
        for km, died in self._watched.values():
            try:
                km.remove_restart_callback(died, "restart")
            except ValueError:
                pass  # already gone with its kernel
        self._watched.clear()
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None


def token_of(km: Any) -> tuple[int, Any]:
    """Changes whenever the kernel process is replaced (restart, auto-restart)."""
    provisioner = getattr(km, "provisioner", None)
    return id(provisioner), getattr(provisioner, "pid", None)


def death_message(how: str) -> str:
    if how == "restarted":
        return (
            "The kernel was restarted while the code was running, so the run stopped and all "
            "variables were lost. Run the cells that set them up again before continuing."
        )
    if how == "shut down":
        return (
            "The notebook's kernel was shut down. Running a cell again starts a new kernel; "
            "variables from before are gone."
        )
    return (
        "The kernel died while the code was running (the process exited or crashed, for example "
        "out of memory). Jupyter restarts it automatically; all variables are lost, so run the "
        "cells that set them up again. If it stays dead, call restart_kernel."
    )
