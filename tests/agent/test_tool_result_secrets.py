"""Tool results are masked on their way to the model, like events (issue #9, "Secrets")."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jupyter_aaep import ToolError, aaep_tool
from jupyter_aaep.agent.data_blocks import unwrap
from jupyter_aaep.agent.tools import ToolResult
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

if TYPE_CHECKING:
    from tests.agent.conftest import Harness

KEY = "sk-ant-api03-" + "Qx9" * 12
# A real 1×1 PNG: the fake Messages API checks image data as the service does.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}


@aaep_tool(read_only=True, label="show the settings")
async def show_settings() -> ToolResult:
    """Show the settings, with a picture."""
    return ToolResult(
        content=[{"type": "text", "text": f"token={KEY} ready"}, IMAGE], summary="Shown."
    )


@aaep_tool(read_only=True, label="fail loudly")
async def fail_loudly() -> str:
    """Fail with a key in the message."""
    raise ToolError(f"could not connect with {KEY}")


async def test_text_blocks_and_errors_are_masked_images_are_not(harness: Harness) -> None:
    harness.add_tools([show_settings, fail_loudly])
    harness.fake.add(
        Turn(tool_uses=[ToolUse("show_settings", {}), ToolUse("fail_loudly", {})]),
        Turn(text="Done."),
    )
    result = await harness.ask("Show the settings.")
    assert result.status == "completed"
    sent = harness.fake.requests[-1].body["messages"][-1]["content"]
    results = [block for block in sent if block.get("type") == "tool_result"]
    assert KEY not in json.dumps(harness.fake.requests[-1].body)
    shown, failed = results
    assert shown["content"][1]["text"] == "token=[hidden] ready" and shown["content"][2] == IMAGE
    assert (
        shown["content"][0]["text"].startswith("<data source=")
        and shown["content"][-1]["text"] == "</data>"
    )
    assert failed["is_error"] and unwrap(failed["content"]) == "could not connect with [hidden]"
