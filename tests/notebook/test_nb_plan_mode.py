"""Plan mode end to end: a real Jupyter server, a real kernel, the real SDK and a scripted
model; the plan's file under the server root; the person answering the one plan card.

Every AAEP event is checked against the schemas and the sequence checker (``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop, wait_for

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext, RunControl
from jupyter_aaep.agent.plan import PlanFiles
from jupyter_aaep.agent.plan_gate import REFUSED
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server

PLAN = {
    "summary": "Print two numbers",
    "steps": ["Run cell c1 (prints 42)", "Run cell c2 (prints 7)"],
}
CELLS = [{"id": "c1", "source": "print(6 * 7)"}, {"id": "c2", "source": "print(7)"}]


@pytest.fixture
def fake_model() -> Any:
    fake = FakeAnthropic().start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


class Planner:
    """One chat in plan mode on one notebook, and a person answering its plan card."""

    def __init__(self, fake: FakeAnthropic, service: Any, path: str, root: Path) -> None:
        self.fake = fake
        self.root = root
        self.client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        self.emitter = Emitter()
        self.events = ListSubscriber()
        self.emitter.subscribe(self.events)
        self.broker = ReplyBroker()

        async def numbers(notebook: str) -> dict[str, int]:
            live = await service.open(notebook)
            return {cell_id: i + 1 for i, cell_id in enumerate(live.cell_ids())}

        self.chat = ChatContext(
            chat_id="chat-1",
            notebook_path=path,
            services=AgentServices(notebook=service, cell_numbers=numbers, plans=PlanFiles(root)),
            approval=ApprovalPolicy(mode="plan"),
        )
        self.loop = AgentLoop(
            self.client,
            ToolRegistry([*notebook_tools(), *conversation_tools()]),
            broker=self.broker,
            config=AgentConfig(model="claude-test"),
        )

    async def run(self, text: str, answer: Any = None) -> Any:
        """One request; *answer(event)* answers each confirmation as it comes."""
        session = Session(self.emitter, Producer(model="claude-test"))
        task = asyncio.ensure_future(
            self.loop.run(session, [], text, chat=self.chat, control=RunControl())
        )
        answered = 0
        while not task.done():
            asks = self.events.of_type("awaiting.confirmation")
            if len(asks) > answered and answer is not None:
                if not asks[answered]["extra_context"].get("auto_approved"):
                    answer(asks[answered])  # (the plan's own approvals answer themselves)
                answered += 1
            await asyncio.sleep(0.02)
        await self.client.close()
        return task.result()

    def reply(self, event: dict[str, Any], decision: str, **extra: Any) -> None:
        assert self.broker.submit(
            {
                "type": "confirmation.reply",
                "reply_token": event["reply_token"],
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
                "decision": decision,
                **extra,
            }
        )

    def results(self, request: int) -> list[dict[str, Any]]:
        content = self.fake.requests[request].body["messages"][-1]["content"]
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def tool_names(self, request: int) -> list[str]:
        return [t["name"] for t in self.fake.requests[request].body["tools"]]


def _plan_then_runs() -> list[Turn]:
    return [
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("plan_step", {"step": 1, "status": "done"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
        Turn(tool_uses=[ToolUse("plan_step", {"step": 2, "status": "done"})]),
        Turn(text="Both cells ran."),
    ]


async def _executed(service: Any, path: str) -> list[Any]:
    live = await service.open(path)
    return [live.cell(cell_id)["execution_count"] for cell_id in ("c1", "c2")]


@on_server_loop
async def test_the_first_request_offers_only_reading_and_a_plan_and_refuses_a_run(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    """A careless model that runs a cell before any plan is refused, and nothing runs."""
    path = notebook_file("plan.ipynb", CELLS)
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="I need a plan first."),
    )
    planner = Planner(fake_model, service, path, jp_root_dir)
    result = await planner.run("Run the cells.")

    offered = planner.tool_names(0)
    assert offered[-1] == "propose_plan" and "get_notebook_state" in offered
    for changes in ("run_cell", "run_all_cells", "create_cell", "edit_cell", "delete_cell"):
        assert changes not in offered
    assert "plan_step" not in offered
    assert planner.tool_names(1) == offered, "one tools list for the whole planning phase"
    [refused] = planner.results(1)
    assert refused["is_error"] and REFUSED in str(refused["content"])
    assert "Plan mode" in planner.fake.requests[0].body["system"][1]["text"]
    assert not planner.events.of_type("awaiting.confirmation")
    assert not [e for e in planner.events.of_type("tool.invoked") if e["tool"] == "run_cell"]
    assert result.status == "completed"
    assert await _executed(service, path) == [None, None]


@on_server_loop
async def test_a_rejected_two_run_plan_asks_once_and_changes_nothing(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("reject.ipynb", CELLS)
    fake_model.add(*_plan_then_runs())
    planner = Planner(fake_model, service, path, jp_root_dir)
    result = await planner.run("Run both cells.", lambda e: planner.reply(e, "reject"))

    [card] = planner.events.of_type("awaiting.confirmation")
    plan = card["extra_context"]["plan"]
    assert plan["steps"] == ["Run cell 1 (prints 42)", "Run cell 2 (prints 7)"], "ids as numbers"
    assert [c["value"] for c in plan["choices"]] == [
        "run",
        "ask_each_step",
        "keep_planning",
        "reject",
    ]
    assert "1. Run cell 1 (prints 42). 2. Run cell 2 (prints 7)." in card["summary_normal"]
    assert card["default_decision"] == "reject"
    assert "did not approve" in str(planner.results(1)[0]["content"])
    # the careless model runs anyway: still refused, the phase did not change
    assert REFUSED in str(planner.results(2)[0]["content"])
    assert planner.tool_names(2) == planner.tool_names(0)
    assert await _executed(service, path) == [None, None]
    assert (
        "The plan was not approved; nothing was changed." in result.terminal_event["summary_normal"]
    )


@on_server_loop
async def test_an_approved_plan_asks_once_and_both_runs_complete(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("approve.ipynb", CELLS)
    fake_model.add(*_plan_then_runs())
    planner = Planner(fake_model, service, path, jp_root_dir)
    result = await planner.run("Run both cells.", lambda e: planner.reply(e, "accept"))

    assert len(planner.events.of_type("awaiting.confirmation")) == 3  # the plan, two runs by it
    asked_a_person = [
        e
        for e in planner.events.of_type("awaiting.confirmation")
        if not e["extra_context"].get("auto_approved")
    ]
    assert len(asked_a_person) == 1 and "plan" in asked_a_person[0]["extra_context"]
    assert await _executed(service, path) == [1, 2]
    running = planner.tool_names(1)
    assert "run_cell" in running and running[-1] == "plan_step" and "propose_plan" not in running
    assert planner.tool_names(3) == running, "one tools list for the whole running phase"
    usage = [request.usage for request in planner.fake.requests]
    assert all(u is not None for u in usage)
    assert usage[2].cache_read_input_tokens > 0 and usage[4].cache_read_input_tokens > 0, (
        "within a phase each request reads the previous one's prefix from the prompt cache"
    )
    assert "Plan mode" not in planner.fake.requests[1].body["system"][1]["text"]
    steps = [e for e in planner.events.of_type("progress.updated") if e["progress"].get("step")]
    assert [(e["progress"]["step"], e["progress"]["total_steps"]) for e in steps] == [
        (1, 2),
        (2, 2),
    ]
    assert steps[1]["summary_normal"] == "Step 2 of 2 done: Run cell 2 (prints 7)."
    assert steps[0]["urgency"] == "normal"
    assert "All 2 steps of the plan ran." in result.terminal_event["summary_normal"]
    approved = [
        e
        for e in planner.events.of_type("state.changed")
        if "Plan approved" in (e.get("summary_normal") or "")
    ]
    assert approved, "the person hears how the plan runs"


@on_server_loop
async def test_run_asking_before_each_step_asks_before_each_run(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("each.ipynb", CELLS)
    fake_model.add(*_plan_then_runs())
    planner = Planner(fake_model, service, path, jp_root_dir)

    def answer(event: dict[str, Any]) -> None:
        if "plan" in event["extra_context"]:
            planner.reply(event, "accept", modified_action={"plan_choice": "ask_each_step"})
        else:
            planner.reply(event, "accept")

    await planner.run("Run both cells.", answer)
    asks = planner.events.of_type("awaiting.confirmation")
    assert len(asks) == 3 and not any(e["extra_context"].get("auto_approved") for e in asks)
    assert await _executed(service, path) == [1, 2]


@on_server_loop
async def test_keep_planning_delivers_the_comment(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("keep.ipynb", CELLS)
    fake_model.add(
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(text="I will only run the first cell then."),
    )
    planner = Planner(fake_model, service, path, jp_root_dir)
    result = await planner.run(
        "Run both cells.",
        lambda e: planner.reply(e, "reject", decision_rationale="Only the first cell, please."),
    )
    [told] = planner.results(1)
    assert "Their comment: Only the first cell, please." in str(told["content"])
    assert planner.tool_names(1) == planner.tool_names(0), "still planning"
    assert await _executed(service, path) == [None, None]
    assert result.status == "completed"


@on_server_loop
async def test_an_edited_plan_file_is_what_the_agent_follows(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("edit.ipynb", CELLS)
    fake_model.add(
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
        Turn(tool_uses=[ToolUse("plan_step", {"step": 1, "status": "done"})]),
        Turn(text="Done."),
    )
    planner = Planner(fake_model, service, path, jp_root_dir)

    def edit_then_approve(event: dict[str, Any]) -> None:
        if "plan" not in event["extra_context"]:
            planner.reply(event, "accept")
            return
        relative = event["extra_context"]["plan"]["file"]
        assert relative.startswith(".aaep/plans/") and relative.endswith(".md")
        file = jp_root_dir / relative
        assert oct(file.stat().st_mode & 0o777) == "0o600"
        text = file.read_text()
        assert "# Print two numbers" in text and "2. Run cell 2 (prints 7)" in text
        file.write_text("# Print one number\n\n1. Run cell 2 (prints 7)\n")  # the person saves
        planner.reply(event, "accept")

    result = await planner.run("Run both cells.", edit_then_approve)
    told = str(planner.results(1)[0]["content"])
    assert "The person edited the plan:" in told
    assert "The title now reads: 'Print one number'." in told
    assert "Removed: the step 'Run cell 1 (prints 42)'." in told
    assert "1. Run cell 2 (prints 7)" in told and "2. Run cell" not in told.split("in order:")[1]
    assert await _executed(service, path) == [None, 1]
    assert "All 1 step of the plan ran." in result.terminal_event["summary_normal"]
    await wait_for(lambda: True)


@on_server_loop
async def test_a_failed_step_stops_and_asks(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    path = notebook_file("fail.ipynb", CELLS)
    fake_model.add(
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(tool_uses=[ToolUse("plan_step", {"step": 1, "status": "failed", "note": "No data"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
        Turn(text="Stopped."),
    )
    planner = Planner(fake_model, service, path, jp_root_dir)
    session_task = asyncio.ensure_future(
        planner.run("Run both cells.", lambda e: planner.reply(e, "accept"))
    )
    question = await wait_for(
        lambda: planner.events.of_type("awaiting.clarification"), what="the question", timeout=20
    )
    assert question[0]["question"].startswith("Step 1 of 2 failed: No data.")
    assert planner.broker.submit(
        {
            "type": "clarification.reply",
            "reply_token": question[0]["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "response": "Stop the plan here",
        }
    )
    result = await asyncio.wait_for(session_task, 30)
    assert "stopped the plan at step 1" in str(planner.results(2)[0]["content"])
    assert REFUSED in str(planner.results(3)[0]["content"]), "a stopped plan runs nothing more"
    assert await _executed(service, path) == [None, None]
    assert "none ran" in result.terminal_event["summary_normal"]


@on_server_loop
async def test_a_run_that_fails_stops_the_plan_and_asks_even_unreported(
    notebook_file, service, fake_model, jp_root_dir
) -> None:
    """A careless model that never reports the failure: the server asks anyway."""
    path = notebook_file("raise.ipynb", [{"id": "c1", "source": "1 / 0"}, CELLS[1]])
    fake_model.add(
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
        Turn(text="Stopped."),
    )
    planner = Planner(fake_model, service, path, jp_root_dir)
    session_task = asyncio.ensure_future(
        planner.run("Run both cells.", lambda e: planner.reply(e, "accept"))
    )
    question = await wait_for(
        lambda: planner.events.of_type("awaiting.clarification"), what="the question", timeout=30
    )
    assert question[0]["question"].startswith(
        "A step of the plan failed: run a cell did not work (step 1 of 2: Run cell 1 (prints 42).)"
    ), question[0]["question"]
    assert planner.broker.submit(
        {
            "type": "clarification.reply",
            "reply_token": question[0]["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "response": "Stop the plan here",
        }
    )
    result = await asyncio.wait_for(session_task, 30)
    [failed] = planner.results(2)
    assert failed["is_error"] and "the person stopped the plan at step 1" in str(failed["content"])
    assert REFUSED in str(planner.results(3)[0]["content"])
    assert await _executed(service, path) == [1, None]
    assert "Step 1 failed." in result.terminal_event["summary_normal"]
