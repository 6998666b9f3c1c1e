"""Does a long chat stay inside the context window, and how much of its prompt comes from cache?

One chat of 25 requests; in each, the scripted model reads a realistic 100-cell notebook three
times with the real ``get_notebook_state`` tool (the notebook of ``notebook_state_size.py``),
then answers. The fake Messages API enforces a 60 000-token context window and accounts the
prompt cache as the service does (``jupyter_aaep/testing/_prompt.py``). The real agent loop
talks to it through the real SDK.

Printed per configuration: requests that failed (target 0), the largest prompt sent, the share
of prompt tokens read from the cache (target >= 0.85) and the weighted cost against sending
everything uncached (input 1.0, cache write 1.25, cache read 0.1; target <= 0.25).

Configurations, in the same run:

- ``before``: breakpoints on the system prompt and tools only, no context management;
- ``after (server edits)``: the moving breakpoint, and the server's context editing offered;
- ``after (client fallback)``: the same against a compatible server without context editing.

The notebook does not change while the chat reads it, as in the task; so the second and third
reads of a request, and every later one, are sent as references to the first. Two more rows
show the context management at work when that does not help (no targets are claimed for them):

- ``edited between requests``: the user changes a cell before each request (one new read per
  request);
- ``changes before every read``: every read returns a different notebook (three new reads of
  about 8 400 tokens per request, against a 60 000-token window: the worst case).

And one row with three rules files loaded (``AGENTS.md``, ``CLAUDE.md`` and a scoped
``.aaep/rules`` file, read by the real ``RuleFiles`` at every request): the rules ride in the
cached system block, so the share read from the cache must stay at least 0.9
(``tests/agent/test_long_chat.py`` checks it over 20 requests).

Run: ``python benchmarks/long_chat.py [--requests 25] [--window 60000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

from jupyter_aaep.aaep import Emitter, Producer, ReplyBroker, Session
from jupyter_aaep.agent.context import SUMMARY_HEADER, ContextSettings, ContextState
from jupyter_aaep.agent.loop import DEFAULT_MODEL, AgentConfig, AgentLoop, ChatContext
from jupyter_aaep.agent.rules import AppliedRules, RuleFiles, RuleTarget
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolRegistry
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn
from jupyter_aaep.tools.notebook import notebook_tools

sys.path.insert(0, str(Path(__file__).parent))
from notebook_state_size import _LocalService, make_notebook

MODEL = DEFAULT_MODEL  # the product default (a deprecated model id makes the SDK warn)
READS_PER_REQUEST = 3
WEIGHTS = {"input": 1.0, "write": 1.25, "read": 0.1}


class _ChangingService(_LocalService):
    """The benchmark notebook, with a counter written into its first cell when asked to change."""

    def __init__(self, *, every_read: bool) -> None:
        super().__init__(make_notebook(100))
        self.every_read = every_read
        self.version = 0

    def change(self) -> None:
        self.version += 1
        cell = self._doc.ycells[0]
        source = cell["source"]
        source.clear()
        source += f"# version {self.version}\n"

    async def open(self, path: str) -> Any:
        if self.every_read:
            self.change()
        return await super().open(path)


def responder(request: RecordedRequest) -> Turn:
    """Read the notebook three times per user request, then answer."""
    reads = 0
    for message in reversed(request.body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "user" and any(
            b.get("type") == "text" and not str(b.get("text", "")).startswith(SUMMARY_HEADER)
            for b in content
        ):
            break
        reads += sum(1 for b in content if b.get("type") == "tool_result")
    if reads < READS_PER_REQUEST:
        return Turn(
            text="Let me look at the notebook.", tool_uses=[ToolUse("get_notebook_state", {})]
        )
    return Turn(
        text="The notebook loads the sales data, cleans it, trains a gradient-boosted model and "
        "plots the errors by region. Cell 42 has the highest error; its input has missing values. "
        "I suggest filling them before training."
    )


@dataclass
class Figures:
    name: str
    sessions_failed: int
    requests_rejected: int
    largest_prompt: int
    cache_share: float
    weighted_cost: float
    compactions: int
    server_edits: int
    """Requests in which the server's context editing cleared something."""


RULES = {
    "AGENTS.md": "Name dataframes df_<thing>. Use pandas, never polars. " * 20,
    "CLAUDE.md": "Explain each change in one sentence before making it. " * 20,
    ".aaep/rules/plots.md": "---\nscope:\n  languages: [python]\n---\n"
    + "Plots use seaborn with the colour-blind palette and a title. " * 20,
}


def rules_provider(root: Path) -> Any:
    """Three rules files under *root*, read by the real :class:`RuleFiles` at each request."""
    for name, text in RULES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    files = RuleFiles(root)

    async def provide(path: str) -> AppliedRules:
        return files.applicable(RuleTarget(path, kernel_name="python3", language="python"))

    return provide


async def run_chat(
    name: str,
    *,
    requests: int,
    window: int,
    config: AgentConfig,
    server_edits: bool,
    changes: str = "never",
    rules_root: Path | None = None,
) -> Figures:
    service = _ChangingService(every_read=changes == "every read")
    registry = ToolRegistry(notebook_tools())
    state = ContextState()
    rules = rules_provider(rules_root) if rules_root is not None else None
    chat = ChatContext(
        notebook_path="analysis.ipynb",
        services=AgentServices(notebook=service, rules=rules),
        context=state,
    )
    history: list[dict[str, Any]] = []
    failed = 0
    async with FakeAnthropic(
        responder=responder, context_window=window, context_management=server_edits
    ) as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        async with client:
            loop = AgentLoop(client, registry, broker=ReplyBroker(), config=config)
            for i in range(requests):
                if changes == "between requests":
                    service.change()
                session = Session(Emitter(), Producer(model=MODEL))
                text = f"Request {i + 1}: read the notebook and tell me which cell has the largest error."
                result = await loop.run(session, history, text, chat=chat)
                failed += result.status != "completed"
        assert not fake.problems, fake.problems
        served = [r for r in fake.requests if r.usage is not None]
        rejected = [r for r in fake.requests if r.status == 400]
    read = sum(r.usage.cache_read_input_tokens for r in served if r.usage)
    write = sum(r.usage.cache_creation_input_tokens for r in served if r.usage)
    plain = sum(r.usage.input_tokens for r in served if r.usage)
    total = read + write + plain
    weighted = (
        plain * WEIGHTS["input"] + write * WEIGHTS["write"] + read * WEIGHTS["read"]
    ) / total
    return Figures(
        name=name,
        sessions_failed=failed,
        requests_rejected=len(rejected),
        largest_prompt=max(r.prompt_tokens or 0 for r in fake.requests),
        cache_share=read / total,
        weighted_cost=weighted,
        compactions=state.compactions,
        server_edits=sum(1 for r in fake.requests if r.applied_edits),
    )


def config(window: int, *, after: bool) -> AgentConfig:
    return AgentConfig(
        model=MODEL,
        max_turns=10,
        cache_conversation=after,
        context=ContextSettings(window=window, strategy="auto" if after else "off"),
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--window", type=int, default=60_000)
    args = parser.parse_args()
    logging.getLogger("jupyter_aaep").setLevel(
        logging.ERROR
    )  # the "before" chat's failures are counted below
    plan = [
        ("before", False, True, "never"),
        ("after (server edits)", True, True, "never"),
        ("after (client fallback)", True, False, "never"),
        ("edited between requests", True, True, "between requests"),
        ("  same, client fallback", True, False, "between requests"),
        ("changes before every read", True, True, "every read"),
        ("  same, client fallback", True, False, "every read"),
    ]
    runs = [
        await run_chat(
            name,
            requests=args.requests,
            window=args.window,
            config=config(args.window, after=after),
            server_edits=server,
            changes=changes,
        )
        for name, after, server, changes in plan
    ]
    with tempfile.TemporaryDirectory() as root:
        ruled = await run_chat(
            "after, 3 rules files",
            requests=args.requests,
            window=args.window,
            config=config(args.window, after=True),
            server_edits=True,
            rules_root=Path(root),
        )
    runs.append(ruled)
    print(
        f"{args.requests} requests x {READS_PER_REQUEST} reads of a 100-cell notebook, "
        f"{args.window:,}-token window, model {MODEL}"
    )
    print(
        f"{'configuration':<26}{'failed':>7}{'rejected':>10}{'largest prompt':>16}"
        f"{'from cache':>12}{'cost vs uncached':>18}{'compactions':>13}{'server edits':>14}"
    )
    for f in runs:
        print(
            f"{f.name:<26}{f.sessions_failed:>7}{f.requests_rejected:>10}{f.largest_prompt:>16,}"
            f"{f.cache_share:>12.3f}{f.weighted_cost:>18.3f}{f.compactions:>13}{f.server_edits:>14}"
        )
    print(f"with 3 rules files: cache share >= 0.9 -> {ruled.cache_share:.3f}")
    before = runs[0]
    for after in runs[1:3]:
        print(
            f"{after.name}: cost {after.weighted_cost / before.weighted_cost:.2f}x of before; "
            f"targets: failed 0 -> {after.sessions_failed}, cache share >= 0.85 -> {after.cache_share:.3f}, "
            f"cost <= 0.25 -> {after.weighted_cost:.3f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
