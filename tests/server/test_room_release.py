"""The collaboration room the agent opened is released once it is done, unless a person is in it.

A real Jupyter server with jupyter-aaep and collaboration, the real agent loop and SDK against
the scripted fake model, and a person as a pycrdt client in the room. The release waits 0.3 s
after the agent's last use here (the collaboration extension's cleanup delay by default).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, wait_idle, write_notebook
from server_helpers import wait_until

from jupyter_aaep.notebook.rooms import room_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn
from jupyter_aaep.testing.rooms import join_room, synced

pytestmark = pytest.mark.slow

IDLE = 0.3


def _rooms(jp_serverapp: Any) -> dict[str, Any]:
    return dict(jp_serverapp.web_app.settings["jupyter_server_ydoc"].ywebsocket_server.rooms)


async def _session(api: Any, extension: Any, fake_model: Any, chat_id: str, *turns: Turn) -> None:
    fake_model.add(*turns)
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "Go."}
    )
    assert status == 202, body
    await wait_idle(extension, chat_id)


async def _chat(api: Any, extension: Any, path: str) -> str:
    extension.toolbox.notebooks.documents.rooms.idle_seconds = IDLE
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    return str(body["chat_id"])


async def test_the_room_only_the_agent_opened_is_released_after_its_session(
    api, extension, fake_model, jp_serverapp, jp_root_dir
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["a = 1"])
    chat_id = await _chat(api, extension, path)
    await _session(
        api,
        extension,
        fake_model,
        chat_id,
        Turn(tool_uses=[ToolUse("create_cell", {"source": "added = 2"})]),
        Turn(text="Added a cell."),
    )
    name = room_id(jp_serverapp, path)
    assert name is not None
    rooms = extension.toolbox.notebooks.documents.rooms
    # The room leaves the server's list a step before the release is written down (the file's
    # watcher is removed in between): wait for both.
    await wait_until(
        lambda: name not in _rooms(jp_serverapp) and rooms.released[-1:] == [path],
        timeout=10,
        what="the release",
    )
    assert rooms.watched() == []
    # Saved before it went: the file has the agent's cell.
    saved = json.loads((jp_root_dir / path).read_text())
    assert ["".join(c["source"]) for c in saved["cells"]] == ["a = 1", "added = 2"]

    # The next session opens the room again from the file and reads the cell.
    await _session(
        api,
        extension,
        fake_model,
        chat_id,
        Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
        Turn(text="Two cells."),
    )
    assert "added = 2" in json.dumps(fake_model.requests[-1].body["messages"][-1]["content"])
    await wait_until(lambda: name not in _rooms(jp_serverapp), timeout=10, what="a new release")


async def test_a_room_a_person_is_in_is_kept_and_keeps_working(
    api,
    extension,
    fake_model,
    jp_serverapp,
    jp_root_dir,
    jp_fetch,
    jp_http_port,
    jp_base_url,
    jp_auth_header,
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["a = 1"])
    chat_id = await _chat(api, extension, path)
    websocket, name = await join_room(
        jp_fetch, path, port=jp_http_port, base_url=jp_base_url, auth_header=jp_auth_header
    )
    async with synced(websocket, name) as doc:
        room = _rooms(jp_serverapp)[name]
        await _session(
            api,
            extension,
            fake_model,
            chat_id,
            Turn(tool_uses=[ToolUse("create_cell", {"source": "added = 2"})]),
            Turn(text="Added a cell."),
        )
        await asyncio.sleep(IDLE * 5)  # well past the release delay
        assert _rooms(jp_serverapp).get(name) is room
        assert extension.toolbox.notebooks.documents.rooms.released == []
        # The person still sees the agent's edits and their own reach the server's document.
        await wait_until(
            lambda: [str(c["source"]) for c in doc.ycells] == ["a = 1", "added = 2"],
            timeout=10,
            what="the agent's cell in the person's copy",
        )
        doc.ycells[0]["source"].insert(0, "# person\n")
        live = extension.toolbox.notebooks.documents
        for _ in range(200):
            if (await live.open(path)).cells()[0]["source"].startswith("# person"):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the person's edit never reached the server's document")
