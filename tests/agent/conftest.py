"""A harness that runs the real agent loop through the real SDK against the scripted fake."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anthropic
import pytest

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext, RunControl, SessionResult
from jupyter_aaep.agent.tools import ToolRegistry, ToolSpec
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic


class Harness:
    """One chat: a fake model, the loop, a broker and every event collected."""

    def __init__(self, fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
        self.fake = fake
        self.client = client
        self.emitter = Emitter()
        self.events = ListSubscriber()
        self.emitter.subscribe(self.events)
        self.broker = ReplyBroker()
        self.registry = ToolRegistry(conversation_tools())
        self.policy = ApprovalPolicy()
        self.config = AgentConfig(model="claude-test")
        self.history: list[dict[str, Any]] = []
        self.control = RunControl()
        self.subscription_id = new_subscription_id()

    def add_tools(self, tools: Iterable[ToolSpec]) -> None:
        for tool in tools:
            self.registry.add(tool)

    def loop(self) -> AgentLoop:
        return AgentLoop(self.client, self.registry, broker=self.broker, config=self.config)

    def session(self) -> Session:
        return Session(self.emitter, Producer(model=self.config.model))

    async def ask(self, text: str) -> SessionResult:
        return await self.loop().run(
            self.session(),
            self.history,
            text,
            chat=ChatContext(approval=self.policy),
            control=self.control,
        )

    def start(self, text: str) -> asyncio.Task[SessionResult]:
        return asyncio.ensure_future(self.ask(text))

    async def wait_for(self, suffix: str, count: int = 1, timeout: float = 10.0) -> dict[str, Any]:
        """The *count*-th event whose type ends with *suffix*, waiting for it to arrive."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = self.events.of_type(suffix)
            if len(found) >= count:
                return found[count - 1]
            if loop.time() > deadline:
                raise AssertionError(f"no {suffix} event #{count}; saw {self.events.types()}")
            await asyncio.sleep(0.01)

    def reply(self, event: dict[str, Any], value: Any, **extra: Any) -> bool:
        kind = "confirmation" if event["type"].endswith("confirmation") else "clarification"
        body: dict[str, Any] = {
            "type": f"{kind}.reply",
            "reply_token": event["reply_token"],
            "subscription_id": self.subscription_id,
            "timestamp": SessionClock().now(),
            ("decision" if kind == "confirmation" else "response"): value,
        }
        body.update(extra)
        return self.broker.submit(body)

    def last_tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the most recent request the model received."""
        messages = self.fake.requests[-1].body["messages"]
        content = messages[-1]["content"]
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def types(self) -> list[str]:
        return self.events.types()


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server
    assert server.problems == [], server.problems


@pytest.fixture
async def harness(fake: FakeAnthropic) -> AsyncIterator[Harness]:
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=2)
    async with client:
        yield Harness(fake, client)
