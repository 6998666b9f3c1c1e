"""The same agent is no stranger (issue 25): a new MCP session of the same credential (or, with
the person's token, the same client name) takes over its idle session at once; never while a
call is in flight or waits for the person; two different agents are still refused, and another
credential cannot step into an agent's MCP session.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest
from credential_helpers import (  # noqa: F401 - fixtures by name
    base,
    bearer,
    chat_of_new,
    jp_server_config,
    mint,
    sources,
    url,
)
from kernel_helpers import _private_cwd, kernels, new_name, write_notebook  # noqa: F401
from mcp_helpers import agent_calls, is_type, off_loop, reply, text_of
from server_helpers import panel_key

pytestmark = pytest.mark.slow


# -- the same agent is no stranger ------------------------------------------------------------------
async def test_a_new_session_of_the_same_credential_takes_over_the_idle_one(
    url, api, mint, sse, jp_root_dir
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 1"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Claude Code (laptop)")
    hold = threading.Event()
    async with sse(chat_id) as panel:
        first = agent_calls(
            url, bearer(made), ("get_notebook_state", {"notebook_path": path}), hold=hold
        )
        await panel.until(is_type("tool.completed"), 30)
        # a second `claude -p`: a new MCP session, the first one still connected but idle
        [created] = await asyncio.wait_for(
            agent_calls(
                url, bearer(made), ("create_cell", {"notebook_path": path, "source": "y = 2"})
            ),
            20,
        )
        await panel.until(is_type("tool.completed"), 15)
        hold.set()
        await asyncio.wait_for(first, 20)
        events = [frame.data for frame in panel.frames]
    assert not created.is_error, text_of(created)
    said = [e.get("summary_normal", "") for e in events if e.get("summary_normal")]
    print("TAKEOVER:", " | ".join(said))
    kinds = [
        e["type"]
        for e in events
        if is_type("session.started")(e) or is_type("session.completed")(e)
    ]
    # the old session ended before the new one started (the new one then ends as its client left)
    assert [k.rsplit(".", 2)[-2] + "." + k.rsplit(".", 1)[-1] for k in kinds][:3] == [
        "session.started",
        "session.completed",
        "session.started",
    ]
    assert "Claude Code (laptop) finished: 1 step." in said
    assert said.count(f"Claude Code (laptop) is working on {path}.") == 2


async def test_no_takeover_while_a_call_waits_for_the_person(url, api, mint, sse, kernels) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, ["ran = 'yes'"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Claude Code")
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers from the panel
        waiting = agent_calls(
            url, bearer(made), ("run_cell", {"notebook_path": path, "cell_id": "c1"})
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        [refused] = await asyncio.wait_for(
            agent_calls(
                url, bearer(made), ("create_cell", {"notebook_path": path, "source": "y = 2"})
            ),
            20,
        )
        assert not waiting.done()  # the waiting call was not ended by the newcomer
        await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "reject", key)
        )
        [rejected] = await asyncio.wait_for(waiting, 20)
    assert refused.is_error and text_of(refused).startswith(
        f"Claude Code is working on {path} right now"
    )
    assert rejected.is_error and "declined" in text_of(rejected)
    assert "nothing" in await kernel.run("print(globals().get('ran', 'nothing'))")


async def test_two_different_agents_are_still_refused(
    url, api, mint, sse, jp_root_dir, jp_auth_header
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 1"])
    chat_id = await chat_of_new(api, path)
    claude, codex = await mint("Claude Code"), await mint("Codex")
    hold = threading.Event()
    async with sse(chat_id) as panel:
        first = agent_calls(
            url, bearer(claude), ("get_notebook_state", {"notebook_path": path}), hold=hold
        )
        await panel.until(is_type("tool.completed"), 30)
        [by_codex] = await agent_calls(
            url, bearer(codex), ("create_cell", {"notebook_path": path, "source": "a"})
        )
        # the person's token with the same client name is not the credential's agent either
        [by_login] = await agent_calls(
            url, dict(jp_auth_header), ("create_cell", {"notebook_path": path, "source": "b"})
        )
        hold.set()
        await asyncio.wait_for(first, 20)
    for refused in (by_codex, by_login):
        assert refused.is_error and text_of(refused).startswith(
            f"Claude Code is working on {path} right now"
        ), text_of(refused)
    assert await sources(Path(jp_root_dir) / path) == ["x = 1"]


async def test_with_the_persons_token_the_same_client_name_takes_over(
    url, api, sse, jp_root_dir, jp_auth_header
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 1"])
    chat_id = await chat_of_new(api, path)
    hold = threading.Event()
    async with sse(chat_id) as panel:
        first = agent_calls(
            url, dict(jp_auth_header), ("get_notebook_state", {"notebook_path": path}), hold=hold
        )
        await panel.until(is_type("tool.completed"), 30)
        [by_gemini] = await agent_calls(
            url,
            dict(jp_auth_header),
            ("get_notebook_state", {"notebook_path": path}),
            client_name="gemini-cli",
        )
        [again] = await asyncio.wait_for(
            agent_calls(url, dict(jp_auth_header), ("get_notebook_state", {"notebook_path": path})),
            20,
        )
        hold.set()
        await asyncio.wait_for(first, 20)
    assert by_gemini.is_error and text_of(by_gemini).startswith(f"Claude Code is working on {path}")
    assert not again.is_error, text_of(again)
    _, body, _ = await api("chats", chat_id)
    said = [e.get("summary_normal", "") for e in body["transcript"]]
    assert "Claude Code finished: 1 step." in said, said
    assert said.count(f"Claude Code is working on {path}.") == 2, said


async def test_another_credential_cannot_step_into_an_agents_mcp_session(
    url, api, mint, sse, jp_root_dir
) -> None:
    """Codex's credential with Claude Code's MCP session id (learnt somehow) gets no turn in
    Claude Code's session under its name: its call is refused as another agent's."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 1"])
    chat_id = await chat_of_new(api, path)
    claude, codex = await mint("Claude Code"), await mint("Codex")
    session_id: list[str] = []
    hold = threading.Event()

    async def agent() -> None:
        http = create_mcp_http_client(headers=bearer(claude))

        async def note(response: httpx.Response) -> None:  # the SDK keeps the id to itself
            if response.headers.get("mcp-session-id") and not session_id:
                session_id.append(response.headers["mcp-session-id"])

        http.event_hooks["response"].append(note)
        async with http, streamable_http_client(url, http_client=http) as streams:  # noqa: SIM117 - the session needs the streams
            async with ClientSession(
                streams[0], streams[1], client_info=Implementation(name="claude-code", version="1")
            ) as session:
                await session.initialize()
                await session.call_tool("get_notebook_state", {"notebook_path": path})
                while not hold.is_set():
                    await asyncio.sleep(0.05)

    async with sse(chat_id) as panel:
        task = asyncio.ensure_future(off_loop(agent))
        try:
            await panel.until(is_type("tool.completed"), 30)
            assert session_id, "the MCP session's id was not seen"
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "create_cell",
                    "arguments": {"notebook_path": path, "source": "z"},
                },
            }
            async with httpx.AsyncClient(timeout=20) as client:
                answer = await client.post(
                    url,
                    json=call,
                    headers={
                        **bearer(codex),
                        "Accept": "application/json, text/event-stream",
                        "mcp-session-id": session_id[0],
                        "mcp-protocol-version": "2025-06-18",
                    },
                )
        finally:
            hold.set()
            await asyncio.wait_for(task, 20)
    assert answer.status_code == 200, answer.text
    assert f"Claude Code is working on {path} right now" in answer.text, answer.text
    assert await sources(Path(jp_root_dir) / path) == ["x = 1"]
