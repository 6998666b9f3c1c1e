"""Outside agents (MCP) go through the same standing permissions as the built-in agent: a
notebook grant lets an outside agent's unflagged run through unasked, said with the grant's
words; its flagged code still waits for the person (issue 27)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kernel_helpers import _private_cwd, kernels, new_name  # noqa: F401
from mcp_helpers import agent_calls, is_type, live_server_config, mcp_url, reply, text_of
from server_helpers import panel_key

pytestmark = pytest.mark.slow


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=1.0)


@pytest.fixture
def url(jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    return mcp_url(jp_http_port, jp_base_url)


async def test_an_outside_agents_run_goes_through_the_same_grant(
    url, jp_auth_header, api, sse, kernels, extension
) -> None:
    path = new_name()
    await kernels.notebook(path, ["print('hello from the cell')", "import os\nos.system('ls')"])
    status, chat, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, chat
    chat_id = chat["chat_id"]
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        status, grant, _ = await api(
            "permissions",
            method="POST",
            body={
                "rule": "run_cell:unflagged",
                "scope": "notebook",
                "notebook_path": path,
                "stream_key": key,
            },
        )
        assert status == 201, grant
        call = agent_calls(
            url,
            dict(jp_auth_header),
            ("run_cell", {"notebook_path": path, "cell_id": "c1"}),
            ("run_cell", {"notebook_path": path, "cell_id": "c2"}),
        )
        seen = await panel.until(
            lambda m: (
                is_type("awaiting.confirmation")(m) and not m["extra_context"].get("auto_approved")
            ),
            60,
        )
        allowed = next(m for m in seen if is_type("awaiting.confirmation")(m))
        assert allowed["extra_context"]["granted_by"]["id"] == grant["id"]
        assert allowed["summary_normal"].endswith(
            ": allowed by your permission for unflagged code in this notebook."
        )
        flagged = seen[-1]
        assert flagged["extra_context"]["cell_number"] == 2
        await api("chats", chat_id, "messages", method="POST", body=reply(flagged, "reject", key))
        first, second = await asyncio.wait_for(call, 60)
    assert not first.is_error and "hello from the cell" in text_of(first)
    assert second.is_error and "was not run" in text_of(second)
