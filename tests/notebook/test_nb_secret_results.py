"""A key a cell prints does not reach the model: tool results are masked like events (issue #9).

The real loop, the real SDK, a real kernel and the scripted model, which records every request.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from nb_helpers import on_server_loop
from test_nb_agent import Agent, fake_model  # noqa: F401 - the fixture is used by name

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server

KEY = "sk-ant-api03-" + "Zq7" * 12  # built here so the literal does not sit in the source


@on_server_loop
async def test_a_printed_key_is_masked_in_what_the_model_receives(
    notebook_file,
    service,
    fake_model,
) -> None:
    path = notebook_file("leak.ipynb", [{"id": "c1", "source": f"print('key is {KEY}')"}])
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="Done."),
    )
    agent = Agent(fake_model, service, path)
    task = agent.start("Run the cell.")
    agent.approve(await agent.next_event("awaiting.confirmation", 1))
    result = await asyncio.wait_for(task, 30)
    await agent.client.close()

    assert result.status == "completed"
    [tool_result] = agent.last_tool_results()
    shown = json.dumps(tool_result["content"])
    assert "key is [hidden]" in shown, shown  # the output itself did reach the model
    sent = json.dumps([request.body for request in fake_model.requests])
    assert KEY not in sent and "Zq7Zq7" not in sent
    # The notebook keeps what the cell really printed: masking is for what leaves the machine.
    assert KEY in (await service.open(path)).cell("c1")["outputs"][0]["text"]


@on_server_loop
async def test_an_edit_of_a_cell_with_a_key_keeps_the_key(
    notebook_file,
    service,
    fake_model,
) -> None:
    source = f"API_KEY = '{KEY}'\nrows = 10"
    path = notebook_file("edit.ipynb", [{"id": "c1", "source": source}])
    fake_model.add(
        Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
        # The model writes back what it read: the key is a mask there.
        Turn(
            tool_uses=[
                ToolUse("edit_cell", {"cell_id": "c1", "source": "API_KEY = [hidden]\nrows = 20"})
            ]
        ),
        Turn(tool_uses=[ToolUse("create_cell", {"source": "KEY2 = [hidden]"})]),
        Turn(text="Done."),
    )
    agent = Agent(fake_model, service, path)
    result = await asyncio.wait_for(agent.start("Read 20 rows."), 30)
    await agent.client.close()

    assert result.status == "completed"
    nb = await service.open(path)
    assert nb.cell("c1")["source"] == f"API_KEY = '{KEY}'\nrows = 20"
    assert len(nb) == 1  # the cell with a bare mask was refused
    refused = agent.last_tool_results()[0]
    assert refused["is_error"] and "placeholder for a secret" in json.dumps(refused["content"])
    sent = json.dumps([request.body for request in fake_model.requests])
    assert KEY not in sent
