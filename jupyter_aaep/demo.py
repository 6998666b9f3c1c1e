"""An offline agent session in the terminal: what a screen reader user would hear.

Runs the real loop through the real SDK against the scripted Messages API on 127.0.0.1 (no
account, no network), with one read-only tool and one tool that needs approval. Each
announceable event is printed as its spoken summary; you approve or reject at the prompt
(or pass ``--yes``/``--no`` to answer automatically).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import anthropic

from .aaep import Emitter, Producer, ReplyBroker, Session
from .aaep.clock import SessionClock
from .aaep.ids import new_subscription_id
from .agent.chat_context import ChatContext
from .agent.conversation_tools import conversation_tools
from .agent.loop import AgentConfig, AgentLoop
from .agent.tools import ActionPreview, ToolRegistry, aaep_tool
from .testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

DATA: dict[str, list[float]] = {
    "temperature": [21.5, 22.1, 23.4, 22.8],
    "humidity": [40, 42, 45, 41],
}


@aaep_tool(read_only=True, label="read the dataset")
def describe_dataset() -> str:
    """List the dataset's columns with their mean values."""
    return "; ".join(
        f"{name}: mean {sum(v) / len(v):.2f} over {len(v)} rows" for name, v in DATA.items()
    )


@aaep_tool(risk_level="medium", irreversible=True, label="save a report")
def save_report(title: str) -> str:
    """Write a summary report to disk.

    Parameters
    ----------
    title : str
        The report's title.
    """
    return f"Saved the report {title!r}."


@save_report.preview
def _preview(title: str) -> ActionPreview:
    return ActionPreview(
        summary=f"Saving the report {title}.",
        action=f"Save a report titled {title} to disk.",
        consequence="A file is written; an existing report with that title is overwritten.",
    )


def demo_model(request: Any) -> Turn:
    """The scripted "model": reads the conversation so far and answers like the real one would."""
    messages = request.body["messages"]
    step = sum(1 for m in messages if m["role"] == "assistant")
    if step == 0:
        return Turn(
            text="Let me look at the data first.",
            tool_uses=[ToolUse("describe_dataset", {})],
            chunk_delay=0.02,
        )
    if step == 1:
        return Turn(
            text="The average temperature is 22.45 degrees and humidity averages 42 percent. "
            "I will save a short report.",
            tool_uses=[ToolUse("save_report", {"title": "Weekly climate"})],
            chunk_delay=0.02,
        )
    results = [
        b for b in messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    if results and results[-1].get("is_error"):
        return Turn(
            text="Understood, I did not save the report. The summary above is all I changed.",
            chunk_delay=0.02,
        )
    return Turn(
        text="Done. The report is saved, and nothing unusual stands out in the readings.",
        chunk_delay=0.02,
    )


class Announcer:
    """Prints what a screen reader would say for each event."""

    def __init__(self) -> None:
        self.pending: list[dict[str, Any]] = []

    def deliver(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", "")).removeprefix("aaep:agent.")
        if kind == "output.streaming":
            if event["chunk"].strip():
                print(f"  [answer] {event['chunk'].strip()}")
            return
        text = event.get("summary_normal")
        if not text or kind == "state.changed" and event.get("urgency") == "background":
            return
        marker = "!!" if event.get("urgency") == "critical" else "--"
        print(f"{marker} {text}")
        if kind == "awaiting.confirmation":
            self.pending.append(event)


async def run_demo(answer: str | None) -> int:
    announcer = Announcer()
    emitter = Emitter()
    emitter.subscribe(announcer)
    broker = ReplyBroker()
    registry = ToolRegistry([*conversation_tools(), describe_dataset, save_report])
    async with FakeAnthropic(responder=demo_model) as fake:
        client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key)
        loop = AgentLoop(client, registry, broker=broker, config=AgentConfig(model="offline-demo"))
        session = Session(emitter, Producer(model="offline-demo"))
        task = asyncio.ensure_future(
            loop.run(
                session, [], "Summarise my climate data and save a report.", chat=ChatContext()
            )
        )
        while not task.done():
            await asyncio.sleep(0.05)
            while announcer.pending:
                event = announcer.pending.pop(0)
                decision = answer or await asyncio.to_thread(_prompt)
                broker.submit(
                    {
                        "type": "confirmation.reply",
                        "reply_token": event["reply_token"],
                        "decision": decision,
                        "subscription_id": new_subscription_id(),
                        "timestamp": SessionClock().now(),
                        "decided_by": "user:terminal",
                    }
                )
        result = task.result()
        await client.close()
    return 0 if result.status == "completed" else 1


def _prompt() -> str:
    try:
        reply = input("Approve? [y/N] ").strip().lower()
    except EOFError:
        reply = ""
    return "accept" if reply in ("y", "yes") else "reject"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--yes", action="store_const", const="accept", dest="answer", help="approve automatically"
    )
    group.add_argument(
        "--no", action="store_const", const="reject", dest="answer", help="reject automatically"
    )
    args = parser.parse_args(argv)
    return asyncio.run(run_demo(args.answer))


if __name__ == "__main__":
    sys.exit(main())
