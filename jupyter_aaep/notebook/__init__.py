"""The live notebook: shared documents, the notebook's own kernel, and the notebook tools.

Build one :class:`NotebookService` per Jupyter server and hand it to tools as
``ctx.services["notebook"]``; :func:`notebook_tools` lists the tools.
"""

from __future__ import annotations

from ._sessions import KernelInfo, NotebookKernels
from .documents import LiveNotebook, NotebookDocuments, RestoreReport
from .errors import (
    CellNotFound,
    CollaborationUnavailable,
    ExecutionTimeout,
    KernelBusy,
    KernelDied,
    KernelError,
    KernelSpecMissing,
    NotebookError,
    NotebookNotFound,
)
from .executor import ExecutionResult, KernelExecutor
from .service import (
    CellRun,
    NotebookEntry,
    NotebookService,
    NotebookSnapshot,
    cells_fingerprint,
    source_fingerprint,
)
from .tools import notebook_tools

__all__ = [
    "CellNotFound",
    "CellRun",
    "CollaborationUnavailable",
    "ExecutionResult",
    "ExecutionTimeout",
    "KernelBusy",
    "KernelDied",
    "KernelError",
    "KernelExecutor",
    "KernelInfo",
    "KernelSpecMissing",
    "LiveNotebook",
    "NotebookDocuments",
    "NotebookEntry",
    "NotebookError",
    "NotebookKernels",
    "NotebookNotFound",
    "NotebookService",
    "NotebookSnapshot",
    "RestoreReport",
    "cells_fingerprint",
    "notebook_tools",
    "source_fingerprint",
]
