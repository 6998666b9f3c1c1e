"""Finding a notebook's kernel the way JupyterLab does: its session, by path.

A notebook's kernel is the one in its server session (``session_manager``), which JupyterLab
shows and connects to. When the notebook has no session yet (it is closed, or was never run),
one is created with the kernelspec the notebook's metadata names, so the browser finds the
same kernel when the notebook is opened. A kernelspec that is not installed is a clear error
naming it and the installed ones — never a silent fallback to another language.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_server.utils import ensure_async
from tornado import web

from .errors import KernelSpecMissing

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

__all__ = ["KernelInfo", "NotebookKernels"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KernelInfo:
    """The kernel a notebook uses, as people and the model should hear about it."""

    kernel_id: str
    name: str
    display_name: str
    execution_state: str
    started_now: bool = False


class NotebookKernels:
    """Looks up (and if asked, starts) the session kernel of a notebook path."""

    def __init__(self, serverapp: ServerApp) -> None:
        self._serverapp = serverapp
        self._path_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._display_names: dict[str, str] = {}
        """By kernel id: a running kernel's kernelspec does not change, and reading every
        kernelspec from disk cost each lookup about 0.6 ms (every run_cell pays one)."""

    @property
    def _kernels(self) -> Any:
        return self._serverapp.kernel_manager

    async def kernel_for_path(
        self, path: str, *, kernelspec: str | None, start: bool = True
    ) -> KernelInfo | None:
        """The notebook's session kernel; started with *kernelspec* when missing and *start*."""
        async with self._path_locks[path]:
            sessions = self._serverapp.session_manager
            try:
                session = await sessions.get_session(path=path)
            except web.HTTPError:
                session = None
            kernel = (session or {}).get("kernel") or {}
            if kernel.get("id") in self._kernels:
                return await self.info(kernel["id"])
            if not start:
                return None
            name = await self.resolve_kernelspec(kernelspec)
            if session is None:
                session = await sessions.create_session(
                    path=path, name=os.path.basename(path), type="notebook", kernel_name=name
                )
                kernel_id = session["kernel"]["id"]
            else:  # a session whose kernel is gone ("No Kernel" or shut down)
                kernel_id = await sessions.start_kernel_for_session(
                    session["id"],
                    path=path,
                    name=os.path.basename(path),
                    type="notebook",
                    kernel_name=name,
                )
                await sessions.update_session(session["id"], kernel_id=kernel_id)
            log.info("Started kernel %s (%s) for %s", kernel_id, name, path)
            return await self.info(kernel_id, started_now=True)

    async def resolve_kernelspec(self, requested: str | None) -> str:
        """*requested* if installed, the server default when ``None``; else a clear error."""
        specs = await self._specs()
        name = requested or self._kernels.default_kernel_name
        if name in specs:
            return str(name)
        available = ", ".join(
            f"{key} ({(value.get('spec') or {}).get('display_name', key)})"
            for key, value in sorted(specs.items())
        )
        raise KernelSpecMissing(
            f"This notebook asks for the kernel '{name}', which is not installed on this Jupyter "
            f"server. Available kernels: {available or 'none'}. Choose one in JupyterLab with "
            "Kernel → Change Kernel…, or install the missing kernel, then try again."
        )

    async def _specs(self) -> dict[str, Any]:
        manager: Any = self._serverapp.kernel_spec_manager
        return dict(await ensure_async(manager.get_all_specs()))

    async def info(self, kernel_id: str, *, started_now: bool = False) -> KernelInfo:
        """What the kernel is (name, display name) and what it is doing now."""
        model = self._kernels.kernel_model(kernel_id)
        name = str(model.get("name", ""))
        display = self._display_names.get(kernel_id)
        if display is None:
            try:
                specs = await self._specs()
                display = str((specs.get(name, {}).get("spec") or {}).get("display_name", name))
            except Exception:  # noqa: BLE001 - a broken kernelspec file only costs the display name
                display = name
            else:
                self._display_names = {
                    k: v for k, v in self._display_names.items() if k in self._kernels
                }  # those of kernels shut down go
                self._display_names[kernel_id] = display
        state = str(model.get("execution_state", "unknown"))
        return KernelInfo(kernel_id, name, display, state, started_now)
