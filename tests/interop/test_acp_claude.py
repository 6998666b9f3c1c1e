"""Claude Code in a chat over ACP: Zed's adapter (npm, ``scripts/interop-deps``) run by our client.

The adapter and the Claude Code it bundles run fully offline: its model is the scripted fake
Messages API on 127.0.0.1 (``ANTHROPIC_BASE_URL`` in ``agents.json``'s ``env``), with a scratch
``HOME``, and without ``IS_SANDBOX`` (DESIGN §16). The person chooses "Claude Code" for a
notebook's chat and sends one message. The scripted model writes a two-step plan, runs a shell
command (the person rejects it: nothing happens), then adds a cell through our notebook MCP
server and runs it (the person approves: exactly one question for that run), and answers.
The command's card offers "don't ask again" as our chat grant, and the prompt's tokens reach
the chat's usage meter.
Every event the person's stream heard passes the schemas and the sequence checker, and no
process of the agent is left once the server stops.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import _private_cwd, kernels, live_server_config, new_name  # noqa: F401
from mcp_helpers import is_type, reply
from npm_tools import CLAUDE_ACP, npm_tool
from server_helpers import panel_key
from test_claude_code import _notebook_cell, _tool_results, check_stream

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn

pytestmark = pytest.mark.slow

API_KEY = "x"
CODE = "acp_ran = 'yes'\nprint('hello over ACP')"
CREATE, RUN = "mcp__notebook__create_cell", "mcp__notebook__run_cell"


@dataclass
class ScriptedClaude:
    """The model behind Claude Code, answering from each request alone as the real one does."""

    notebook: str = ""
    requests: list[str] = field(default_factory=list)

    def __call__(self, request: RecordedRequest) -> Turn:
        tools = {str(t.get("name")) for t in request.body.get("tools") or []}
        if "Bash" not in tools:  # Claude Code's side requests (titles, summaries)
            return Turn(text="Notebook work")
        done = _tool_results(request.body.get("messages") or [])
        names = [name for name, _, _ in done]
        if "TodoWrite" not in names:
            return Turn(
                text="I will plan first.",
                tool_uses=[
                    ToolUse(
                        "TodoWrite",
                        {
                            "todos": [
                                {
                                    "content": "Make a marker file",
                                    "status": "in_progress",
                                    "activeForm": "Making",
                                },
                                {
                                    "content": "Add and run a cell",
                                    "status": "pending",
                                    "activeForm": "Adding",
                                },
                            ]
                        },
                    )
                ],
            )
        if "Bash" not in names:
            return Turn(
                tool_uses=[
                    ToolUse("Bash", {"command": "touch marker.txt", "description": "Make a marker"})
                ]
            )
        if CREATE not in tools:
            if "ToolSearch" in tools and "ToolSearch" not in names:
                return Turn(tool_uses=[ToolUse("ToolSearch", {"query": f"select:{CREATE},{RUN}"})])
            return Turn(text="I cannot see the notebook tools.")
        if CREATE not in names:
            return Turn(
                tool_uses=[ToolUse(CREATE, {"notebook_path": self.notebook, "source": CODE})]
            )
        if RUN not in names:
            created = next(text for name, _, text in done if name == CREATE)
            cell_id = created.split("(id ", 1)[1].split(")", 1)[0] if "(id " in created else "?"
            return Turn(
                tool_uses=[ToolUse(RUN, {"notebook_path": self.notebook, "cell_id": cell_id})]
            )
        return Turn(text="The cell ran. Done.")


@pytest.fixture
def model() -> ScriptedClaude:
    return ScriptedClaude()


@pytest.fixture
def fake_model(model: ScriptedClaude) -> Any:
    fake = FakeAnthropic(responder=model, api_key=API_KEY).start()
    yield fake
    fake.stop()


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    return live_server_config(fake_model, jp_root_dir, monkeypatch)


@pytest.fixture
def agents_json(jp_config_dir: Path, fake_model: FakeAnthropic, tmp_path: Path) -> Path:
    """Claude Code in ``{config dir}/aaep/agents.json``, as a person writes it (Zed's shape)."""
    adapter = npm_tool(CLAUDE_ACP)
    home = tmp_path / "claude-home"
    home.mkdir()
    folder = jp_config_dir / "aaep"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agents.json"
    env = {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake_model.base_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    path.write_text(
        json.dumps(
            {
                "agent_servers": {
                    "Claude Code": {"command": "node", "args": [str(adapter)], "env": env}
                }
            }
        )
    )
    return path


def question_or_end(event: dict[str, Any]) -> bool:
    """A confirmation, or the session's end (so a failure shows what was heard, at once)."""
    kind = str(event.get("type", ""))
    return kind.endswith(
        ("awaiting.confirmation", "session.errored", "session.completed", "session.cancelled")
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


async def test_claude_code_in_a_chat_heard_and_gated(
    model: ScriptedClaude,
    fake_model: FakeAnthropic,
    agents_json: Path,
    jp_root_dir: Path,
    jp_serverapp: Any,
    api: Any,
    sse: Any,
    kernels: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")  # as on these machines: our client must drop it
    path = new_name()
    kernel = await kernels.notebook(path, ["x = 1"])
    model.notebook = path
    status, listed, _ = await api("agents")
    assert status == 200, listed
    names = [a["name"] for a in listed["agents"]]
    assert names[0] == "Jupyter agent" and "Claude Code" in names, listed
    claude = next(a for a in listed["agents"] if a["name"] == "Claude Code")
    assert claude["available"] is True and claude["source"] == "agents.json"

    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    chat_id = body["chat_id"]
    status, chosen, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "agent", "agent": "Claude Code"}
    )
    assert (
        status == 200 and chosen["message"] == "Your next messages in this chat go to Claude Code."
    ), chosen
    status, bad, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "agent", "agent": "Cursor"}
    )
    assert status == 400 and "There is no agent named 'Cursor'" in bad["message"], bad

    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        status, sent, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={
                "kind": "user_input",
                "text": f"Make a marker file, then add a greeting cell to {path} and run it.",
            },
        )
        assert status == 202, sent
        first = await panel.until(question_or_end, 120)
        bash = first[-1]
        assert is_type("awaiting.confirmation")(bash), [e.get("summary_normal") for e in first]
        assert bash["action"] == "Claude Code wants to run a command: touch marker.txt.", "\n".join(
            str(e.get("summary_normal")) for e in first
        )
        # "Allow for this chat" is offered as a standing permission of ours (issue 27).
        assert bash["extra_context"]["permission_offers"] == [
            {
                "rule": "acp__claude-code__execute",
                "scope": "chat",
                "label": "Approve, and don't ask again for commands Claude Code runs in this chat",
            }
        ]
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=reply(bash, "reject", key)
        )
        assert status == 204
        second = await panel.until(question_or_end, 120)
        run = second[-1]
        assert is_type("awaiting.confirmation")(run), [e.get("summary_normal") for e in second]
        assert "hello over ACP" in run["extra_context"]["code"], run
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=reply(run, "accept", key)
        )
        assert status == 204
        rest = await panel.until(is_type("session.completed"), 120)
        heard = [e for e in first + second + rest if "@context" in e]

        agent = jp_serverapp.web_app.settings["jupyter_aaep"].parts.acp.agents[chat_id]
        pid = agent.pid
        assert pid is not None and _alive(pid)
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not any(item.startswith(b"IS_SANDBOX=") for item in env)

    assert not (jp_root_dir / "marker.txt").exists()  # the rejected command did nothing
    # Its tokens and cost reached the chat's meter, as our own sessions' do.
    _, described, _ = await api("chats", chat_id)
    usage = described["usage"]
    print("USAGE:", usage)
    assert usage["requests"] >= 1 and usage["input_tokens"] + usage["output_tokens"] > 0, usage
    assert "yes" in await kernel.run("print(acp_ran)")
    cell = await _notebook_cell(jp_root_dir, path, CODE)
    assert cell["execution_count"] is not None
    said = [e["summary_normal"] for e in heard if "summary_normal" in e]
    text = " ".join(said)
    print("NARRATION:", text)
    assert said[0].startswith(f"Claude Code is working on your request on {path}."), said
    assert heard[0]["producer"]["agent_name"] == "Claude Code"
    assert (
        "Claude Code's plan, 2 steps: 1. Make a marker file (in progress). 2. Add and run a cell (to do)."
        in text
    )
    assert "Rejected: Claude Code will not run a command: touch marker.txt." in text
    confirmations = [e for e in heard if is_type("awaiting.confirmation")(e)]
    assert len(confirmations) == 2  # the command, and the cell's run: one question each
    assert sum("hello over ACP" in json.dumps(c) for c in confirmations) == 1
    assert heard[-1]["type"] == "aaep:agent.session.completed"
    assert said[-1].startswith("Claude Code finished."), said
    assert not any("mcp__" in s or "toolu_" in s or "Bash" in s for s in said), said
    assert [e for e in heard if is_type("session.started")(e)] == heard[:1]
    check_stream(heard)

    # The server stops: the agent's process (and Claude Code under it) goes with it.
    await jp_serverapp.web_app.settings["jupyter_aaep"].stop_extension()
    for _ in range(50):
        if not _alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not _alive(pid)
