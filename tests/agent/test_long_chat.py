"""Long chats through the real loop and SDK against a fake that enforces a context window.

The fake counts prompt tokens, answers "prompt is too long" like the service and accounts the
prompt cache (``testing/_prompt.py``); these tests read what it received.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

from jupyter_aaep import aaep_tool
from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.agent.context import SUMMARY_HEADER, ContextSettings
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext, SessionResult
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.agent.usage import PriceTable
from jupyter_aaep.chats.runner import ChatRunner
from jupyter_aaep.server.service import AAEPService
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn

MODEL = "claude-test"
COMPACTING = "compacting_context"


def reads_in_request(request: RecordedRequest) -> int:
    """Tool results since the user's last own words (a summary is not the user's words)."""
    count = 0
    for message in reversed(request.body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "user" and any(
            b.get("type") == "text" and not str(b.get("text", "")).startswith(SUMMARY_HEADER)
            for b in content
        ):
            return count
        count += sum(1 for b in content if b.get("type") == "tool_result")
    return count


def reader(reads: int, answer: str = "Done reading.") -> Any:
    def respond(request: RecordedRequest) -> Turn:
        if reads_in_request(request) < reads:
            return Turn(tool_uses=[ToolUse("read_notebook", {})])
        return Turn(text=answer)

    return respond


def notebook_tool(chars: int, *, changing: bool = True) -> Any:
    counter = itertools.count()

    @aaep_tool(read_only=True, label="read the notebook")
    async def read_notebook() -> str:
        """Read the whole notebook."""
        version = next(counter) if changing else 0
        return f"notebook version {version}\n" + "cell source and output; " * (chars // 24)

    return read_notebook


class Chat:
    """One chat on the loop: history, usage and context state kept across its sessions."""

    def __init__(
        self, client: anthropic.AsyncAnthropic, config: AgentConfig, tools: list[Any]
    ) -> None:
        self.client = client
        self.config = config
        self.registry = ToolRegistry(tools)
        self.history: list[dict[str, Any]] = []
        self.context = ChatContext()
        self.events = ListSubscriber()
        self.emitter = Emitter()
        self.emitter.subscribe(self.events)

    async def ask(self, text: str) -> SessionResult:
        loop = AgentLoop(self.client, self.registry, broker=ReplyBroker(), config=self.config)
        session = Session(self.emitter, Producer(model=MODEL))
        return await loop.run(session, self.history, text, chat=self.context)

    def announcements(self) -> list[str]:
        return [
            e["summary_normal"]
            for e in self.events.of_type("state.changed")
            if e["to_state"] == COMPACTING
        ]


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    clients: list[anthropic.AsyncAnthropic] = []

    def make(fake: FakeAnthropic) -> anthropic.AsyncAnthropic:
        clients.append(
            anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
        )
        return clients[-1]

    yield make
    for client in clients:
        await client.close()


def config(window: int, **context: Any) -> AgentConfig:
    return AgentConfig(
        model=MODEL, max_tokens=1024, context=ContextSettings(window=window, **context)
    )


@pytest.mark.parametrize(
    "server_edits", [True, False], ids=["server-offers-editing", "client-fallback"]
)
async def test_long_chat_in_a_small_window_never_fails_and_says_so_once_per_compaction(
    client_for: Any, server_edits: bool
) -> None:
    answer = "Here is what the notebook does, cell by cell, in some detail. " * 25  # ~400 tokens
    async with FakeAnthropic(
        responder=reader(2, answer), context_window=12_000, context_management=server_edits
    ) as fake:
        chat = Chat(client_for(fake), config(12_000), [notebook_tool(4800)])
        results = [await chat.ask(f"Request {i}: what changed in the notebook?") for i in range(15)]
    assert [r.status for r in results] == ["completed"] * 15
    assert max(r.prompt_tokens or 0 for r in fake.requests) <= 12_000  # never "prompt is too long"
    refused = [r for r in fake.requests if r.status == 400]
    assert len(refused) == (0 if server_edits else 1)  # the fallback is learned once, for the chat
    if not server_edits:
        assert (
            "context_management" in refused[0].body and chat.context.context.server_edits is False
        )
        assert all(
            "context_management" not in r.body
            for r in fake.requests[fake.requests.index(refused[0]) + 1 :]
        )
    # One sentence per compaction, and both kinds happened in this chat.
    said = chat.announcements()
    assert len(said) == chat.context.context.compactions >= 2
    assert any("summarised" in s for s in said) and any("set aside" in s for s in said)
    assert all(s.count(".") == 1 and s.endswith(".") for s in said)
    # The summary carries the earlier requests, and every later request still pairs its tool calls
    # (the fake validates each request like the service; conftest checks every event stream).
    last = fake.requests[-1].body["messages"]
    assert last[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert "The user asked: Request 0" in last[0]["content"][0]["text"]
    assert fake.problems == []


async def test_moving_breakpoint_reads_the_previous_turns_from_cache(client_for: Any) -> None:
    async with FakeAnthropic(responder=reader(2), min_cacheable_tokens=1) as fake:
        chat = Chat(client_for(fake), config(200_000), [notebook_tool(2000, changing=False)])
        await chat.ask("Read it.")
        await chat.ask("Read it again.")
    requests = fake.requests
    assert len(requests) == 6
    for request in requests:
        body = request.body
        marks = [
            b
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and "cache_control" in b
        ]
        assert marks == [body["messages"][-1]["content"][-1]]  # only the last block of the request
        total = (
            len(marks)
            + sum("cache_control" in b for b in body["system"])
            + sum("cache_control" in t for t in body["tools"])
        )
        assert total == 3  # system, tools, moving: within the limit of 4
    assert all("cache_control" not in b for m in chat.history for b in m["content"])
    # Each request reads the whole previous request from the cache and writes only what is new.
    for before, after in itertools.pairwise(requests):
        assert (
            after.usage is not None and after.usage.cache_read_input_tokens == before.prompt_tokens
        )
        assert after.usage.input_tokens == 0
    # The second and third reads of an unchanged notebook were sent as references to the first.
    results = [
        b for b in requests[2].body["messages"][-1]["content"] if b.get("type") == "tool_result"
    ]
    assert results[0]["content"].startswith(
        "[Unchanged: identical to the earlier result of read_notebook"
    )


async def test_without_the_moving_breakpoint_the_conversation_is_not_cached(
    client_for: Any,
) -> None:
    async with FakeAnthropic(responder=reader(2), min_cacheable_tokens=1) as fake:
        cfg = config(200_000)
        cfg.cache_conversation = False
        chat = Chat(client_for(fake), cfg, [notebook_tool(2000)])
        await chat.ask("Read it.")
    assert all(
        "cache_control" not in b
        for r in fake.requests
        for m in r.body["messages"]
        for b in m["content"]
    )
    last = fake.requests[-1]
    assert last.usage is not None and last.usage.input_tokens > last.usage.cache_read_input_tokens


async def test_server_edits_are_mirrored_into_the_history(client_for: Any) -> None:
    async with FakeAnthropic(responder=reader(8), context_window=12_000) as fake:
        chat = Chat(client_for(fake), config(12_000, strategy="server"), [notebook_tool(4800)])
        result = await chat.ask("Read the notebook eight times.")
    assert result.status == "completed"
    edited = [r for r in fake.requests if r.applied_edits]
    assert edited, [r.prompt_tokens for r in fake.requests]
    assert edited[0].body["context_management"]["edits"][0]["type"] == "clear_tool_uses_20250919"
    # The request after the server's edit already carries the cleared results itself.
    after = fake.requests[fake.requests.index(edited[0]) + 1]
    contents = [
        b["content"]
        for m in after.body["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert (
        sum(c.startswith("[Cleared to keep the conversation") for c in contents)
        >= edited[0].applied_edits[0]["cleared_tool_uses"]
    )
    assert any("set aside" in s for s in chat.announcements())
    assert fake.problems == []


async def test_a_smaller_window_announced_by_the_server_is_learned(client_for: Any) -> None:
    # The client believes the window is 200 000 tokens; the compatible server has 9 000.
    async with FakeAnthropic(
        responder=reader(3), context_window=9_000, context_management=False
    ) as fake:
        chat = Chat(client_for(fake), config(200_000), [notebook_tool(8000)])
        results = [await chat.ask(f"Request {i}") for i in range(3)]
    assert [r.status for r in results] == ["completed"] * 3
    too_long = [r for r in fake.requests if r.status == 400 and (r.prompt_tokens or 0) > 9_000]
    assert len(too_long) == 1  # once; afterwards the chat keeps to the learned window
    assert chat.context.context.window == 9_000
    assert fake.problems == []


async def test_a_tool_result_larger_than_the_window_is_named_and_the_chat_goes_on(
    client_for: Any,
) -> None:
    calls = itertools.count()

    @aaep_tool(read_only=True, label="dump the data")
    async def dump_data() -> str:
        """Dump the whole data set."""
        return "row of data; " * (40_000 if next(calls) == 0 else 10)

    def respond(request: RecordedRequest) -> Turn:
        if "dump" in request.last_user_text and reads_in_request(request) == 0:
            return Turn(tool_uses=[ToolUse("dump_data", {})])
        return Turn(text="Fine.")

    async with FakeAnthropic(responder=respond, context_window=12_000) as fake:
        chat = Chat(client_for(fake), config(12_000), [dump_data])
        failed = await chat.ask("dump the data")
        later = await chat.ask("what now?")
    assert failed.status == "errored"
    event = failed.terminal_event
    assert (
        event is not None
        and event["error_code"] == "CONTEXT_TOO_LARGE"
        and event["recoverable"] is True
    )
    assert "The result of the tool dump_data is about" in event["summary_normal"]
    assert "Ask for a smaller part" in event["remediation_hint"]
    assert later.status == "completed"
    assert all(r.status == 200 for r in fake.requests)  # nothing too big was ever sent
    assert fake.problems == []


async def test_usage_and_cost_per_session_and_per_chat(client_for: Any) -> None:
    async with FakeAnthropic(responder=reader(1)) as fake:
        cfg = config(200_000)
        cfg.prices = PriceTable({"claude-test": {"input": 2.0, "output": 10.0}})
        chat = Chat(client_for(fake), cfg, [notebook_tool(6000, changing=False)])
        first = await chat.ask("Read it.")
        second = await chat.ask("Again.")
    per_request = [
        (r.usage, r.message["usage"]["output_tokens"]) for r in fake.requests if r.message
    ]
    for result, chunk in ((first, per_request[:2]), (second, per_request[2:])):
        usage = result.usage
        assert usage.requests == 2
        assert usage.input_tokens == sum(u.input_tokens for u, _ in chunk if u)
        assert usage.cache_read_tokens == sum(u.cache_read_input_tokens for u, _ in chunk if u)
        assert usage.cache_write_tokens == sum(u.cache_creation_input_tokens for u, _ in chunk if u)
        assert usage.output_tokens == sum(o for _, o in chunk)
        expected = (
            usage.input_tokens * 2
            + usage.output_tokens * 10
            + usage.cache_write_tokens * 2.5
            + usage.cache_read_tokens * 0.2
        ) / 1e6
        assert usage.cost_usd == pytest.approx(expected)
        assert "model requests used" in result.terminal_event["summary_detailed"]  # type: ignore[index]
    assert second.usage.cache_read_tokens > 0
    total = chat.context.usage
    assert total.requests == 4 and total.cost_usd == pytest.approx(
        first.usage.cost_usd + second.usage.cost_usd
    )


async def test_budget_stops_the_chat_with_a_clear_announcement(client_for: Any) -> None:
    async with FakeAnthropic(responder=reader(3)) as fake:
        cfg = config(200_000)
        cfg.budget_usd = 1e-9
        chat = Chat(client_for(fake), cfg, [notebook_tool(2000)])
        first = await chat.ask("Read it three times.")
        second = await chat.ask("And again.")
    assert len(fake.requests) == 1  # the first request spent the budget; nothing more was asked
    for result in (first, second):
        event = result.terminal_event
        assert result.status == "errored" and event is not None
        assert (
            event["error_code"] == "BUDGET_REACHED" and event["error_category"] == "requires_user"
        )
        assert event["summary_normal"].startswith("Stopped: this chat has used about $")
        assert "chat_budget_usd" in event["remediation_hint"]
    # The tool call of the first request was answered, so the history stays valid.
    assert (
        chat.history[1]["content"][0]["type"] == "tool_use"
        and chat.history[2]["content"][0]["type"] == "tool_result"
    )


async def test_chat_view_reports_usage(client_for: Any) -> None:
    async with FakeAnthropic(responder=reader(1)) as fake:
        client = client_for(fake)
        runner = ChatRunner(
            client_factory=lambda: client,
            registry_factory=lambda chat: ToolRegistry([notebook_tool(2000)]),
            config=AgentConfig(model=MODEL, budget_usd=5.0),
        )
        chat = runner.create_chat("analysis.ipynb")
        runner.submit(chat.chat_id, "Read it.")
        assert chat.task is not None
        result = await chat.task
        view = AAEPService(runner, None, url_for=lambda path: path).chat_view(chat.chat_id)  # type: ignore[arg-type]
    usage = view["usage"]
    assert usage["requests"] == 2 and usage["budget_usd"] == 5.0
    assert usage["estimated_cost_usd"] == pytest.approx(result.usage.cost_usd, abs=1e-6)
    (session,) = usage["sessions"]
    assert session["session_id"] == result.terminal_event["session_id"]  # type: ignore[index]
    assert session["input_tokens"] + session["cache_read_input_tokens"] + session[
        "cache_creation_input_tokens"
    ] == sum(r.prompt_tokens or 0 for r in fake.requests)


def test_moving_breakpoint_edge_cases() -> None:
    from jupyter_aaep.agent._loop_text import error_text as _error_text
    from jupyter_aaep.agent._loop_text import with_moving_breakpoint as _with_moving_breakpoint

    assert _with_moving_breakpoint([]) == []
    plain = [{"role": "user", "content": "hi"}]
    assert _with_moving_breakpoint(plain) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    thinking = [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    ]
    assert (
        _with_moving_breakpoint(thinking) is thinking
    )  # thinking blocks cannot carry a breakpoint
    empty = [{"role": "user", "content": ""}]
    assert _with_moving_breakpoint(empty) is empty

    class Odd(anthropic.BadRequestError):
        def __init__(self) -> None:
            self.body = "not json"

        def __str__(self) -> str:
            return "plain text error"

    assert _error_text(Odd()) == "plain text error"


async def test_three_rules_files_keep_the_prompt_cache_above_0_9_over_20_requests(
    tmp_path,
) -> None:
    """The rules ride in the cached system block: a 20-request chat with AGENTS.md, CLAUDE.md
    and a scoped rule still reads at least 90 % of its prompt from the cache (the benchmark's
    own chat, benchmarks/long_chat.py)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "long_chat.py"
    spec = importlib.util.spec_from_file_location("long_chat_benchmark", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.modules.pop(spec.name, None)
    figures = await bench.run_chat(
        "rules",
        requests=20,
        window=60_000,
        config=bench.config(60_000, after=True),
        server_edits=True,
        rules_root=tmp_path,
    )
    assert figures.sessions_failed == 0 and figures.requests_rejected == 0
    assert figures.cache_share >= 0.9, figures
