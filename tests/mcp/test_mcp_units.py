"""Pure parts of the MCP layer: notebook paths, tool descriptions, finding the server for the bridge."""

from __future__ import annotations

import re

import pytest

from jupyter_aaep.errors import ToolError
from jupyter_aaep.mcp.bridge import find_server
from jupyter_aaep.mcp.notebook_server import (
    _display_name,
    check_inside_root,
    check_notebook_path,
    mcp_tool,
)
from jupyter_aaep.mcp.rpc_errors import check_message, reword
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
        ("", "notebook_path argument is required"),
        (42, "must be a string.*it was a number"),
        ("a\0.ipynb", "NUL character"),
        (".", "not a notebook"),
        ("x" * 5000 + ".ipynb", "5,006 characters long"),
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


def test_a_link_out_of_the_root_is_refused(tmp_path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside.ipynb").write_text("{}")
    (root / "out.ipynb").symlink_to(tmp_path / "outside.ipynb")
    (root / "inside-link.ipynb").symlink_to(root / "sub")
    check_inside_root(str(root), "sub/a.ipynb")
    check_inside_root(str(root), "inside-link.ipynb")  # a link that stays inside is fine
    with pytest.raises(ToolError, match="leads outside the Jupyter root through a link"):
        check_inside_root(str(root), "out.ipynb")


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"", 400, "The request body is not JSON"),
        (b"[" * 5000, 400, "nested too deeply"),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 400, "Batches"),
        (b"7", 400, "The request is a JSON integer, not an object"),
        (
            b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
            400,
            'needs "jsonrpc": "2.0" \\(it has "1.0"\\)',
        ),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', 400, '"id" is a boolean'),
        (b'{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}', 400, '"id" is a number'),
        (b'{"jsonrpc": "2.0", "id": 1}', 400, 'no "method"'),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', 400, '"method" is an integer'),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}',
            400,
            '"params" is an array',
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}',
            200,
            "does not offer 'resources/list'",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}',
            200,
            '"name" is none',
        ),
        (  # the SDK alone says "Invalid request parameters" (found by the MCP fuzz test)
            b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}',
            200,
            '"protocolVersion" is none and "capabilities" is none and "clientInfo" is none',
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": 5}}',
            200,
            "must be the string a previous answer gave",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": 3}}',
            200,
            "are an integer; they must be an object",
        ),
    ],
)
def test_malformed_json_rpc_is_answered_in_a_sentence(body: bytes, status: int, said: str) -> None:
    answer = check_message(body)
    assert answer is not None and answer[0] == status
    text = answer[1]["error"]["message"]
    assert text[:1].isupper() and text.endswith((".", ")")), text
    assert re.search(said, text), text


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/whatever"}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
    ],
)
def test_well_formed_messages_go_to_the_sdk(body: bytes) -> None:
    assert check_message(body) is None


def test_the_sdks_http_errors_are_reworded() -> None:
    assert reword("Bad Request: Missing session ID").startswith(
        "This request needs the mcp-session-id"
    )
    assert reword("Validation error: 4 validation errors for union[...]").startswith(
        "The message is not a valid MCP message."
    )
    assert reword("something odd") == "something odd."
