"""jupyter-aaep: an AI agent for Jupyter notebooks that announces every step as AAEP events."""

from __future__ import annotations

from .agent.tools import ActionPreview, ToolContext, ToolError, ToolResult, aaep_tool

__version__ = "0.1.0"

__all__ = ["ActionPreview", "ToolContext", "ToolError", "ToolResult", "__version__", "aaep_tool"]


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    """The Jupyter server extension (imported lazily: ``import jupyter_aaep`` stays light)."""
    from .server.app import AAEPExtension

    return [{"module": "jupyter_aaep", "app": AAEPExtension}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives (for ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "jupyter-aaep"}]
