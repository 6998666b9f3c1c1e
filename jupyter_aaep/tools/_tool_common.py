"""What the notebook tools share: the service and path from the context, and cell placement."""

from __future__ import annotations

from ..agent.tools import ToolContext
from ..errors import ToolError
from ..notebook.documents import LiveNotebook
from ..notebook.service import NotebookService, source_fingerprint

__all__ = ["MISSING", "chat_path", "service_of", "target_index"]

MISSING = source_fingerprint("\0 the cell did not exist when this was shown")


def service_of(ctx: ToolContext) -> NotebookService:
    """The host's notebook service, which the notebook tools need whole (not only the part the
    runner calls), so a host that offers another kind gets a sentence, not an AttributeError."""
    service = ctx.services.notebook
    if not isinstance(service, NotebookService):
        raise ToolError("Notebook tools are not available here (no notebook service).")
    return service


def chat_path(ctx: ToolContext, override: str | None = None) -> str:
    path = override or ctx.notebook_path
    if not path:
        raise ToolError("This chat is not attached to a notebook; open one in JupyterLab first.")
    return path


def target_index(
    nb: LiveNotebook, after: str | None, before: str | None, position: int | None
) -> int:
    """The 0-based index a new or moved cell should take (the end when nothing is given)."""
    if sum(x is not None for x in (after, before, position)) > 1:
        raise ToolError("Give only one of after_cell_id, before_cell_id or position.")
    if after is not None:
        return nb.index_of(after) + 1
    if before is not None:
        return nb.index_of(before)
    if position is not None:
        if position < 1:
            raise ToolError("position counts from 1 (the first cell).")
        return min(position, len(nb) + 1) - 1
    return len(nb)
