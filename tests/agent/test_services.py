"""The agent's typed collaborators: one frozen value, and a sentence for a host without them."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_aaep.agent.services import AgentServices
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
