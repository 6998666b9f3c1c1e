"""``%aaep`` / ``%%aaep``: ask the notebook's agent from a cell, and control it.

Loaded by ``%load_ext jupyter_aaep`` or automatically (``{sys.prefix}/etc/ipython/
ipython_kernel_config.json``, see :mod:`.autoload`). The magic returns at once: the request goes
to the server, and the live view (an ipywidgets view updated by a task on the kernel's event loop)
follows the session, so the kernel stays free to run the cells the agent asks for.

Every failure is one sentence printed to the cell's error stream; nothing is raised into the
user's cell, and a request that could not be sent is still in the cell to run again.
"""

from __future__ import annotations

import logging
import re
import shlex
import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ..words import plural
from ._describe import describe
from .client import KernelAPIError, KernelClient
from .runtime import lookup, register, remove

HELP = """\
%aaep <request>          ask the notebook's agent (the chat the side panel shows); returns at once
%%aaep                   the rest of the cell is the request
{name}                   in a request: the agent also gets a short description of variable name
                         (type, shape, columns, a few values); {{ and }} are literal braces
%aaep status             the chat's state, the model, kernel tools, requests waiting for you
%aaep tools              the kernel tools this notebook's agent can call
%aaep tools --remove NAME   stop offering kernel tool NAME to the agent
%aaep stop | pause | resume | revert
                         stop the running request, pause or resume it, undo its notebook edits
%aaep --help             this text

Kernel tools: decorate a function in a cell with @aaep_tool (from jupyter_aaep import aaep_tool);
the agent can call it from its next turn. Re-running the cell updates it; restarting the kernel
removes it."""

COMMANDS = ("status", "tools", "stop", "pause", "resume", "revert", "help", "--help", "-h")
MAX_CONTEXT_NAMES = 8
CONTEXT_CHARS = 2000
_REFERENCE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][\w.]*)\}")


def say(message: str) -> None:
    """One sentence to the user, on the cell's error stream (never a traceback)."""
    print(message, file=sys.stderr)


def references(text: str) -> list[str]:
    """The ``{name}`` references of a request, in order, once each (``{{`` escapes a brace)."""
    names: list[str] = []
    for match in _REFERENCE.finditer(text):
        name = match.group(1)
        if name and name not in names:
            names.append(name)
    return names


def build_context(text: str, namespace: dict[str, Any]) -> list[dict[str, str]]:
    """``[{"name", "description"}]`` for the request's references; ``ValueError`` names an unknown one."""
    names = references(text)
    if len(names) > MAX_CONTEXT_NAMES:
        raise ValueError(
            f"The request refers to {len(names)} variables; at most {MAX_CONTEXT_NAMES} can be "
            "described. The request was not sent."
        )
    context = []
    for name in names:
        found, value = lookup(name, namespace)
        if not found:
            raise ValueError(
                f"{{{name}}}: {value} Write {{{{{name}}}}} for literal braces. "
                "The request was not sent."
            )
        context.append({"name": name, "description": describe(value, CONTEXT_CHARS)})
    return context


@magics_class
class AAEPMagics(Magics):
    """The ``%aaep`` line and cell magic."""

    def client(self) -> KernelClient:
        return KernelClient.from_environment(self.shell)

    @no_var_expand  # {name} is ours to describe, not IPython's to substitute
    @line_cell_magic
    def aaep(self, line: str, cell: str | None = None) -> None:
        """Ask the notebook's agent, or control it: see ``%aaep --help``."""
        try:
            self._dispatch(line, cell)
        except KernelAPIError as error:
            say(str(error))
        except Exception as error:  # noqa: BLE001 - never a traceback in the user's cell
            say(
                f"%aaep failed unexpectedly: {type(error).__name__}: {error}. Nothing was lost; "
                "run the cell again, and report this if it persists."
            )

    def _dispatch(self, line: str, cell: str | None) -> None:
        if cell is not None:
            text = "\n".join(part for part in (line.strip(), cell.strip()) if part)
            self._request(text)
            return
        words = line.strip().split(None, 1)
        command = words[0].lower() if words else ""
        rest = words[1] if len(words) > 1 else ""
        # A command is the word alone ("%aaep stop"); "%aaep stop the timer from flickering" is a request.
        if command in COMMANDS and (not rest or (command == "tools" and rest.startswith("-"))):
            self._command(command, rest)
        else:
            self._request(line.strip())

    # -- requests --------------------------------------------------------------------------------
    def _request(self, text: str) -> None:
        if not text:
            say(
                "Write a request after %aaep, for example: %aaep plot {df} by month. %aaep --help lists "
                "the commands."
            )
            return
        namespace = self.shell.user_ns if self.shell is not None else {}
        try:
            context = build_context(text, namespace)
        except ValueError as problem:
            say(str(problem))
            return
        client = self.client()
        view_class = _live_view()
        if view_class is not None:
            view = _make_view(view_class, client, text, context)
            if view is not None:
                from IPython.display import display

                display(view.widget)  # type: ignore[no-untyped-call]
                view.start()
                return
        answer = client.start_request(text, context)
        if answer.get("status") == "guidance":
            print(
                "The agent is already working, so this was sent to it as guidance; follow it in the "
                "side panel."
            )
        else:
            print("The request was sent to this notebook's agent; follow it in the side panel.")

    # -- commands --------------------------------------------------------------------------------
    def _command(self, command: str, rest: str) -> None:
        if command in ("help", "--help", "-h"):
            print(HELP)
        elif command == "status":
            print(_status_text(self.client().status()))
        elif command == "tools":
            self._tools(rest)
        else:
            self._control(command)

    def _tools(self, rest: str) -> None:
        args = shlex.split(rest)
        if args and args[0] == "--remove":
            if len(args) != 2:
                say("Name one tool to remove: %aaep tools --remove NAME.")
                return
            name = args[1]
            known_here = remove(name)
            try:
                self.client().delete_tool(name)
            except KernelAPIError as error:
                if error.status == 404:
                    if known_here:
                        print(
                            f"Kernel tool {name} was removed from this kernel; the agent did not have it."
                        )
                        return
                    say(f"There is no kernel tool named {name}; %aaep tools lists them.")
                    return
                raise
            print(f"Kernel tool {name} was removed; the agent no longer sees it.")
            return
        if args:
            say(f"Unknown option {args[0]!r}: use %aaep tools, or %aaep tools --remove NAME.")
            return
        tools = self.client().tools()
        if not tools:
            print(
                "This notebook's agent has no kernel tools. Define one in a cell with @aaep_tool "
                "(from jupyter_aaep import aaep_tool)."
            )
            return
        lines = [f"This notebook's agent can call {plural(len(tools), 'kernel tool')}:"]
        for tool in tools:
            description = str(tool.get("description") or "").strip().splitlines()
            risk = tool.get("risk_level", "low")
            asks = (
                ", asks first"
                if tool.get("require_confirmation") or tool.get("irreversible")
                else ""
            )
            lines.append(
                f"  {tool.get('name')} ({risk} risk{asks})"
                + (f": {description[0]}" if description else "")
            )
        print("\n".join(lines))

    def _control(self, action: str) -> None:
        answer = self.client().send({"kind": "control", "action": action}) or {}
        if action == "stop":
            print(
                "The agent was stopped."
                if answer.get("stopped")
                else "The agent was not working; nothing to stop."
            )
        elif action == "pause":
            print(
                "The agent will pause before its next step."
                if answer.get("paused")
                else "The agent was not working; nothing to pause."
            )
        elif action == "resume":
            print(
                "The agent resumed."
                if answer.get("resumed")
                else "The agent was not paused; nothing to resume."
            )
        else:
            print(str(answer.get("summary") or "The agent's last notebook edits were undone."))


_STATES = {
    "running": "working",
    "awaiting": "waiting for your answer",
    "paused": "paused",
    "idle": "idle",
}


def _status_text(status: dict[str, Any]) -> str:
    """``%aaep status`` as sentences (read aloud well by a screen reader)."""
    lines = [f"Notebook: {status.get('notebook_path') or 'unknown'}."]
    chat = status.get("chat_id")
    lines.append(f"Chat: {chat}." if chat else "Chat: none yet; the first request creates it.")
    state = str(status.get("status") or "idle")
    lines.append(f"The agent is {_STATES.get(state, state)}.")
    if status.get("model_configured"):
        lines.append("The model is configured.")
    else:
        problem = status.get("model_problem") or "no model is configured"
        lines.append(f"The model is not ready: {problem}")
    tools = list(status.get("tools") or [])
    lines.append("Kernel tools: " + (", ".join(map(str, tools)) + "." if tools else "none."))
    pending = list(status.get("pending") or [])
    if pending:
        lines.append(f"Waiting for your answer ({len(pending)}):")
        for item in pending:
            text = (
                item.get("summary")
                or item.get("question")
                or item.get("action")
                or item.get("type")
                if isinstance(item, dict)
                else item
            )
            lines.append(f"  {text}")
    return "\n".join(lines)


def _live_view() -> Any:
    """The widget view class (``jupyter_aaep.kernel.view.LiveView``), or ``None`` without it."""
    try:
        from .view import LiveView
    except ImportError:
        return None
    return LiveView


def _make_view(
    view_class: Any, client: KernelClient, text: str, context: list[dict[str, str]]
) -> Any:
    """``LiveView(client, text, context=...)``; the view sends the request after subscribing."""
    import inspect

    try:
        accepts_context = "context" in inspect.signature(view_class).parameters
    except (TypeError, ValueError):
        accepts_context = False
    if context and not accepts_context:
        return None  # this view cannot carry the {name} context: send it here instead
    return (
        view_class(client, text, context=context) if accepts_context else view_class(client, text)
    )


# -- kernel tools ---------------------------------------------------------------------------------
def on_tool_defined(spec: Any) -> None:
    """``TOOL_DEFINED_HOOKS`` entry: a notebook's ``@aaep_tool`` becomes a tool of its chat."""
    module = getattr(spec.func, "__module__", "") or ""
    if module == "jupyter_aaep" or module.startswith("jupyter_aaep."):
        return  # the package's own tools (imported in the kernel by a user) stay server tools
    register(spec)
    try:
        KernelClient.from_environment().put_tool(spec)
    except KernelAPIError as error:
        say(f"{spec.name} is defined, but the agent cannot call it: {error}")
    except Exception as error:  # noqa: BLE001 - never raised into the user's cell
        say(
            f"{spec.name} is defined, but registering it with the agent failed: {type(error).__name__}: {error}"
        )
    else:
        print(
            f"Kernel tool {spec.name} is ready: this notebook's agent can call it from its next turn."
        )


def load(ipython: Any) -> None:
    """Register the magic and the tool hook (loading twice changes nothing). The kernel's
    credential moves out of the environment now, before any cell runs (``credential.py``)."""
    from ..agent.tools import TOOL_DEFINED_HOOKS
    from .credential import take

    take()

    ipython.register_magics(AAEPMagics)
    if on_tool_defined not in TOOL_DEFINED_HOOKS:
        TOOL_DEFINED_HOOKS.append(on_tool_defined)
    from . import figures

    if figures.enabled_by_environment():
        try:
            figures.enable(ipython)
        except Exception:  # figures stay images; %aaep must load all the same
            logging.getLogger(__name__).debug("explorable figures are off", exc_info=True)


def unload(ipython: Any) -> None:
    from ..agent.tools import TOOL_DEFINED_HOOKS
    from . import figures

    figures.disable(ipython)

    while on_tool_defined in TOOL_DEFINED_HOOKS:
        TOOL_DEFINED_HOOKS.remove(on_tool_defined)
