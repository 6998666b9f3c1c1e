"""The live notebook as a service: shared documents, the notebook's own kernel, and what the agent changed (for undo).

Build one :class:`NotebookService` per Jupyter server and hand it to tools as
``ctx.services.notebook``. This package knows nothing of the agent: the tools that use it
live in :mod:`jupyter_aaep.tools` (:func:`jupyter_aaep.tools.notebook.notebook_tools`).
"""

from __future__ import annotations

from ._sessions import KernelInfo, NotebookKernels
from .documents import LiveNotebook, NotebookDocuments, RestoreReport
from .edit_record import CellOperation, EditRecord, UndoReport
from .errors import (
    CellBusy,
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
    cells_fingerprint,
    source_fingerprint,
)

__all__ = [
    "CellBusy",
    "CellNotFound",
    "CellOperation",
    "CellRun",
    "CollaborationUnavailable",
    "EditRecord",
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
    "RestoreReport",
    "UndoReport",
    "cells_fingerprint",
    "source_fingerprint",
]
