"""The ACP client with recorded messages: what the person hears, the gate, Stop, no orphans.

The narration and the gate are fed messages recorded from claude-agent-acp (``recorded.py``);
the process tests run ``fake_agent.py``, a scripted agent on stdio that replays them, so Stop
(``session/cancel``, a pending permission answered ``cancelled``) and the process group's end
are tested without npm. Every event is checked by the schemas and the sequence checker (the
root conftest's audit).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import recorded

from jupyter_aaep.aaep.broker import ReplyBroker
from jupyter_aaep.aaep.emitter import Emitter
from jupyter_aaep.aaep.events import SessionCompleted, SessionStarted, Summary
from jupyter_aaep.aaep.session import Producer, Session
from jupyter_aaep.acp.agents import AgentCatalog, AgentSpec
from jupyter_aaep.acp.client import AcpChatAgent
from jupyter_aaep.acp.narration import Narrator
from jupyter_aaep.acp.permissions import Gate
from jupyter_aaep.agent.chat_context import ChatContext
from jupyter_aaep.agent.control import RunControl

HERE = Path(__file__).resolve().parent


def _session() -> Session:
    session = Session(
        Emitter(history_limit=1000),
        Producer(agent_name="Claude Code", model="outside-agent"),
        actor="Claude Code",
    )
    session.emit(SessionStarted(summary=Summary(normal="Claude Code is working on your request.")))
    return session


def _said(session: Session) -> list[str]:
    return [e["summary_normal"] for e in session.emitter.history if "summary_normal" in e]


def _end(session: Session) -> None:
    if not session.closed:
        session.emit(SessionCompleted(summary=Summary(normal="Claude Code finished.")))


def test_recorded_updates_are_heard_as_steps_plan_and_answer() -> None:
    session = _session()
    narrator = Narrator(session, "Claude Code", cwd="/srv/work")
    for chunk in recorded.CHUNKS:
        narrator.update(chunk)
    narrator.update(recorded.PLAN)
    narrator.update(recorded.BASH_PENDING)
    narrator.update(recorded.BASH_INPUT)
    assert not any(e["type"].endswith("tool.invoked") for e in session.emitter.history)  # pending
    narrator.update({**recorded.BASH_INPUT, "status": "in_progress"})
    narrator.update(recorded.BASH_DONE)
    narrator.update(recorded.PLAN_DONE)
    narrator.update(recorded.PLAN_DONE)  # nothing new: nothing said
    narrator.update(recorded.USAGE)
    narrator.update({"sessionUpdate": "available_commands_update", "availableCommands": []})
    narrator.finish_output()
    _end(session)
    said = _said(session)
    assert said == [
        "Claude Code is working on your request.",
        "Claude Code is writing its answer.",
        "Claude Code is thinking.",
        "Claude Code's plan, 2 steps: 1. Look (done). 2. Run (in progress).",
        "Claude Code is using a tool.",
        "Claude Code is running a command: touch made.txt.",
        "Claude Code ran a command: touch made.txt.",
        "Claude Code is thinking.",
        "Step 2 of 2 done: Run.",
        "Claude Code finished.",
    ], said
    chunks = [e["chunk"] for e in session.emitter.history if e["type"].endswith("output.streaming")]
    assert "".join(chunks) == "Planning."
    invoked = next(e for e in session.emitter.history if e["type"].endswith("tool.invoked"))
    assert invoked["tool_call_id"].startswith("call_") and "toolu" not in invoked["summary_normal"]
    assert narrator.usage_words() == "23,528 of 200,000 context tokens used; cost about $0.10."


def test_a_failed_step_says_so_and_an_edit_names_its_file_not_its_folder() -> None:
    session = _session()
    narrator = Narrator(session, "Claude Code", cwd="/srv/work")
    edit = {
        "toolCallId": "toolu_9",
        "sessionUpdate": "tool_call",
        "kind": "edit",
        "title": "Edit /srv/work/notes.txt",
        "status": "in_progress",
    }
    narrator.update(edit)
    narrator.update(
        {
            "toolCallId": "toolu_9",
            "sessionUpdate": "tool_call_update",
            "status": "failed",
            "rawOutput": "File not found",
        }
    )
    _end(session)
    said = _said(session)
    assert "Claude Code is editing notes.txt." in said
    assert "Claude Code edited notes.txt: failed. File not found" in said
    assert narrator.failed == ["edited notes.txt"]


async def test_the_gate_asks_the_person_and_answers_with_the_agents_own_options() -> None:
    broker = ReplyBroker()
    session = _session()
    narrator = Narrator(session, "Claude Code")
    for body in (recorded.BASH_PENDING, recorded.BASH_INPUT):
        narrator.update(body)
    gate = Gate(session, broker, narrator, timeout_for=lambda _risk: 60)
    asking = asyncio.ensure_future(gate.request(recorded.BASH_PERMISSION))
    await asyncio.sleep(0.05)
    question = session.emitter.history[-1]
    assert question["type"] == "aaep:agent.awaiting.confirmation"
    assert question["action"] == "Claude Code wants to run a command: touch made.txt."
    assert question["risk_level"] == "high" and question["default_decision"] == "reject"
    assert question["extra_context"]["code"] == "touch made.txt"
    (request,) = broker.pending()
    broker.resolve(request, "accept", decided_by="user:panel")
    assert await asking == {
        "outcome": {"outcome": "selected", "optionId": "allow"}
    }  # never "always"
    narrator.update(recorded.BASH_DONE)
    _end(session)
    assert "Claude Code ran a command: touch made.txt." in _said(session)


async def test_our_notebook_tools_pass_without_a_second_question_and_notebook_writes_are_refused() -> (
    None
):
    broker = ReplyBroker()
    session = _session()
    narrator = Narrator(session, "Claude Code")
    gate = Gate(session, broker, narrator, timeout_for=lambda _risk: 60)
    assert await gate.request(recorded.NOTEBOOK_TOOL_PERMISSION) == {
        "outcome": {"outcome": "selected", "optionId": "allow"}
    }
    assert await gate.request(recorded.WRITE_NOTEBOOK_PERMISSION) == {
        "outcome": {"outcome": "selected", "optionId": "reject"}
    }
    narrator.update(
        {"toolCallId": recorded.WRITE, "sessionUpdate": "tool_call_update", "status": "failed"}
    )
    _end(session)
    said = _said(session)
    assert not any(e["type"].endswith("awaiting.confirmation") for e in session.emitter.history)
    assert any("tried to change a notebook file directly; refused" in s for s in said), said
    assert not any("failed" in s for s in said)  # the refusal is told once, not again as a failure


async def test_a_permission_cancelled_while_it_waits_answers_cancelled() -> None:
    broker = ReplyBroker()
    session = _session()
    narrator = Narrator(session, "Claude Code")
    narrator.update(recorded.BASH_INPUT)
    gate = Gate(session, broker, narrator, timeout_for=lambda _risk: 60)
    asking = asyncio.ensure_future(gate.request(recorded.BASH_PERMISSION))
    await asyncio.sleep(0.05)
    assert broker.pending()
    broker.cancel_session(session.id)
    assert await asking == {"outcome": {"outcome": "cancelled"}}
    session.change_state("thinking", Summary(normal="Withdrawn."))
    _end(session)


# -- the process ---------------------------------------------------------------------------------
def _agent(tmp_path: Path, broker: ReplyBroker) -> tuple[AcpChatAgent, Path]:
    received = tmp_path / "received.jsonl"
    spec = AgentSpec("Claude Code", sys.executable, (str(HERE / "fake_agent.py"), str(received)))
    agent = AcpChatAgent(
        spec=spec,
        cwd=str(tmp_path),
        root=str(tmp_path),
        broker=broker,
        log_path=str(tmp_path / "agent.log"),
        base_env={**os.environ, "IS_SANDBOX": "1", "AAEP_KERNEL_SECRET": "s3cret"},
    )
    return agent, received


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _received(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _question(session: Session) -> dict[str, Any]:
    for _ in range(200):
        found = [e for e in session.emitter.history if e["type"].endswith("awaiting.confirmation")]
        if found:
            return found[-1]
        await asyncio.sleep(0.05)
    raise AssertionError(_said(session))


async def test_a_rejected_command_ends_the_request_and_the_next_message_reuses_the_process(
    tmp_path: Path,
) -> None:
    broker = ReplyBroker()
    agent, received = _agent(tmp_path, broker)
    try:
        history: list[dict[str, Any]] = []
        session = Session(
            Emitter(history_limit=1000), Producer(model="outside-agent"), actor="Claude Code"
        )
        chat = ChatContext()
        running = asyncio.ensure_future(agent.run(session, history, "Make a file", chat=chat))
        await _question(session)
        (request,) = broker.pending()
        broker.resolve(request, "reject", decided_by="user:panel")
        result = await running
        assert result.status == "completed"
        # Its usage is the chat's, as our own sessions' is: the prompt's tokens and its cost.
        assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (10, 100)
        assert result.usage.cost_usd == pytest.approx(0.10326225)
        assert chat.usage.to_json()["estimated_cost_usd"] == pytest.approx(0.103262)
        said = _said(session)
        assert said[-1] == "Claude Code finished.", said
        assert "Rejected: Claude Code will not run a command: touch made.txt." in said
        pid = agent.pid
        assert pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not any(v.startswith((b"IS_SANDBOX=", b"AAEP_")) for v in environ)
        answers = [m for m in _received(received) if m.get("id") == 900]
        assert answers[0]["result"] == {"outcome": {"outcome": "selected", "optionId": "reject"}}
        assert (
            history[-1]["role"] == "assistant" and "All done." in history[-1]["content"][0]["text"]
        )
        # A second message: the same process, the same ACP session.
        second = Session(
            Emitter(history_limit=1000), Producer(model="outside-agent"), actor="Claude Code"
        )
        running = asyncio.ensure_future(agent.run(second, history, "Again", chat=chat))
        await _question(second)
        (request,) = broker.pending()
        broker.resolve(request, "accept", decided_by="user:panel")
        again = await running
        assert again.status == "completed"
        # The adapter's cost is the ACP session's total: the second prompt adds only its part.
        assert again.usage.cost_usd == pytest.approx(0.10326225)
        assert (chat.usage.requests, chat.usage.input_tokens, chat.usage.output_tokens) == (
            2,
            20,
            10,
        )
        assert chat.usage.cost_usd == pytest.approx(2 * 0.10326225)
        assert agent.pid == pid
        assert sum(m.get("method") == "session/new" for m in _received(received)) == 1
        first_prompt = next(m for m in _received(received) if m.get("method") == "session/prompt")
        assert "notebook tools" in first_prompt["params"]["prompt"][0]["text"]
    finally:
        await agent.stop()


async def test_stop_cancels_the_acp_session_answers_the_question_cancelled_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    broker = ReplyBroker()
    agent, received = _agent(tmp_path, broker)
    control = RunControl()
    session = Session(
        Emitter(history_limit=1000), Producer(model="outside-agent"), actor="Claude Code"
    )
    running = asyncio.ensure_future(
        agent.run(session, [], "Make a file", chat=ChatContext(), control=control)
    )
    await _question(session)
    pid = agent.pid
    assert pid is not None
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert children  # the agent's own child (Claude Code under the adapter, here `sleep`)
    control.cancelled_by = "user"
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert session.terminal_event is not None
    assert session.terminal_event["type"] == "aaep:agent.session.cancelled"
    assert "You stopped Claude Code." in session.terminal_event["summary_normal"]
    for _ in range(40):
        messages = _received(received)
        if any(m.get("id") == 900 for m in messages):
            break
        await asyncio.sleep(0.05)
    assert any(m.get("method") == "session/cancel" for m in messages)
    assert next(m for m in messages if m.get("id") == 900)["result"] == {
        "outcome": {"outcome": "cancelled"}
    }
    await agent.stop()
    assert not _alive(pid)
    assert not any(_alive(int(child)) for child in children)


async def test_a_missing_adapter_is_one_sentence_saying_what_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "aaep"
    folder.mkdir()
    (folder / "agents.json").write_text(
        json.dumps(
            {
                "agent_servers": {
                    "Claude Code": {"command": "claude-agent-acp-missing"},
                    "Odd": {"args": []},
                }
            }
        )
    )
    listed = AgentCatalog([str(tmp_path)]).describe()
    assert [a["name"] for a in listed["agents"]][:3] == ["Jupyter agent", "Claude Code", "Odd"]
    claude = listed["agents"][1]
    assert claude["available"] is False
    assert claude["problem"].startswith(
        "Claude Code cannot start: the command 'claude-agent-acp-missing' was not found."
    )
    assert 'has no "command"' in listed["agents"][2]["problem"]
    broker = ReplyBroker()
    agent = AcpChatAgent(
        spec=AgentSpec("Codex", "/nonexistent/codex-acp"),
        cwd=str(tmp_path),
        root=str(tmp_path),
        broker=broker,
        log_path=str(tmp_path / "codex.log"),
    )
    session = Session(Emitter(history_limit=100), Producer(model="outside-agent"), actor="Codex")
    result = await agent.run(session, [], "Hello", chat=ChatContext())
    assert result.status == "errored"
    assert _said(session)[-1] == (
        "Codex could not start: its command was not found. Install its ACP adapter, or fix agents.json."
    )


async def test_a_new_acp_session_gets_the_chats_transcript_and_says_so(tmp_path: Path) -> None:
    """After a restart the chat's history is back from the store but the agent's process is new:
    its first prompt carries the transcript, and the person hears that it is a new session."""
    broker = ReplyBroker()
    agent, received = _agent(tmp_path, broker)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Load sales.csv"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Loaded 120 rows."}]},
    ]
    try:
        session = Session(
            Emitter(history_limit=1000), Producer(model="outside-agent"), actor="Claude Code"
        )
        running = asyncio.ensure_future(agent.run(session, history, "Continue", chat=ChatContext()))
        await _question(session)
        assert _said(session)[0] == (
            "Claude Code is working on your request. This is a new Claude Code session: it gets "
            "this chat's earlier messages as context."
        )
        (request,) = broker.pending()
        broker.resolve(request, "reject", decided_by="user:panel")
        await running
        prompt = next(m for m in _received(received) if m.get("method") == "session/prompt")
        text = prompt["params"]["prompt"][0]["text"]
        assert "Person: Load sales.csv\n\nAssistant: Loaded 120 rows." in text
        assert text.endswith("Continue")
    finally:
        await agent.stop()


async def test_a_chat_that_leaves_memory_stops_its_agent(tmp_path: Path) -> None:
    """A chat is closed when it leaves memory (idle, followed by nobody): its agent's process goes."""
    from jupyter_aaep.acp.host import AcpHost
    from jupyter_aaep.agent.tools import ToolRegistry
    from jupyter_aaep.chats.runner import ChatRunner

    runner = ChatRunner(client_factory=lambda: None, registry_factory=lambda _chat: ToolRegistry())  # type: ignore[arg-type,return-value]
    host = AcpHost(
        runner,
        AgentCatalog([]),
        root=str(tmp_path),
        choices_path=None,
        registry_for=lambda _c: ToolRegistry(),
    )
    chat = runner.create_chat("a.ipynb")
    agent, _ = _agent(tmp_path, runner.broker)
    host.agents[chat.chat_id] = agent
    agent.process = None
    await agent._ensure_session()
    pid = agent.pid
    assert pid is not None and _alive(pid)
    assert runner.on_chat_closed is not None
    runner.on_chat_closed(chat.chat_id)
    await host.close()
    assert not _alive(pid) and chat.chat_id not in host.agents


def test_the_agent_reads_files_inside_the_server_root_only(tmp_path: Path) -> None:
    from jupyter_aaep.acp.rpc import RpcError

    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "secret.txt").write_text("outside")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    agent, _ = _agent(tmp_path, ReplyBroker())
    agent.root = str(root)
    assert agent._read({"path": str(root / "notes.txt")}) == "one\ntwo\nthree\n"
    assert agent._read({"path": str(root / "notes.txt"), "line": 2, "limit": 1}) == "two\n"
    for path in (tmp_path / "secret.txt", root / "link.txt", root / ".." / "secret.txt"):
        with pytest.raises(RpcError, match="Only files inside the Jupyter server's folder"):
            agent._read({"path": str(path)})
