"""Pure parts of the MCP layer: notebook paths, tool descriptions, finding the server for the bridge."""

from __future__ import annotations

import pytest

from jupyter_aaep.errors import ToolError
from jupyter_aaep.mcp.bridge import find_server
from jupyter_aaep.mcp.notebook_server import _display_name, check_notebook_path, mcp_tool
from jupyter_aaep.tools.notebook import create_cell, get_notebook_state, run_cell


@pytest.mark.parametrize("path", ["a.ipynb", "reports/q3.ipynb", "./a.ipynb", "x/../a.ipynb"])
def test_paths_inside_the_root_are_normalised(path: str) -> None:
    assert check_notebook_path(path) in ("a.ipynb", "reports/q3.ipynb")


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("../a.ipynb", "outside the Jupyter root"),
        ("a/../../b.ipynb", "outside the Jupyter root"),
        ("/etc/a.ipynb", "relative to the Jupyter root"),
        ("C:\\x\\a.ipynb", "relative to the Jupyter root"),
        ("notes.txt", "not a notebook"),
        ("", "notebook_path is required"),
        (42, "notebook_path is required"),
    ],
)
def test_other_paths_are_refused_with_a_sentence(path: object, said: str) -> None:
    with pytest.raises(ToolError, match=said):
        check_notebook_path(path)


def test_tool_descriptions_are_honest() -> None:
    state, run, create = mcp_tool(get_notebook_state), mcp_tool(run_cell), mcp_tool(create_cell)
    assert state.annotations.read_only_hint and not state.annotations.destructive_hint
    assert run.annotations.destructive_hint and not run.annotations.read_only_hint
    assert (
        create.annotations.destructive_hint is False and create.annotations.read_only_hint is False
    )
    assert all(t.annotations.open_world_hint is False for t in (state, run, create))
    assert state.input_schema["required"][0] == "notebook_path"
    assert (
        run_cell.input_schema.get("properties", {}).get("notebook_path") is None
    )  # the agent's own is untouched


def test_clients_are_heard_by_their_names() -> None:
    assert _display_name("claude-code") == "Claude Code"
    assert _display_name("my-agent") == "My Agent"
    assert _display_name("  ") == "An outside agent"


def test_the_bridge_finds_the_server_serving_this_folder(tmp_path) -> None:
    inner = tmp_path / "work"
    inner.mkdir()
    servers = [
        {"url": "http://a/", "root_dir": "/elsewhere"},
        {"url": "http://b/", "root_dir": str(tmp_path)},
        {"url": "http://c/", "root_dir": str(inner)},
    ]
    assert find_server(servers, str(inner))["url"] == "http://c/"
    assert find_server(servers, "/nowhere")["url"] == "http://a/"
    assert find_server([], "/x") is None


def test_the_stdio_bridge_starts_without_the_server_side() -> None:
    """``python -m jupyter_aaep.mcp`` imports neither the MCP SDK, the agent loop, the anthropic
    SDK nor Jupyter server: on a busy machine those took 20 s, and Claude Code gave up on the
    bridge as a server that failed to start (found by tests/interop/test_claude_code.py)."""
    import subprocess
    import sys

    probe = (
        "import sys, runpy; sys.argv = ['jupyter_aaep.mcp', '--help']\n"
        "try:\n    runpy.run_module('jupyter_aaep.mcp', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = ('mcp', 'mcp_types', 'anthropic', 'jupyter_server', 'jupyter_aaep.agent.loop')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert "--url" in done.stdout  # the help was printed: the bridge module really ran
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
