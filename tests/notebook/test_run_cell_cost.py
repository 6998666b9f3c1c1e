"""What one run_cell does besides the kernel's own run: counted, so a saving cannot slip back."""

from __future__ import annotations

import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.notebook import _cell_writer
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

    async def counted(path: str):  # type: ignore[no-untyped-def]
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
