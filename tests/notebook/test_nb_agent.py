"""The real agent loop, the real SDK and a scripted model, driving the notebook tools end to end.

Every AAEP event is checked against the schemas and the sequence checker (``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop, wait_for

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext, RunControl
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.notebook import NotebookService
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server


@pytest.fixture
def fake_model() -> Any:
    fake = FakeAnthropic().start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


class Agent:
    """One chat on one notebook: the loop, its events, and a person answering confirmations."""

    def __init__(self, fake: FakeAnthropic, service: NotebookService, path: str) -> None:
        self.fake = fake
        self.client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        self.emitter = Emitter()
        self.events = ListSubscriber()
        self.emitter.subscribe(self.events)
        self.broker = ReplyBroker()
        self.chat = ChatContext(
            chat_id="chat-1",
            notebook_path=path,
            services=AgentServices(notebook=service),
            approval=ApprovalPolicy(),
        )
        self.control = RunControl()
        self.loop = AgentLoop(
            self.client,
            ToolRegistry(notebook_tools()),
            broker=self.broker,
            config=AgentConfig(model="claude-test"),
        )

    def start(self, text: str) -> asyncio.Task[Any]:
        session = Session(self.emitter, Producer(model="claude-test"))
        return asyncio.ensure_future(
            self.loop.run(session, [], text, chat=self.chat, control=self.control)
        )

    async def next_event(self, suffix: str, count: int) -> dict[str, Any]:
        return await wait_for(
            lambda: (
                (found := self.events.of_type(suffix)) and len(found) >= count and found[count - 1]
            ),
            what=f"{suffix} #{count}",
            timeout=20,
        )

    def approve(self, event: dict[str, Any]) -> None:
        accepted = self.broker.submit(
            {
                "type": "confirmation.reply",
                "reply_token": event["reply_token"],
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
                "decision": "accept",
            }
        )
        assert accepted

    def last_tool_results(self) -> list[dict[str, Any]]:
        content = self.fake.requests[-1].body["messages"][-1]["content"]
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


@on_server_loop
async def test_an_approval_is_for_the_code_shown_and_asked_again_when_it_changes(
    notebook_file, service, fake_model
) -> None:
    path = notebook_file("agent.ipynb", [{"id": "c1", "source": "print(6 * 7)"}])
    fake_model.add(
        Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
        Turn(text="I will run it.", tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="The cell printed 49."),
    )
    agent = Agent(fake_model, service, path)
    task = agent.start("Run the first cell.")

    first = await agent.next_event("awaiting.confirmation", 1)
    assert first["extra_context"]["code"] == "print(6 * 7)"
    (await service.open(path)).set_source("c1", "print(7 * 7)")  # the user edits while asked
    agent.approve(first)

    second = await agent.next_event("awaiting.confirmation", 2)  # asked again, with the new code
    assert second["extra_context"]["code"] == "print(7 * 7)"
    agent.approve(second)
    result = await asyncio.wait_for(task, 30)
    await agent.client.close()

    assert result.status == "completed"
    [tool_result] = agent.last_tool_results()
    assert "49" in str(tool_result["content"]) and not tool_result.get("is_error")
    cell = (await service.open(path)).cell("c1")
    assert cell["execution_count"] == 1 and cell["outputs"][0]["text"] == "49\n"  # ran once
    completed = [e for e in agent.events.of_type("tool.completed") if e["tool"] == "run_cell"]
    assert completed[-1]["status"] == "success"


@on_server_loop
async def test_stop_during_a_run_interrupts_the_kernel(notebook_file, service, fake_model) -> None:
    path = notebook_file(
        "stop.ipynb",
        [
            {"id": "spin", "source": "while True:\n    pass"},
            {"id": "quick", "source": "print('ok')"},
        ],
    )
    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "spin"})]))
    agent = Agent(fake_model, service, path)
    task = agent.start("Run the loop.")
    agent.approve(await agent.next_event("awaiting.confirmation", 1))
    await agent.next_event("tool.invoked", 1)

    async def spinning() -> bool:
        return (await service.open(path)).cell("spin").get("execution_state") == "running"

    await wait_for(spinning, what="the cell to run", timeout=20)
    await asyncio.sleep(0.3)
    agent.control.cancelled_by = "user"
    task.cancel()  # what Stop does
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 15)
    await agent.client.close()

    assert agent.events.types()[-1].endswith("session.cancelled")
    cell = (await service.open(path)).cell("spin")
    assert cell["execution_state"] == "idle"
    assert any(o.get("ename") == "KeyboardInterrupt" for o in cell["outputs"])
    run = await asyncio.wait_for(
        service.run_cell(path, "quick", source="print('ok')", timeout=10), 10
    )
    assert run.result.outputs[0]["text"] == "ok\n"
