"""What the server's administrator fixed for every user (admin policy), in one place.

On a shared server (JupyterHub) an administrator sets these in the system-wide Jupyter config
(``/etc/jupyter/jupyter_server_config.json``, or a directory on ``JUPYTER_CONFIG_PATH`` set in
``Spawner.environment``): the approval modes users may choose, whether answers may come from
kernels, which MCP stdio commands may be started, a fixed model list and the per-chat budget.
The chat state carries :meth:`AdminPolicy.describe` (``"policy"``) so clients show a locked
setting as locked; a user's attempt to change one is refused where it is applied
(:class:`~jupyter_aaep.errors.SettingLocked`, HTTP 403, with a sentence).

A lock is a product setting, not a security boundary: Jupyter reads a user's own
``~/.jupyter`` config after the system-wide one, and a user's server runs as that user, so
someone who edits their own config can change it (docs/JUPYTERHUB.md says what to do).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from ..agent.approval import APPROVAL_MODES, MODE_LABELS, ApprovalMode
from ..agent.grants import SCOPES, Scope

__all__ = ["AdminPolicy"]


@dataclass(frozen=True)
class AdminPolicy:
    approval_modes: tuple[ApprovalMode, ...] = APPROVAL_MODES
    kernel_replies: bool = True
    """Reported, not a lock: approvals from notebooks are a server option users never choose (off by default)."""
    mcp_stdio_commands: tuple[str, ...] | None = None
    """``None``: any command; otherwise only these (enforced by the MCP client)."""
    models: tuple[str, ...] | None = None
    """``None``: whatever the model endpoint lists; otherwise only these."""
    budget_usd: float | None = None
    permission_scopes: tuple[Scope, ...] = SCOPES
    """Where users may give the agent standing permissions (``chat``, ``notebook``, ``always``)."""
    forbidden_permission_rules: tuple[str, ...] = ()
    """Rules no standing permission may allow, as patterns (``run_cell:*``, ``mcp__*``)."""

    @property
    def locked(self) -> list[str]:
        """The names of the settings users cannot change (beyond the ones only admins ever set)."""
        names = []
        if set(self.approval_modes) != set(APPROVAL_MODES):
            names.append("approval_mode")
        if self.models is not None:
            names.append("model")
        if self.mcp_stdio_commands is not None:
            names.append("mcp_stdio_commands")
        if self.budget_usd is not None:
            names.append("budget")
        if set(self.permission_scopes) != set(SCOPES) or self.forbidden_permission_rules:
            names.append("permissions")
        return names

    def permission_refused(self, rule: str, scope: Scope) -> str | None:
        """Why the administrator forbids allowing *rule* in *scope*, or ``None``."""
        if scope not in self.permission_scopes:
            allowed = ", ".join(_SCOPE_NAMES[s] for s in self.permission_scopes) or "nowhere"
            return (
                f"The administrator of this server does not allow standing permissions "
                f"{_SCOPE_NAMES[scope]}; they may be given: {allowed}. Nothing was changed."
            )
        if any(fnmatch.fnmatchcase(rule, p) for p in self.forbidden_permission_rules):
            return (
                "The administrator of this server does not allow a standing permission for this "
                "kind of step; it will keep asking you. Nothing was changed."
            )
        return None

    def describe(self) -> dict[str, Any]:
        """The ``policy`` object of the chat state, with one sentence a client can announce."""
        return {
            "locked": self.locked,
            "approval_modes": list(self.approval_modes),
            "kernel_replies": self.kernel_replies,
            "mcp_stdio_commands": None
            if self.mcp_stdio_commands is None
            else list(self.mcp_stdio_commands),
            "models": None if self.models is None else list(self.models),
            "budget_usd": self.budget_usd,
            "permission_scopes": list(self.permission_scopes),
            "forbidden_permission_rules": list(self.forbidden_permission_rules),
            "message": self.sentence(),
        }

    def sentence(self) -> str | None:
        """What the administrator fixed, in words; ``None`` when nothing is."""
        parts = []
        if "approval_mode" in self.locked:
            parts.append(
                "approval modes: " + " or ".join(MODE_LABELS[m] for m in self.approval_modes)
            )
        if self.models is not None:
            parts.append("models: " + ", ".join(self.models))
        if self.mcp_stdio_commands is not None:
            parts.append("tool servers: only " + (", ".join(self.mcp_stdio_commands) or "none"))
        if self.budget_usd is not None:
            parts.append(f"at most ${self.budget_usd:,.2f} per chat")
        if "permissions" in self.locked:
            parts.append(
                "standing permissions: "
                + (" or ".join(_SCOPE_NAMES[s] for s in self.permission_scopes) or "none")
                + (", some kinds of step never" if self.forbidden_permission_rules else "")
            )
        if not parts:
            return None
        return "Set by the administrator of this server: " + "; ".join(parts) + "."


_SCOPE_NAMES = {
    "chat": "for one chat",
    "notebook": "for one notebook",
    "always": "for every notebook",
}
