"""Undo per session, per agent, on a live server: the built-in agent (on the fake Messages API)
and Claude Code (the MCP SDK's own client) work in one chat of one notebook, a person (a pycrdt
collaborator in the room) types in between. Undoing one session never takes back another
agent's or the person's work, names the cells it kept and who changed them, and leaves every
other session undoable.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from kernel_helpers import _private_cwd, new_name, wait_idle, write_notebook  # noqa: F401
from mcp_helpers import live_server_config, mcp_client, mcp_url, off_loop, text_of
from server_helpers import wait_until

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn
from jupyter_aaep.testing.rooms import join_room, synced

pytestmark = pytest.mark.slow


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The live-notebook server, with outside agents' sessions ending after 1 s idle."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=1.0)


@pytest.fixture
def url(jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    return mcp_url(jp_http_port, jp_base_url)


@pytest.fixture
def person(jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: Any) -> Any:
    @asynccontextmanager
    async def connect(path: str) -> AsyncIterator[YNotebook]:
        websocket, room = await join_room(
            jp_fetch, path, port=jp_http_port, base_url=jp_base_url, auth_header=jp_auth_header
        )
        async with synced(websocket, room) as doc:
            yield doc

    return connect


async def _claude_code(
    url: str, headers: dict[str, str], *calls: tuple[str, dict[str, Any]]
) -> list[Any]:
    async def agent() -> list[Any]:
        async with mcp_client(url, headers) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return await off_loop(agent)


async def _built_in_session(
    api: Any, extension: Any, fake_model: Any, path: str
) -> tuple[str, str]:
    """The built-in agent reads, edits cell 1 and adds a cell; returns (chat id, session id)."""
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    chat_id = str(body["chat_id"])
    fake_model.add(
        Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
        Turn(
            tool_uses=[
                ToolUse("edit_cell", {"cell_id": "c1", "source": "a = 10"}),
                ToolUse("create_cell", {"source": "built = 1", "after_cell_id": "c3"}),
            ]
        ),
        Turn(text="Changed cell 1 and added one."),
    )
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "Tidy up."}
    )
    assert status == 202, body
    await wait_idle(extension, chat_id)
    return chat_id, str(body["session_id"])


async def _outside_session(
    url: str, headers: dict[str, str], extension: Any, chat_id: str, path: str
) -> str:
    """Claude Code, in the same chat: edits cell 1 again, edits cell 2, adds a cell; its session id."""
    chat = extension.runner.get(chat_id)
    before = set(chat.snapshots)
    results = await _claude_code(
        url,
        headers,
        ("get_notebook_state", {"notebook_path": path}),
        ("edit_cell", {"notebook_path": path, "cell_id": "c1", "source": "a = 100"}),
        ("edit_cell", {"notebook_path": path, "cell_id": "c2", "source": "b = 20"}),
        ("create_cell", {"notebook_path": path, "source": "outside = 1"}),
    )
    assert not any(r.is_error for r in results), [text_of(r) for r in results]
    await wait_until(lambda: not chat.running, timeout=30, what="Claude Code's session to end")
    [session_id] = [sid for sid in chat.snapshots if sid not in before]
    assert chat.snapshots[session_id].actor == "Claude Code"
    return session_id


async def _undo(api: Any, chat_id: str, session_id: str) -> dict[str, Any]:
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "control", "action": "revert", "session_id": session_id},
    )
    assert status == 200, body
    return dict(body)


def _on_disk(root: Any, path: str) -> list[str]:
    """The cells' sources in the saved file; none while the file is being written."""
    try:
        cells = json.loads((root / path).read_text())["cells"]
    except (OSError, ValueError):
        return []
    return ["".join(c["source"]) for c in cells]


async def test_undo_of_the_built_in_agent_leaves_claude_codes_work_and_its_undo(
    url, jp_auth_header, jp_root_dir, api, extension, fake_model
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["a = 1", "b = 2", "c = 3"])
    headers = dict(jp_auth_header)
    chat_id, built_in = await _built_in_session(api, extension, fake_model, path)
    outside = await _outside_session(url, headers, extension, chat_id, path)
    notebooks = extension.runner.services.notebook

    undone = await _undo(api, chat_id, built_in)
    live = await notebooks.open(path)
    assert [c["source"] for c in live.cells()] == ["a = 100", "b = 20", "c = 3", "outside = 1"]
    assert undone["kept"] == [
        "Cell 1 was kept as it is: Claude Code changed it after this request."
    ]
    assert undone["summary"] == (
        f"Undid the agent's changes to {path}: removed 1 cell the agent added. "
        "Cell 1 was kept as it is: Claude Code changed it after this request."
    )
    assert list(extension.runner.get(chat_id).snapshots) == [outside], (
        "Claude Code's session can still be undone"
    )

    undone = await _undo(api, chat_id, outside)
    live = await notebooks.open(path)
    # Claude Code's changes are taken back: cell 1 as Claude Code found it (the agent's edit,
    # which the first undo kept), cell 2 as it was, its cell gone.
    assert [c["source"] for c in live.cells()] == ["a = 10", "b = 2", "c = 3"]
    assert undone["summary"] == (
        f"Undid Claude Code's changes to {path}: removed 1 cell Claude Code added and restored "
        "2 cells Claude Code changed."
    )
    assert undone["kept"] == []
    await wait_until(
        lambda: _on_disk(jp_root_dir, path) == ["a = 10", "b = 2", "c = 3"],
        timeout=15,
        what="the undone notebook on disk",
    )


async def test_a_persons_edit_between_the_agents_survives_both_undos(
    url, jp_auth_header, jp_root_dir, api, extension, fake_model, person
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["a = 1", "b = 2", "c = 3"])
    headers = dict(jp_auth_header)
    notebooks = extension.runner.services.notebook
    async with person(path) as doc:
        chat_id, built_in = await _built_in_session(api, extension, fake_model, path)
        await wait_until(lambda: len(doc.ycells) == 4, timeout=10, what="the agent's new cell")
        # The person types in the agent's new cell and in cell 3, which no agent touched.
        with doc.ydoc.transaction():
            for index, text in ((3, "  # mine"), (2, "\nc += 1")):
                source = doc.ycells[index]["source"]
                source.insert(len(str(source)), text)
        live = await notebooks.open(path)
        await wait_until(
            lambda: live.cells()[3]["source"] == "built = 1  # mine",
            timeout=10,
            what="the person's typing on the server",
        )
        outside = await _outside_session(url, headers, extension, chat_id, path)

        undone = await _undo(api, chat_id, built_in)
        expected = ["a = 100", "b = 20", "c = 3\nc += 1", "built = 1  # mine", "outside = 1"]
        assert [c["source"] for c in live.cells()] == expected, (
            "every cell it changed was changed since"
        )
        assert undone["kept"] == [
            "Cell 4 was kept as it is: someone changed it after this request.",
            "Cell 1 was kept as it is: Claude Code changed it after this request.",
        ]
        assert undone["summary"].startswith(f"Nothing was undone in {path}: cell 4 was kept")

        undone = await _undo(api, chat_id, outside)
        expected = ["a = 10", "b = 2", "c = 3\nc += 1", "built = 1  # mine"]
        assert [c["source"] for c in live.cells()] == expected
        assert (undone["removed"], undone["restored"], undone["kept"]) == (1, 2, [])
        await wait_until(
            lambda: [str(c["source"]) for c in doc.ycells] == expected,
            timeout=10,
            what="the undo in the person's copy",
        )
    assert extension.runner.get(chat_id).snapshots == {}
