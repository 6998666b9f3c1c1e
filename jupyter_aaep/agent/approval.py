"""When a tool call must wait for the user, and for how long.

Modes are per chat: ``"ask"`` (the default) asks before every call that needs approval;
``"auto"`` approves those calls on the user's behalf — still through a confirmation event, so
listeners hear what was approved and the protocol's "confirm before irreversible" rule holds —
except calls a risk scan flagged, which always wait for a person. Auto mode is never persisted.
The scan (:mod:`.code_risk`) is static: auto mode runs whatever it does not flag, so it is a
convenience for trusted work, not a sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..aaep.events import RiskLevel
from .tools import ActionPreview, ToolSpec

ApprovalMode = Literal["ask", "auto"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("ask", "auto")


@dataclass
class ApprovalPolicy:
    """Per-chat approval rules.

    Parameters
    ----------
    mode
        ``"ask"`` every time, or ``"auto"``-approve unflagged calls in this chat.
    timeouts
        Seconds a confirmation waits, by risk level, before its default decision applies.
        The spec suggests 180–600 s for high risk, 60–180 s for medium and 30–90 s for low.
    clarification_timeout
        Seconds a question to the user waits before the agent goes on without an answer.
    """

    mode: ApprovalMode = "ask"
    timeouts: dict[str, int] = field(default_factory=lambda: {"low": 90, "medium": 180, "high": 300})
    clarification_timeout: int = 300

    def needs_confirmation(self, tool: ToolSpec, preview: ActionPreview) -> bool:
        """Irreversible tools always confirm (AAEP §4.4); flagged code always confirms."""
        if tool.irreversible:
            return True
        if preview.requires_confirmation is not None:
            return preview.requires_confirmation or bool(preview.risk_flags)
        return tool.require_confirmation or bool(preview.risk_flags and not tool.read_only)

    def auto_approves(self, preview: ActionPreview) -> bool:
        """Whether the chat's mode answers this confirmation without a person."""
        return self.mode == "auto" and not preview.risk_flags

    def timeout_for(self, risk_level: RiskLevel) -> int:
        return max(1, int(self.timeouts.get(risk_level, 180)))

    def set_mode(self, mode: str) -> None:
        if mode not in APPROVAL_MODES:
            raise ValueError(f"approval mode must be one of {', '.join(APPROVAL_MODES)}, not {mode!r}")
        self.mode = mode
