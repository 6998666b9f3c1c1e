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

Our client to each kernel (made ready, watched for death and restarts) is
:mod:`.kernel_clients`; a run's state and what each of its messages does, :mod:`.kernel_run`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from queue import Empty
from typing import TYPE_CHECKING, Any, Literal

from ._iopub import IopubBacklog, joined
from .errors import ExecutionTimeout, KernelBusy
from .kernel_clients import KernelClients, KernelGone, KernelLine
from .kernel_run import KernelRun, RunSink, remember_displays, take
from .progress import ProgressTracker

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

__all__ = ["ExecutionResult", "KernelExecutor", "RunSink"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[float, bool], None]
"""Called every few seconds with the elapsed seconds and whether the run is still waiting for
the kernel (busy with someone else's cell) rather than running."""


@dataclass
class ExecutionResult:
    """What one run did (outputs are nbformat dicts)."""

    status: Literal["ok", "error", "aborted"]
    execution_count: int | None
    outputs: list[dict[str, Any]]
    elapsed: float
    missed: int = 0
    """IOPub messages of the run the kernel dropped (its reader, we, was a whole queue behind)."""
    end_heard: bool = True
    """``False``: the kernel replied but its idle status never came, so the output's end (what
    it sent last) may be missing too."""

    @property
    def complete(self) -> bool:
        """Every output message the kernel sent for the run reached us."""
        return self.end_heard and not self.missed


class _Timeout(Exception):
    pass


class KernelExecutor:
    """Runs code in notebook kernels through private clients, one request per kernel at a time."""

    poll_seconds = 0.25
    flush_seconds = 0.1
    """The longest a run's output waits in the sink when the kernel sends nothing more."""
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
        self.interrupt_grace = interrupt_grace
        self._clients = KernelClients(
            lambda: serverapp.kernel_manager,
            ready_timeout=ready_timeout,
            restart_wait=restart_wait,
        )

    @property
    def _kernels(self) -> Any:
        return self._serverapp.kernel_manager

    def own_sessions(self) -> set[str]:
        """Session ids of our clients: requests from them are the agent's, not a person's."""
        return self._clients.own_sessions()

    def process_token(self, kernel_id: str) -> tuple[int, Any] | None:
        """What identifies the kernel's current process (see :meth:`KernelClients.process_token`)."""
        return self._clients.process_token(kernel_id)

    def is_running_code(self, kernel_id: str) -> bool:
        line = self._clients.lines.get(kernel_id)
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
        line = self._clients.line(kernel_id)
        turn = turn_timeout if turn_timeout is not None else timeout
        waited = time.monotonic()
        await line.take(
            turn,
            f"The kernel has been busy with another cell the agent started for over {turn or 0:g} "
            "seconds, so nothing was run. Wait for that cell with wait_for_cell, or interrupt it.",
        )
        try:
            client = await self._clients.ready(line)
            left = None if turn is None else max(1.0, turn - (time.monotonic() - waited))
            await self._wait_for_turn(line, client, left, on_progress)
            await sink.begin()
            run = KernelRun(
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
            except KernelGone as gone:
                await sink.finish(None)
                raise self._clients.gone(line, gone) from None
            except asyncio.CancelledError:
                await asyncio.shield(self._abort(line, client, sink, run))
                raise
            reply = run.reply or await self._reply(client, run.msg_id)
            count = (
                reply.get("execution_count", run.execution_count) if reply else run.execution_count
            )
            await sink.finish(count)
            outputs = sink.outputs()  # one copy (a cell can print tens of megabytes)
            remember_displays(line.displays, sink)
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
                missed=run.numbers.missed,
                end_heard=run.idle,
            )
        finally:
            line.lock.release()

    async def _wait_for_turn(
        self,
        line: KernelLine,
        client: Any,
        timeout: float | None,
        on_progress: ProgressCallback | None,
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
                await self._clients.check_alive(line)
            except KernelGone as gone:
                raise self._clients.gone(line, gone) from None

    async def _pump(
        self,
        line: KernelLine,
        client: Any,
        sink: RunSink,
        run: KernelRun,
        on_progress: ProgressCallback | None,
    ) -> None:
        """Feed the run's IOPub messages to *sink* until the kernel is idle again."""
        last_check = time.monotonic()  # first check after poll_seconds: ``ready`` saw it alive
        while not run.idle:
            now = time.monotonic()
            if run.reply is None:
                run.reply = await self._reply(client, run.msg_id, 0.0)
                run.quiet_since = now
            if run.deadline is not None and now >= run.deadline:
                raise _Timeout
            if on_progress is not None and now - run.last_progress >= self.progress_interval:
                run.last_progress = now
                on_progress(run.elapsed(now), run.running_since is None)
            if now - last_check >= self.poll_seconds:
                last_check = now
                await self._clients.check_alive(line)
            wait = self.poll_seconds if run.deadline is None else run.deadline - now
            if sink.pending:
                wait = min(wait, self.flush_seconds)
            try:
                msgs = [await client.get_iopub_msg(timeout=max(0.01, min(self.poll_seconds, wait)))]
            except Empty:
                await sink.flush()
                msgs = []
            msgs.extend(self._backlog(line, client).take())  # also after a poll timed out late
            if not msgs:
                if run.reply is not None and self._lost_idle(run):
                    break
                continue
            run.numbers.note(msgs)
            for item in joined(msgs, run.msg_id):
                await take(line.displays, sink, run, item, time.monotonic())
                if run.idle:
                    break
            # Quiet is counted from the end of the last batch read: however long reading took,
            # a message still waiting is read before the run can be said to have lost its end.
            run.quiet_since = time.monotonic()
        if run.ended_by is not None:  # the run "finished" only because the kernel went away
            raise KernelGone(run.ended_by)

    @staticmethod
    def _backlog(line: KernelLine, client: Any) -> IopubBacklog:
        if line.iopub is None:
            line.iopub = IopubBacklog(client)
        return line.iopub

    def _lost_idle(self, run: KernelRun) -> bool:
        """The kernel has replied, our queue is empty and has stayed empty for ``reply_grace``:
        its idle status will not come (the kernel dropped it for a reader far behind)."""
        return time.monotonic() - run.quiet_since >= self.reply_grace

    async def _interrupt_and_drain(
        self, line: KernelLine, client: Any, sink: RunSink, run: KernelRun
    ) -> None:
        try:
            await self._kernels.interrupt_kernel(line.kernel_id)
        except Exception as error:  # noqa: BLE001 - report the run's own outcome, not this
            log.warning("Could not interrupt kernel %s: %s", line.kernel_id, error)
            return
        run.limit, run.deadline = None, time.monotonic() + self.interrupt_grace
        try:
            await self._pump(line, client, sink, run, None)
        except (_Timeout, KernelGone):
            line.ready = False

    async def _abort(self, line: KernelLine, client: Any, sink: RunSink, run: KernelRun) -> None:
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
        line = self._clients.line(kernel_id)
        if on_progress is not None and (line.lock.locked() or self._busy(kernel_id)):
            on_progress(0.0, True)
        await line.take(  # behind a long cell the agent left running: give up, never hang
            timeout,
            f"The kernel is still running a cell the agent started (waited {timeout:g} seconds), "
            "so it cannot answer now. Wait for that cell with wait_for_cell, or interrupt it.",
        )
        try:
            client = await self._clients.ready(line)
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
                except (_Timeout, KernelGone):
                    line.ready = False
                except Exception as error:  # noqa: BLE001 - report the time limit, not this
                    log.warning("Could not interrupt kernel %s: %s", kernel_id, error)
                raise ExecutionTimeout(
                    f"The kernel did not answer within the time limit of {timeout:g} seconds, so it "
                    "was interrupted (KeyboardInterrupt); its variables are kept."
                ) from None
            except KernelGone as gone:
                raise self._clients.gone(line, gone) from None
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
        line: KernelLine,
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
                await self._clients.check_alive(line)
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg.get("content", {}))

    # -- control ---------------------------------------------------------------------------------
    async def interrupt(self, kernel_id: str) -> None:
        await self._kernels.interrupt_kernel(kernel_id)

    async def restart(self, kernel_id: str) -> bool:
        """Restart the kernel; ``False`` when it had just restarted on its own and was left alone."""
        line = self._clients.line(kernel_id)
        line.displays.clear()
        km = self._kernels.get_kernel(kernel_id)
        if not await km.is_alive():  # the auto-restarter may already be bringing it back
            deadline = time.monotonic() + self._clients.restart_wait
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
        self._clients.close()
