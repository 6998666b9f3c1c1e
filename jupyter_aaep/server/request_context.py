"""What the panel attaches to a request, resolved into one delimited block for the model.

``user_input`` may carry

- ``context``: cells, files and kernel variables the user picked with ``@`` in the composer
  (``{"type": "cell", "cell_id": ...}``, ``{"type": "file", "path": ...}``,
  ``{"type": "variable", "name": ...}``). A cell goes with its code and a short rendering of
  its outputs, read from the live notebook now; a file and a variable go as references the
  agent reads with its read-only tools (``read_file``, ``inspect_variable``), so nothing large
  or secret is copied into the request unasked;
- ``describe_figure``: ``{"cell_id": ..., "output_index": ...}``, the "Describe this figure"
  command: the instructions for a description a screen-reader user can use.

People see only the request's text; the block follows it in the model's message. The
``figure_alt_text`` message stores a description as the figure's alt text in the notebook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..agent.data_blocks import data_block, for_model
from ..agent.prompts import describe_figure_request
from ..errors import RequestError, ToolError
from ..notebook.service import NotebookService

if TYPE_CHECKING:
    from ..chats.chat import Chat
    from ..chats.runner import ChatRunner
    from ..notebook.documents import LiveNotebook

__all__ = [
    "MAX_CONTEXT_ITEMS",
    "accessibility_report",
    "kernel_variables",
    "request_attachment",
    "save_alt_text",
]

MAX_CONTEXT_ITEMS = 10
_CELL_SOURCE_CHARS = 6000
_CELL_OUTPUT_CHARS = 1500


async def request_attachment(runner: ChatRunner, chat: Chat, message: dict[str, Any]) -> str | None:
    """The block for the model from ``context`` and ``describe_figure`` (``None`` without them)."""
    parts: list[str] = []
    items = message.get("context") or []
    if items:
        parts.append(await _context_block(runner, chat, items))
    figure = message.get("describe_figure")
    if figure is not None:
        if not chat.notebook_path:
            raise RequestError(
                400,
                "This chat has no notebook, so it has no figure to describe. Open the notebook "
                "and use Describe this figure from there.",
            )
        parts.append(describe_figure_request(figure["cell_id"], figure.get("output_index")))
    return "\n\n".join(parts) or None


def _notebooks(runner: ChatRunner) -> NotebookService | None:
    """The notebook service, when the host has one of the notebook layer's own kind."""
    service = runner.services.notebook
    return service if isinstance(service, NotebookService) else None


async def _open(runner: ChatRunner, chat: Chat) -> LiveNotebook:
    service = _notebooks(runner)
    if service is None or not chat.notebook_path:
        raise RequestError(
            409,
            "Cells can only be attached in a chat about a notebook whose notebook tools are "
            "available; attach files or variables instead, or name the cell in words.",
        )
    return await service.open(chat.notebook_path)


async def _context_block(runner: ChatRunner, chat: Chat, items: list[dict[str, Any]]) -> str:
    from ..notebook.render import render_outputs, truncate

    lines = ["<context>", "The user attached these to the request (picked in the panel):"]
    nb = None
    for item in items:
        kind = item["type"]
        if kind == "cell":
            nb = nb or await _open(runner, chat)
            cell_id = item["cell_id"]
            try:
                number = nb.index_of(cell_id) + 1
                cell = nb.cell(cell_id)
            except ToolError as error:
                raise RequestError(
                    409, f"An attached cell is gone: {error} Attach it again."
                ) from error
            kind_word = str(cell.get("cell_type", "code"))
            source = str(cell.get("source", ""))
            if len(source) <= _CELL_SOURCE_CHARS and (service := _notebooks(runner)) is not None:
                # Shown whole to the chat's agent: the base of its edit of that cell.
                service.remember_shown(chat.chat_id, nb.path, cell_id, source)
            body = [truncate(source, _CELL_SOURCE_CHARS) or "(empty)"]
            outputs = cell.get("outputs") or []
            if outputs:
                body += ["Outputs:", render_outputs(outputs, _CELL_OUTPUT_CHARS)]
            # The cell's text is data (it may hold planted instructions), masked like all model input.
            lines.append(data_block(f"cell {number} (id {cell_id}, {kind_word})", "\n".join(body)))
        elif kind == "file":
            lines.append(f"--- file {for_model(str(item['path']))} ---")
            lines.append(
                "A file in the Jupyter root; read it with read_file if its content matters."
            )
        else:
            lines.append(f"--- kernel variable {for_model(str(item['name']))} ---")
            lines.append(
                "A variable in the notebook's kernel; inspect it with inspect_variable (or list_variables) "
                "if its value matters."
            )
    lines.append("</context>")
    return "\n".join(lines)


async def save_alt_text(runner: ChatRunner, chat: Chat, message: dict[str, Any]) -> dict[str, Any]:
    """Store ``alt_text`` on the figure of ``cell_id`` (``output_index``, else its first figure)."""
    from ..tools._alt_text_tools import set_alt_text

    nb = await _open(runner, chat)
    text = " ".join(str(message["alt_text"]).split())
    try:
        number, index, mime = set_alt_text(
            nb, message["cell_id"], message.get("output_index"), text
        )
    except ToolError as error:
        raise RequestError(409, str(error)) from error
    return {
        "chat_id": chat.chat_id,
        "cell_id": message["cell_id"],
        "cell_number": number,
        "output_index": index,
        "mime_type": mime,
        "alt_text": text,
        "message": f"Saved as the alt text of the figure in cell {number}.",
    }


async def accessibility_report(runner: ChatRunner, chat: Chat) -> dict[str, Any]:
    """The chat's notebook checked by the same rules as the ``check_accessibility`` tool: each
    problem with its cell (number for people, id to go there) and the sentence a person hears."""
    from ..notebook.accessibility import check_cells, summary_of
    from ..tools._a11y_tools import NOT_CHECKED

    if not chat.notebook_path:
        raise RequestError(
            409, "This chat has no notebook to check. Open a notebook and check it from there."
        )
    nb = await _open(runner, chat)
    problems = check_cells(nb.cells())
    return {
        "chat_id": chat.chat_id,
        "notebook_path": nb.path,
        "summary": summary_of(problems),
        "problems": [
            {
                "rule": p.rule,
                "cell_number": p.cell,
                "cell_id": p.cell_id,
                "text": p.sentence,
            }
            for p in problems
        ],
        "not_checked": NOT_CHECKED,
    }


async def kernel_variables(runner: ChatRunner, chat: Chat, *, limit: int = 100) -> dict[str, Any]:
    """The notebook kernel's variables for the ``@`` picker (name, type, one-line summary), read
    by the same read-only runtime call as the ``list_variables`` tool; with a ``note`` instead
    when there is no kernel or it cannot answer (the picker then offers cells and files)."""
    from ..agent.tools import ToolContext
    from ..tools.kernel_tools import INSPECT_TIMEOUT, run_in_kernel, runtime_expression

    service = _notebooks(runner)
    if service is None or not chat.notebook_path:
        return {
            "variables": [],
            "note": "This chat has no notebook, so there are no kernel variables.",
        }
    info = await service.kernel(chat.notebook_path)
    if info is None:
        return {
            "variables": [],
            "note": "The notebook has no running kernel yet, so it has no variables.",
        }
    ctx = ToolContext(
        tool_call_id="panel-variables",
        chat_id=chat.chat_id,
        notebook_path=chat.notebook_path,
        services=runner.services,
    )
    try:
        answer = await run_in_kernel(
            ctx,
            info.kernel_id,
            runtime_expression("list_variables_json", limit),
            what="list the variables",
            timeout=INSPECT_TIMEOUT,
        )
    except ToolError as error:
        return {"variables": [], "note": f"The kernel's variables could not be listed: {error}"}
    entries = answer.get("variables") if isinstance(answer, dict) else None
    # Masked as everything bound for the model is: the panel may attach what it shows.
    variables = [
        {
            "name": str(e.get("name")),
            "type": str(e.get("type", "")),
            "summary": for_model(str(e.get("summary", ""))[:200]),
        }
        for e in entries or []
        if isinstance(e, dict) and e.get("name")
    ]
    return {
        "variables": variables,
        "note": None if variables else "The kernel has no variables yet.",
    }
