"""The rooms the agent opened are released when it is done with them, never while it works there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nb_helpers import on_server_loop, wait_for, write_notebook

from jupyter_aaep.notebook.rooms import room_id

pytestmark = pytest.mark.shared_server

SLOW = "import time\ntime.sleep(1.5)\nprint('done')"


def _open_rooms(jp_serverapp: Any) -> dict[str, Any]:
    return dict(jp_serverapp.web_app.settings["jupyter_server_ydoc"].ywebsocket_server.rooms)


@on_server_loop
async def test_a_room_is_kept_while_a_session_or_a_run_uses_it(
    service, jp_root_dir, jp_serverapp
) -> None:
    path = write_notebook(jp_root_dir, "busy.ipynb", [{"id": "c1", "source": SLOW}])
    rooms = service.documents.rooms
    rooms.idle_seconds = 0.2
    service.begin_record("chat-1", "session-1", path)
    await service.open(path)
    name = room_id(jp_serverapp, path)
    await asyncio.sleep(1.0)  # five release delays while the session works on it
    assert name in _open_rooms(jp_serverapp) and rooms.released == []

    run = await service.start_cell(path, "c1", source=SLOW, limit=60, turn_timeout=60)
    service.end_record("chat-1")  # the session ends while its cell still runs
    await asyncio.sleep(0.6)
    assert not run.done and name in _open_rooms(jp_serverapp)

    result = await run.task
    assert result.result.status == "ok"
    # The room leaves the server's list a step before its release is written down.
    await wait_for(lambda: rooms.released == [path], what="the release")
    assert name not in _open_rooms(jp_serverapp)
    # The run's output was saved before the room went.
    assert "done" in (jp_root_dir / path).read_text()
