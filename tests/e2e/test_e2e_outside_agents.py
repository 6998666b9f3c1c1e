"""Connect an outside agent (issue 25), in Chromium, by keyboard: the palette command opens a tab
with the focus in the name field; Enter makes the credential, shown once with the ready
``claude mcp add`` command and an ``mcpServers`` snippet, each with a Copy button; the list has a
Revoke button per agent; every action is announced; axe finds nothing. The credential made here
opens the MCP endpoint, and nothing once revoked. Screenshot: ``test-output/e2e/outside-agents.png``.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from e2e_lab import LabServer
from e2e_page import PanelPage
from playwright.sync_api import expect
from test_e2e_accessibility import _palette

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def _initialize(lab: LabServer, token: str) -> int:
    """An MCP ``initialize`` with the credential; the HTTP status."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"},
        },
    }
    request = urllib.request.Request(
        f"{lab.url}aaep/v1/mcp",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_connect_an_outside_agent_by_keyboard(ui: PanelPage, lab: LabServer) -> None:
    ui.open_notebook()
    ui.open_panel()  # the shell is ready for the palette's key (as in the verbosity test)
    ui.record_live_regions()
    page: Any = ui.page
    _palette(ui, "Connect an Outside Agent")
    name = page.get_by_role("textbox", name="Name people will hear")
    expect(name).to_be_focused()
    ui.wait_announced("Type a name for the agent")
    name.press_sequentially("Claude Code (laptop)")
    name.press("Enter")  # makes the credential (the tab stays)

    heading = page.get_by_role(
        "heading", name="Credential for Claude Code (laptop) (shown only once)"
    )
    expect(heading).to_be_focused()
    ui.wait_announced("Credential for Claude Code (laptop) made. Copy it now")
    command = page.get_by_role("textbox", name="Command for Claude Code").input_value()
    assert re.fullmatch(
        r"claude mcp add --transport http jupyter-notebooks http://127\.0\.0\.1:\d+/aaep/v1/mcp "
        r"--header 'Authorization: Bearer aaep_mcp_[A-Za-z0-9_-]{43}'",
        command,
    ), command
    token = page.get_by_role("textbox", name="The credential alone").input_value()
    snippet = json.loads(
        page.get_by_role(
            "textbox", name="mcpServers configuration for other MCP clients"
        ).input_value()
    )
    assert (
        snippet["mcpServers"]["jupyter-notebooks"]["headers"]["Authorization"] == f"Bearer {token}"
    )
    assert _initialize(lab, token) == 200

    copy = page.get_by_role("button", name="Copy: Command for Claude Code")
    copy.focus()
    page.keyboard.press("Enter")
    ui.wait_announced("The Claude Code command is copied.")

    listed = page.get_by_role("region", name="Connected agents").get_by_role("listitem")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text("Claude Code (laptop), made")
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("outside-agents")

    revoke = page.get_by_role("button", name="Revoke Claude Code (laptop)")
    revoke.focus()
    page.keyboard.press("Enter")
    ui.wait_announced("Claude Code (laptop)'s credential is revoked: it opens nothing any more.")
    expect(page.get_by_role("heading", name="Connected agents")).to_be_focused()
    expect(page.get_by_text("No outside agent has a credential.")).to_be_visible()
    expect(heading).to_have_count(0)  # the secret is gone from the page with it
    assert _initialize(lab, token) == 403
    assert lab.api("GET", "aaep/v1/mcp/tokens") == {"credentials": []}
