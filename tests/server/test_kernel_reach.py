"""Kernel code that reaches for the Jupyter server asks a person, in auto mode too (issue 25).

The issue's 37-line cell (tests/agent/test_code_risk_server.py) finds the runtime folder
through the kernel's connection file, reads the server's token from ``jpserver-*.json`` and
schedules a task that answers the agent's requests over HTTP. On main it was "Approved
automatically". Here, with a real server and kernel, an auto-mode chat and a listener: the
card asks, names what the cell reaches for in plain words, and rejected, the cell never runs.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

_CASES = Path(__file__).parents[1] / "agent" / "test_code_risk_server.py"
_spec = importlib.util.spec_from_file_location("code_risk_server_cases", _CASES)
assert _spec is not None and _spec.loader is not None
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
ATTACK: str = _cases.ATTACK


async def test_the_token_reading_cell_asks_in_auto_mode_and_does_not_run_when_rejected(
    kernels, api, sse, extension, fake_model
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, [ATTACK])
    status, created, _ = await api(
        "chats", method="POST", body={"notebook_path": path, "approval_mode": "auto"}
    )
    assert status == 201 and created["approval_mode"] == "auto", created
    chat_id = created["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="It did not run.")
    )
    async with sse(chat_id) as panel:
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Run the first cell."},
        )
        assert status == 202, body
        card = (
            await panel.until(
                lambda m: str(m.get("type", "")).endswith("awaiting.confirmation"), 30
            )
        )[-1]
        assert "auto_approved" not in card["extra_context"]
        flags = card["extra_context"]["risk_flags"]
        for sentence in (
            "reads Jupyter's runtime folder, where the server's login token is kept",
            "reads the Jupyter server's login token",
            "sends data to a web address in the background",
        ):
            assert any(flag.startswith(sentence) for flag in flags), flags
        assert card["risk_level"] == "high"
        assert "reads the Jupyter server's login token" in card["summary_normal"]
        reply = {
            "type": "confirmation.reply",
            "reply_token": card["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "decision": "reject",
        }
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=reply)
        assert status == 204
        events = await wait_idle(extension, chat_id)
    assert not [e for e in of(events, "state.changed") if "automatically" in json.dumps(e)]
    assert "False" in await kernel.run("print('answer' in globals())")  # the cell never ran
