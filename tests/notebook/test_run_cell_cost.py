"""What one run_cell does besides the kernel's own run: counted, so a saving cannot slip back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jupyter_client.session import Session
from nb_helpers import on_server_loop, wait_for

from jupyter_aaep.notebook import _cell_writer
from jupyter_aaep.notebook.kernel_watch import KernelWatch, PersonRun
from jupyter_aaep.tools.notebook import run_cell

pytestmark = pytest.mark.shared_server


@on_server_loop
async def test_run_cell_opens_the_shared_notebook_once(
    notebook_file, make_ctx, service, monkeypatch
) -> None:
    """Each open of the shared notebook is a file check and a file-id SQLite lookup
    (benchmarks/run_cell_overhead.py). run_cell opened it three times a run: to check the
    cell, to start the run, and in the cell's writer to clear the outputs. One open serves
    all three; the outputs still reach the shared cell."""
    # The writer re-opens the notebook once its copy is a second old; a loaded machine can
    # take that long for ``x = 1``. Its clock stands still here, so only the opens the code
    # makes per run are counted, not the clock's.
    monkeypatch.setattr(_cell_writer, "_now", lambda: 1000.0)
    documents = service.documents
    real_open = documents.open
    opened: list[str] = []

    async def counted(path: str) -> Any:
        opened.append(path)
        return await real_open(path)

    monkeypatch.setattr(documents, "open", counted)
    path = notebook_file("cost.ipynb", [{"id": "c1", "source": "print('ran', 6 * 7)"}])
    ctx = make_ctx(path)
    await run_cell(ctx, cell_id="c1")  # starts the kernel and connects our client
    for _ in range(2):
        opened.clear()
        result = await run_cell(ctx, cell_id="c1")
        assert not result.is_error, result.content
        assert "ran 42" in str(result.content)
        assert opened == [path], f"the shared notebook was opened {len(opened)} times in a run"
    cell = (await real_open(path)).cell("c1")
    assert [o.get("text") for o in cell["outputs"]] == ["ran 42\n"]
    assert cell["execution_count"] == 3


@on_server_loop
async def test_the_kernel_watch_decodes_only_the_messages_it_acts_on(
    notebook_file, make_ctx, service, jp_serverapp, monkeypatch
) -> None:
    """Each IOPub message of the agent's run was decoded three times on the server's loop:
    by jupyter_server's activity watcher, by the executor's client and by the kernel watch,
    which only looks for a person's runs. It now reads the header and parent header alone
    for a message it ignores (no signature check, no content); a person's run is still
    followed from start to end, with its output."""
    path = notebook_file("watched.ipynb", [{"id": "c1", "source": "print('agent')"}])
    ctx = make_ctx(path)
    await run_cell(ctx, cell_id="c1")  # starts the kernel and connects our client
    kernel = await service.kernel(path)
    km = jp_serverapp.kernel_manager.get_kernel(kernel.kernel_id)
    received: list[int] = []
    decoded: list[str] = []
    feed, deserialize = Session.feed_identities, Session.deserialize

    def fed(self: Session, frames: Any, *args: Any, **kwargs: Any) -> Any:
        if self.username == "jupyter-aaep-watch":
            received.append(1)
        return feed(self, frames, *args, **kwargs)

    def full(self: Session, frames: Any, *args: Any, **kwargs: Any) -> Any:
        message = deserialize(self, frames, *args, **kwargs)
        if self.username == "jupyter-aaep-watch":
            decoded.append(message["msg_type"])
        return message

    monkeypatch.setattr(Session, "feed_identities", fed)
    monkeypatch.setattr(Session, "deserialize", full)
    started: list[PersonRun] = []
    ended: list[PersonRun] = []
    watch = KernelWatch(
        km, own_sessions=service.executor.own_sessions, on_start=started.append, on_end=ended.append
    )
    watch.start()
    person = km.client(session=Session(key=km.session.key))
    person.start_channels()
    try:
        await wait_for(lambda: watch._client is not None, what="the watch's client", timeout=10)
        await asyncio.sleep(0.5)  # its subscription reaches the kernel
        for _ in range(2):
            await run_cell(ctx, cell_id="c1")
        # busy, execute_input, stream, idle of each run
        await wait_for(lambda: len(received) >= 8, what="the agent's messages", timeout=10)
        assert decoded == [], "the watch decoded the agent's own messages in full"
        await person.wait_for_ready(timeout=10)
        person.execute("print('the person ran this')")
        await wait_for(lambda: bool(ended), what="the person's run to end", timeout=10)
    finally:
        person.stop_channels()
        await watch.stop()
    assert [r.code for r in started] == ["print('the person ran this')"]
    assert ended[0].ended_by == "idle"
    assert ended[0].outputs == [
        {"output_type": "stream", "name": "stdout", "text": "the person ran this\n"}
    ]
    assert decoded and set(decoded) <= {"execute_input", "stream", "status"}, decoded
