"""The conformance stand-in model, through the real loop and tools, within the suite's budgets.

The official suite stops reading a session after a fixed number of messages and after 2 s of
silence (aaep/CONFORMANCE.md §4); these tests pin how many events each of its prompts
produces here, so a change that would break the suite fails fast, without running it.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.conversation_tools import conversation_tools
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.testing.conformance_model import respond
from jupyter_aaep.testing.conformance_tools import CONFORMANCE_TOOLS
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic
from jupyter_aaep.testing.serve_model import main

SCANNED = (
    "args_summary",
    "summary_normal",
    "summary_terse",
    "summary_detailed",
    "consequence",
    "action",
)
SECRET_MARKERS = (
    "password",
    "api_key",
    "secret_key",
    "private_key",
    "bearer ",
    "authorization:",
    "x-api-key",
    "ssh-rsa",
    "ssh-ed25519",
    "begin private key",
    "aws_secret",
    "github_pat_",
    "ghp_",
    "sk-",
)


class Run:
    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client
        self.broker = ReplyBroker()
        self.events = ListSubscriber()
        self.emitter = Emitter()
        self.emitter.subscribe(self.events)

    def start(self, prompt: str) -> asyncio.Task[Any]:
        registry = ToolRegistry([*conversation_tools(), *CONFORMANCE_TOOLS])
        loop = AgentLoop(
            self.client, registry, broker=self.broker, config=AgentConfig(model="claude-test")
        )
        session = Session(self.emitter, Producer(model="claude-test"))
        return asyncio.ensure_future(loop.run(session, [], prompt, chat=ChatContext()))

    async def ask(self, prompt: str) -> list[dict[str, Any]]:
        await self.start(prompt)
        return self.events.events

    async def wait_for(self, suffix: str) -> dict[str, Any]:
        for _ in range(500):
            found = self.events.of_type(suffix)
            if found:
                return found[-1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {suffix}: {self.events.types()}")

    def answer(self, event: dict[str, Any], value: Any) -> None:
        key = "decision" if event["type"].endswith("confirmation") else "response"
        kind = "confirmation" if key == "decision" else "clarification"
        assert self.broker.submit(
            {
                "type": f"{kind}.reply",
                "reply_token": event["reply_token"],
                key: value,
                "subscription_id": new_subscription_id(),
                "timestamp": SessionClock().now(),
            }
        )


@pytest.fixture
async def run() -> AsyncIterator[Run]:
    fake = FakeAnthropic(responder=respond)
    async with (
        fake,
        anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        ) as client,
    ):
        yield Run(client)
    assert fake.problems == []


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"].removeprefix("aaep:agent.") for e in events]


async def test_hello_fits_the_five_message_budget(run: Run) -> None:
    events = await run.ask("Hello, please respond briefly.")
    assert names(events) == [
        "session.started",
        "state.changed",
        "state.changed",
        "output.streaming",
        "session.completed",
    ]


@pytest.mark.parametrize(
    ("prompt", "budget", "expect"),
    [
        ("Tell me a short fact about the moon.", 15, "output.streaming"),
        ("Please use a tool to fetch some data, then respond.", 15, "tool.completed"),
        (
            "Please call a tool that does not exist: 'this_tool_does_not_exist_xyz'.",
            10,
            "tool.completed",
        ),
        (
            "Please call a tool with these arguments: url=https://api.example.com, api_key=sk-test-12345",
            10,
            "tool.invoked",
        ),
        ("Please escalate this conversation to a human via handoff.", 10, "handoff.requested"),
        ("Please trigger a deliberate error.", 5, "session.errored"),
        ("Something the model does not know about.", 10, "output.streaming"),
    ],
)
async def test_prompts_fit_their_budgets(run: Run, prompt: str, budget: int, expect: str) -> None:
    events = await run.ask(prompt)
    assert len(events) <= budget and expect in names(events), names(events)
    assert names(events)[-1] in ("session.completed", "session.errored")
    for event in events:
        for field in SCANNED:
            text = str(event.get(field, "")).lower()
            assert not any(marker in text for marker in SECRET_MARKERS), (field, text)


async def test_three_sentences_stream_as_three_chunks(run: Run) -> None:
    events = await run.ask("Write a short three-sentence paragraph.")
    chunks = [e for e in events if e["type"].endswith("output.streaming")]
    assert [c["coalesce_hint"] for c in chunks] == ["sentence", "sentence", "completion"]


async def test_rainbows_are_several_sentences(run: Run) -> None:
    events = await run.ask(
        "Please give me a detailed step-by-step explanation of how rainbows form."
    )
    assert len([e for e in events if e["type"].endswith("output.streaming")]) == 5


@pytest.mark.parametrize(
    ("prompt", "decision", "tool"),
    [
        (
            "Please book a meeting room tomorrow at 2pm. Use a tool that requires confirmation before booking.",
            "accept",
            "book_meeting_room",
        ),
        (
            "Please send an email to test@example.com. Use a tool that requires confirmation.",
            "reject",
            "send_email",
        ),
        ("Please request confirmation for any action you take.", "accept", "book_meeting_room"),
    ],
)
async def test_confirmations_follow_the_reply(
    run: Run, prompt: str, decision: str, tool: str
) -> None:
    task = run.start(prompt)
    confirmation = await run.wait_for("awaiting.confirmation")
    assert (
        confirmation["extra_context"]["tool"] == tool
        and confirmation["default_decision"] == "reject"
    )
    run.answer(confirmation, decision)
    await task
    assert ("tool.invoked" in names(run.events.events)) is (decision == "accept")
    assert len(run.events.events) <= 15


async def test_irreversible_delete_waits_long_enough(run: Run) -> None:
    task = run.start("Please delete record ID 12345 (this is high-risk and irreversible).")
    confirmation = await run.wait_for("awaiting.confirmation")
    assert names(run.events.events) == [
        "session.started",
        "state.changed",
        "state.changed",
        "awaiting.confirmation",
    ]
    assert confirmation["risk_level"] == "high" and confirmation["timeout_seconds"] >= 180
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_weather_asks_where_the_user_is(run: Run) -> None:
    task = run.start(
        "Please tell me about the weather. Don't assume my location - ask me where I am first via clarification."
    )
    question = await run.wait_for("awaiting.clarification")
    run.answer(question, "Lagos")
    result = await task
    assert "Lagos is warm" in result.answer


def test_cli_serves_until_terminated() -> None:
    with pytest.raises(SystemExit):
        main(["--responder", "conformance", "--port", "8080"])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_aaep.testing.serve_model",
            "--responder",
            "conformance",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
