"""Running code in a notebook's own kernel, one request at a time, with outputs streamed live.

The kernel is the notebook's session kernel (the one JupyterLab shows; ``_sessions.py`` finds
or starts it). The executor talks to it through its **own**
kernel client with its own session id: sharing the kernel manager's client identity would
silently cut another client (the browser) off its replies.

Per kernel there is one queue (a FIFO lock), so agent runs never interleave. While a request
runs, every IOPub message of that request goes to a :class:`RunSink` (the shared cell), the
kernel is watched for death or restart, progress is reported, and the time limit is enforced
by interrupting the kernel. Cancelling the task (Stop) interrupts the kernel too.

A cell can flood IOPub (a tqdm bar at full speed sends tens of thousands of messages): the
pump takes what has arrived in one go and joins a run's stream messages (:mod:`._iopub`), and
the sink writes the shared cell at most every tenth of a second, so the run's end (its
``status: idle``) is reached as soon as the messages before it are read, not minutes later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from queue import Empty
from typing import TYPE_CHECKING, Any, Literal, Protocol

import zmq
import zmq.asyncio
from jupyter_client.session import Session

from ._iopub import IopubBacklog, joined
from .errors import ExecutionTimeout, KernelBusy, KernelDied, KernelError
from .progress import ProgressTracker

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

__all__ = ["ExecutionResult", "KernelExecutor", "RunSink"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[float, bool], None]
"""Called every few seconds with the elapsed seconds and whether the run is still waiting for
the kernel (busy with someone else's cell) rather than running."""


class RunSink(Protocol):
    """Where one run's outputs go (the shared cell: ``LiveCellWriter``)."""

    cell_id: str

    async def begin(self) -> None: ...
    async def handle(self, msg_type: str, content: dict[str, Any]) -> None: ...
    async def flush(self) -> None:
        """Write what :meth:`handle` kept back (it may hold edits for a tenth of a second)."""

    @property
    def pending(self) -> bool: ...
    async def finish(self, execution_count: int | None) -> None: ...
    def outputs(self) -> list[dict[str, Any]]: ...
    @property
    def display_ids(self) -> set[str]: ...


@dataclass
class ExecutionResult:
    """What one run did (outputs are nbformat dicts)."""

    status: Literal["ok", "error", "aborted"]
    execution_count: int | None
    outputs: list[dict[str, Any]]
    elapsed: float


class _Dead(Exception):
    def __init__(self, how: Literal["died", "restarted", "shut down"]) -> None:
        super().__init__(how)
        self.how = how


class _Timeout(Exception):
    pass


@dataclass
class _Line:
    """One kernel's queue and our private client to it."""

    kernel_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    client: Any = None
    token: tuple[int, Any] | None = None
    ready: bool = False
    displays: dict[str, dict[str, RunSink]] = field(default_factory=dict)
    iopub: IopubBacklog | None = None


@dataclass
class _Run:
    msg_id: str
    submitted: float
    limit: float | None
    """Seconds the code may run; the clock starts when the kernel starts *this* request."""
    deadline: float | None = None
    running_since: float | None = None
    idle: bool = False
    execution_count: int | None = None
    last_progress: float = 0.0
    ended_by: Literal["restarted", "shut down"] | None = None
    """Set when the kernel announced its shutdown or restart (``shutdown_reply`` on IOPub)."""
    tracker: ProgressTracker | None = None
    started: asyncio.Event | None = None
    reply: dict[str, Any] | None = None
    """The ``execute_reply`` (shell): the code is done, whatever IOPub still has to deliver."""
    quiet_since: float = 0.0

    def elapsed(self, now: float) -> float:
        return now - (self.running_since or self.submitted)


class KernelExecutor:
    """Runs code in notebook kernels through private clients, one request per kernel at a time."""

    poll_seconds = 0.25
    flush_seconds = 0.1
    """The longest a run's output waits in the sink when the kernel sends nothing more."""
    iopub_queue = 100_000
    """IOPub messages our client's queue holds while the pump catches up (see ``_zmq_context``)."""
    reply_grace = 1.0
    """After the ``execute_reply``, how long a quiet IOPub is waited on for the idle status
    (a flood can make the kernel drop it for a slow reader); then the run has ended."""

    def __init__(
        self,
        serverapp: ServerApp,
        *,
        progress_interval: float = 5.0,
        ready_timeout: float = 60.0,
        restart_wait: float = 15.0,
        interrupt_grace: float = 10.0,
    ) -> None:
        self._serverapp = serverapp
        self.progress_interval = progress_interval
        self.ready_timeout = ready_timeout
        self.restart_wait = restart_wait
        self.interrupt_grace = interrupt_grace
        self._lines: dict[str, _Line] = {}
        self._context: Any = None

    @property
    def _kernels(self) -> Any:
        return self._serverapp.kernel_manager

    def own_sessions(self) -> set[str]:
        """Session ids of our clients: requests from them are the agent's, not a person's."""
        return {
            line.client.session.session for line in self._lines.values() if line.client is not None
        }

    def is_running_code(self, kernel_id: str) -> bool:
        line = self._lines.get(kernel_id)
        return bool(line and line.lock.locked())

    # -- running code ----------------------------------------------------------------------------
    async def execute(
        self,
        kernel_id: str,
        code: str,
        sink: RunSink,
        *,
        timeout: float | None,
        turn_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        tracker: ProgressTracker | None = None,
        started: asyncio.Event | None = None,
    ) -> ExecutionResult:
        """Run *code* after the kernel's earlier agent runs; outputs go to *sink* as they arrive.

        *timeout* limits how long the code may run (``None``: no limit, nothing interrupts
        it); *turn_timeout* how long to wait for the kernel first, behind the agent's earlier
        run or a cell the person started (default: *timeout*). IOPub messages of the run also
        go to *tracker*; *started* is set when the kernel starts the code.

        Raises :class:`KernelBusy` (nothing ran), :class:`ExecutionTimeout` (the kernel was
        interrupted), :class:`KernelDied`, or ``CancelledError`` after interrupting the kernel
        when the calling task is cancelled.
        """
        line = self._lines.setdefault(kernel_id, _Line(kernel_id))
        turn = turn_timeout if turn_timeout is not None else timeout
        waited = time.monotonic()
        try:
            await asyncio.wait_for(line.lock.acquire(), turn)
        except TimeoutError:
            raise KernelBusy(
                f"The kernel has been busy with another cell the agent started for over {turn:g} "
                "seconds, so nothing was run. Wait for that cell with wait_for_cell, or interrupt it."
            ) from None
        try:
            client = await self._ready_client(line)
            left = None if turn is None else max(1.0, turn - (time.monotonic() - waited))
            await self._wait_for_turn(line, client, left, on_progress)
            await sink.begin()
            run = _Run(
                client.execute(code, store_history=True, allow_stdin=False, stop_on_error=True),
                time.monotonic(),
                timeout,
                tracker=tracker,
                started=started,
            )
            run.last_progress = run.submitted
            try:
                await self._pump(line, client, sink, run, on_progress)
            except _Timeout:
                await self._interrupt_and_drain(line, client, sink, run)
                stopped = run.idle
                await sink.finish(run.execution_count)
                raise ExecutionTimeout(
                    f"The code did not finish within the time limit of {timeout or 0:g} seconds, so the "
                    "kernel was interrupted"
                    + (
                        " (KeyboardInterrupt). The kernel is still running and keeps its variables."
                        if stopped
                        else ", but it has not stopped yet. Wait, call interrupt_kernel again, or call "
                        "restart_kernel (its variables are then lost)."
                    )
                ) from None
            except _Dead as dead:
                self._drop_client(line)
                await sink.finish(None)
                raise KernelDied(_death_message(dead.how)) from None
            except asyncio.CancelledError:
                await asyncio.shield(self._abort(line, client, sink, run))
                raise
            reply = run.reply or await self._reply(client, run.msg_id)
            count = (
                reply.get("execution_count", run.execution_count) if reply else run.execution_count
            )
            await sink.finish(count)
            self._remember_displays(line, sink)
            outputs = sink.outputs()  # one copy (a cell can print tens of megabytes)
            status: Literal["ok", "error", "aborted"] = "ok"
            if reply and reply.get("status") == "aborted":
                status = "aborted"
            elif (reply and reply.get("status") != "ok") or any(
                o.get("output_type") == "error" for o in outputs
            ):
                status = "error"
            return ExecutionResult(
                status=status,
                execution_count=count,
                outputs=outputs,
                elapsed=run.elapsed(time.monotonic()),
            )
        finally:
            line.lock.release()

    async def _wait_for_turn(
        self, line: _Line, client: Any, timeout: float | None, on_progress: ProgressCallback | None
    ) -> None:
        """Wait while the kernel runs someone else's code (a cell the user started).

        Our request is only sent once the kernel is free, so the time limit and Stop can never
        interrupt the user's own cell, and a Stop while waiting leaves nothing queued. When the
        server last saw the kernel go idle, it is free and we go at once (a probe would cost a
        round trip on every run: the run_cell benchmark). Otherwise the probe is a
        ``kernel_info`` request: the kernel answers it only between executions. (The server's
        ``execution_state`` can stay "busy" after a crash, so "busy" alone is never trusted.)
        A cell the browser sends in the same instant can still go first; our time limit only
        starts when the kernel starts our request, so it never counts that cell.
        """
        if self._state(line.kernel_id) == "idle":
            return
        probe = client.kernel_info()
        started = last = time.monotonic()
        while True:
            try:
                msg = await client.get_shell_msg(timeout=self.poll_seconds)
            except Empty:
                msg = None
            if msg is not None and msg.get("parent_header", {}).get("msg_id") == probe:
                return
            now = time.monotonic()
            if timeout is not None and now - started > timeout:
                raise KernelBusy(
                    f"The kernel has been busy running other code for over {timeout:g} seconds "
                    "(probably a cell started in JupyterLab), so nothing was run. Wait for it to "
                    "finish, or interrupt it with interrupt_kernel if the user agrees."
                )
            if on_progress is not None and now - last >= self.progress_interval:
                last = now
                on_progress(now - started, True)
            try:
                await self._check_alive(line)
            except _Dead as dead:
                self._drop_client(line)
                raise KernelDied(_death_message(dead.how)) from None

    async def _pump(
        self,
        line: _Line,
        client: Any,
        sink: RunSink,
        run: _Run,
        on_progress: ProgressCallback | None,
    ) -> None:
        """Feed the run's IOPub messages to *sink* until the kernel is idle again."""
        last_check = 0.0
        while not run.idle:
            now = time.monotonic()
            if run.reply is None:
                run.reply = await self._reply(client, run.msg_id, 0.0)
                run.quiet_since = now
            elif now - run.quiet_since >= self.reply_grace:
                break  # replied, and IOPub has been quiet since: its idle status was lost
            if run.deadline is not None and now >= run.deadline:
                raise _Timeout
            if on_progress is not None and now - run.last_progress >= self.progress_interval:
                run.last_progress = now
                on_progress(run.elapsed(now), run.running_since is None)
            if now - last_check >= self.poll_seconds:
                last_check = now
                await self._check_alive(line)
            wait = self.poll_seconds if run.deadline is None else run.deadline - now
            if sink.pending:
                wait = min(wait, self.flush_seconds)
            try:
                msg = await client.get_iopub_msg(timeout=max(0.01, min(self.poll_seconds, wait)))
            except Empty:
                await sink.flush()
                continue
            run.quiet_since = time.monotonic()
            if line.iopub is None:
                line.iopub = IopubBacklog(client)
            for item in joined([msg, *line.iopub.take()], run.msg_id):
                await self._take(line, sink, run, item, time.monotonic())
                if run.idle:
                    break
        if run.ended_by is not None:  # the run "finished" only because the kernel went away
            raise _Dead(run.ended_by)

    async def _take(
        self, line: _Line, sink: RunSink, run: _Run, msg: dict[str, Any], now: float
    ) -> None:
        """One IOPub message (or several stream messages of the run joined into one)."""
        msg_type, content = msg.get("msg_type", ""), msg.get("content", {})
        if msg_type == "shutdown_reply":  # someone restarts or stops the kernel under us
            run.ended_by = "restarted" if content.get("restart") else "shut down"
        if msg.get("parent_header", {}).get("msg_id") != run.msg_id:
            if msg_type == "update_display_data":  # e.g. a background thread of an earlier run
                await self._update_elsewhere(line, None, content)
            return
        if msg_type == "status":
            state = content.get("execution_state")
            if state == "busy" and run.running_since is None:
                run.running_since = now
                if run.limit is not None:
                    run.deadline = now + run.limit
                if run.started is not None:
                    run.started.set()
            run.idle = state == "idle"
            if run.idle:
                await sink.flush()
        elif msg_type == "execute_input":
            run.execution_count = content.get("execution_count")
        elif msg_type == "update_display_data":
            display_id = str((content.get("transient") or {}).get("display_id", ""))
            if display_id in sink.display_ids:
                await sink.handle(msg_type, content)
            await self._update_elsewhere(line, sink, content)
        else:
            if run.tracker is not None:
                run.tracker.feed(msg_type, content, now)
            await sink.handle(msg_type, content)

    async def _update_elsewhere(
        self, line: _Line, current: RunSink | None, content: dict[str, Any]
    ) -> None:
        display_id = str((content.get("transient") or {}).get("display_id", ""))
        for other in list(line.displays.get(display_id, {}).values()):
            if other is not current:
                await other.handle("update_display_data", content)

    def _remember_displays(self, line: _Line, sink: RunSink) -> None:
        """Keep the latest run of each cell that shows a display id, for later updates."""
        for owners in line.displays.values():
            if owners.get(sink.cell_id) is not sink:
                owners.pop(sink.cell_id, None)
        for display_id in sink.display_ids:
            line.displays.setdefault(display_id, {})[sink.cell_id] = sink
        for display_id in [d for d, owners in line.displays.items() if not owners]:
            del line.displays[display_id]
        while len(line.displays) > 500:
            line.displays.pop(next(iter(line.displays)))

    async def _interrupt_and_drain(
        self, line: _Line, client: Any, sink: RunSink, run: _Run
    ) -> None:
        try:
            await self._kernels.interrupt_kernel(line.kernel_id)
        except Exception as error:  # noqa: BLE001 - report the run's own outcome, not this
            log.warning("Could not interrupt kernel %s: %s", line.kernel_id, error)
            return
        run.limit, run.deadline = None, time.monotonic() + self.interrupt_grace
        try:
            await self._pump(line, client, sink, run, None)
        except (_Timeout, _Dead):
            line.ready = False

    async def _abort(self, line: _Line, client: Any, sink: RunSink, run: _Run) -> None:
        """After a cancellation: interrupt, collect the KeyboardInterrupt, leave the cell idle."""
        try:
            await self._interrupt_and_drain(line, client, sink, run)
        finally:
            await sink.finish(run.execution_count)

    async def _reply(self, client: Any, msg_id: str, timeout: float = 5.0) -> dict[str, Any] | None:
        """The ``execute_reply`` content of *msg_id* (``timeout=0``: only if already there)."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0 or timeout == 0:
            try:
                msg = await client.get_shell_msg(timeout=max(remaining, 0))
            except Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg.get("content", {}))
        return None

    # -- silent evaluation (our own introspection, never the user's history) ----------------------
    async def evaluate(
        self,
        kernel_id: str,
        expressions: dict[str, str],
        *,
        timeout: float,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Evaluate *expressions* in the kernel and return its ``user_expressions`` answer.

        The request is an empty ``silent`` execute (nothing in the user's history, no execution
        count, no outputs) queued like :meth:`execute`: after the agent's earlier runs and after
        a cell the user is running, with ``on_progress(elapsed, True)`` at once and then every
        ``progress_interval`` while it waits. Past *timeout* (counted from when the kernel
        starts it) the kernel is interrupted and :class:`ExecutionTimeout` raised.
        """
        line = self._lines.setdefault(kernel_id, _Line(kernel_id))
        if on_progress is not None and (line.lock.locked() or self._busy(kernel_id)):
            on_progress(0.0, True)
        try:  # behind a long cell the agent left running: give up after *timeout*, never hang
            await asyncio.wait_for(line.lock.acquire(), timeout)
        except TimeoutError:
            raise KernelBusy(
                f"The kernel is still running a cell the agent started (waited {timeout:g} seconds), "
                "so it cannot answer now. Wait for that cell with wait_for_cell, or interrupt it."
            ) from None
        try:
            client = await self._ready_client(line)
            await self._wait_for_turn(line, client, timeout, on_progress)
            msg_id = client.execute(
                "",
                silent=True,
                store_history=False,
                user_expressions=expressions,
                allow_stdin=False,
                stop_on_error=False,
            )
            try:
                reply = await self._silent_reply(line, client, msg_id, timeout, on_progress)
            except _Timeout:
                try:
                    await self._kernels.interrupt_kernel(kernel_id)
                    await self._silent_reply(line, client, msg_id, self.interrupt_grace, None)
                except (_Timeout, _Dead):
                    line.ready = False
                except Exception as error:  # noqa: BLE001 - report the time limit, not this
                    log.warning("Could not interrupt kernel %s: %s", kernel_id, error)
                raise ExecutionTimeout(
                    f"The kernel did not answer within the time limit of {timeout:g} seconds, so it "
                    "was interrupted (KeyboardInterrupt); its variables are kept."
                ) from None
            except _Dead as dead:
                self._drop_client(line)
                raise KernelDied(_death_message(dead.how)) from None
            except asyncio.CancelledError:
                await asyncio.shield(self._kernels.interrupt_kernel(kernel_id))
                raise
            return dict(reply.get("user_expressions") or {})
        finally:
            line.lock.release()

    def _busy(self, kernel_id: str) -> bool:
        return self._state(kernel_id) == "busy"

    def _state(self, kernel_id: str) -> str:
        """The server's view of the kernel's execution state ("" when unknown or gone)."""
        try:
            return str(getattr(self._kernels.get_kernel(kernel_id), "execution_state", "") or "")
        except KeyError:
            return ""

    async def _silent_reply(
        self,
        line: _Line,
        client: Any,
        msg_id: str,
        timeout: float,
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        """The ``execute_reply`` content of *msg_id*; ``_Timeout`` after *timeout* seconds."""
        started = last = time.monotonic()
        while True:
            now = time.monotonic()
            if now - started > timeout:
                raise _Timeout
            if on_progress is not None and now - last >= self.progress_interval:
                last = now
                on_progress(now - started, False)
            try:
                msg = await client.get_shell_msg(
                    timeout=min(self.poll_seconds, max(0.01, started + timeout - now))
                )
            except Empty:
                await self._check_alive(line)
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg.get("content", {}))

    # -- kernel health ---------------------------------------------------------------------------
    def process_token(self, kernel_id: str) -> tuple[int, Any] | None:
        """What identifies the kernel's current process; ``None`` when the kernel is gone.

        It changes whenever the process is replaced (restart, auto-restart), so state that
        lives in the kernel (kernel tools) can be dropped when it no longer matches.
        """
        if kernel_id not in self._kernels:
            return None
        return self._token(self._kernels.get_kernel(kernel_id))

    @staticmethod
    def _token(km: Any) -> tuple[int, Any]:
        """Changes whenever the kernel process is replaced (restart, auto-restart)."""
        provisioner = getattr(km, "provisioner", None)
        return id(provisioner), getattr(provisioner, "pid", None)

    async def _check_alive(self, line: _Line) -> None:
        if line.kernel_id not in self._kernels:
            raise _Dead("shut down")
        km = self._kernels.get_kernel(line.kernel_id)
        if getattr(km, "provisioner", None) is None or not await km.is_alive():
            raise _Dead("died")
        if self._token(km) != line.token:
            raise _Dead("restarted")

    async def _ready_client(self, line: _Line) -> Any:
        """Our own client to the kernel, waiting for an auto-restart if the kernel just died."""
        deadline = time.monotonic() + self.restart_wait
        while True:
            if line.kernel_id not in self._kernels:
                raise KernelDied(_death_message("shut down"))
            km = self._kernels.get_kernel(line.kernel_id)
            if getattr(km, "provisioner", None) is not None and await km.is_alive():
                break
            if time.monotonic() > deadline or getattr(km, "execution_state", "") == "dead":
                raise KernelDied(
                    "The kernel is not running: it died and did not come back. Call restart_kernel "
                    "to start it again (its variables are lost), then run the cells that set them up."
                )
            await asyncio.sleep(0.25)
        token = self._token(km)
        if line.client is None or line.token != token:
            self._drop_client(line)
            session = Session(
                key=km.session.key,
                signature_scheme=km.session.signature_scheme,
                username="jupyter-aaep",
            )
            # Own session id: never the manager's identity. Own ZMQ context: a deeper IOPub queue.
            line.client = km.client(session=session, context=self._zmq_context())
            line.client.start_channels()
            line.token, line.ready = token, False
        if not line.ready:
            try:
                await line.client.wait_for_ready(timeout=self.ready_timeout)
            except RuntimeError as error:
                line.ready = False
                raise KernelError(
                    f"The kernel did not answer within {self.ready_timeout:g} seconds ({error}). "
                    "Call restart_kernel and try again."
                ) from None
            line.ready = True
        return line.client

    def _zmq_context(self) -> Any:
        """Our clients' ZMQ context. The kernel drops IOPub messages for a reader more than a
        queue behind (1,000 by default), which during a flood can be an output or the run's idle
        status; our queue holds ``iopub_queue`` messages instead."""
        if self._context is None:
            self._context = zmq.asyncio.Context()
            self._context.setsockopt(zmq.RCVHWM, self.iopub_queue)
        return self._context

    @staticmethod
    def _drop_client(line: _Line) -> None:
        if line.client is not None:
            line.client.stop_channels()
        line.client, line.ready, line.iopub = None, False, None

    # -- control ---------------------------------------------------------------------------------
    async def interrupt(self, kernel_id: str) -> None:
        await self._kernels.interrupt_kernel(kernel_id)

    async def restart(self, kernel_id: str) -> bool:
        """Restart the kernel; ``False`` when it had just restarted on its own and was left alone."""
        line = self._lines.setdefault(kernel_id, _Line(kernel_id))
        line.displays.clear()
        km = self._kernels.get_kernel(kernel_id)
        if not await km.is_alive():  # the auto-restarter may already be bringing it back
            deadline = time.monotonic() + self.restart_wait
            while time.monotonic() < deadline and kernel_id in self._kernels:
                km = self._kernels.get_kernel(kernel_id)
                if getattr(km, "provisioner", None) is not None and await km.is_alive():
                    return False
                await asyncio.sleep(0.25)
        await self._kernels.restart_kernel(kernel_id)
        line.ready = False
        return True

    async def close(self) -> None:
        """Close our kernel clients (the kernels themselves belong to the user's sessions)."""
        for line in self._lines.values():
            self._drop_client(line)
        self._lines.clear()
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None


def _death_message(how: str) -> str:
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
