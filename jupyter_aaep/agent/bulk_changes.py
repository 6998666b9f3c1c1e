"""Destructive changes in bulk always ask, whatever the approval mode.

Why: one deleted cell is easy to see and to undo, so *ask* mode lets single deletions through.
But a request to "delete every cell" (typed by a person, or planted in a file the agent read)
arrives as many small calls, each harmless-looking. This tracker sees one session's calls
together and flags the call that makes the change bulk: more than :data:`MAX_DELETES` cells
deleted, or most of the notebook; the outputs of the whole notebook (or more than
:data:`MAX_CLEARED` cells) cleared. A flagged call carries a risk flag, so it waits for a person
in every mode, *auto* included, and the confirmation says why.

It reads the ``change`` a tool's preview describes (``kind`` ``delete`` / ``clear_outputs``) and
``cells_in_notebook``, so it knows nothing about notebooks itself.
"""

from __future__ import annotations

from dataclasses import replace

from .tools import ActionPreview

__all__ = ["MAX_CLEARED", "MAX_DELETES", "BulkChanges"]

MAX_DELETES = 3
"""Cells one session may delete before each further deletion asks."""
MAX_CLEARED = 5
"""Cells whose outputs one call may clear without asking."""


class BulkChanges:
    """One session's destructive changes so far."""

    def __init__(self) -> None:
        self.deleted = 0

    def check(self, preview: ActionPreview) -> ActionPreview:
        """*preview*, with a risk flag and a required confirmation when this call is a bulk change."""
        reason = self._reason(preview)
        if reason is None:
            return preview
        return replace(
            preview, risk_flags=(*preview.risk_flags, reason), requires_confirmation=True
        )

    def _reason(self, preview: ActionPreview) -> str | None:
        change = preview.extra_context.get("change")
        if not isinstance(change, dict):
            return None
        kind = change.get("kind")
        if kind == "delete":
            self.deleted += 1
            left = preview.extra_context.get("cells_in_notebook")
            before = left + self.deleted - 1 if isinstance(left, int) else None
            if self.deleted > MAX_DELETES:
                return f"this would be cell {self.deleted} deleted in this request"
            if before is not None and self.deleted >= 2 and self.deleted * 2 > before:
                return f"with it, {self.deleted} of the notebook's {before} cells would be deleted in this request"
            return None
        if kind == "clear_outputs":
            cleared = change.get("cells_with_outputs")
            count = len(cleared) if isinstance(cleared, list) else 0
            if change.get("all"):
                return "clears the outputs of the whole notebook"
            if count > MAX_CLEARED:
                return f"clears the outputs of {count} cells"
        return None
