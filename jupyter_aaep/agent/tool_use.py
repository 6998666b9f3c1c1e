"""The ``tool_use`` block of a call that did not come from our model.

The dispatcher reads a call as the Anthropic SDK gives it (``id``, ``name``, ``input``). Calls
asked for by another agent (an ACP agent's MCP call, an outside MCP client's call) are put in
this shape so they go through the same dispatcher, approvals and events as the model's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ToolUse"]


@dataclass
class ToolUse:
    """A ``tool_use`` block as the dispatcher reads it."""

    id: str
    name: str
    input: dict[str, Any]
    type: str = "tool_use"
