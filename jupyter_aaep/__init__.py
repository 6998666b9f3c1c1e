"""jupyter-aaep: an AI agent for Jupyter notebooks that announces every step as AAEP events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .aaep._lazy import lazy_exports

if TYPE_CHECKING:
    from .agent.tools import ActionPreview, ToolContext, ToolResult, aaep_tool
    from .errors import ToolError

__all__ = ["ActionPreview", "ToolContext", "ToolError", "ToolResult", "__version__", "aaep_tool"]

_WHERE = {
    "ActionPreview": "agent.tools",
    "ToolContext": "agent.tools",
    "ToolResult": "agent.tools",
    "aaep_tool": "agent.tools",
    "ToolError": "errors",
}
"""Imported on first use: Jupyter Server imports this package to find the extension, and a
server nobody opened the agent in should not load the tool machinery (issue 31)."""


__getattr__ = lazy_exports(__name__, _WHERE)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_aaep`` (automatic in kernels, see ``jupyter_aaep.kernel.autoload``):
    registers ``%aaep`` / ``%%aaep`` and picks up ``@aaep_tool`` functions defined in cells.
    Imported here lazily, so ``import jupyter_aaep`` stays light and works without IPython."""
    from .kernel.magic import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_aaep``: ``@aaep_tool`` in cells stops registering kernel tools."""
    from .kernel.magic import unload

    unload(ipython)


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    """The Jupyter server extension (imported lazily: ``import jupyter_aaep`` stays light)."""
    from .server.app import AAEPExtension

    return [{"module": "jupyter_aaep", "app": AAEPExtension}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives (for ``jupyter labextension develop``)."""
    return [{"src": "labextension", "dest": "jupyter-aaep"}]
