"""What a notebook test on a shared server still gets fresh (``jupyter_aaep/testing/shared_server.py``):
the first test leaves a notebook open in a room (a browser in it, an edit, a kernel that ran a
cell, a file id); the second writes a notebook at the same path and finds none of that, on the
same server: no room, no file loader, no kernel, no session, another file id, only its own cells."""

from __future__ import annotations

from typing import Any

import pytest
from nb_helpers import on_server_loop, wait_for

from jupyter_aaep.notebook.rooms import room_id
from jupyter_aaep.tools.notebook import run_cell

pytestmark = pytest.mark.shared_server

FIRST: dict[str, Any] = {}
"""What the first test left behind (the tests run in file order)."""


def _collaboration(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["jupyter_server_ydoc"]


@on_server_loop
async def test_one_leaves_a_room_a_kernel_and_an_edit(
    notebook_file, browser, make_ctx, jp_serverapp
) -> None:
    path = notebook_file("same.ipynb", [{"id": "c1", "source": "first = 1\nprint('first')"}])
    async with browser(path) as doc:
        result = await run_cell(make_ctx(path), cell_id="c1")
        assert not result.is_error and "first" in result.content
        doc.ycells[0]["source"] += "\n# typed by the first test's person"
        await wait_for(lambda: _collaboration(jp_serverapp).ywebsocket_server.rooms, what="a room")
    FIRST.update(server=jp_serverapp, room=room_id(jp_serverapp, path))
    assert FIRST["room"] in _collaboration(jp_serverapp).ywebsocket_server.rooms
    assert jp_serverapp.kernel_manager.list_kernel_ids()


@on_server_loop
async def test_two_finds_none_of_it(
    notebook_file, browser, service, jp_serverapp, jp_root_dir
) -> None:
    assert FIRST, "runs after test_one_leaves_a_room_a_kernel_and_an_edit"
    assert jp_serverapp is FIRST["server"]  # the same server, so the check means something
    collaboration = _collaboration(jp_serverapp)
    assert collaboration.ywebsocket_server.rooms == {}
    assert collaboration.file_loaders._FileLoaderMapping__dict == {}  # no file watched
    assert jp_serverapp.kernel_manager.list_kernel_ids() == []
    assert await jp_serverapp.session_manager.list_sessions() == []
    assert [p.name for p in jp_root_dir.iterdir() if not p.name.startswith(".")] == []
    assert room_id(jp_serverapp, "same.ipynb") is None  # the path has no file id any more

    path = notebook_file("same.ipynb", [{"id": "c1", "source": "second = 2"}])
    async with browser(path) as doc:
        assert room_id(jp_serverapp, path) != FIRST["room"]
        assert [str(cell["source"]) for cell in doc.ycells] == ["second = 2"]
    live = await service.open(path)
    assert [cell["source"] for cell in live.cells()] == ["second = 2"]
