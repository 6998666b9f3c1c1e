"""What can go wrong with a live notebook, as messages the model and the user can act on.

All are :class:`~jupyter_aaep.errors.ToolError` (see :mod:`jupyter_aaep.errors`), so the agent
loop returns them to the model as ``is_error`` results instead of crashing the session::

    AAEPError
    └── ToolError
        └── NotebookError
            ├── CollaborationUnavailable   jupyter-collaboration missing or disabled
            ├── NotebookNotFound           no such notebook
            ├── CellNotFound               no cell with that id
            ├── CellBusy                   someone is typing where a change would go
            └── KernelError
                ├── KernelSpecMissing      the notebook asks for a kernel that is not installed
                ├── KernelBusy             the kernel ran other code for the whole time limit
                ├── KernelDied             the kernel died or was restarted during a run
                └── ExecutionTimeout       the run exceeded its time limit; the kernel was interrupted
"""

from __future__ import annotations

from ..errors import NotebookError

__all__ = [
    "CellBusy",
    "CellNotFound",
    "CollaborationUnavailable",
    "ExecutionTimeout",
    "KernelBusy",
    "KernelDied",
    "KernelError",
    "KernelSpecMissing",
    "NotebookError",
    "NotebookNotFound",
]


class CollaborationUnavailable(NotebookError):
    """The shared document layer (jupyter-collaboration) is not installed or not enabled.

    The tools never fall back to writing the ``.ipynb`` file: with a browser open on the same
    notebook that would be two writers and lost work.
    """


class NotebookNotFound(NotebookError):
    """The path does not name an existing notebook."""


class CellNotFound(NotebookError):
    """No cell has the given id (it may have been deleted by the user)."""


class CellBusy(NotebookError):
    """A person is typing in the cells a change would re-create, so it was not made."""


class KernelError(NotebookError):
    """A kernel could not be started, reached or used."""


class KernelSpecMissing(KernelError):
    """The notebook's kernelspec is not installed on this server."""


class KernelBusy(KernelError):
    """The kernel stayed busy with someone else's code; nothing of ours was sent to it."""


class KernelDied(KernelError):
    """The kernel died, restarted or was shut down while a cell was running."""


class ExecutionTimeout(KernelError):
    """A run took longer than its limit; the kernel was interrupted."""
