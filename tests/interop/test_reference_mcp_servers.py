"""The agent with the reference MCP servers from npm (pinned by ``scripts/interop-deps``).

``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-everything`` are
configured in an ``mcpServers`` file as a user would, beside one that cannot start. The real
agent loop calls their tools as the scripted fake model asks; a person answers on the chat's
SSE stream. Their annotations are the servers' own: the filesystem's reads are read-only, its
``write_file`` destructive; everything's ``get-tiny-image`` returns an image and
``trigger-long-running-operation`` sends a progress notification per step.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import of, result_text, tool_results, wait_idle
from mcp_helpers import reply
from npm_tools import EVERYTHING_SERVER, FILESYSTEM_SERVER, npm_tool

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The one folder the filesystem server may touch."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "notes.txt").write_text("buy milk\n")
    return folder.resolve()


@pytest.fixture
def aaep_config(data: Path, tmp_path: Path) -> dict[str, Any]:
    servers = {
        "files": {"command": "node", "args": [str(npm_tool(FILESYSTEM_SERVER)), str(data)]},
        "everything": {"command": "node", "args": [str(npm_tool(EVERYTHING_SERVER)), "stdio"]},
        "broken": {"command": "node", "args": [str(tmp_path / "no-such-server.js")]},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return {"mcp_config_file": str(config), "mcp_call_timeout_seconds": 90}


async def _say(api: Any, chat_id: str, text: str) -> None:
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
    )
    assert status == 202, body


async def _new_chat(api: Any, extension: Any) -> str:
    await extension.mcp_servers.wait_started(60)
    for server in extension.mcp_servers.servers:  # a person trusts the reference servers'
        server.grant_trust()  # read-only claims (earning it: tests/server/test_mcp_trust.py)
    status, body, _ = await api("chats", method="POST", body={"notebook_path": "work.ipynb"})
    assert status == 201, body
    return str(body["chat_id"])


def _said(events: list[dict[str, Any]]) -> list[str]:
    return [e["summary_normal"] for e in events if e.get("summary_normal")]


async def test_a_read_runs_unasked_and_a_write_asks(api, extension, fake_model, sse, data) -> None:
    notes, plan = data / "notes.txt", data / "plan.txt"
    fake_model.add(
        Turn(tool_uses=[ToolUse("mcp__files__read_text_file", {"path": str(notes)})]),
        Turn(text="Your notes say: buy milk."),
        Turn(tool_uses=[ToolUse("mcp__files__write_file", {"path": str(plan), "content": "sell"})]),
        Turn(text="The plan was not written."),
        Turn(tool_uses=[ToolUse("mcp__files__write_file", {"path": str(plan), "content": "keep"})]),
        Turn(text="The plan is written."),
    )
    chat_id = await _new_chat(api, extension)
    await _say(api, chat_id, "What is in my notes?")
    read = await wait_idle(extension, chat_id)
    assert not of(read, "awaiting.confirmation")  # readOnlyHint: it ran unasked
    assert [c["status"] for c in of(read, "tool.completed")] == ["success"]
    assert "buy milk" in result_text(tool_results(fake_model, 1)[0])
    assert "Using Read Text File, from the files server." in _said(read)
    seen: set[str] = set()
    async with sse(chat_id) as panel:
        for decision, content in (("reject", "sell"), ("accept", "keep")):
            await _say(api, chat_id, "Write the plan.")
            confirmation = (
                await panel.until(
                    lambda m: (
                        str(m.get("type", "")).endswith("awaiting.confirmation")
                        and m.get("reply_token") not in seen
                    ),
                    60,
                )
            )[-1]
            seen.add(confirmation["reply_token"])
            assert json.loads(confirmation["extra_context"]["code"]) == {
                "path": str(plan),
                "content": content,
            }
            assert "Write File, from the files server" in confirmation["summary_normal"]
            status, _, _ = await api(
                "chats", chat_id, "messages", method="POST", body=reply(confirmation, decision)
            )
            assert status == 204
            events = await wait_idle(extension, chat_id)
            if decision == "reject":
                assert not plan.exists()  # nothing was written
                [declined] = tool_results(fake_model)
                assert declined.get("is_error") is True
    assert plan.read_text() == "keep"
    assert [c["status"] for c in of(events, "tool.completed")][-1] == "success"
    assert not [s for s in _said(events) if "mcp__" in s or "write_file" in s]


async def test_an_image_reaches_the_model_and_progress_is_paced(api, extension, fake_model) -> None:
    steps, seconds = 64, 32.0  # two notifications a second from the server
    fake_model.add(
        Turn(tool_uses=[ToolUse("mcp__everything__get-tiny-image", {})]),
        Turn(
            tool_uses=[
                ToolUse(
                    "mcp__everything__trigger-long-running-operation",
                    {"duration": seconds, "steps": steps},
                )
            ]
        ),
        Turn(text="A tiny image, and the long job is done."),
    )
    chat_id = await _new_chat(api, extension)
    started = time.monotonic()
    await _say(api, chat_id, "Show me the tiny image, then run the long job.")
    events = await wait_idle(extension, chat_id, timeout=120)
    took = time.monotonic() - started
    assert not of(events, "awaiting.confirmation")  # both are read-only
    assert [c["status"] for c in of(events, "tool.completed")] == ["success", "success"]
    [image] = fake_model.requests[1].images  # the image block the model received
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/png"
    [done] = tool_results(fake_model)
    assert f"Steps: {steps}" in result_text(done)  # the server sent one notification per step
    progress = of(events, "progress.updated")
    moments = [_seconds(e["timestamp"]) for e in progress]
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    print(
        f"{steps} notifications in {took:.0f} s became {len(progress)} progress events: {_said(progress)}"
    )
    assert 1 <= len(progress) <= 1 + seconds // 15  # at most one per 15 s, like a cell run
    assert all(gap >= 14.9 for gap in gaps), gaps
    assert all(e["progress"]["total_steps"] == steps for e in progress)
    said = _said(progress)
    assert all(
        s.startswith("Trigger Long Running Operation Tool, from the everything server: ")
        for s in said
    ), said
    assert any(e.get("urgency") == "normal" for e in progress)  # a milestone is announced


def _seconds(stamp: str) -> float:
    """An AAEP timestamp (RFC 3339, UTC) as seconds."""
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def test_a_server_that_fails_to_start_is_one_sentence_and_the_agent_works(
    api, extension, fake_model
) -> None:
    await extension.mcp_servers.wait_started(60)
    status, body, _ = await api("mcp", "servers")
    assert status == 200
    servers = {s["name"]: s for s in body["servers"]}
    assert servers["files"]["status"] == "ready" and servers["everything"]["status"] == "ready"
    broken = servers["broken"]
    assert broken["status"] == "failed" and broken["tools"] == []
    message = broken["message"]
    print("The broken server:", message)
    # One sentence (a clause after the server's name, as the status shows it), with node's own
    # words on why, and where the whole log is; no stack trace.
    assert "\n" not in message and message.endswith(".")
    assert len(re.findall(r"[.!?](?:\s|$)", message.replace("…", ""))) == 1, message
    assert "Cannot find module" in message and "no-such-server.js" in message, message
    assert "aaep-mcp-broken.log" in message
    assert "node:internal" not in message and " at " not in message
    fake_model.add(Turn(text="I am here."))
    chat_id = await _new_chat(api, extension)
    await _say(api, chat_id, "Are you there?")
    events = await wait_idle(extension, chat_id)
    assert of(events, "session.completed")
    offered = {t["name"] for t in fake_model.requests[-1].body["tools"]}
    assert "mcp__files__write_file" in offered and "mcp__everything__get-tiny-image" in offered
    assert not [name for name in offered if name.startswith("mcp__broken__")]
