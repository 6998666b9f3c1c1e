"""Reading the user's ``mcpServers`` file: what loads, and the sentence for what does not."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from jupyter_aaep.tools.mcp_config import command_allowed, expand, read_config


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_stdio_and_http_entries_with_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FILES_ROOT", "/data")
    monkeypatch.setenv("API_TOKEN", "s3cret")
    monkeypatch.delenv("NOT_SET", raising=False)
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": ["server-filesystem", "${FILES_ROOT}"],
                    "env": {"MODE": "${NOT_SET:-ro}"},
                },
                "remote": {
                    "type": "http",
                    "url": "https://example.invalid/mcp",
                    "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                    "approval": "always",
                },
            }
        },
    )
    servers, problems = read_config(path)
    assert problems == []
    files, remote = servers
    assert (files.transport, files.command, files.args, files.env) == (
        "stdio",
        "npx",
        ("server-filesystem", "/data"),
        {"MODE": "ro"},
    )
    assert not files.always_ask
    assert (remote.transport, remote.headers, remote.always_ask) == (
        "http",
        {"Authorization": "Bearer s3cret"},
        True,
    )


def test_a_missing_file_is_no_servers_and_a_broken_one_a_sentence(tmp_path: Path) -> None:
    assert read_config(tmp_path / "absent.json") == ([], [])
    servers, [problem] = read_config(_write(tmp_path, "{not json"))
    assert servers == [] and "is not valid JSON (line 1" in problem.sentence
    servers, [problem] = read_config(_write(tmp_path, {"servers": {}}))
    assert 'has no "mcpServers" object' in problem.sentence


def test_a_bad_entry_is_left_out_and_the_others_load(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "good": {"command": "python"},
                "nocommand": {"args": []},
                "badargs": {"command": "x", "args": "one"},
                "badurl": {"type": "http", "url": "ftp://x"},
                "badapproval": {"command": "x", "approval": "never"},
                "oddkind": {"type": "sse", "url": "http://x"},
                "bad name": {"command": "x"},
            }
        },
    )
    servers, problems = read_config(path)
    assert [s.name for s in servers] == ["good"]
    said = {p.name: p.sentence for p in problems}
    assert said["nocommand"].endswith('was not started: a stdio server needs a "command".')
    assert '"args" must be a list of text' in said["badargs"]
    assert "must start with http:// or https://" in said["badurl"]
    assert '"approval" must be "always" or "hints"' in said["badapproval"]
    assert 'its type must be "stdio" or "http", not \'sse\'' in said["oddkind"]
    assert "its name must be 1 to 40 letters" in said["bad name"]


def test_expand_leaves_unknown_variables_empty() -> None:
    assert expand("a${X}b${Y:-d}", {"X": "1"}) == "a1bd"


def test_the_admin_list_matches_names_and_resolved_paths(tmp_path: Path) -> None:
    assert command_allowed("anything", None)
    assert not command_allowed("python", ())
    assert command_allowed("node", ("node",))
    assert not command_allowed("/tmp/evil/node", ("node",))  # a bare name does not allow any path
    assert command_allowed(sys.executable, (sys.executable,))
    python = shutil.which("python3")
    if python:
        assert command_allowed("python3", (python,))
