"""The user's MCP servers in the panel (issue 18): in the settings, each configured server with
its status and its tools' titles, and one sentence for a server that failed to start — here a
working stdio server (``tests/mcp/tiny_mcp_server.py``) and a command that does not exist.
A list with names, reached from the keyboard, announced nothing by itself; axe finds nothing.
Screenshot: ``test-output/e2e/mcp-servers.png``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

TINY_SERVER = Path(__file__).parents[1] / "mcp" / "tiny_mcp_server.py"
MISSING_COMMAND = "/nonexistent/aaep-no-such-mcp-server"

LAB_AAEP: dict[str, Any] = {}
"""Filled by ``mcp_config`` before the module's JupyterLab starts (conftest reads it then)."""


@pytest.fixture(scope="module", autouse=True)
def mcp_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An ``mcpServers`` file with one working stdio server and one that cannot start."""
    folder = tmp_path_factory.mktemp("mcp-e2e")
    notes = folder / "notes"
    notes.mkdir()
    path = folder / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": sys.executable,
                        "args": [str(TINY_SERVER)],
                        "env": {"NOTES_DIR": str(notes)},
                    },
                    "broken": {"command": MISSING_COMMAND},
                }
            }
        )
    )
    LAB_AAEP["mcp_config_file"] = str(path)
    yield path


def test_the_settings_list_each_mcp_server_with_its_status_tools_and_failure(
    ui: PanelPage,
) -> None:
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    settings = ui.open_settings()

    section = settings.get_by_role("region", name="Tools from MCP servers")
    servers = section.get_by_role("list")
    items = servers.get_by_role("listitem")
    expect(items).to_have_count(2, timeout=30_000)
    working = items.filter(has_text="notes")
    # The list is read again while a server is still starting.
    expect(working).to_contain_text("notes: ready", timeout=30_000)
    tools = working.locator(".jp-AAEPMCP-tools")
    expect(tools).to_contain_text("Read Note, Write Note")
    expect(tools).not_to_contain_text("from the notes server")  # the list says which server
    expect(working.locator(".jp-AAEPMCP-problem")).to_have_count(0)
    broken = items.filter(has_text="broken")
    expect(broken).to_contain_text("broken: did not start")
    problem = broken.locator(".jp-AAEPMCP-problem")
    expect(problem).to_have_text(
        f"broken did not start: the command {MISSING_COMMAND} was not found."
    )
    expect(broken.locator(".jp-AAEPMCP-tools")).to_have_count(0)

    # Keyboard only: the list sits between the settings' selects and the message box; a
    # screen reader reaches it by its heading.
    expect(section.get_by_role("heading", name="Tools from MCP servers")).to_be_visible()
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("mcp-servers")
    # Nothing about the servers was announced: the list is read when a person goes there.
    said = [e["text"] for e in ui.live_log()]
    assert not [t for t in said if "notes" in t or "broken" in t or "MCP" in t], said
    assert panel.locator(".jp-AAEPMCP [aria-live]").count() == 0
