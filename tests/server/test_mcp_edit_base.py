"""An outside agent's edit without ``version``, over MCP on a live server: based on what its own
connection read (across its idle-ended sessions), merged with a collaborator's line; another
connection that never read the cell is refused."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from kernel_helpers import _private_cwd, new_name, write_notebook  # noqa: F401
from mcp_helpers import live_server_config, mcp_client, mcp_url, off_loop, text_of

pytestmark = pytest.mark.slow

BEFORE = "total = 0\nfor x in data:\n    total += x\nprint(total)"
HUMAN_FIX = "total += important_human_fix()\n"


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The live-notebook server, with outside agents' sessions ending after 1 s idle."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=1.0)


@pytest.fixture
def url(jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    return mcp_url(jp_http_port, jp_base_url)


async def _idle(extension: Any) -> None:
    for _ in range(200):
        if not any(c.running for c in extension.runner.chats()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the outside agent's session did not end")


async def test_an_outside_agents_edit_without_version_is_merged_and_an_unread_one_refused(
    url, jp_auth_header, jp_root_dir, extension
) -> None:
    path = write_notebook(jp_root_dir, new_name(), [BEFORE, "y = 2"])
    headers = dict(jp_auth_header)
    read, changed = threading.Event(), threading.Event()

    async def reader() -> Any:
        async with mcp_client(url, headers) as client:
            await client.call_tool("get_notebook_state", {"notebook_path": path})
            read.set()
            while not changed.is_set():
                await asyncio.sleep(0.05)
            return await client.call_tool(
                "edit_cell",
                {
                    "notebook_path": path,
                    "cell_id": "c1",
                    "source": BEFORE.replace("total = 0", "total = 10"),
                },
            )

    async def stranger() -> Any:
        async with mcp_client(url, headers, name="codex") as client:
            return await client.call_tool(
                "edit_cell", {"notebook_path": path, "cell_id": "c2", "source": "y = 3"}
            )

    call = asyncio.ensure_future(off_loop(reader))
    for _ in range(300):
        if read.is_set():
            break
        await asyncio.sleep(0.05)
    service = extension.runner.services.notebook
    live = await service.open(path)
    with_fix = BEFORE.replace("print(total)", HUMAN_FIX + "print(total)")
    live.set_source("c1", with_fix)  # the collaborator's line, typed after the agent read
    await _idle(extension)  # its session ended: the next call opens another, with the same base
    changed.set()
    merged = await asyncio.wait_for(call, 30)
    expected = "total = 10\nfor x in data:\n    total += x\n" + HUMAN_FIX + "print(total)"
    assert not merged.is_error, text_of(merged)
    assert "your change was merged with the other one" in text_of(merged)
    assert (await service.open(path)).cell("c1")["source"] == expected

    await _idle(extension)
    refused = await off_loop(stranger)
    assert refused.is_error and "Cell 2 was not changed: you have not read it" in text_of(refused)
    assert (await service.open(path)).cell("c2")["source"] == "y = 2"
