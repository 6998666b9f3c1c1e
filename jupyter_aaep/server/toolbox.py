"""Which tools each chat offers: conversation tools, notebook tools and configured extras.

Everything is loaded once at start-up and every problem is logged in a sentence an
administrator can act on; a tool that cannot be loaded is left out and the server keeps
running. The notebook tools are imported lazily: they need jupyter-collaboration, and the
server must still work (with fewer tools) when they cannot load.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.conversation_tools import conversation_tools
from ..agent.plan import PlanFiles
from ..agent.rules import AppliedRules, RuleFiles, RuleTarget
from ..agent.services import AgentServices, CellRunFollower
from ..agent.tools import ToolRegistry, ToolSpec

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from ..chats.chat import Chat
    from ..notebook.service import NotebookService
    from ..tools.kernel_tools import KernelToolRegistry
    from ..tools.mcp_tools import MCPServers


def load_tool_reference(reference: str) -> list[ToolSpec]:
    """Import ``"package.module:name"``; the name must be an ``@aaep_tool`` (or a list of them).

    Raises ``ValueError`` with a sentence saying what is wrong and how to fix it.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form 'package.module:function'.")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise ValueError(
            f"cannot import {module_name!r} ({type(error).__name__}: {error})."
        ) from error
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{module_name!r} has no attribute {attribute!r}.")
        target = getattr(target, part)
    items = list(target) if isinstance(target, (list, tuple)) else [target]
    if not items or not all(isinstance(item, ToolSpec) for item in items):
        raise ValueError(f"{reference} is not a tool: decorate the function with @aaep_tool.")
    return items


class Toolbox:
    """The tool registry factory handed to the runner, and the collaborators tools use.

    Each collaborator is ``None`` until it loads (the notebook layer may not)."""

    def __init__(self, *, log: logging.Logger) -> None:
        self.log = log
        self.tools: list[ToolSpec] = []
        self.notebooks: NotebookService | None = None
        """The live notebooks and their kernels (jupyter-collaboration)."""
        self.kernel_tools: KernelToolRegistry | None = None
        """Tools the notebooks' kernels define with ``@aaep_tool``."""
        self.mcp: MCPServers | None = None
        """The user's MCP tool servers."""
        self.rules: RuleFiles | None = None
        """The rules files under the server root and the user's own (``agent/rules.py``)."""
        self.plans: PlanFiles | None = None
        """Where plan mode writes the plans a person may edit (``agent/plan.py``)."""

    def agent_services(self, *, long_runs: CellRunFollower | None = None) -> AgentServices:
        """What the runner hands the agent and its tools."""
        rules = self.rules_for if self.rules is not None else None
        numbers = self.cell_numbers if self.notebooks is not None else None
        return AgentServices(
            notebook=self.notebooks,
            long_runs=long_runs,
            rules=rules,
            cell_numbers=numbers,
            plans=self.plans,
        )

    async def cell_numbers(self, notebook_path: str) -> dict[str, int]:
        """The notebook's cell ids and their numbers (1-based), as the person sees them now."""
        if self.notebooks is None or not notebook_path.endswith(".ipynb"):
            return {}
        live = await self.notebooks.open(notebook_path)
        return {cell_id: i + 1 for i, cell_id in enumerate(live.cell_ids())}

    async def rules_for(self, notebook_path: str) -> AppliedRules:
        """The rules that apply to *notebook_path*, matched against its kernel and language
        (read from the live notebook's metadata when it can be opened)."""
        if self.rules is None:
            return AppliedRules()
        kernel_name = language = None
        if self.notebooks is not None and notebook_path.endswith(".ipynb"):
            try:
                metadata = (await self.notebooks.open(notebook_path)).metadata()
            except Exception:  # noqa: BLE001 - a notebook that cannot open only loses scoping
                metadata = {}
            spec = metadata.get("kernelspec") or {}
            info = metadata.get("language_info") or {}
            if isinstance(spec, dict):
                kernel_name = spec.get("name")
                language = spec.get("language")
            if isinstance(info, dict) and info.get("name"):
                language = info["name"]
        target = RuleTarget(
            notebook_path,
            kernel_name=str(kernel_name) if kernel_name else None,
            language=str(language) if language else None,
        )
        return self.rules.applicable(target)

    def load(self, serverapp: ServerApp, extra_tools: Sequence[str]) -> None:
        self._add(conversation_tools(), source="built-in conversation tools")
        self._load_notebook(serverapp)
        for reference in extra_tools:
            try:
                tools = load_tool_reference(reference)
            except ValueError as error:
                self.log.error(
                    "AAEP: extra tool %s was not loaded: %s Fix c.AAEPExtension.extra_tools and restart.",
                    reference,
                    error,
                )
                continue
            self._add(tools, source=reference)

    def _load_notebook(self, serverapp: ServerApp) -> None:
        try:
            from ..notebook.service import NotebookService
            from ..tools.notebook import notebook_tools

            tools = notebook_tools()
            service = NotebookService(serverapp)
        except Exception as error:  # noqa: BLE001 - an optional layer: log and go on without it
            self.log.warning(
                "AAEP: notebook tools are not available (%s: %s); the agent can talk but not edit "
                "or run notebooks. Check that jupyter-collaboration is installed and enabled.",
                type(error).__name__,
                error,
            )
            return
        self.notebooks = service
        self._add(tools, source="notebook tools")
        self._load_kernel_tools(service)

    def _load_kernel_tools(self, notebooks: NotebookService) -> None:
        """The read-only kernel tools, and the registry of tools notebooks' kernels define."""
        from ..tools.kernel_inspection import kernel_inspection_tools
        from ..tools.kernel_tools import KernelToolRegistry

        self._add(kernel_inspection_tools(), source="kernel inspection tools")
        self.kernel_tools = KernelToolRegistry(
            notebooks.executor.process_token, reserved=lambda: [tool.name for tool in self.tools]
        )

    def _add(self, tools: Iterable[ToolSpec], *, source: str) -> None:
        names = {tool.name for tool in self.tools}
        for tool in tools:
            if tool.name in names:
                self.log.error(
                    "AAEP: tool %s from %s clashes with a tool already loaded; it was skipped.",
                    tool.name,
                    source,
                )
                continue
            names.add(tool.name)
            self.tools.append(tool)

    def registry_for(self, chat: Chat) -> ToolRegistry:
        """A fresh registry per session (the runner's ``registry_factory``): the built-in tools,
        then, looked up at every turn, the notebook's kernel tools and the user's MCP servers' tools."""
        from ..tools.kernel_tools import LiveToolRegistry

        kernel_tools, mcp = self.kernel_tools, self.mcp
        if kernel_tools is None and mcp is None:
            return ToolRegistry(self.tools)

        def extra() -> list[ToolSpec]:
            found: list[ToolSpec] = []
            if kernel_tools is not None:
                found.extend(kernel_tools.for_notebook(chat.notebook_path))
            if mcp is not None:
                found.extend(mcp.tools())
            return found

        return LiveToolRegistry(self.tools, extra)

    async def close(self) -> None:
        if self.notebooks is not None:
            await self.notebooks.close()
