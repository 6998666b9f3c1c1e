"""The agent's typed collaborators: one frozen value, and a sentence for a host without them."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_aaep.agent.services import (
    AgentServices,
    cells_left_running,
    left_running,
    left_running_sentence,
)
from jupyter_aaep.agent.tools import ToolContext
from jupyter_aaep.errors import ToolError
from jupyter_aaep.tools import _tool_common, kernel_tools


class _SavesOnly:
    """A notebook service of another kind: enough for the runner, not for the notebook tools."""

    async def save(self, path: str) -> bool:
        return True


def test_collaborators_are_fixed_once_built() -> None:
    services = AgentServices()
    assert services.notebook is None and services.long_runs is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        services.notebook = _SavesOnly()  # type: ignore[misc]
    assert ToolContext(tool_call_id="t").services == AgentServices()


@pytest.mark.parametrize(
    ("service_of", "said"),
    [
        (_tool_common.service_of, "Notebook tools are not available here"),
        (kernel_tools.service_of, "Kernel tools are not available here"),
    ],
)
@pytest.mark.parametrize("notebook", [None, _SavesOnly()])
def test_tools_say_when_the_host_has_no_notebook_service_of_their_kind(
    service_of: object, said: str, notebook: object
) -> None:
    ctx = ToolContext(tool_call_id="t", services=AgentServices(notebook=notebook))  # type: ignore[arg-type]
    with pytest.raises(ToolError, match=said):
        service_of(ctx)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("numbers", "sentence"),
    [
        ([4], "Cell 4 is still running; you will hear when it ends."),
        ([4, 6], "Cell 4 and cell 6 are still running; you will hear when they end."),
        (
            [1, 2, 3, 5],
            "Cell 1, cell 2, cell 3 and cell 5 are still running; you will hear when they end.",
        ),
        ([None], "A cell is still running; you will hear when it ends."),
    ],
)
def test_the_last_words_name_every_cell_left_running_and_are_read_back(
    numbers: list[int | None], sentence: str
) -> None:
    """The ``%aaep`` view waits for as many ends as the sentence names (not just the first):
    the count travels as the ``jaaep_cells`` extension beside the words."""
    assert left_running_sentence(numbers) == sentence
    left = left_running(numbers)
    assert left.sentence == sentence
    ext = left.extension()
    event = {"extensions": {ext.prefix: dict(ext.data)}}
    assert cells_left_running(event) == len(numbers)
    assert cells_left_running({"summary_normal": f"Trained it in cell 2. {sentence}"}) == 0
    assert cells_left_running({"extensions": {"jaaep_cells": {"left_running": "2"}}}) == 0
