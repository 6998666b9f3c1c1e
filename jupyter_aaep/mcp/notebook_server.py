"""The notebook as an MCP server: the agent's own notebook tools, offered to outside agents.

The tools are the built-in ones (:mod:`jupyter_aaep.tools`), under the same names, each with a
required ``notebook_path`` (relative to the server root, never outside it). Their MCP
annotations say honestly what they do: reads are ``readOnlyHint``; runs, edits and deletions
``destructiveHint``; nothing reaches outside this machine (``openWorldHint: false``). Calls run
in the notebook's chat through :class:`~.outside_agents.OutsideAgents`, so they are narrated and
approved there; their results are the same compact text the built-in agent gets, with figures
as MCP image content.
"""

from __future__ import annotations

import copy
import logging
import os
import posixpath
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from .._version import __version__
from ..agent.tools import ToolSpec
from ..errors import ToolError
from .credentials import CREDENTIAL_SCOPE_KEY, session_key
from .outside_agents import OutsideAgents

log = logging.getLogger(__name__)

__all__ = [
    "NOTEBOOK_PATH_HELP",
    "build_notebook_server",
    "check_inside_root",
    "check_notebook_path",
    "mcp_tool",
]

NOTEBOOK_PATH_HELP = (
    "The notebook to work on, relative to the Jupyter server's root folder, e.g. "
    '"analysis.ipynb" or "reports/q3.ipynb". The person watching it approves what needs approval.'
)
ADDITIVE = frozenset({"create_cell"})
"""Tools that change the notebook only by adding to it (MCP: not destructive)."""
MAX_ARGUMENT_CHARS = 1_000_000
MAX_PATH_CHARS = 4096
"""PATH_MAX on Linux; a longer path names no file (and resolving it would cost time)."""
UNKNOWN_CLIENT = "An outside agent"

FileExists = Callable[[str], Awaitable[bool]]


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """The MCP description of one of the agent's tools, with ``notebook_path`` required."""
    schema = copy.deepcopy(spec.input_schema)
    properties = schema.setdefault("properties", {})
    properties["notebook_path"] = {"type": "string", "description": NOTEBOOK_PATH_HELP}
    schema["required"] = [
        "notebook_path",
        *[r for r in schema.get("required", []) if r != "notebook_path"],
    ]
    schema.setdefault("type", "object")
    read_only = spec.read_only
    return types.Tool(
        name=spec.name,
        title=spec.human_label()[:1].upper() + spec.human_label()[1:],
        description=spec.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=spec.human_label()[:1].upper() + spec.human_label()[1:],
            read_only_hint=read_only,
            destructive_hint=not (read_only or spec.name in ADDITIVE),
            open_world_hint=False,
        ),
    )


def check_notebook_path(value: Any) -> str:
    """A notebook path inside the server root, normalised; a :class:`ToolError` sentence otherwise."""
    if value is not None and not isinstance(value, str):
        kind = {
            bool: "a boolean",
            int: "a number",
            float: "a number",
            list: "a list",
            dict: "an object",
        }
        raise ToolError(
            "The notebook_path argument must be a string, the notebook's path relative to the Jupyter "
            f'root (e.g. "analysis.ipynb"); it was {kind.get(type(value), "another value")}.'
        )
    if not value or not value.strip():
        raise ToolError(
            "The notebook_path argument is required: the notebook's path relative to the Jupyter root, "
            'e.g. "analysis.ipynb".'
        )
    if len(value) > MAX_PATH_CHARS:
        raise ToolError(
            f"The notebook_path is {len(value):,} characters long; a path has at most {MAX_PATH_CHARS:,}."
        )
    shown = repr(value[:200])
    if "\0" in value:
        raise ToolError(
            f"The notebook_path {shown} contains a NUL character, which no file name can; send the path alone."
        )
    path = value.strip().replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise ToolError(
            f'The notebook_path {shown} must be relative to the Jupyter root, e.g. "analysis.ipynb".'
        )
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise ToolError(
            f"The notebook_path {shown} is outside the Jupyter root; only notebooks inside it can be used."
        )
    if not normal.endswith(".ipynb") or normal == ".":
        raise ToolError(f"The notebook_path {shown} is not a notebook (an .ipynb file).")
    return normal


def check_inside_root(root_dir: str, path: str) -> None:
    """Refuse, with a sentence, a notebook whose real file is outside *root_dir*: a link in the
    root that leads out of it would let an outside agent read and save files the server's root
    was meant to keep it from."""
    root = os.path.realpath(root_dir)
    try:
        real = os.path.realpath(os.path.join(root, path))
    except (OSError, ValueError) as error:
        raise ToolError(
            f"The notebook_path {path[:200]!r} cannot be used ({type(error).__name__})."
        ) from error
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise ToolError(
            f"The notebook_path {path[:200]!r} leads outside the Jupyter root through a link; only notebooks "
            "inside the root can be used."
        )


def build_notebook_server(
    tools: list[ToolSpec],
    agents: OutsideAgents,
    *,
    file_exists: FileExists,
) -> Server[Any]:
    """The low-level MCP server whose tools run in the notebooks' chats."""
    offered = {spec.name: spec for spec in tools if not spec.conversational}
    listing = [mcp_tool(spec) for spec in offered.values()]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            return await _call(ctx, params)
        except ToolError as error:
            return _error_result(str(error))

    async def _call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = offered.get(params.name)
        if spec is None:
            raise ToolError(
                f"There is no tool named {params.name[:100]!r}. Available tools: {', '.join(offered)}."
            )
        arguments = dict(params.arguments or {})
        if len(repr(arguments)) > MAX_ARGUMENT_CHARS:
            raise ToolError(
                f"The arguments are too large (over {MAX_ARGUMENT_CHARS:,} characters); send less at once."
            )
        path = check_notebook_path(arguments.pop("notebook_path", None))
        if not await file_exists(path):
            raise ToolError(
                f"There is no notebook at {path!r}. List them with list_notebooks, or create it in JupyterLab first."
            )
        spec.check(arguments)  # a wrong argument is the client's mistake, not a step in the chat
        name, key, owner = _client(ctx)

        async def waiting(message: str) -> None:
            try:
                await ctx.session.report_progress(0, None, message)
            except Exception as error:  # noqa: BLE001 - a client that cannot take progress still gets its answer
                log.debug("MCP progress not sent: %s", error)

        result = await agents.call(
            client_key=key,
            client_name=name,
            owner=owner,
            notebook_path=path,
            tool=spec.name,
            arguments=arguments,
            on_waiting=waiting,
        )
        return _to_mcp(result)

    return Server(
        "jupyter-aaep notebooks",
        version=__version__,
        title="Jupyter notebooks (heard and approved)",
        instructions=(
            "Tools to read, edit and run the user's Jupyter notebooks. Every call is announced to the people "
            "watching the notebook, and running code (or, in their stricter mode, any change) waits for their "
            "approval: a rejected call comes back as an error saying so; do not retry it another way."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _client(ctx: ServerRequestContext[Any]) -> tuple[str, str, str]:
    """Who calls (its display name), which connection (the MCP session, else the name) and whose
    it is: the credential's (named by it), else the client's name under the person's login.
    Two connections of one owner are the same agent (a new one takes over an idle one)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    scope = getattr(request, "scope", None)
    credential = scope.get(CREDENTIAL_SCOPE_KEY) if isinstance(scope, dict) else None
    if isinstance(credential, dict):
        name = str(credential["name"])
        key = session_key(str(credential["id"]), str(session_id or name))
        return name, key, f"credential:{credential['id']}"
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = (
        (getattr(info, "title", None) or getattr(info, "name", None) or UNKNOWN_CLIENT)
        if info
        else UNKNOWN_CLIENT
    )
    name = _display_name(str(name))
    return name, session_key(None, str(session_id or name)), f"client:{name}"


_KNOWN_NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "gemini-cli": "Gemini CLI",
    "cursor": "Cursor",
}


def _display_name(raw: str) -> str:
    """How people hear the client: its title, or a known product's name, never an id-like string."""
    cleaned = " ".join(raw.split())[:60] or UNKNOWN_CLIENT
    known = _KNOWN_NAMES.get(cleaned.lower())
    if known:
        return known
    if "-" in cleaned and " " not in cleaned:
        return " ".join(part.capitalize() for part in cleaned.split("-") if part) or UNKNOWN_CLIENT
    return cleaned


def _to_mcp(result: dict[str, Any]) -> types.CallToolResult:
    content = result.get("content")
    blocks: list[types.ContentBlock] = []
    if isinstance(content, str):
        blocks.append(types.TextContent(type="text", text=content))
    elif isinstance(content, list):
        for block in content:
            if block.get("type") == "text":
                blocks.append(types.TextContent(type="text", text=str(block.get("text", ""))))
            elif block.get("type") == "image" and isinstance(block.get("source"), dict):
                source = block["source"]
                blocks.append(
                    types.ImageContent(
                        type="image",
                        data=source.get("data", ""),
                        mime_type=source.get("media_type", "image/png"),
                    )
                )
    if not blocks:
        blocks.append(types.TextContent(type="text", text="Done."))
    return types.CallToolResult(content=blocks, is_error=bool(result.get("is_error")))


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
