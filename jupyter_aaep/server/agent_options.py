"""The agent's options: the model and its loop, approvals, and what an administrator fixes.

Each is a traitlet of :class:`AgentOptions`, set as ``c.AAEPExtension.<name>`` (the extension
inherits them). An option that feeds a dataclass field or a constructor parameter states that
field's default as a literal, so loading the extension imports none of the classes it configures
(issue 31); ``tests/server/test_option_defaults.py`` holds the two equal. The policies
built from them (:meth:`AgentOptions.chat_policy`, :meth:`AgentOptions.read_admin_policy`) live
here too: they read nothing else.
"""

from __future__ import annotations

from typing import Any

from traitlets import Bool, Dict, Enum, Float, Integer, List, TraitError, Unicode, validate
from traitlets.config import LoggingConfigurable

from ..agent.approval import APPROVAL_MODES, DEFAULT_TIMEOUTS, ApprovalPolicy
from ..agent.grants import SCOPES
from .option_bounds import Lowest, checked
from .policy import AdminPolicy

RISK_LEVELS = tuple(DEFAULT_TIMEOUTS)
LOWEST = {
    "context_window": Lowest(0, zero="none"),
    "chat_budget_usd": Lowest(0, zero="none"),
    "model_images_per_request": Lowest(0, zero="none"),
    "model_image_max_edge": Lowest(64, unit="pixels"),
    "max_tokens": Lowest(1),
    "max_turns": Lowest(1),
    "clarification_timeout": Lowest(1),
}


class AgentOptions(LoggingConfigurable):
    """The model, the agent loop, approvals and the administrator's policy."""

    # -- the model and the agent loop (AgentConfig, ContextSettings, the producer's name) -----------
    model = Unicode(
        "claude-sonnet-5-5",
        config=True,
        help="Anthropic model the agent uses, e.g. 'claude-sonnet-4-5'. Any model served by "
        "ANTHROPIC_BASE_URL works when that points at an Anthropic-compatible server.",
    )

    max_tokens = Integer(
        8192,
        config=True,
        help="Most tokens the model may write in one turn. When an answer reaches it, the user is "
        "told the answer was cut off and can ask to continue.",
    )

    max_turns = Integer(
        25,
        config=True,
        help="Most model turns (a turn ends at each round of tool calls) for one user request. "
        "Reaching it ends the session with an error that says so; the user can then say 'continue'.",
    )

    agent_name = Unicode(
        "Jupyter notebook agent",
        config=True,
        help="The agent's name in every AAEP event (producer.agent_name), as screen readers say it.",
    )

    context_window = Integer(
        0,
        config=True,
        help="The model's context window in tokens. 0 (the default) looks it up by model name "
        "(200000 for the current Claude models). Set it for an Anthropic-compatible server with a "
        "smaller window: old tool results are cleared and old turns summarised before a request "
        "would not fit.",
    )

    context_management = Enum(
        ["auto", "server", "client", "off"],
        default_value="auto",
        config=True,
        help="How a long chat is kept inside the context window. 'auto' (the default) uses the "
        "Messages API's context editing where the server offers it and clears old tool results on "
        "this side where it does not; 'client' never asks the server; 'off' sends the whole "
        "conversation every time (a long chat then fails with 'prompt is too long').",
    )

    model_prices = Dict(
        config=True,
        help="Prices for the cost estimate, in USD per million tokens, by model-name prefix (the "
        "longest matching prefix wins), e.g. {'claude-sonnet': {'input': 3, 'output': 15}}. "
        "'cache_write' defaults to 1.25 x input and 'cache_read' to 0.1 x input. None instead of a price "
        "means the model costs nothing (tokens are counted, no cost is offered), as for the offline demo "
        "model. Models not listed keep the built-in prices of the current Claude models.",
    )

    models = List(
        Unicode(),
        config=True,
        help="Models offered in the panel's model picker when the model endpoint has no Models API "
        "(GET /v1/models); where it has one, its list is shown instead. The configured 'model' is always "
        "offered and is the default. Each chat keeps its choice for its next requests.",
    )

    model_images_per_request = Integer(
        4,
        config=True,
        help="Most images (figures from cell outputs) sent to the model with one request, so it "
        "can read plots. Older images in the conversation are replaced by a short note (the agent "
        "can look again). 0 sends none: the model then only reads each figure's size.",
    )

    model_image_max_edge = Integer(
        1024,
        config=True,
        help="Longest side, in pixels, of a figure (or an MCP tool server's image) sent to the "
        "model; larger ones are downscaled first (and re-encoded as PNG or JPEG) to keep requests small. At least 64.",
    )

    chat_budget_usd = Float(
        0.0,
        config=True,
        help="Estimated cost in USD at which a chat stops asking the model, with an announcement "
        "that says so (the work so far is kept). 0 (the default) means no budget.",
    )

    @validate("model_prices")
    def _prices(self, proposal: Any) -> dict[str, Any]:
        from ..agent.usage import PriceTable  # only when prices are configured

        try:
            PriceTable(proposal["value"])
        except (ValueError, AttributeError) as error:
            raise TraitError(f"model_prices: {error}") from error
        return dict(proposal["value"])

    # -- approvals (ApprovalPolicy) ----------------------------------------------------------------
    approval_mode = Enum(
        list(APPROVAL_MODES),
        default_value="ask",
        config=True,
        help="Approval mode of new chats. 'ask' (Ask before running code): the user approves running "
        "code (a cell, all cells, a kernel restart) and any tool marked risky; creating, editing, "
        "moving and deleting cells do not ask (Undo reverts them). 'ask_all' (Ask before every "
        "change): those changes and clearing outputs ask too, and an edit's request shows the cell's "
        "changes line by line. 'auto' (Auto): approved on the user's behalf, except code a static "
        "risk scan flags (shell, file writes and deletes, installs, network writes, environment and "
        "credential reads, exec/eval, dynamic imports, code that does not parse), which always asks. "
        "'auto' is not a sandbox: code the scan does not flag runs without asking. 'plan' (Plan "
        "first): each request starts read-only, the agent proposes a plan, and the user approves it "
        "once, choosing how the rest of that request runs (asking only for flagged code, or before "
        "each step); calls from outside agents over MCP ask as in 'ask'. Users can switch a chat's "
        "mode at any time; a chat keeps 'ask', 'ask_all' or 'plan' across restarts, never 'auto'.",
    )

    confirmation_timeouts = Dict(
        default_value=dict(DEFAULT_TIMEOUTS),
        config=True,
        help="Seconds a confirmation waits for the user, by risk level ('low', 'medium', 'high'), "
        "before it is rejected (silence never approves a step, whatever its risk). Missing levels "
        "keep their defaults. AAEP suggests 180-600 s for "
        "high risk, 60-180 s for medium and 30-90 s for low.",
    )

    clarification_timeout = Integer(
        300,
        config=True,
        help="Seconds a question from the agent waits for the user's answer before the agent goes on "
        "without it.",
    )

    @validate("confirmation_timeouts")
    def _timeouts(self, proposal: Any) -> dict[str, int]:
        value = proposal["value"]
        unknown = set(value) - set(RISK_LEVELS)
        if unknown:
            raise TraitError(
                f"confirmation_timeouts keys must be low, medium or high; got {sorted(unknown)}."
            )
        for level, seconds in value.items():
            if (
                not isinstance(seconds, int)
                or isinstance(seconds, bool)
                or not 1 <= seconds <= 86400
            ):
                raise TraitError(
                    f"confirmation_timeouts[{level!r}] must be whole seconds from 1 to 86400."
                )
        return {**DEFAULT_TIMEOUTS, **value}

    # -- admin policy (server/policy.py): settings an administrator fixes for every user -----------
    allowed_approval_modes = List(
        Enum(list(APPROVAL_MODES)),
        default_value=list(APPROVAL_MODES),
        config=True,
        help="The approval modes users may choose for a chat, e.g. ['ask', 'ask_all', 'plan'] to turn 'auto' off "
        "for everyone. Chats start in approval_mode, which must be one of them (else the first one is "
        "used); a chat stored in a mode no longer allowed comes back in it. A user who picks another "
        "mode is told the administrator turned it off. The chat state reports the lock (policy.locked).",
    )

    allowed_mcp_stdio_commands = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        config=True,
        help="The commands tool servers (MCP, over stdio) may be started with, by executable name or "
        "absolute path. None (the default) allows any command a user configures; [] allows none. "
        "Reported in the chat state (policy.mcp_stdio_commands); the MCP client enforces it.",
    )

    lock_models = Bool(
        False,
        config=True,
        help="When true, chats may use only 'model' and the models in 'models'; the model endpoint's "
        "own list (GET /v1/models) is not offered, and a user who picks another model is told so.",
    )

    allowed_permission_scopes = List(
        Enum(list(SCOPES)),
        default_value=list(SCOPES),
        config=True,
        help="Where users may give the agent standing permissions ('don't ask again'): any of 'chat', "
        "'notebook', 'always'. [] turns them off. A permission in a scope no longer allowed stops applying.",
    )

    forbidden_permission_rules = List(
        Unicode(),
        default_value=[],
        config=True,
        help="Kinds of step no standing permission may allow, as patterns of rules, e.g. ['run_cell:*'] "
        "(running code always asks) or ['mcp__*']. Users' own 'never' rules still apply.",
    )

    kernel_replies = Bool(
        False,
        config=True,
        help="When false (the default), the kernel answers no approval: approvals are taken from the "
        "side panel, from the %aaep widget's Approve and Reject (drawn and answered in the browser by the "
        "labextension, with your login) and from other clients that log in to Jupyter. Code running in "
        "a kernel can do whatever a widget's Python side does, so an answer from the kernel cannot be "
        "told apart from code answering the agent's request by itself. When true, the old kernel-side "
        "widget buttons answer too, but never for a chat in auto-approve mode, never while "
        "the agent's own code runs in that kernel, and only for a request that kernel's view received.",
    )

    @validate(*LOWEST)
    def _agent_bounds(self, proposal: Any) -> Any:
        return checked(proposal, LOWEST)

    # -- the policies these options make -----------------------------------------------------------
    admin_policy: AdminPolicy
    """Set once at start-up from :meth:`read_admin_policy`."""

    def read_admin_policy(self) -> AdminPolicy:
        """What an administrator fixed; an ``approval_mode`` they do not allow falls back (logged)."""
        allowed = tuple(m for m in APPROVAL_MODES if m in self.allowed_approval_modes) or ("ask",)
        if self.approval_mode not in allowed:
            self.log.warning(
                "AAEP agent: approval_mode '%s' is not in allowed_approval_modes; new chats start in "
                "'%s'.",
                self.approval_mode,
                allowed[0],
            )
            self.approval_mode = allowed[0]
        return AdminPolicy(
            approval_modes=allowed,
            kernel_replies=self.kernel_replies,
            mcp_stdio_commands=None
            if self.allowed_mcp_stdio_commands is None
            else tuple(self.allowed_mcp_stdio_commands),
            models=tuple(dict.fromkeys([self.model, *self.models])) if self.lock_models else None,
            budget_usd=self.chat_budget_usd or None,
            permission_scopes=tuple(s for s in SCOPES if s in self.allowed_permission_scopes),
            forbidden_permission_rules=tuple(self.forbidden_permission_rules),
        )

    def chat_policy(self) -> ApprovalPolicy:
        """A new chat's approval policy."""
        return ApprovalPolicy(
            mode=self.approval_mode,
            allowed=self.admin_policy.approval_modes,
            timeouts=dict(self.confirmation_timeouts),
            clarification_timeout=self.clarification_timeout,
        )
