"""Settings an administrator locks for everyone (server/policy.py), through the real server."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_aaep.server.policy import AdminPolicy


@pytest.fixture
def aaep_config() -> dict[str, Any]:
    return {
        "allowed_approval_modes": ["ask", "ask_all"],
        "approval_mode": "auto",
        "lock_models": True,
        "models": ["claude-haiku-4-5"],
        "kernel_replies": False,
        "allowed_mcp_stdio_commands": ["uvx"],
        "chat_budget_usd": 2.5,
    }


async def test_locked_settings_are_in_the_chat_state_and_changing_them_is_refused_with_a_sentence(
    api,
) -> None:
    status, chat, _ = await api("chats", method="POST", body={})
    assert status == 201
    # 'auto' as the default is not allowed: chats start in the first allowed mode.
    assert chat["approval_mode"] == "ask"
    policy = chat["policy"]
    assert policy["locked"] == ["approval_mode", "model", "mcp_stdio_commands", "budget"]
    assert policy["kernel_replies"] is False  # reported; a server option, never a user's choice
    assert policy["models"] == ["claude-test", "claude-haiku-4-5"] and policy[
        "mcp_stdio_commands"
    ] == ["uvx"]
    assert policy["message"] == (
        "Set by the administrator of this server: approval modes: Ask before running code or Ask before every "
        "change; models: claude-test, claude-haiku-4-5; tool servers: only uvx; at most $2.50 per chat."
    )
    chat_id = chat["chat_id"]
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "approval_mode", "mode": "auto"}
    )
    assert status == 403 and "turned off by the administrator" in body["message"]
    status, body, _ = await api("chats", method="POST", body={"approval_mode": "auto"})
    assert status == 403
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "guidance", "text": "go on", "settings": {"approval_mode": "auto"}},
    )
    assert status == 403
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "model", "model": "claude-opus-4-5"},
    )
    assert status == 403 and body["message"].startswith(
        "The administrator of this server allows only these models: claude-test, claude-haiku-4-5."
    )
    status, models, _ = await api("models")
    assert models["source"] == "policy" and [m["id"] for m in models["models"]] == [
        "claude-test",
        "claude-haiku-4-5",
    ]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "model", "model": "claude-haiku-4-5"},
    )
    assert status == 200
    status, state, _ = await api("chats", chat_id)
    assert state["approval_mode"] == "ask" and state["policy"]["locked"][0] == "approval_mode"


def test_nothing_locked_says_nothing() -> None:
    assert AdminPolicy().describe()["locked"] == [] and AdminPolicy().sentence() is None
