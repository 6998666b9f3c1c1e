"""jupyter-aaep: an AI agent for Jupyter notebooks that announces every step as AAEP events."""

from __future__ import annotations

from .agent.tools import ActionPreview, ToolContext, ToolError, ToolResult, aaep_tool

__version__ = "0.1.0"

__all__ = ["ActionPreview", "ToolContext", "ToolError", "ToolResult", "__version__", "aaep_tool"]
