"""run_cell and friends with real kernels: live outputs, autosave, approvals, timeouts, crashes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import struct
import zlib
from typing import Any

import nbformat
import pytest
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.session import Session
from nb_helpers import Progress, cell_by_id, on_server_loop, wait_for

from jupyter_aaep.agent.tools import StaleApproval
from jupyter_aaep.notebook import (
    ExecutionTimeout,
    KernelBusy,
    KernelDied,
    KernelSpecMissing,
    source_fingerprint,
)
from jupyter_aaep.tools.notebook import (
    create_cell,
    interrupt_kernel,
    restart_kernel,
    run_all_cells,
    run_cell,
)

pytestmark = pytest.mark.shared_server


def tiny_png() -> str:
    """A valid 3×2 PNG, base64, without needing matplotlib."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 3 for _ in range(2))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


SLOW = "import time\nfor i in range(5):\n    print(f'line {i}', flush=True)\n    time.sleep(0.3)"
MIXED = f"""\
import sys, base64
from IPython.display import display, Image
handle = display('first', display_id=True)
print('out', flush=True)
print('err', file=sys.stderr, flush=True)
handle.update('second')
display(Image(data=base64.b64decode('{tiny_png()}')))
print('progress 10%', end='\\r', flush=True)
print('progress 100%', flush=True)
42"""
CLEARING = "from IPython.display import clear_output\nprint('a', flush=True)\nclear_output(wait=True)\nprint('b', flush=True)"


def stream_text(cell: dict[str, Any] | None) -> str:
    return "".join(
        o.get("text", "")
        for o in (cell or {}).get("outputs", [])
        if o.get("output_type") == "stream"
    )


@on_server_loop
async def test_outputs_stream_into_the_browser_while_the_cell_runs(
    notebook_file, make_ctx, browser, caplog
) -> None:
    path = notebook_file(
        "live.ipynb",
        [
            {"id": "slow", "source": SLOW},
            {"id": "mixed", "source": MIXED},
            {"id": "clearing", "source": CLEARING},
            {"id": "boom", "source": "def f():\n    return 1 / 0\nf()"},
        ],
    )
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    async with browser(path) as doc:
        seen: list[tuple[str, str]] = []

        def record(_: Any) -> None:
            cell = cell_by_id(doc, "slow") or {}
            seen.append((str(cell.get("execution_state")), stream_text(cell)))

        subscription = doc.ycells.observe_deep(record)
        result = await run_cell(ctx, cell_id="slow")
        doc.ycells.unobserve(subscription)

        final = "".join(f"line {i}\n" for i in range(5))
        texts = [text for _, text in seen]
        growing = {t for t in texts if t and t != final and final.startswith(t)}
        assert len(growing) >= 2, f"expected intermediate states, saw {texts}"
        assert ("running", "") in seen or any(state == "running" for state, _ in seen)
        await wait_for(
            lambda: (cell_by_id(doc, "slow") or {}).get("execution_state") == "idle", what="idle"
        )
        cell = cell_by_id(doc, "slow")
        assert stream_text(cell) == final and cell["execution_count"] == 1
        # Listeners hear the first line of what it printed and how much more there is.
        assert (
            result.summary.startswith("Cell 1 ran")
            and ": line 0. Plus 4 more lines." in result.summary
        )
        assert result.detail is not None and "line 4" in result.detail
        assert "Cell 1 (id slow) ran in" in result.content and "line 4" in result.content
        assert any("still running after" in p for p in progress)

        mixed = await run_cell(ctx, cell_id="mixed")
        await wait_for(
            lambda: (cell_by_id(doc, "mixed") or {}).get("execution_count") == 2,
            what="mixed to finish",
        )
        outputs = cell_by_id(doc, "mixed")["outputs"]
        kinds = [(o["output_type"], o.get("name")) for o in outputs]
        assert kinds == [
            ("display_data", None),
            ("stream", "stdout"),
            ("stream", "stderr"),
            ("display_data", None),
            ("stream", "stdout"),
            ("execute_result", None),
        ]
        assert outputs[0]["data"]["text/plain"] == "'second'"  # update_display_data by display_id
        assert outputs[4]["text"] == "progress 100%\n"  # \r overwrote the line
        assert isinstance(mixed.content, list) and mixed.content[1]["type"] == "image"
        text = mixed.content[0]["text"]
        assert "[image/png 3×2" in text and "42" in text
        # Said: the first line a person sees in the output area, how much more, the image.
        assert (
            mixed.summary.startswith("Cell 2 ran: 'second'")
            and "It showed 1 image." in mixed.summary
        )
        assert mixed.detail is not None and "progress 100%" in mixed.detail and "42" in mixed.detail

        await run_cell(ctx, cell_id="clearing")
        await wait_for(
            lambda: (cell_by_id(doc, "clearing") or {}).get("execution_state") == "idle",
            what="clearing",
        )
        assert [o.get("text") for o in cell_by_id(doc, "clearing")["outputs"]] == ["b\n"]

        boom = await run_cell(ctx, cell_id="boom")
        assert boom.summary == "Cell 4 failed: ZeroDivisionError: division by zero."
        # A cell that raised is a failed step; the model still reads the traceback.
        assert boom.is_error and boom.error_message == "ZeroDivisionError: division by zero"
        assert "raised ZeroDivisionError" in boom.content and "division by zero" in boom.content
        assert "\x1b[" not in boom.content and "return 1 / 0" in boom.content
        await wait_for(
            lambda: any(o["output_type"] == "error" for o in cell_by_id(doc, "boom")["outputs"]),
            what="the error output",
        )
    assert "out-of-band" not in caplog.text.lower()


@on_server_loop
async def test_closed_notebook_is_edited_run_and_autosaved(
    notebook_file, make_ctx, jp_root_dir, jp_fetch
) -> None:
    path = notebook_file("closed.ipynb", [{"id": "setup", "source": "value = 6 * 7"}])
    ctx = make_ctx(path)
    created = await create_cell(ctx, source="print(value)", after_cell_id="setup")
    new_id = created.content.split("(id ")[1].split(")")[0]
    await create_cell(ctx, source="raise ValueError('stop here')")
    await create_cell(ctx, source="print('never')")

    all_result = await run_all_cells(ctx)
    assert (
        all_result.summary
        == "Ran 3 cells, stopped at the error. Cell 3 failed: ValueError: stop here."
    )
    assert all_result.is_error and all_result.error_message == "Cell 3: ValueError: stop here"
    assert "Stopped at cell 3" in all_result.content and "stop here" in all_result.content

    sessions = json.loads((await jp_fetch("api", "sessions")).body.decode())
    assert [s["path"] for s in sessions] == [path]  # JupyterLab finds the same kernel

    def saved() -> Any:
        try:
            nb = nbformat.read(jp_root_dir / path, as_version=4)
        except (ValueError, OSError):  # caught in the middle of a save
            return None
        cells = {c.get("id"): c for c in nb.cells}
        done = (
            new_id in cells
            and cells[new_id].get("outputs")
            and cells[new_id]["execution_count"] == 2
        )
        return nb if done else None

    nb = await wait_for(saved, what="the autosave", timeout=15)
    nbformat.validate(nb)
    assert nb.cells[1].outputs[0]["text"] == "42\n"
    assert nb.cells[3].execution_count is None  # the run stopped at the error

    # What goes back to the model stays bounded however much a cell prints.
    loud = await create_cell(ctx, source="for i in range(20000):\n    print('row', i, 'x' * 20)")
    loud_id = loud.content.split("(id ")[1].split(")")[0]
    result = await run_cell(ctx, cell_id=loud_id)
    assert len(result.content) <= 8_500 and "characters cut" in result.content
    assert "row 19999" in result.content and "Plus 19999 more lines." in result.summary


@on_server_loop
async def test_stale_approval_runs_nothing(notebook_file, make_ctx, service, jp_serverapp) -> None:
    path = notebook_file("approve.ipynb", [{"id": "c1", "source": "print('approved')"}])
    approved = source_fingerprint("print('approved')")
    nb = await service.open(path)
    nb.set_source("c1", "print('changed after approval')")
    with pytest.raises(StaleApproval, match="changed after it was approved"):
        await run_cell(make_ctx(path, approved=approved), cell_id="c1")
    cell = (await service.open(path)).cell("c1")
    assert cell["execution_count"] is None and cell["outputs"] == []
    assert await jp_serverapp.session_manager.list_sessions() == []  # not even a kernel started


@on_server_loop
async def test_missing_kernelspec_names_it_and_the_available_ones(
    notebook_file, make_ctx, jp_serverapp
) -> None:
    path = notebook_file("julia.ipynb", [{"id": "c1", "source": "1"}], kernelspec="julia-1.9")
    with pytest.raises(KernelSpecMissing) as caught:
        await run_cell(make_ctx(path), cell_id="c1")
    assert "'julia-1.9'" in str(caught.value) and "python3" in str(caught.value)
    assert await jp_serverapp.session_manager.list_sessions() == []


@on_server_loop
async def test_timeout_and_cancellation_interrupt_the_kernel(
    notebook_file, make_ctx, service
) -> None:
    path = notebook_file(
        "loop.ipynb",
        [
            {"id": "spin", "source": "while True:\n    pass"},
            {"id": "quick", "source": "print('still alive')"},
        ],
    )
    ctx = make_ctx(path)
    with pytest.raises(ExecutionTimeout) as caught:
        await run_cell(ctx, cell_id="spin", timeout_seconds=2)
    message = str(caught.value)
    assert "time limit of 2 seconds" in message and "interrupted" in message and "Cell 1" in message
    assert "still running" in message  # the kernel survived and keeps its variables
    nb = await service.open(path)
    assert nb.cell("spin")["execution_state"] == "idle"
    assert any(o.get("ename") == "KeyboardInterrupt" for o in nb.cell("spin")["outputs"])
    assert "still alive" in (await run_cell(ctx, cell_id="quick")).content

    # Stop: cancelling the task that runs the cell interrupts the kernel.
    task = asyncio.ensure_future(run_cell(ctx, cell_id="spin", timeout_seconds=60))
    await wait_for(lambda: running(service, path), what="the run to start")
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    quick = await asyncio.wait_for(run_cell(ctx, cell_id="quick"), 10)
    assert "still alive" in quick.content
    assert (await service.open(path)).cell("spin")["execution_state"] == "idle"

    # The interrupt tool stops a running cell too; the cell reports KeyboardInterrupt.
    task = asyncio.ensure_future(run_cell(ctx, cell_id="spin", timeout_seconds=60))
    await wait_for(lambda: running(service, path), what="the second run")
    await asyncio.sleep(0.3)
    interrupted = await interrupt_kernel(ctx)
    assert interrupted.summary == "Interrupted the kernel."
    result = await asyncio.wait_for(task, 10)
    assert "KeyboardInterrupt" in result.summary


@on_server_loop
async def test_a_cell_the_user_started_is_never_interrupted(
    notebook_file, make_ctx, service, jp_serverapp
) -> None:
    path = notebook_file("busy.ipynb", [{"id": "quick", "source": "print('agent ran')"}])
    progress = Progress()
    ctx = make_ctx(path, progress=progress)
    await run_cell(ctx, cell_id="quick")  # starts the kernel
    km = jp_serverapp.kernel_manager.get_kernel((await service.kernel(path)).kernel_id)
    user = km.client(session=Session(key=km.session.key))  # the browser, say
    user.start_channels()
    try:
        await user.wait_for_ready(timeout=10)
        user_request = user.execute("import time\ntime.sleep(2)\nprint('user done')")
        await wait_for(lambda: km.execution_state == "busy", what="the user's cell to start")
        with pytest.raises(KernelBusy, match="nothing was run"):
            await run_cell(ctx, cell_id="quick", timeout_seconds=1)
        reply = await user.get_shell_msg(timeout=10)
        assert (
            reply["parent_header"]["msg_id"] == user_request and reply["content"]["status"] == "ok"
        )

        user.execute("import time\ntime.sleep(1.5)")
        await wait_for(lambda: km.execution_state == "busy", what="the second user cell")
        waited = await run_cell(ctx, cell_id="quick", timeout_seconds=5)
        assert "agent ran" in waited.content
        assert any("waiting: the kernel is busy" in p for p in progress)
    finally:
        user.stop_channels()


async def running(service: Any, path: str) -> bool:
    info = await service.kernel(path)
    return bool(info and service.executor.is_running_code(info.kernel_id))


@pytest.mark.fresh_server  # kills and restarts a kernel
@on_server_loop
async def test_kernel_death_is_reported_and_the_next_run_works(
    notebook_file, make_ctx, service, jp_serverapp
) -> None:
    path = notebook_file(
        "crash.ipynb",
        [
            {"id": "setup", "source": "x = 1"},
            {"id": "crash", "source": "import os\nos._exit(1)"},
            {"id": "after", "source": "print('back', 'x' in globals())"},
        ],
    )
    ctx = make_ctx(path)
    await run_cell(ctx, cell_id="setup")
    with pytest.raises(KernelDied) as caught:
        await run_cell(ctx, cell_id="crash")
    message = str(caught.value)
    assert "died" in message and "restart_kernel" in message and "Cell 2" in message
    assert (await service.open(path)).cell("crash")["execution_state"] == "idle"

    after = await run_cell(ctx, cell_id="after")  # waits for Jupyter's automatic restart
    assert "back False" in after.content  # a fresh kernel: variables are gone

    restarted = await restart_kernel(ctx)
    assert restarted.summary in ("Restarted the kernel.", "The kernel is running again.")
    again = await run_cell(ctx, cell_id="after")
    assert "back False" in again.content

    # Restarted from JupyterLab while the agent's cell runs: a clear error, the cell left idle.
    nb = await service.open(path)
    nb.set_source("setup", "import time\ntime.sleep(30)")
    task = asyncio.ensure_future(run_cell(ctx, cell_id="setup"))
    await wait_for(lambda: running(service, path), what="the long run")
    await asyncio.sleep(0.3)
    kernel_id = (await service.kernel(path)).kernel_id
    await jp_serverapp.kernel_manager.restart_kernel(kernel_id)
    with pytest.raises(KernelDied, match="restarted while the code was running"):
        await asyncio.wait_for(task, 15)
    assert (await service.open(path)).cell("setup")["execution_state"] == "idle"


@pytest.mark.fresh_server  # kills a kernel
@on_server_loop
async def test_a_kernel_that_dies_before_it_answers_is_followed_through_its_restart(
    notebook_file, make_ctx, service, jp_serverapp, monkeypatch
) -> None:
    """A kernel can die at its start, before it answers anything (with many kernels starting at
    once, another process can take its port). Jupyter's restarter starts it again on new ports:
    the agent's run waits for that kernel instead of telling the model to restart it."""
    path = notebook_file("dies.ipynb", [{"id": "c", "source": "print('ran', 6 * 7)"}])
    original = AsyncKernelClient.wait_for_ready
    killed: list[int] = []

    async def dies_first(client: Any, timeout: float | None = None) -> None:
        if not killed:  # the first kernel process dies while our client waits for its answer
            info = await service.kernel(path)
            pid = jp_serverapp.kernel_manager.get_kernel(info.kernel_id).provisioner.pid
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        await original(client, timeout=timeout)

    monkeypatch.setattr(AsyncKernelClient, "wait_for_ready", dies_first)
    ran = await run_cell(make_ctx(path), cell_id="c")
    assert killed and "ran 42" in ran.content
    info = await service.kernel(path)
    assert jp_serverapp.kernel_manager.get_kernel(info.kernel_id).provisioner.pid != killed[0]


def test_the_failure_line_is_one_plain_line() -> None:
    """What tool.completed's error_message says for a cell that raised."""
    from jupyter_aaep.tools._run_tools import _error_line

    assert _error_line([{"output_type": "stream", "text": "hi"}]) is None
    colored = {
        "output_type": "error",
        "ename": "NameError",
        "evalue": "name \x1b[31m'df'\x1b[0m is not defined",
    }
    assert _error_line([colored]) == "NameError: name 'df' is not defined"
    assert (
        _error_line([{"output_type": "error", "ename": "KeyboardInterrupt", "evalue": ""}])
        == "KeyboardInterrupt"
    )
    long = _error_line(
        [{"output_type": "error", "ename": "ValueError", "evalue": "x" * 1000 + "\nsecond line"}]
    )
    assert long is not None and long.startswith("ValueError: xxx") and "second line" not in long
    assert len(long) <= 400
