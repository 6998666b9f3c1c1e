"""A chat that chose an ACP agent, through the server's API, with a scripted agent on stdio.

``tests/acp/fake_agent.py`` replays messages recorded from claude-agent-acp; it stands in for
the real adapter (tested end to end in ``tests/interop/test_acp_claude.py``) so these checks of
the API run in seconds: the list of agents, the choice, Pause (this agent cannot pause; Stop is
offered), Stop (the question withdrawn, the session cancelled), and no process left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from server_helpers import panel_key

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id

FAKE_AGENT = Path(__file__).resolve().parents[1] / "acp" / "fake_agent.py"


@pytest.fixture
def agents_json(jp_config_dir: Path, tmp_path: Path) -> Path:
    folder = jp_config_dir / "aaep"
    folder.mkdir(parents=True, exist_ok=True)
    received = tmp_path / "received.jsonl"
    (folder / "agents.json").write_text(
        json.dumps(
            {
                "agent_servers": {
                    "Scripted agent": {
                        "command": sys.executable,
                        "args": [str(FAKE_AGENT), str(received)],
                    },
                    "Missing agent": {"command": "/nonexistent/bin/codex-acp"},
                }
            }
        )
    )
    return received


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def test_a_chat_with_an_acp_agent_pauses_not_stops_cleanly(
    agents_json: Path, api: Any, sse: Any, new_chat: Any, extension: Any
) -> None:
    status, listed, _ = await api("agents")
    assert status == 200
    by_name = {a["name"]: a for a in listed["agents"]}
    assert listed["agents"][0]["name"] == "Jupyter agent"
    assert by_name["Scripted agent"]["available"] is True
    assert by_name["Missing agent"]["problem"] == (
        "Missing agent cannot start: the command '/nonexistent/bin/codex-acp' was not found. "
        "Install it with: npm install -g @zed-industries/codex-acp."
    )
    chat_id = await new_chat("work.ipynb")
    status, refused, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "agent", "agent": "Missing agent"},
    )
    assert status == 400 and refused["message"] == by_name["Missing agent"]["problem"]
    status, chosen, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "agent", "agent": "Scripted agent"},
    )
    assert status == 200 and chosen["kind"] == "agent.accepted"
    status, chat, _ = await api("chats", chat_id)
    assert chat["agent"] == "Scripted agent" and chat["supports"]["pause"] is False
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Make a file"},
        )
        assert status == 202
        heard = await stream.until(
            lambda e: str(e.get("type", "")).endswith("awaiting.confirmation"), 30
        )
        assert heard[0]["producer"]["agent_name"] == "Scripted agent"
        status, paused, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "control", "action": "pause"}
        )
        assert status == 200 and paused["paused"] is False
        assert paused["message"] == (
            "Scripted agent cannot pause. Stop it instead: changes made so far are kept."
        )
        pid = extension.parts.acp.agents[chat_id].pid
        status, stopped, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "control", "action": "stop"}
        )
        assert status == 202 and stopped["stopped"] is True
        heard += await stream.until(
            lambda e: str(e.get("type", "")).endswith("session.cancelled"), 30
        )
    assert "You stopped Scripted agent." in heard[-1]["summary_normal"]
    for _ in range(40):  # the agent heard the cancel, and its question was answered "cancelled"
        received = [json.loads(line) for line in agents_json.read_text().splitlines()]
        if any(m.get("id") == 900 for m in received):
            break
        await asyncio.sleep(0.05)
    assert any(m.get("method") == "session/cancel" for m in received)
    assert (
        next(m for m in received if m.get("id") == 900)["result"]["outcome"]["outcome"]
        == "cancelled"
    )
    # Back to our own agent: the ACP agent's process stops with the choice.
    status, _, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "agent", "agent": "Jupyter agent"},
    )
    assert status == 200
    assert not _alive(pid)


def _card(message: dict[str, Any]) -> bool:
    return str(message.get("type", "")).endswith("awaiting.confirmation")


def _reply(card: dict[str, Any], decision: str, **ours: Any) -> dict[str, Any]:
    return {
        "type": "confirmation.reply",
        "reply_token": card["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decision": decision,
        **ours,
    }


async def _finished(stream: Any) -> list[dict[str, Any]]:
    return list(
        await stream.until(lambda e: str(e.get("type", "")).endswith("session.completed"), 30)
    )


async def test_allow_for_this_chat_is_a_listed_revocable_grant_given_by_the_panel_only(
    agents_json: Path, api: Any, sse: Any, new_chat: Any
) -> None:
    chat_id = await new_chat("work.ipynb")
    body = {"kind": "agent", "agent": "Scripted agent"}
    assert (await api("chats", chat_id, "messages", method="POST", body=body))[0] == 200
    ask = {"kind": "user_input", "text": "Make a file"}
    wish = {"rule": "acp__scripted-agent__execute", "scope": "chat"}
    async with sse(chat_id) as stream:
        key = await panel_key(api, stream, chat_id)
        # 1. A program with the login but not the panel's key: approved, nothing granted.
        await api("chats", chat_id, "messages", method="POST", body=ask)
        card = (await stream.until(_card, 30))[-1]
        assert card["extra_context"]["permission_offers"] == [
            {
                **wish,
                "label": "Approve, and don't ask again for commands Scripted agent runs in this chat",
            }
        ]
        reply = _reply(card, "accept", grant=wish)
        await api("chats", chat_id, "messages", method="POST", body=reply)
        await _finished(stream)
        assert (await api("permissions"))[1]["permissions"] == []
        # 2. The panel's own answer with the grant: approved and granted, listed.
        await api("chats", chat_id, "messages", method="POST", body=ask)
        card = (await stream.until(_card, 30))[-1]
        reply = _reply(card, "accept", grant=wish, stream_key=key)
        assert (await api("chats", chat_id, "messages", method="POST", body=reply))[0] == 204
        heard = await _finished(stream)
        assert any("Permission given" in str(e.get("summary_normal")) for e in heard)
        _, listed, _ = await api("permissions")
        (grant,) = listed["permissions"]
        assert (grant["rule"], grant["scope"], grant["chat_id"]) == (wish["rule"], "chat", chat_id)
        assert grant["sentence"].startswith(
            "Without asking: commands Scripted agent runs in the chat “Make a file”, given "
        ), "named by the chat's first request"
        # 3. The next command goes through on the grant, unasked, and says so.
        await api("chats", chat_id, "messages", method="POST", body=ask)
        heard = await _finished(stream)
        (granted,) = [e for e in heard if _card(e)]
        assert granted["extra_context"]["granted_by"]["id"] == grant["id"]
        assert any(
            "allowed by your permission for commands Scripted agent runs in this chat"
            in str(e.get("summary_normal"))
            for e in heard
        )
        # 4. Taken back: it asks again.
        assert (await api("permissions", grant["id"], method="DELETE"))[0] == 204
        await api("chats", chat_id, "messages", method="POST", body=ask)
        card = (await stream.until(_card, 30))[-1]
        assert "granted_by" not in card["extra_context"]
        await api("chats", chat_id, "messages", method="POST", body=_reply(card, "reject"))
        await _finished(stream)
    answers = [
        json.loads(line)["result"]["outcome"]
        for line in agents_json.read_text().splitlines()
        if json.loads(line).get("id") == 900
    ]
    assert [a.get("optionId") for a in answers] == ["allow", "allow", "allow", "reject"]
    await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "agent", "agent": "Jupyter agent"},
    )
