"""The stdio bridge, ``python -m jupyter_aaep.mcp``, as an MCP client starts it: a child process
of the ``mcp`` SDK's stdio client, in front of a live Jupyter server.

It finds the server the way ``jupyter server list`` does (the server's ``jpserver-<pid>.json`` in
the runtime folder, the one whose root holds the current folder), or takes ``--url`` and
``JUPYTER_TOKEN``; its calls are narrated in the notebook's chat; a refused token is one clear
sentence and a non-zero exit; and it exits, ending the outside agent's session, when its input
closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import _private_cwd, new_name, write_notebook  # noqa: F401
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_helpers import is_type, live_server_config, text_of
from mcp_types import Implementation

pytestmark = pytest.mark.slow

REPO = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Outside agents' sessions last 30 s of silence: only a disconnect ends them quickly."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=30.0)


@pytest.fixture
def listed_server(jp_serverapp: Any, jp_fetch: Any) -> Any:
    """The running server, listed in the runtime folder as ``jupyter server`` lists it."""
    jp_serverapp.write_server_info_file()
    yield jp_serverapp
    jp_serverapp.remove_server_info_file()


def bridge_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH", "")) if p)
    return {**env, **extra}


def through_bridge(
    params: StdioServerParameters, *calls: tuple[str, dict[str, Any]]
) -> tuple[list[str], list[Any]]:
    """The SDK's stdio client starting the bridge: its tools' names and the calls' results."""

    async def agent() -> tuple[list[str], list[Any]]:
        async with stdio_client(params) as (read, write):  # noqa: SIM117 - the session needs the streams
            async with ClientSession(
                read, write, client_info=Implementation(name="claude-code", version="2.1.0")
            ) as session:
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                results = [await session.call_tool(name, args) for name, args in calls]
        return names, results

    return asyncio.run(agent())


async def test_the_bridge_finds_the_running_server_and_its_calls_are_narrated(
    listed_server, jp_root_dir, api, sse
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 41"])
    status, chat, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201
    folder = Path(jp_root_dir) / "work"
    folder.mkdir()  # started inside the server's root, as a client started in a project would be
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "jupyter_aaep.mcp"], env=bridge_env(), cwd=str(folder)
    )
    async with sse(chat["chat_id"]) as panel:
        names, (state, created) = await asyncio.to_thread(
            through_bridge,
            params,
            ("get_notebook_state", {"notebook_path": path}),
            ("create_cell", {"notebook_path": path, "source": "y = x + 1"}),
        )
        # the client closed the bridge's stdin: the bridge left, so the session ends now, not 30 s later
        ended = await panel.until(is_type("session.completed"), timeout=15)
    assert {"get_notebook_state", "create_cell", "run_cell"} <= set(names)
    assert not state.is_error and "x = 41" in text_of(state)
    assert not created.is_error, text_of(created)
    said = [e.get("summary_normal", "") for e in ended]
    assert f"Claude Code is working on {path}." in said
    assert any(s.startswith("Created code cell 2") for s in said), said
    assert said[-1] == "Claude Code finished: 2 steps."
    cells = json.loads((Path(jp_root_dir) / path).read_text())["cells"]
    assert "".join(cells[-1]["source"]) == "y = x + 1"


async def test_the_bridge_takes_a_url_and_the_token_from_the_environment(
    jp_serverapp, jp_fetch, jp_http_port, jp_base_url, jp_root_dir, tmp_path
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["z = 3"])
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jupyter_aaep.mcp", "--url", url],
        env=bridge_env(
            JUPYTER_TOKEN=jp_serverapp.identity_provider.token,
            JUPYTER_RUNTIME_DIR=str(tmp_path / "empty-runtime"),  # nothing to find: --url it is
        ),
        cwd=str(tmp_path),
    )
    names, (state,) = await asyncio.to_thread(
        through_bridge, params, ("get_notebook_state", {"notebook_path": path})
    )
    assert "get_notebook_state" in names
    assert not state.is_error and "z = 3" in text_of(state)


async def test_a_refused_token_is_one_sentence_and_a_non_zero_exit(
    jp_serverapp, jp_fetch, jp_http_port, jp_base_url, extension, tmp_path
) -> None:
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jupyter_aaep.mcp",
        "--url",
        url,
        env=bridge_env(JUPYTER_TOKEN="not-the-token"),
        cwd=str(tmp_path),
        stdin=asyncio.subprocess.PIPE,  # left open: the bridge must not wait for input
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 1
    assert err.decode().strip().splitlines()[-1] == (
        "jupyter_aaep.mcp: The Jupyter server refused the bridge's token. Set JUPYTER_TOKEN to the "
        "server's token (jupyter server list shows it), then start the bridge again."
    )
    assert out == b""  # nothing on the protocol channel
    assert list(extension.runner.chats()) == []


async def test_no_server_to_find_is_one_sentence_and_a_non_zero_exit(tmp_path) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jupyter_aaep.mcp",
        env=bridge_env(JUPYTER_RUNTIME_DIR=str(tmp_path / "nothing-runs")),
        cwd=str(tmp_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 1
    assert "no running Jupyter server was found" in err.decode()


async def test_the_bridge_exits_when_its_input_closes(
    listed_server, jp_root_dir, extension
) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jupyter_aaep.mcp",
        env=bridge_env(),
        cwd=str(jp_root_dir),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "codex", "version": "1"},
        },
    }
    child.stdin.write((json.dumps(initialize) + "\nnot json\n").encode())
    await child.stdin.drain()
    answer = json.loads(await asyncio.wait_for(child.stdout.readline(), 60))
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "jupyter-aaep notebooks"
    junk = json.loads(await asyncio.wait_for(child.stdout.readline(), 30))
    assert junk["error"]["message"] == "The bridge received a line that is not JSON."
    started = time.monotonic()
    child.stdin.close()
    code = await asyncio.wait_for(child.wait(), 30)
    assert code == 0 and time.monotonic() - started < 15
