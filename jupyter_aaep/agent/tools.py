"""Tools the agent can call: one decorator, one registry, one context object.

``@aaep_tool`` turns a plain (sync or async) function into a :class:`ToolSpec`: the name from
the function, the description and parameter texts from the docstring, the input schema from
the type hints, and the AAEP risk metadata beside it, so the approval policy and the events
read one source. A parameter annotated :class:`ToolContext` is injected by the loop and kept
out of the schema.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, overload

from ..aaep.events import RiskLevel
from ..aaep.ids import TOOL_NAME
from ..aaep.redaction import redact_arguments
from ..errors import ToolError
from .schema_from_signature import check_arguments, input_schema, parse_docstring
from .services import AgentServices
from .tool_schema import schema_problem

log = logging.getLogger(__name__)


class StaleApproval(ToolError):
    """What the user approved is no longer what would run (the cell changed): ask again."""


@dataclass
class ToolResult:
    """What a tool returns when plain text is not enough."""

    content: str | list[dict[str, Any]]
    """Text, or Anthropic content blocks (text and image) for the model."""
    summary: str | None = None
    """What a listener hears when the tool finishes, e.g. "Cell 3 ran in 1.2 seconds"."""
    is_error: bool = False
    """The tool ran but failed (e.g. the cell raised): ``tool.completed`` says "error"."""
    error_message: str | None = None
    """With ``is_error``: the short reason listeners get, e.g. "NameError: name 'df' is not defined"."""
    terse: str | None = None
    """The terse result, when there is one worth hearing at terse verbosity (a cell's output)."""
    detail: str | None = None
    """The detailed result, e.g. a cell's whole output (bounded): what "Hear the last output" says."""


@dataclass
class ActionPreview:
    """How one call is described to people before it runs."""

    summary: str
    """What the agent is doing, for ``tool.invoked`` ("Running cell 3")."""
    terse: str | None = None
    detail: str | None = None
    action: str | None = None
    """The confirmation's action text; defaults to the summary."""
    consequence: str | None = None
    extra_context: dict[str, Any] = field(default_factory=dict)
    """Shown with a confirmation, e.g. ``{"code": ..., "cell_id": ...}``."""
    fingerprint: str | None = None
    """Binds an approval to exactly what was shown (e.g. a hash of the cell source)."""
    risk_level: RiskLevel | None = None
    """Overrides the tool's risk for this call (a risk scan may raise it)."""
    risk_flags: tuple[str, ...] = ()
    """Reasons this call is dangerous; flagged calls always ask, even in auto-approve mode."""
    requires_confirmation: bool | None = None
    args_summary: str | None = None


@dataclass
class ToolContext:
    """What a running tool may know and do besides its arguments."""

    tool_call_id: str
    chat_id: str | None = None
    session_id: str | None = None
    """The session the call belongs to: what a cell left running is told in relation to."""
    notebook_path: str | None = None
    reader: str | None = None
    """Who reads and edits through this call: the chat for the built-in agent, the connection
    for an outside agent (``None``: the chat). What it was shown is the base of its edits."""
    services: AgentServices = field(default_factory=AgentServices)
    """Collaborators provided by the host (e.g. ``services.notebook``)."""
    approved_fingerprint: str | None = None
    """The fingerprint of the preview the user accepted; ``None`` when no approval was needed."""
    _ask: Callable[..., Awaitable[Any]] | None = None
    _progress: Callable[..., None] | None = None
    _handoff: Callable[..., Awaitable[None]] | None = None

    async def ask(
        self,
        question: str,
        *,
        choices: list[str] | None = None,
        context: str | None = None,
        default: str | None = None,
    ) -> Any:
        """Ask the user (``awaiting.clarification``); ``None`` when nobody answered in time."""
        if self._ask is None:
            raise ToolError("Asking the user is not available here.")
        return await self._ask(question, choices=choices, context=context, default=default)

    def report_progress(
        self,
        description: str,
        *,
        percent: float | None = None,
        step: int | None = None,
        total_steps: int | None = None,
        eta_seconds: float | None = None,
        announce: bool | None = None,
        summary: str | None = None,
    ) -> None:
        """Emit ``progress.updated`` for a long-running step (rate-limited by subscribers).

        *announce* ``True`` makes it a normal-urgency event (worth saying at normal verbosity),
        ``False`` a background one (for progress bars and detailed listeners); *summary* is
        what is said when it differs from the *description* (the bar's value text).
        """
        if self._progress is None:
            return
        extra: dict[str, Any] = {}
        if eta_seconds is not None:
            extra["eta_seconds"] = eta_seconds
        if announce is not None:
            extra["announce"] = announce
        if summary is not None:
            extra["summary"] = summary
        self._progress(description, percent=percent, step=step, total_steps=total_steps, **extra)

    async def request_handoff(self, reason: str, *, needs: str | None = None) -> None:
        if self._handoff is None:
            raise ToolError("Handing off is not available here.")
        await self._handoff(reason, needs=needs)


PreviewFunc = Callable[..., Awaitable[ActionPreview] | ActionPreview]


@dataclass
class ToolSpec:
    """A registered tool: callable, describable, and carrying its AAEP risk metadata."""

    name: str
    description: str
    input_schema: dict[str, Any]
    func: Callable[..., Any]
    risk_level: RiskLevel = "low"
    irreversible: bool = False
    require_confirmation: bool = False
    read_only: bool = False
    conversational: bool = False
    """Conversation tools (ask_user, request_handoff) talk to the user instead of acting, so
    they produce clarification/handoff events rather than tool.invoked/tool.completed."""
    context_param: str | None = None
    preview_func: PreviewFunc | None = None
    label: str | None = None
    """Short human name, e.g. "Run a cell"; defaults to the name with spaces."""

    # -- decorator-style helpers -----------------------------------------------------------
    def preview(self, func: PreviewFunc) -> PreviewFunc:
        """Register how calls are described to people (``@run_cell.preview``)."""
        self.preview_func = func
        return func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (decorated functions stay usable)."""
        return self.func(*args, **kwargs)

    # -- model-facing ------------------------------------------------------------------------
    def model_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    @property
    def default_decision(self) -> str:
        """What an unanswered confirmation of this tool decides: *reject*, whatever its risk
        (silence never applies a change; :meth:`ApprovalPolicy.default_decision`)."""
        return "reject"

    def declaration(self) -> dict[str, Any]:
        """Everything but the function, as JSON: how a kernel registers its tool with the server
        (``PUT aaep/v1/kernel/tools/{name}``) and how the server lists it back."""
        return {
            "description": self.description,
            "input_schema": self.input_schema,
            "risk_level": self.risk_level,
            "irreversible": self.irreversible,
            "require_confirmation": self.require_confirmation,
            "read_only": self.read_only,
            "label": self.label,
        }

    def human_label(self) -> str:
        return self.label or self.name.replace("_", " ")

    def activity(self) -> str:
        """What doing it is called, to follow "… is": "reading the notebook", "running a cell"."""
        return gerund_phrase(self.human_label())

    def check(self, arguments: Any) -> None:
        problem = check_arguments(self.input_schema, arguments)
        if problem:
            raise ToolError(f"Invalid input for {self.name}: {problem}.")

    async def describe(self, ctx: ToolContext, arguments: dict[str, Any]) -> ActionPreview:
        if self.preview_func is None:
            redacted = redact_arguments(arguments)
            label = self.human_label()
            return ActionPreview(
                summary=f"Starting: {label}.",
                terse=f"{label.capitalize()}.",
                detail=f"Starting: {label}, with {redacted.summary()}.",
                args_summary=redacted.summary(),
            )
        result = self._invoke(self.preview_func, ctx, arguments)
        if inspect.isawaitable(result):
            result = await result
        return typing.cast(ActionPreview, result)

    async def call(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool; sync functions run in a worker thread so the loop stays responsive."""
        if inspect.iscoroutinefunction(self.func):
            raw = await self._invoke(self.func, ctx, arguments)
        else:
            raw = await asyncio.to_thread(self._invoke, self.func, ctx, arguments)
            if inspect.isawaitable(raw):
                raw = await raw
        return as_result(raw)

    def _invoke(self, func: Callable[..., Any], ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        kwargs = dict(arguments)
        if self.context_param:
            kwargs[self.context_param] = ctx
        return func(**kwargs)


_IRREGULAR_GERUNDS = {"run": "running", "get": "getting", "set": "setting", "stop": "stopping"}


def gerund_phrase(label: str) -> str:
    """ "read the notebook" -> "reading the notebook"; a label that does not start with a plain
    verb (an MCP tool's title, "Write File, from the files server") -> "using Write File, …"."""
    verb, _, rest = label.partition(" ")
    lower = verb.lower()
    if not verb or verb != lower or not lower.isalpha():
        return f"using {label}"
    if lower in _IRREGULAR_GERUNDS:
        doing = _IRREGULAR_GERUNDS[lower]
    elif lower.endswith("ie"):
        doing = lower[:-2] + "ying"
    elif lower.endswith("e") and not lower.endswith(("ee", "ye", "oe")):
        doing = lower[:-1] + "ing"
    else:
        doing = lower + "ing"
    return f"{doing} {rest}".rstrip()


def as_result(raw: Any) -> ToolResult:
    """Normalise what a tool returned into a :class:`ToolResult`."""
    if isinstance(raw, ToolResult):
        return raw
    if raw is None:
        return ToolResult(content="Done.")
    if isinstance(raw, str):
        return ToolResult(content=raw)
    if isinstance(raw, list) and all(isinstance(b, dict) and "type" in b for b in raw):
        return ToolResult(content=raw)
    import json

    return ToolResult(content=json.dumps(raw, ensure_ascii=False, default=str))


def _context_param(func: Callable[..., Any]) -> str | None:
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - unresolvable forward references: use raw annotations
        hints = {}
    for name, param in inspect.signature(func).parameters.items():
        annotation = hints.get(name, param.annotation)
        if annotation is ToolContext or annotation == "ToolContext":
            return name
    return None


TOOL_DEFINED_HOOKS: list[Callable[[ToolSpec], None]] = []
"""Called with every tool :func:`make_tool` builds, so a host can pick up tools as they are
defined: the kernel extension registers ``@aaep_tool`` functions of a notebook this way. A hook
that raises is logged and skipped; the tool is still returned."""


def _tool_defined(spec: ToolSpec) -> None:
    for hook in TOOL_DEFINED_HOOKS:
        try:
            hook(spec)
        except Exception:  # a host's hook must not break defining a tool
            log.exception("A TOOL_DEFINED_HOOKS hook failed for tool %s", spec.name)


def make_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    risk_level: RiskLevel = "low",
    irreversible: bool = False,
    require_confirmation: bool | None = None,
    read_only: bool = False,
    conversational: bool = False,
    label: str | None = None,
) -> ToolSpec:
    """Build a :class:`ToolSpec` from *func*; the functional form of :func:`aaep_tool`."""
    tool_name = name or func.__name__
    if not TOOL_NAME.match(tool_name) or len(tool_name) > 64 or "." in tool_name:
        raise ValueError(
            f"tool name {tool_name!r} must be letters, digits, '_' or '-' (at most 64)"
        )
    if risk_level not in ("low", "medium", "high"):
        raise ValueError(f"risk_level must be low, medium or high, not {risk_level!r}")
    doc_description, param_docs = parse_docstring(func.__doc__)
    text = description or doc_description
    if not text:
        raise ValueError(f"tool {tool_name} needs a description (a docstring or description=...)")
    context_param = _context_param(func)
    if require_confirmation is None:
        require_confirmation = irreversible or risk_level == "high"
    spec = ToolSpec(
        name=tool_name,
        description=text,
        input_schema=input_schema(
            func, skip={context_param} if context_param else set(), param_docs=param_docs
        ),
        func=func,
        risk_level=risk_level,
        irreversible=irreversible,
        require_confirmation=require_confirmation,
        read_only=read_only,
        conversational=conversational,
        context_param=context_param,
        label=label,
    )
    _tool_defined(spec)
    return spec


@overload
def aaep_tool(func: Callable[..., Any], /) -> ToolSpec: ...


@overload
def aaep_tool(
    *,
    name: str | None = ...,
    description: str | None = ...,
    risk_level: RiskLevel = ...,
    irreversible: bool = ...,
    require_confirmation: bool | None = ...,
    read_only: bool = ...,
    label: str | None = ...,
) -> Callable[[Callable[..., Any]], ToolSpec]: ...


def aaep_tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk_level: RiskLevel = "low",
    irreversible: bool = False,
    require_confirmation: bool | None = None,
    read_only: bool = False,
    label: str | None = None,
) -> ToolSpec | Callable[[Callable[..., Any]], ToolSpec]:
    """Declare a function as an agent tool, with or without parentheses.

    Parameters
    ----------
    risk_level
        ``"low"``, ``"medium"`` or ``"high"``: how much harm a wrong call could do.
    irreversible
        Whether the effect cannot be undone; irreversible tools always ask first. Every
        confirmation, of any tool, defaults to *reject* when nobody answers.
    require_confirmation
        Force (``True``) or skip (``False``) the confirmation; by default a tool asks when it
        is irreversible or high risk.
    read_only
        Tools that only read may run concurrently with other read-only calls of one turn.
    """
    options = {
        "name": name,
        "description": description,
        "risk_level": risk_level,
        "irreversible": irreversible,
        "require_confirmation": require_confirmation,
        "read_only": read_only,
        "label": label,
    }
    if func is not None:
        return make_tool(func, **options)  # type: ignore[arg-type]

    def wrap(inner: Callable[..., Any]) -> ToolSpec:
        return make_tool(inner, **options)  # type: ignore[arg-type]

    return wrap


class ToolRegistry:
    """The tools one chat offers the model, by name."""

    def __init__(self, tools: Iterable[ToolSpec] = ()) -> None:
        self._tools: dict[str, ToolSpec] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: ToolSpec, *, replace: bool = False) -> None:
        if not isinstance(tool, ToolSpec):
            raise TypeError(f"{tool!r} is not a tool; decorate it with @aaep_tool")
        if tool.name in self._tools and not replace:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        problem = schema_problem(tool.input_schema)
        if problem:
            raise ValueError(f"the tool {tool.name!r} cannot be offered to the model: {problem}")
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def model_tools(self, *, cache: bool = True) -> list[dict[str, Any]]:
        """The ``tools`` request parameter; the last one carries the prompt-cache breakpoint."""
        tools = [tool.model_schema() for tool in self._tools.values()]
        if cache and tools:
            tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
        return tools
