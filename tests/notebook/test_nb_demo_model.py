"""The offline demo model (``scripts/start --offline``) on the demo notebook, end to end.

The real loop, the real SDK, the real notebook tools and a real kernel, answered by
:func:`jupyter_aaep.testing.demo_model.demo_model`: what a newcomer sees on a first try.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from nb_helpers import on_server_loop
from test_nb_agent import Agent

from jupyter_aaep.testing.demo_model import demo_model
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.shared_server

DEMO = Path(__file__).resolve().parents[2] / "notebooks" / "demo.ipynb"


@pytest.fixture
def demo_fake() -> Any:
    fake = FakeAnthropic(responder=demo_model).start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


def demo_cells() -> list[dict[str, Any]]:
    cells = json.loads(DEMO.read_text(encoding="utf-8"))["cells"]
    return [
        {"id": c["id"], "cell_type": c["cell_type"], "source": "".join(c["source"])} for c in cells
    ]


def answer(agent: Agent) -> str:
    """Everything the model said, as the streamed chunks arrived."""
    return "".join(str(e.get("chunk", "")) for e in agent.events.of_type("output.streaming"))


async def approve_all(agent: Agent, task: asyncio.Task[Any]) -> int:
    """Accept every confirmation until the session ends; return how many there were."""
    approved = 0
    while not task.done():
        pending = agent.events.of_type("awaiting.confirmation")
        if len(pending) > approved:
            agent.approve(pending[approved])
            approved += 1
        await asyncio.sleep(0.05)
    return approved


@on_server_loop
async def test_plot_the_temperatures_adds_a_cell_and_runs_what_it_needs(
    notebook_file, service, demo_fake
) -> None:
    path = notebook_file("demo.ipynb", demo_cells())
    agent = Agent(demo_fake, service, path)
    task = agent.start("Plot the temperatures")
    approvals = await asyncio.wait_for(approve_all(agent, task), 90)
    result = task.result()
    await agent.client.close()

    assert result.status == "completed"
    # run_cell fails (the data cell has not run), then run_all_cells: two approvals.
    assert approvals == 2
    said = answer(agent)
    assert "I will add a cell that plots temperatures" in said
    assert "Done. All code cells ran without errors." in said
    cells = (await service.open(path)).cells()
    assert len(cells) == 4 and "values = list(temperatures)" in "".join(cells[3]["source"])
    outputs = cells[3]["outputs"]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)
    # matplotlib is a dependency: a real picture, not the text chart of kernels without it
    assert any("image/png" in (o.get("data") or {}) for o in outputs), outputs
    assert "install matplotlib" not in json.dumps(outputs)


@on_server_loop
async def test_explain_then_fix_the_error(notebook_file, service, demo_fake) -> None:
    path = notebook_file("demo.ipynb", demo_cells())
    agent = Agent(demo_fake, service, path)
    task = agent.start("Explain this notebook")
    assert (await asyncio.wait_for(approve_all(agent, task), 60)) == 0
    explained = answer(agent)
    assert "Cell 2 (code, has not run yet) imports statistics" in explained
    assert "offline demo model" in explained

    # The user runs the last cell first: NameError. "Fix the error" runs the cells in order.
    run = await service.run_cell(path, "246e7258", source=demo_cells()[2]["source"], timeout=60)
    assert run.result.outputs[0]["ename"] == "NameError"
    agent.events.events.clear()
    task = agent.start("fix the error")
    assert (await asyncio.wait_for(approve_all(agent, task), 90)) == 1
    await agent.client.close()
    fixed = answer(agent)
    assert (
        "Cell 3 failed with NameError: name 'statistics' is not defined. statistics is defined in cell 2"
        in fixed
    )
    assert (
        "Done. All code cells ran without errors. The last cell printed: Mean temperature: 22.8 °C"
        in fixed
    )
