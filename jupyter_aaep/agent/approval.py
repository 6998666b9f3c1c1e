"""When a tool call must wait for the user, and for how long.

Modes are per chat, named by what they ask before:

- ``"ask"`` (the default), *Ask before running code*: calls that run code (irreversible
  tools) and tools that require approval wait for the user; creating, editing, moving and
  deleting cells do not (Undo reverts them).
- ``"ask_all"``, *Ask before every change*: every call that is not read-only waits too, and
  an edit's confirmation shows what changes, line by line.
- ``"auto"``, *Auto*: the calls that need approval are approved on the user's behalf — still
  through a confirmation event, so listeners hear what was approved and the protocol's
  "confirm before irreversible" rule holds — except calls a risk scan flagged, which always
  wait for a person. The scan (:mod:`.code_risk`) is static: auto mode runs whatever it does
  not flag, so it is a convenience for trusted work, not a sandbox.
- ``"plan"``, *Plan first*: each request of the built-in agent starts read-only; the model is
  offered only tools that change nothing plus ``propose_plan``, and the person approves the
  plan once and chooses how the rest of that request runs (:mod:`.plan`). Calls outside a
  plan (an outside agent's over MCP) are asked as in ``ask``.

A chat's mode is stored with it; ``ask``, ``ask_all`` and ``plan`` come back after a restart
(plan mode lets nothing run unasked), ``auto`` never does (the chat then starts in the server's
default mode).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import SettingLocked

if TYPE_CHECKING:  # annotations only: the server's options read this module at start (issue 31)
    from ..aaep.events import Decision, RiskLevel
    from .tools import ActionPreview, ToolSpec

ApprovalMode = Literal["ask", "ask_all", "auto", "plan"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("ask", "ask_all", "auto", "plan")
REMEMBERED_MODES: tuple[ApprovalMode, ...] = ("ask", "ask_all", "plan")
"""Modes a stored chat gets back after a restart; auto must be chosen again each time."""
MODE_LABELS: dict[ApprovalMode, str] = {
    "ask": "Ask before running code",
    "ask_all": "Ask before every change",
    "auto": "Auto",
    "plan": "Plan first",
}
"""What people see for each wire value (the panel's select uses the same words)."""
DEFAULT_TIMEOUTS: dict[str, int] = {"low": 90, "medium": 180, "high": 300}
"""Seconds a confirmation waits by risk level, unless configured (``confirmation_timeouts``)."""


def mode_choices() -> str:
    """The modes for an error message: ``ask (Ask before running code), ...``."""
    return ", ".join(f"{mode} ({MODE_LABELS[mode]})" for mode in APPROVAL_MODES)


@dataclass
class ApprovalPolicy:
    """Per-chat approval rules.

    Parameters
    ----------
    mode
        ``"ask"`` before running code, ``"ask_all"`` before every change, ``"auto"``-approve
        unflagged calls in this chat, or ``"plan"`` first (asks as ``"ask"`` does outside a plan).
    timeouts
        Seconds a confirmation waits, by risk level, before its default decision applies.
        The spec suggests 180–600 s for high risk, 60–180 s for medium and 30–90 s for low.
    clarification_timeout
        Seconds a question to the user waits before the agent goes on without an answer.
    """

    mode: ApprovalMode = "ask"
    allowed: tuple[ApprovalMode, ...] = APPROVAL_MODES
    """The modes the server's administrator lets users choose (admin policy); all by default."""
    timeouts: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TIMEOUTS))
    clarification_timeout: int = 300

    def needs_confirmation(self, tool: ToolSpec, preview: ActionPreview) -> bool:
        """Irreversible tools always confirm (AAEP §4.4); flagged code always confirms; in
        ``ask_all`` every tool that changes something confirms."""
        if tool.irreversible:
            return True
        if self.mode == "ask_all" and not tool.read_only:
            return True
        if preview.requires_confirmation is not None:
            return preview.requires_confirmation or bool(preview.risk_flags)
        return tool.require_confirmation or bool(preview.risk_flags and not tool.read_only)

    def auto_approves(self, preview: ActionPreview) -> bool:
        """Whether the chat's mode answers this confirmation without a person."""
        return self.mode == "auto" and not preview.risk_flags

    def default_decision(self, tool: ToolSpec, risk_level: RiskLevel) -> Decision:
        """What an unanswered confirmation decides: always *reject*, in every mode and at every
        risk. A confirmation is asked only for a step that runs code or changes the person's
        work, and silence (nobody there, a closed laptop, a panel on another chat) must never
        apply one; the AAEP rule (:func:`~jupyter_aaep.aaep.events.default_decision_for`) would
        let a reversible low-risk change go ahead."""
        return "reject"

    def timeout_for(self, risk_level: RiskLevel) -> int:
        return max(1, int(self.timeouts.get(risk_level, 180)))

    def set_mode(self, mode: str) -> None:
        if mode not in APPROVAL_MODES:
            raise ValueError(f"approval mode must be one of {mode_choices()}, not {mode!r}")
        if mode not in self.allowed:
            raise SettingLocked(locked_mode_sentence(mode, self.allowed))
        self.mode = mode

    def restore(self, stored_mode: str) -> None:
        """Take a stored chat's mode back, unless it is one that is never remembered (auto)
        or one the administrator no longer allows."""
        if stored_mode in REMEMBERED_MODES and stored_mode in self.allowed:
            self.mode = stored_mode


def locked_mode_sentence(mode: str, allowed: tuple[ApprovalMode, ...]) -> str:
    """What a user hears when they pick a mode the administrator turned off."""
    choices = " or ".join(f"'{MODE_LABELS[m]}'" for m in allowed)
    label = MODE_LABELS.get(mode, mode)  # type: ignore[call-overload]
    return (
        f"The approval mode '{label}' is turned off by the administrator of this server; "
        f"choose {choices}. The chat keeps its current mode."
    )
