"""Where the agent's tools live, whatever their source.

- the built-in notebook tools (:func:`.notebook.notebook_tools`: cells, runs, files, figures),
  working through the notebook service layer (:mod:`jupyter_aaep.notebook`);
- the code-risk scan that decides which code asks first (:mod:`.code_risk`);
- the kernel-tool bridge: functions a notebook's own kernel registers with ``@aaep_tool``
  (:mod:`.kernel_tools`), and the read-only kernel inspection tools ``list_variables`` and
  ``inspect_variable`` (:mod:`.kernel_inspection`).

Server plugin tools come from configuration (``extra_tools``). The agent layer only sees a
:class:`~jupyter_aaep.agent.tools.ToolRegistry`.
"""

from __future__ import annotations

from .kernel_inspection import inspect_variable, kernel_inspection_tools, list_variables
from .kernel_tools import KernelTool, KernelToolRegistry, LiveToolRegistry

__all__ = [
    "KernelTool",
    "KernelToolRegistry",
    "LiveToolRegistry",
    "inspect_variable",
    "kernel_inspection_tools",
    "list_variables",
]
