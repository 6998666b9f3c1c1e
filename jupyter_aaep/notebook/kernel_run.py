"""One run of code in a kernel: where its outputs go, its state, and what each IOPub message does.

The pump in :mod:`.executor` reads the messages; here each one moves the run on (busy: the
time limit starts; idle: the run is over; ``shutdown_reply``: the kernel went away under it)
or goes to the run's sink. A display id shown by an earlier run is updated where it is shown.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .progress import ProgressTracker


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
    def keep_for_displays(self) -> None:
        """The run is over; only its display ids' later updates still come here."""


Displays = dict[str, dict[str, RunSink]]
"""Per display id, the latest run of each cell that shows it (cell id → its sink)."""


@dataclass
class KernelRun:
    """One request's state while it runs, as its IOPub messages tell it."""

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
    numbers: MessageNumbers = field(init=False)
    """What the executor read of the run, counted against the kernel's numbers."""

    def __post_init__(self) -> None:
        self.numbers = MessageNumbers(self.msg_id)

    def elapsed(self, now: float) -> float:
        return now - (self.running_since or self.submitted)


@dataclass
class MessageNumbers:
    """The kernel's numbers on the IOPub messages of a run, to count the ones that never came.

    ipykernel numbers every message it sends (``<session>_<pid>_<n>`` ids, one counter for all
    its sockets) and drops IOPub messages for a reader a whole queue behind, silently. From the
    run's first message to its idle status, the numbers we did not see are the ones dropped,
    except single ones and pairs: those are replies it sent on other sockets meanwhile (our
    ``execute_reply``, a control reply to an extension's poll, a welcome to a new subscriber),
    while ZMQ drops in runs (until the reader has emptied half its queue). Kernels whose ids
    carry no number are not counted.
    """

    msg_id: str
    slack = 2
    """The longest run of missing numbers taken for replies elsewhere, not counted as lost."""
    last: int | None = None
    gaps: list[tuple[int, int]] = field(default_factory=list)
    """Numbers not seen, as ``[start, end)`` ranges, in order."""
    done: bool = False

    def note(self, msgs: list[dict[str, Any]]) -> None:
        """Count *msgs*, as they came off the socket (before stream messages are joined)."""
        for msg in msgs:
            if self.done:
                return
            ours = (msg.get("parent_header") or {}).get("msg_id") == self.msg_id
            if self.last is None and not ours:
                continue  # before the run: other clients' requests, their replies in between
            header = msg.get("header") or {}
            prefix, _, number = str(header.get("msg_id", "")).rpartition("_")
            if number.isdigit() and prefix.startswith(f"{header.get('session')}_"):
                self._see(int(number))
            self.done = ours and (msg.get("content") or {}).get("execution_state") == "idle"

    def _see(self, n: int) -> None:
        if self.last is None or n > self.last:
            if self.last is not None and n > self.last + 1:
                self.gaps.append((self.last + 1, n))
            self.last = n
            return
        for i in range(len(self.gaps) - 1, -1, -1):  # sent out of order (two kernel threads)
            start, end = self.gaps[i]
            if start <= n < end:
                self.gaps[i : i + 1] = [g for g in ((start, n), (n + 1, end)) if g[0] < g[1]]
                return

    @property
    def missed(self) -> int:
        """Messages of the run the kernel sent and we never received."""
        return sum(end - start for start, end in self.gaps if end - start > self.slack)


async def take(
    displays: Displays, sink: RunSink, run: KernelRun, msg: dict[str, Any], now: float
) -> None:
    """One IOPub message (or several stream messages of the run joined into one)."""
    msg_type, content = msg.get("msg_type", ""), msg.get("content", {})
    if msg_type == "shutdown_reply":  # someone restarts or stops the kernel under us
        run.ended_by = "restarted" if content.get("restart") else "shut down"
    if msg.get("parent_header", {}).get("msg_id") != run.msg_id:
        if msg_type == "update_display_data":  # e.g. a background thread of an earlier run
            await update_elsewhere(displays, None, content)
        return
    if msg_type == "status":
        state = content.get("execution_state")
        if state == "busy" and run.running_since is None:
            run.running_since = now
            if run.limit is not None:
                run.deadline = now + run.limit
            if run.started is not None:
                run.started.set()
        run.idle = state == "idle"  # what waits in the sink goes with the end (sink.finish)
    elif msg_type == "execute_input":
        run.execution_count = content.get("execution_count")
    elif msg_type == "update_display_data":
        display_id = str((content.get("transient") or {}).get("display_id", ""))
        if display_id in sink.display_ids:
            await sink.handle(msg_type, content)
        await update_elsewhere(displays, sink, content)
    else:
        if run.tracker is not None:
            run.tracker.feed(msg_type, content, now)
        await sink.handle(msg_type, content)


async def update_elsewhere(
    displays: Displays, current: RunSink | None, content: dict[str, Any]
) -> None:
    """Show a display's update in the other cells that show the same display id."""
    display_id = str((content.get("transient") or {}).get("display_id", ""))
    for other in list(displays.get(display_id, {}).values()):
        if other is not current:
            await other.handle("update_display_data", content)


def remember_displays(displays: Displays, sink: RunSink) -> None:
    """Keep the latest run of each cell that shows a display id, for later updates (once its
    outputs were taken: a kept run drops its copies of them, see ``keep_for_displays``)."""
    if sink.display_ids:
        sink.keep_for_displays()
    for owners in displays.values():
        if owners.get(sink.cell_id) is not sink:
            owners.pop(sink.cell_id, None)
    for display_id in sink.display_ids:
        displays.setdefault(display_id, {})[sink.cell_id] = sink
    for display_id in [d for d, owners in displays.items() if not owners]:
        del displays[display_id]
    while len(displays) > 500:
        displays.pop(next(iter(displays)))
