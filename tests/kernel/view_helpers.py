"""The real agent loop on one in-memory chat, for the live view's tests (a module with a
unique name, imported by the tests next to it)."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext
from jupyter_aaep.agent.tools import ActionPreview, ToolRegistry, ToolResult, aaep_tool
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

CODE = 'total = sum(range(10))\nprint("<b>total</b>", total)'
FINAL = "Cell 3 printed **45**. The `total` is <script>alert(1)</script> done."


@aaep_tool(risk_level="medium", require_confirmation=True)
def run_code(cell: int) -> ToolResult:
    """Run one cell of the notebook (a stand-in for run_cell, with the same preview)."""
    return ToolResult(
        content=f"Cell {cell} ran. Output: 45", summary=f"Cell {cell} ran and printed 45."
    )


@run_code.preview
def _preview(cell: int) -> ActionPreview:
    return ActionPreview(
        summary=f"Running cell {cell}.",
        terse=f"Run cell {cell}.",
        action=f"Run code cell {cell} (id abc) in the Python 3 kernel.",
        consequence="The code runs in your kernel.",
        extra_context={"cell_id": "abc", "cell_number": cell, "code": CODE},
    )


class Chat:
    """The real loop on one chat; ``events`` collects every published event."""

    def __init__(self, fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
        self.fake = fake
        self.emitter = Emitter()
        self.events = ListSubscriber()
        self.emitter.subscribe(self.events)
        self.broker = ReplyBroker()
        self.loop = AgentLoop(
            client,
            ToolRegistry([*conversation_tools(), run_code]),
            broker=self.broker,
            config=AgentConfig(model="claude-test"),
        )
        self.history: list[dict[str, Any]] = []

    def start(self, text: str) -> asyncio.Task[Any]:
        session = Session(self.emitter, Producer(model="claude-test"))
        return asyncio.ensure_future(
            self.loop.run(session, self.history, text, chat=ChatContext(approval=ApprovalPolicy()))
        )

    async def wait_for(self, suffix: str, count: int = 1) -> dict[str, Any]:
        for _ in range(1000):
            found = self.events.of_type(suffix)
            if len(found) >= count:
                return found[count - 1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {suffix} #{count}; saw {self.events.types()}")

    def answer(self, event: dict[str, Any], value: Any) -> bool:
        kind = "confirmation" if event["type"].endswith("confirmation") else "clarification"
        return self.broker.submit(
            {
                "type": f"{kind}.reply",
                "reply_token": event["reply_token"],
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
                ("decision" if kind == "confirmation" else "response"): value,
            }
        )
