"""The user's MCP servers in the panel (issue 18): in the settings, each configured server with
its status and its tools' titles, and one sentence for a server that failed to start — here a
working stdio server (``tests/mcp/tiny_mcp_server.py``) and a command that does not exist.
A list with names, reached from the keyboard, announced nothing by itself; axe finds nothing.
The servers a person trusts say so, with a button that takes the trust back (issue 25); the
settings also list the rules files that apply to the notebook (issue 30).
Screenshots: ``test-output/e2e/mcp-servers*.png``, ``settings-rules.png``.
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

from jupyter_aaep.tools.mcp_config import ServerConfig, read_config
from jupyter_aaep.tools.mcp_trust import MCPTrust

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


def _trust(lab_home: Path, config: ServerConfig) -> MCPTrust:
    """A person's trust in *config*, as answering the trust question keeps it."""
    trust = MCPTrust(lab_home / "data" / "aaep" / "mcp-trust.json")
    trust.grant(config)
    return trust


def test_a_trusted_server_says_since_when_and_the_trust_is_taken_back_by_keyboard(
    ui: PanelPage, mcp_config: Path
) -> None:
    """Issue 25: the notes server (set up) and an old one (no longer set up) are trusted; each
    says so with the date, and Enter on "Stop trusting" takes it back, said politely, with the
    focus on the list's heading; GET /mcp/trust then lists it no more."""
    servers, _ = read_config(mcp_config)
    notes = next(s for s in servers if s.name == "notes")
    trust = _trust(ui.lab.home, notes)
    _trust(ui.lab.home, ServerConfig("old", "stdio", command="/opt/old-server"))
    ui.open_notebook()
    panel = ui.open_panel()
    ui.record_live_regions()
    settings = ui.open_settings()
    section = settings.get_by_role("region", name="Tools from MCP servers")
    working = section.get_by_role("listitem").filter(has_text="notes:")
    expect(working).to_contain_text("notes: ready", timeout=30_000)
    expect(working.locator(".jp-AAEPMCP-trust")).to_contain_text(
        "You trust its tools that say they change nothing to run without asking (since "
    )
    gone = section.get_by_role("list", name="Trusted servers no longer set up")
    expect(gone).to_contain_text("old is no longer set up (it was started by /opt/old-server).")
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("mcp-servers-trusted")

    # Keyboard only: from the Announcements select, Tab reaches the first Stop trusting.
    settings.get_by_label("Announcements").focus()
    ui.tab_until(lambda f: f.get("name") == "Stop trusting the notes server")
    ui.page.keyboard.press("Enter")
    ui.wait_announced(
        "You no longer trust the notes server: its tools that say they change nothing will ask "
        "you first again.",
        politeness="polite",
    )
    ui.wait_focus(".jp-AAEPMCP-heading")
    expect(working.locator(".jp-AAEPMCP-trust")).to_have_count(0)
    assert [t["server"] for t in trust.listed()] == ["old"]
    expect(section.get_by_role("button", name="Stop trusting the old server")).to_have_count(1)
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    said = [e["text"] for e in ui.live_log()]
    assert not [t for t in said if "mcp__" in t or "sha" in t], said
    assert panel.locator(".jp-AAEPMCP [aria-live]").count() == 0


def test_the_settings_list_the_rules_that_apply_with_path_and_scope(ui: PanelPage) -> None:
    """Issue 30: AGENTS.md applies everywhere, a rule for R kernels is left out (the demo's
    kernel is Python) and one whose front matter is broken is named in the sentence."""
    root = ui.lab.root
    (root / "AGENTS.md").write_text("Name variables in full words.\n")
    rules = root / ".aaep" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "r-only.md").write_text("---\nscope:\n  languages: [R]\n---\nUse tidyverse.\n")
    (rules / "broken.md").write_text("---\nscope: [unclosed\n---\nNever.\n")
    ui.open_notebook()
    ui.open_panel()
    settings = ui.open_settings()
    section = settings.get_by_role("region", name="Rules the agent follows here")
    sentence = section.locator(".jp-AAEPRules-sentence")
    expect(sentence).to_contain_text("1 rule applies: AGENTS.md.", timeout=30_000)
    expect(sentence).to_contain_text(
        ".aaep/rules/broken.md has front matter that is not valid YAML"
    )
    applies = section.get_by_role("list", name="Rules the agent follows here")
    expect(applies.get_by_role("listitem")).to_have_count(1)
    expect(applies).to_contain_text(f"AGENTS.md: at {root / 'AGENTS.md'}; applies everywhere")
    left_out = section.get_by_role("list", name="Left out here (1 file):")
    expect(left_out).to_contain_text(".aaep/rules/r-only.md: at ")
    expect(left_out).to_contain_text("not for this notebook: it is for languages r")
    violations = ui.axe()
    assert violations == [], json.dumps(violations, indent=2)
    ui.screenshot("settings-rules")
