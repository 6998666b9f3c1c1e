"""MCP, both ways: the notebook as a server for outside agents, heard and approved in its chat.

- :mod:`.outside_agents`: an outside agent's calls on a notebook form one AAEP session in the
  notebook's chat, run through the same dispatcher (approvals, narration) as the agent's own;
- :mod:`.notebook_server`: the MCP server offering the agent's notebook tools with honest
  annotations and a required ``notebook_path``;
- :mod:`.http_endpoint`: Streamable HTTP at ``{base_url}aaep/v1/mcp`` behind Jupyter's login;
- ``python -m jupyter_aaep.mcp``: a stdio bridge to that endpoint (:mod:`.bridge`).

The other direction, the user's MCP servers as the agent's tools, is in
:mod:`jupyter_aaep.tools.mcp_tools`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["OutsideAgents", "build_notebook_server", "check_notebook_path", "mcp_tool"]

_HOMES = {
    "OutsideAgents": ".outside_agents",
    "build_notebook_server": ".notebook_server",
    "check_notebook_path": ".notebook_server",
    "mcp_tool": ".notebook_server",
}


def __getattr__(name: str) -> Any:
    """Imported on first use: the stdio bridge (``python -m jupyter_aaep.mcp``) needs none of
    the server side, whose imports (the MCP SDK, the agent loop) cost seconds on a busy machine,
    longer than an MCP client waits for a stdio server to start."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name], __name__), name)
