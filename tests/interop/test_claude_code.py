"""Claude Code (npm, pinned by ``scripts/interop-deps``) works on a notebook through our MCP server.

Claude Code runs in print mode as its users run it, fully offline: its model is the scripted
fake Messages API on 127.0.0.1 (``ANTHROPIC_BASE_URL``), in a scratch ``HOME``. The fake tells it
to create a cell and run it, naming the tools ``mcp__notebook__create_cell`` and
``mcp__notebook__run_cell``, as the real model would. The notebook is on a real Jupyter server
with the extension; Claude Code reaches it over the HTTP endpoint with the token header, or
through the stdio bridge (``python -m jupyter_aaep.mcp --url …`` with ``JUPYTER_TOKEN``).

The run waits for a person, who answers on the notebook chat's AAEP stream: approved, the cell
ran in the notebook's kernel and Claude Code's stream-json shows its output in the tool result;
rejected, nothing ran and the tool result is an error. Every event the subscriber heard passes
the official schemas and the sequence checker (and every event published in this process passes
them too: the root conftest's audit).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import _private_cwd, kernels, new_name  # noqa: F401
from mcp_helpers import is_type, live_server_config, mcp_url, reply
from npm_tools import CLAUDE, npm_tool
from server_helpers import panel_key

from jupyter_aaep.aaep.check import SequenceChecker
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn
from jupyter_aaep.testing.schemas import SchemaValidator

pytestmark = pytest.mark.slow

SERVER = "notebook"
"""The name Claude Code's MCP config gives our server; its tools are ``mcp__notebook__*``."""
CODE = "ran = 'yes'\nprint('hello from Claude Code')"
API_KEY = "x"


@dataclass
class ScriptedClaude:
    """The model behind Claude Code: load the notebook tools (Claude Code defers MCP tools behind
    its ToolSearch tool, as with the real service), create a cell in ``notebook``, run it, then
    say it is done. It answers from the request alone, as the real service does."""

    notebook: str = ""

    def __call__(self, request: RecordedRequest) -> Turn:
        tools = {str(t.get("name")): t for t in request.body.get("tools") or []}
        create, run = f"mcp__{SERVER}__create_cell", f"mcp__{SERVER}__run_cell"
        results = _tool_results(request.body.get("messages") or [])
        if create not in tools:
            if "ToolSearch" in tools and not any(name == "ToolSearch" for name, *_ in results):
                return Turn(tool_uses=[ToolUse("ToolSearch", {"query": f"select:{create},{run}"})])
            return Turn(text="I cannot see the notebook tools.")
        done = [(name, error, text) for name, error, text in results if name != "ToolSearch"]
        if not done:
            return Turn(
                text="I'll add the cell, then run it.",
                tool_uses=[ToolUse(create, {"notebook_path": self.notebook, "source": CODE})],
            )
        if len(done) == 1:
            found = re.search(r"\(id ([^)]+)\)", done[0][2])
            if found is None:
                return Turn(text=f"The cell was not created: {done[0][2]}")
            return Turn(
                tool_uses=[ToolUse(run, {"notebook_path": self.notebook, "cell_id": found[1]})]
            )
        return Turn(text="The run was declined." if done[-1][1] else "Done.")


def _tool_results(messages: list[Any]) -> list[tuple[str, bool, str]]:
    """(tool name, is_error, text) of every tool result in the conversation, in order."""
    names: dict[str, str] = {}
    found = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result":
                name = names.get(str(block.get("tool_use_id")), "")
                found.append((name, bool(block.get("is_error")), _text(block.get("content"))))
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


@pytest.fixture
def model() -> ScriptedClaude:
    return ScriptedClaude()


@pytest.fixture
def fake_model(model: ScriptedClaude) -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic(responder=model, api_key=API_KEY).start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The live-notebook server. An outside agent's session ends when it disconnects, or after
    ``mcp_idle_seconds`` of quiet: long enough here that Claude Code's whole run is one session
    even when the machine is slow, short enough that a client that leaves without saying so
    does not hold the test long."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=8.0)


@dataclass
class ClaudeRun:
    """What Claude Code printed: its stream-json messages, its exit status and stderr."""

    messages: list[dict[str, Any]]
    returncode: int
    stderr: str
    seconds: float

    def tool_result(self, tool: str) -> dict[str, Any]:
        """The tool_result block answering the (only) use of *tool*."""
        uses = [
            block
            for m in self.messages
            if m.get("type") == "assistant"
            for block in m["message"].get("content", [])
            if block.get("type") == "tool_use" and block.get("name") == tool
        ]
        assert len(uses) == 1, (tool, self.messages)
        for m in self.messages:
            if m.get("type") != "user":
                continue
            for block in m["message"].get("content", []):
                if isinstance(block, dict) and block.get("tool_use_id") == uses[0]["id"]:
                    return block
        raise AssertionError(f"no tool result for {tool}: {self.messages}")


async def run_claude(
    servers: dict[str, Any], fake: FakeAnthropic, prompt: str, tmp_path: Path, *tools: str
) -> ClaudeRun:
    """Claude Code in print mode with *servers* as its only MCP servers, allowed *tools* only."""
    claude = npm_tool(CLAUDE)
    home = tmp_path / "claude-home"
    work = tmp_path / "claude-work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    config = tmp_path / "mcp-config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(claude),
        "-p",
        prompt,
        "--mcp-config",
        str(config),
        "--strict-mcp-config",
        "--allowedTools",
        ",".join(f"mcp__{SERVER}__{tool}" for tool in tools),
        "--output-format",
        "stream-json",
        "--verbose",
        cwd=work,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), 120)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        raise
    messages = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    return ClaudeRun(messages, process.returncode or 0, err.decode(), time.monotonic() - started)


def http_server(url: str, token_header: dict[str, str]) -> dict[str, Any]:
    return {"type": "http", "url": url, "headers": dict(token_header)}


def stdio_bridge(base: str, token_header: dict[str, str]) -> dict[str, Any]:
    token = token_header["Authorization"].removeprefix("token ")
    return {
        "command": sys.executable,
        "args": ["-m", "jupyter_aaep.mcp", "--url", base],
        "env": {"JUPYTER_TOKEN": token, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    }


def check_stream(events: list[dict[str, Any]]) -> None:
    """Every AAEP event a subscriber heard is valid and in a valid order."""
    validator = SchemaValidator.from_dir(profile="jupyter-aaep")
    checker = SequenceChecker()
    aaep = [e for e in events if "@context" in e]
    assert aaep, events
    for event in aaep:
        validator.validate(event)
        checker.feed(event)
    checker.finish()


async def _notebook_cell(root: Path, path: str, source: str, timeout: float = 15) -> dict[str, Any]:
    """The saved cell holding *source* (the room saves edits as they happen)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cells = json.loads((root / path).read_text())["cells"]
        except (OSError, ValueError):
            cells = []
        for cell in cells:
            if "".join(cell["source"]) == source:
                return dict(cell)
        assert time.monotonic() < deadline, cells
        await asyncio.sleep(0.2)


TRANSPORTS = ["http", "stdio"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("decision", ["accept", "reject"])
async def test_claude_code_creates_a_cell_and_runs_it_only_with_a_persons_approval(
    transport: str,
    decision: str,
    model: ScriptedClaude,
    fake_model: FakeAnthropic,
    jp_auth_header: dict[str, str],
    jp_http_port: int,
    jp_base_url: str,
    jp_root_dir: Path,
    jp_fetch: Any,
    api: Any,
    sse: Any,
    kernels: Any,
    tmp_path: Path,
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, ["x = 1"])
    model.notebook = path
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    chat_id = body["chat_id"]
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    server = (
        http_server(mcp_url(jp_http_port, jp_base_url), jp_auth_header)
        if transport == "http"
        else stdio_bridge(base, jp_auth_header)
    )
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers in the panel
        claude = asyncio.ensure_future(
            run_claude(
                {SERVER: server},
                fake_model,
                f"Add a cell to {path} that sets ran and prints a greeting, then run it.",
                tmp_path,
                "create_cell",
                "run_cell",
            )
        )
        asked = asyncio.ensure_future(panel.until(is_type("awaiting.confirmation"), 90))
        await asyncio.wait([asked, claude], return_when=asyncio.FIRST_COMPLETED)
        if not asked.done():  # Claude Code gave up before the run asked: say what it saw
            asked.cancel()
            run = claude.result()
            raise AssertionError(f"Claude Code ended first: {run.stderr} {run.messages}")
        heard = asked.result()
        confirmation = heard[-1]
        assert "hello from Claude Code" in confirmation["extra_context"]["code"]
        await asyncio.sleep(1.0)
        assert not claude.done()  # Claude Code waits for the person
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, decision, key)
        )
        assert status == 204
        run = await claude
        ended = time.monotonic()
        heard += await panel.until(is_type("session.completed"), 30)
    print(f"The session ended {time.monotonic() - ended:.1f} s after Claude Code exited")
    print(f"Claude Code ({transport}, {decision}) took {run.seconds:.1f} s")
    assert run.returncode == 0, (run.stderr, run.messages[-1:])
    created = run.tool_result(f"mcp__{SERVER}__create_cell")
    assert not created.get("is_error"), created
    result = run.tool_result(f"mcp__{SERVER}__run_cell")
    cell = await _notebook_cell(jp_root_dir, path, CODE)
    if decision == "accept":
        assert not result.get("is_error"), result
        assert "hello from Claude Code" in _text(result["content"])
        assert "yes" in await kernel.run("print(ran)")
        assert cell["execution_count"] is not None
    else:
        assert result.get("is_error") is True, result
        assert "declined" in _text(result["content"])
        assert "nothing" in await kernel.run("print(globals().get('ran', 'nothing'))")
        assert cell["outputs"] == [] and cell["execution_count"] is None
    said = [e["summary_normal"] for e in heard if "summary_normal" in e]
    assert [e for e in heard if is_type("session.started")(e)] == heard[:1]  # one session
    assert said[0] == f"Claude Code is working on {path}."
    assert said[-1] == f"Claude Code finished: {'2 steps' if decision == 'accept' else '1 step'}."
    assert not any("create_cell" in s or "run_cell" in s or "mcp__" in s for s in said)
    check_stream(heard)
    print("NARRATION:", " ".join(said))


async def test_claude_code_with_its_own_credential_twice_in_a_row(
    model: ScriptedClaude,
    fake_model: FakeAnthropic,
    jp_http_port: int,
    jp_base_url: str,
    api: Any,
    sse: Any,
    kernels: Any,
    tmp_path: Path,
) -> None:
    """The person mints a credential for Claude Code; with it, ``claude -p`` works on the
    notebook, named by the credential, each run waiting for the person; a second run right after
    the first is not locked out by the first one's session (it takes over), and the credential
    opens nothing else."""
    path = new_name()
    kernel = await kernels.notebook(path, ["x = 1"])
    model.notebook = path
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    chat_id = body["chat_id"]
    status, minted, _ = await api(
        "mcp", "tokens", method="POST", body={"name": "Claude Code (laptop)"}
    )
    assert status == 201, minted
    bearer = {"Authorization": f"Bearer {minted['token']}"}
    server = http_server(mcp_url(jp_http_port, jp_base_url), bearer)
    said: list[str] = []
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        for run_number in (1, 2):
            (tmp_path / f"run{run_number}").mkdir()
            claude = asyncio.ensure_future(
                run_claude(
                    {SERVER: server},
                    fake_model,
                    f"Add a cell to {path} that sets ran and prints a greeting, then run it.",
                    tmp_path / f"run{run_number}",
                    "create_cell",
                    "run_cell",
                )
            )
            asked = asyncio.ensure_future(panel.until(is_type("awaiting.confirmation"), 90))
            await asyncio.wait([asked, claude], return_when=asyncio.FIRST_COMPLETED)
            if not asked.done():
                asked.cancel()
                run = claude.result()
                raise AssertionError(f"run {run_number} ended first: {run.stderr} {run.messages}")
            heard = asked.result()
            await asyncio.sleep(1.0)
            assert not claude.done()  # each run waits for the person
            status, _, _ = await api(
                "chats", chat_id, "messages", method="POST", body=reply(heard[-1], "accept", key)
            )
            assert status == 204
            run = await claude
            assert run.returncode == 0, (run.stderr, run.messages[-1:])
            result = run.tool_result(f"mcp__{SERVER}__run_cell")
            assert not result.get("is_error"), (run_number, result)
            said += [e["summary_normal"] for e in heard if "summary_normal" in e]
        said += [
            e["summary_normal"]
            for e in await panel.until(
                lambda e: (
                    is_type("session.completed")(e) and "finished" in e.get("summary_normal", "")
                ),
                30,
            )
            if "summary_normal" in e
        ]
    assert "yes" in await kernel.run("print(ran)")
    working = [s for s in said if s.startswith("Claude Code (laptop) is working on")]
    assert len(working) == 2, said  # two sessions, each named by the credential
    assert not any("right now" in s for s in said), said  # the second was not locked out
    # The same credential opens no other door, not even to answer its own request.
    status, body, _ = await api("chats", headers=bearer)
    assert status == 403 and "only lets an outside agent use the notebook tools" in body["message"]
