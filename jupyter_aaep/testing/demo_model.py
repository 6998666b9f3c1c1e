"""The offline demo model: a scripted stand-in for Claude that uses the real notebook tools.

It reads the conversation like the real model would and picks its next step from a few
keywords, so a newcomer can try the whole product (streaming, tool steps, approvals,
announcements) without an account: ``scripts/start --offline``. It always says it is the
offline demo model, so nobody mistakes it for the real thing.
"""

from __future__ import annotations

import re
from typing import Any

from ._wire import ToolUse, Turn

_PACE = 0.015  # seconds between streamed events: slow enough to see and hear the stream

HELP = (
    "I am the offline demo model, so I only know a few requests. Try: "
    "*convert the temperatures to Fahrenheit*, *summarise the readings*, or *ask me a question*."
)


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def request_and_steps(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], set[str]]:
    """The latest user request, the tool results that answered it so far, and the tools used."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] != "user":
            continue
        content = message["content"]
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        if any(t.strip() for t in texts):
            later = messages[index + 1 :]
            steps = [r for m in later for r in _tool_results(m)]
            used = {
                str(b.get("name"))
                for m in later
                if m["role"] == "assistant" and isinstance(m["content"], list)
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            return " ".join(texts), steps, used
    return "", [], set()


def _turn(text: str, *tools: ToolUse) -> Turn:
    return Turn(text=text, tool_uses=list(tools), chunk_delay=_PACE, text_chunk_size=4)


def demo_model(request: Any) -> Turn:
    """Answer one Messages API request (``request.body`` is the request JSON)."""
    text, steps, used = request_and_steps(request.body.get("messages", []))
    wants = text.lower()
    if not steps:
        return _turn("Let me read the notebook first.", ToolUse("get_notebook_state", {}))
    last = steps[-1]
    last_text = result_text(last)
    if last.get("is_error"):
        if "declined" in last_text or "not run" in last_text:
            return _turn("Understood, I did not do that. Tell me what you would prefer instead.")
        return _turn(f"That step failed: {last_text.splitlines()[0] if last_text else 'no details'}")
    if len(steps) == 1:
        if "fahrenheit" in wants or "convert" in wants:
            code = (
                "fahrenheit = [round(t * 9 / 5 + 32, 1) for t in temperatures]\n"
                "print(\"Temperatures in Fahrenheit:\", fahrenheit)"
            )
            return _turn(
                "I will add a cell that converts the temperatures to Fahrenheit, then run it.",
                ToolUse("create_cell", {"source": code, "cell_type": "code"}),
            )
        if "summar" in wants or "markdown" in wants:
            summary = (
                "## Findings (offline demo model)\n\n"
                "- Temperatures rise through the week, from 21.5 °C on Monday to 24.0 °C on Friday.\n"
                "- Humidity stays between 39 % and 45 %, lowest on the warmest day."
            )
            return _turn(
                "I will add a markdown cell with what the readings show.",
                ToolUse("create_cell", {"source": summary, "cell_type": "markdown"}),
            )
        if "question" in wants or "ask me" in wants:
            return _turn(
                "",
                ToolUse("ask_user", {"question": "Which unit should I use for the temperatures?", "choices": ["Celsius", "Fahrenheit"]}),
            )
        cells = re.search(r"(\d+) cells?", last_text)
        count = f"Your notebook has {cells.group(1)} cells. " if cells else ""
        return _turn(f"{count}{HELP}")
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", last_text)
    if created:
        return _turn("The cell is in place. Now I will run it.", ToolUse("run_cell", {"cell_id": created.group(1)}))
    if last_text.startswith("Created markdown"):
        return _turn("Done. I added the findings as a markdown cell at the end of the notebook.")
    if last_text.startswith("The user answered"):
        return _turn(f"Thanks. {last_text.removeprefix('The user answered: ')} it is. {HELP}")
    if "NameError" in last_text and "run_all_cells" not in used:
        return _turn(
            "The new cell needs variables from the earlier cells, which have not run in this kernel yet. "
            "I will run all cells from the top.",
            ToolUse("run_all_cells", {}),
        )
    if "Last cell's outputs:" in last_text:
        lines = [line.strip() for line in last_text.split("Last cell's outputs:", 1)[1].splitlines()]
        printed = [line for line in (re.sub(r"^\[[a-z_ ]+\]\s*", "", x) for x in lines) if line and line != "none"]
        shown = f" The last cell printed: {printed[0]}" if printed else ""
        return _turn(f"Done. All code cells ran without errors.{shown}")
    first_line = next((line for line in last_text.splitlines() if line.strip()), "")
    if "raised" in last_text or "Stopped at cell" in last_text:
        return _turn(f"The code failed: {first_line} Have a look at the cell's output; I can try a fix if you like.")
    return _turn(f"Done. {first_line}".strip())
