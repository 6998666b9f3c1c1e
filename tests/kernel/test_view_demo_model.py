"""The offline demo model's kernel-tool recipe (what ``notebooks/kernel-tools.ipynb`` asks)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from jupyter_aaep.agent.data_blocks import data_block
from jupyter_aaep.testing.demo_model import demo_model, kernel_tool_call

TOOLS = [
    {"name": "get_notebook_state", "input_schema": {"type": "object", "properties": {}}},
    {
        "name": "quarterly_sales",
        "input_schema": {
            "type": "object",
            "properties": {"region": {"type": "string"}, "year": {"type": "integer"}},
        },
    },
]
# As the server writes it (server/kernel_gateway.py): each description inside its data block.
CONTEXT = (
    "<kernel_variables>\nThe request names these variables of the notebook's kernel; the kernel described "
    "them (bounded, a few values only):\n"
    + data_block(
        "kernel variable sales_2024",
        "dict with 4 items: {'Q1': 410, 'Q2': 455, 'Q3': 520, 'Q4': 610}",
    )
    + "\n</kernel_variables>"
)
REQUEST = (
    'Compare {sales_2024} with quarterly_sales("north") and tell me which quarter grew the most'
)


def request(text: str, *results: tuple[dict[str, Any], str, bool]) -> SimpleNamespace:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    for number, (use, content, error) in enumerate(results):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{number}", **use}]}
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{number}",
                        "content": content,
                        **({"is_error": True} if error else {}),
                    }
                ],
            }
        )
    return SimpleNamespace(body={"messages": messages, "tools": TOOLS})


def test_a_written_call_becomes_the_tool_call() -> None:
    call = kernel_tool_call(REQUEST, TOOLS)
    assert call is not None and (call.name, call.input) == ("quarterly_sales", {"region": "north"})
    named = kernel_tool_call("use quarterly_sales('south', year=2024) please", TOOLS)
    assert named is not None and named.input == {"region": "south", "year": 2024}
    assert kernel_tool_call("print(x) and quarterly_sales(region)", TOOLS) is None  # not literals
    assert kernel_tool_call("plot(df)", TOOLS) is None  # not an offered tool
    turn = demo_model(request(f"{REQUEST}\n\n{CONTEXT}"))
    assert [(u.name, u.input) for u in turn.tool_uses] == [("quarterly_sales", {"region": "north"})]


def test_the_answer_compares_with_the_described_variable() -> None:
    use = {"name": "quarterly_sales", "input": {"region": "north"}}
    result = json.dumps({"Q1": 450, "Q2": 470, "Q3": 610, "Q4": 640})
    turn = demo_model(request(f"{REQUEST}\n\n{CONTEXT}", (use, result, False)))
    assert turn.tool_uses == []
    assert (
        "quarterly_sales(region='north') returned 4 values, 2,170 in total; the highest is Q4 with 640."
        in turn.text
    )
    assert "Compared with sales_2024, **Q3 grew the most**: from 520 to 610 (+90)." in turn.text
    assert "| Q2 | 455 | 470 | +15 |" in turn.text and "offline demo model" in turn.text


def test_failures_and_refusals_are_said() -> None:
    use = {"name": "quarterly_sales", "input": {"region": "west"}}
    failed = demo_model(request(REQUEST, (use, "ValueError: No sales for 'west' in 2025.", True)))
    assert failed.text.startswith(
        "quarterly_sales failed: ValueError: No sales for 'west' in 2025."
    )
    declined = demo_model(
        request(REQUEST, (use, "The user declined: the function was not run.", True))
    )
    assert declined.text == "Understood, I did not call quarterly_sales."
    odd = demo_model(request(REQUEST, (use, "a plain text result", False)))
    assert "returned: a plain text result" in odd.text
