"""Finding a notebook's kernel: what it costs each time a tool asks."""

from __future__ import annotations

import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.tools.notebook import run_cell

pytestmark = pytest.mark.shared_server


@on_server_loop
async def test_a_running_kernels_display_name_is_read_from_disk_once(
    notebook_file, make_ctx, service, jp_serverapp, monkeypatch
) -> None:
    """Every run_cell looks its kernel up; reading every kernelspec from disk for the display
    name cost each lookup about 0.6 ms (benchmarks/run_cell_overhead.py). A running kernel's
    kernelspec does not change, so its display name is read once; the name stays right."""
    manager = jp_serverapp.kernel_spec_manager
    read = manager.get_all_specs
    reads = []

    def counted() -> dict:
        reads.append(1)
        return read()

    monkeypatch.setattr(manager, "get_all_specs", counted)
    path = notebook_file("lookup.ipynb", [{"id": "c1", "source": "x = 1"}])
    ctx = make_ctx(path)
    await run_cell(ctx, cell_id="c1")  # starts the kernel: the kernelspec is checked and read
    first = len(reads)
    info = await service.kernel(path)
    for _ in range(3):
        await run_cell(ctx, cell_id="c1")
        again = await service.kernel(path)
        assert (again.kernel_id, again.display_name) == (info.kernel_id, info.display_name)
    assert len(reads) == first, "the kernelspecs were read again for a kernel already known"
    expected = read()[info.name]["spec"]["display_name"]
    assert info.display_name == expected != info.name
