"""A cell that floods its output, run by the agent through the real server (issue 26).

A tqdm-like loop at full speed for 12 seconds (``\\r``, the bar, a flush: tens of thousands of
IOPub messages) used to keep ``run_cell`` waiting minutes after the kernel was done, and the
notebook unsaved. Here: a real Jupyter server with jupyter-aaep and collaboration, a real kernel,
the real agent loop and SDK against the scripted fake model. The agent's ``tool.completed`` is
heard within 20 seconds of the loop's end, the model gets the bar's last line, the notebook was
saved while the cell still printed, and the file on disk ends with the last line.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle
from mcp_helpers import is_type, reply
from server_helpers import wait_until

from jupyter_aaep.notebook._cell_writer import LiveCellWriter
from jupyter_aaep.notebook._iopub import IopubBacklog
from jupyter_aaep.notebook.executor import KernelExecutor
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

FLOOD = """import sys, time
started = time.time()
i = 0
while time.time() - started < {seconds}:
    i += 1
    sys.stdout.write(f'\\r{{i}} it |{{"#" * (i % 20):20s}}| {{time.time() - started:4.1f}}s')
    sys.stdout.flush()
sys.stdout.write(f'\\rfinished after {{i}} updates of the bar')
sys.stdout.flush()
open({stamp!r}, 'w').write(repr((time.time(), i)))
print()"""


def _saved_stream(path: Path) -> str:
    try:
        cell = json.loads(path.read_text())["cells"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return ""
    return "".join(
        "".join(o.get("text", ""))
        for o in cell.get("outputs") or []
        if o.get("output_type") == "stream"
    )


async def _agent_runs_c1(api: Any, fake_model: Any, sse: Any, path: str, ask: str) -> str:
    """A chat on *path* whose agent runs cell c1 (accepted) and says "Done."; its chat id once
    the session has completed."""
    _, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    chat_id = str(body["chat_id"])
    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="Done."))
    async with sse(chat_id) as panel:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": ask}
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        await api("chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept"))
        await panel.until(lambda m: str(m.get("type", "")).endswith("session.completed"), 120)
    return chat_id


def _until_it_exists(stamp: Path, seconds: float) -> None:
    """Block (the server's loop too, as a loaded machine stops it) until the cell's loop has
    written its stamp, at most *seconds*."""
    deadline = time.monotonic() + seconds
    while not stamp.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


class _Saves:
    """The notebook file's saves, as seen by polling its modification time on a thread."""

    def __init__(self, path: Path) -> None:
        self.path, self.seen, self.stop = path, [], threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        last = self.path.stat().st_mtime
        while not self.stop.wait(0.05):
            mtime = self.path.stat().st_mtime
            if mtime != last:
                last = mtime
                self.seen.append((time.time(), _saved_stream(self.path)))


async def test_a_flooding_cell_is_heard_to_end_and_saved(
    kernels, api, extension, fake_model, sse, jp_root_dir: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(LiveCellWriter, "save_seconds", 3.0)  # several saves within 12 seconds
    extension.toolbox.notebooks.run_cell_wait_seconds = 120.0  # the answer is the outcome
    path = new_name()
    stamp = jp_root_dir / "loop-ended.txt"
    await kernels.notebook(path, [FLOOD.format(seconds=12, stamp=str(stamp))])
    _, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    chat_id = body["chat_id"]
    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="Done."))
    saves = _Saves(jp_root_dir / path)
    try:
        async with sse(chat_id) as panel:
            await api(
                "chats",
                chat_id,
                "messages",
                method="POST",
                body={"kind": "user_input", "text": "Run the loop."},
            )
            confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
            await api(
                "chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept")
            )
            completed = (
                await panel.until(lambda m: str(m.get("type", "")).endswith("tool.completed"), 200)
            )[-1]
            heard_at = time.time()
            ended_at, updates = eval(stamp.read_text())
            assert heard_at - ended_at <= 20, f"heard {heard_at - ended_at:.1f} s after the end"
            assert completed["status"] == "success", completed
            await wait_idle(extension, chat_id)
        last_line = f"finished after {updates} updates of the bar\n"  # longer than any bar
        result = json.dumps(fake_model.requests[1].body["messages"][-1]["content"])
        assert last_line.strip() in result, result[:2000]
        assert updates > 2000, f"only {updates} updates: not a flood"
        # Saved while the run went on, with the bar half way (the room's autosave waits for a
        # quiet moment). Counted until the run was heard to end, not until the loop ended: on a
        # loaded machine our reader is seconds behind the kernel, and saves what it has read.
        during = [text for when, text in saves.seen if when < heard_at]
        assert any(" it |" in text for text in during), saves.seen
        # … and the file ends with the bar's last line.
        await wait_until(
            lambda: _saved_stream(jp_root_dir / path) == last_line,
            timeout=15,
            what="the saved last line",
        )
        events = extension.runner.get(chat_id).emitter.history
        assert of(events, "session.completed")
    finally:
        saves.stop.set()
        saves.thread.join()


async def test_a_big_outputs_kept_copy_is_cut_once_reported_and_the_notebook_keeps_it_all(
    kernels, api, extension, fake_model, sse, jp_root_dir: Path, monkeypatch: Any
) -> None:
    """Issue 32: a cell printing 50 MB left the server 245 MB larger, 30 MB of it our own copy
    in the registry of runs. Once the run is reported that copy is cut to its head and tail;
    the model got the last line, and the notebook (live and saved) keeps every line."""
    from jupyter_aaep.notebook import _memory

    monkeypatch.setattr(_memory, "TRIM_AFTER_SECONDS", 0.2)
    path = new_name()
    lines = 30_000  # 3 MB: over BIG_OUTPUT_CHARS
    await kernels.notebook(path, [f"for i in range({lines}):\n    print('%099d' % i)"])
    service = extension.toolbox.notebooks
    await _agent_runs_c1(api, fake_model, sse, path, "Print the lines.")
    last = f"{lines - 1:099d}"
    assert last in json.dumps(fake_model.requests[1].body["messages"][-1]["content"])
    run = service.runs.get(path, "c1")
    assert run is not None and run.reported
    kept = run.task.result().result.outputs

    def cut() -> bool:
        return len(kept[0]["text"]) < 2 * _memory.KEPT_CHARS + 200

    await wait_until(cut, timeout=10, what="our copy of the output cut")
    assert kept[0]["text"].startswith(f"{0:099d}\n") and kept[0]["text"].endswith(last + "\n")
    live = await service.documents.open(path)
    assert live.cell("c1")["outputs"][0]["text"].count("\n") == lines  # the notebook: every line
    await wait_until(
        lambda: _saved_stream(jp_root_dir / path).count("\n") == lines,
        timeout=20,
        what="the saved notebook with every line",
    )


BEHIND = """import sys, time
for i in range(1, {n} + 1):
    sys.stdout.write(f'\\r{{i}} it |{{"#" * (i % 20):20s}}|')
    sys.stdout.flush()
sys.stdout.write(f'\\rfinished after {{i}} updates of the bar')
sys.stdout.flush()
open({stamp!r}, 'w').write(repr((time.time(), i)))
print()"""


async def test_a_reader_far_behind_the_flood_still_gets_its_last_line(
    kernels, api, extension, fake_model, sse, jp_root_dir: Path, monkeypatch: Any
) -> None:
    """Issue 32: at load 15 the model's result once stopped at the bar's 10,003rd update and the
    saved file lacked the last line. The loss is made here without load: our reader is stopped
    while the kernel floods (every message waits in our client's queue), and then each of its
    next batches takes longer than the quiet second the executor waits after the kernel's reply.
    The run must still end with the loop's last line, for the model and in the saved file.

    The flood is a count of updates (``BEHIND``), not seconds of them: fewer messages than the
    kernel's own queue for a reader holds (1,000), so none can be dropped, whatever the load. A
    3-second flood sent 14,000 on a faster machine here, and with four layers of tests beside it
    the kernel dropped some before our stopped server's queue took them (told as "skipped",
    rightly: the test after this one is about that)."""
    stamp = jp_root_dir / "loop-ended.txt"
    take, batches = IopubBacklog.take, []

    def slow_take(backlog: IopubBacklog) -> list[dict[str, Any]]:
        _until_it_exists(stamp, 60)  # stopped (the whole server, as a loaded machine stops it)
        if not batches:
            time.sleep(0.5)  # the kernel has replied and sent its idle status by now
        elif len(batches) < 3:
            time.sleep(KernelExecutor.reply_grace + 0.3)  # slower than the grace per batch
        batches.append(take(backlog))
        return batches[-1]

    monkeypatch.setattr(IopubBacklog, "take", slow_take)
    monkeypatch.setattr(IopubBacklog, "limit", 100)
    path = new_name()
    await kernels.notebook(path, [BEHIND.format(n=700, stamp=str(stamp))])
    chat_id = await _agent_runs_c1(api, fake_model, sse, path, "Run the loop.")
    await wait_idle(extension, chat_id)
    _, updates = eval(stamp.read_text())
    assert updates > 4 * IopubBacklog.limit, f"only {updates} updates: our queue was never behind"
    last_line = f"finished after {updates} updates of the bar\n"
    result = json.dumps(fake_model.requests[1].body["messages"][-1]["content"])
    assert last_line.strip() in result, result[:2000]
    assert "skipped" not in result  # nothing was lost, so nothing is said to be
    await wait_until(
        lambda: _saved_stream(jp_root_dir / path) == last_line,
        timeout=15,
        what="the saved last line",
    )


DROPPED = """import sys
for i in range({n}):
    sys.stdout.write('\\r%d ' % i + 'x' * 8000)
    sys.stdout.flush()
sys.stdout.write('\\rfinished after {n} updates of the bar')
sys.stdout.flush()
open({stamp!r}, 'w').write('done')
print()"""


async def test_output_the_kernel_dropped_is_said_to_be_lost_not_shown_as_complete(
    kernels, api, extension, fake_model, sse, jp_root_dir: Path, monkeypatch: Any
) -> None:
    """When the kernel really drops messages (a reader a whole queue behind: here a queue of 10
    and a reader stopped through a 32 MB flood, so its end and idle status are dropped), the run
    still ends, and the model and the listener are told the output's end may be missing."""
    from jupyter_aaep.notebook.kernel_clients import KernelClients

    stamp = jp_root_dir / "loop-ended.txt"
    take = IopubBacklog.take

    def stopped_take(backlog: IopubBacklog) -> list[dict[str, Any]]:
        _until_it_exists(stamp, 90)
        return take(backlog)

    monkeypatch.setattr(IopubBacklog, "take", stopped_take)
    monkeypatch.setattr(KernelClients, "iopub_queue", 10)
    path = new_name()
    await kernels.notebook(path, [DROPPED.format(n=4000, stamp=str(stamp))])
    chat_id = await _agent_runs_c1(api, fake_model, sse, path, "Run the loop.")
    await wait_idle(extension, chat_id)
    assert stamp.exists()
    result = json.dumps(fake_model.requests[1].body["messages"][-1]["content"])
    assert "finished after" not in result, "the end was not dropped: nothing tested"
    assert "the kernel dropped the end of it" in result, result[:1500]
    heard = json.dumps(extension.runner.get(chat_id).emitter.history)
    assert "Some of its output was lost on the way" in heard
