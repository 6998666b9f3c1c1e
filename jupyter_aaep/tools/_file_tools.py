"""Read-only file tools: ``list_files`` and ``read_file``.

They let the agent see which data files exist, and what is in them, without asking the user to
approve a cell that would do the same. Both go through the server's contents manager, so they
see exactly what JupyterLab's file browser sees: only the Jupyter root, hidden files only when
``ContentsManager.allow_hidden`` is on. Reads are always bounded: a huge file is never read
whole, only a prefix of it.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import posixpath
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from jupyter_server.utils import ensure_async
from tornado import web

from ..agent.tools import ToolContext, ToolResult, aaep_tool
from ..errors import ToolError
from ..words import plural
from ._file_heads import (
    BINARY_TYPES,
    Head,
    article,
    binary_kind,
    count_lines,
    decode,
    human_size,
    read_head,
    render_json,
    render_parquet,
    render_table,
    render_text,
    sniff,
)
from ._tool_common import service_of

__all__ = ["list_files", "read_file"]

MAX_ENTRIES = 200
MAX_DEPTH = 3
# -- paths --------------------------------------------------------------------------------------


def _contents(ctx: ToolContext) -> Any:
    return service_of(ctx).serverapp.contents_manager


def _root_dir(contents: Any) -> str | None:
    root = getattr(contents, "root_dir", None)
    return os.path.realpath(root) if isinstance(root, str) and root else None


def _api_path(contents: Any, path: str) -> str:
    """*path* as a contents-manager path; a ToolError when it leaves the Jupyter root."""
    text = (path or "").strip().replace("\\", "/")
    root = _root_dir(contents)
    if text.startswith("/") or os.path.splitdrive(text)[0]:
        # An absolute path is accepted only when it names something inside the root.
        absolute = os.path.realpath(text)
        if root is None or not _inside(absolute, root):
            raise ToolError(_outside(path))
        text = os.path.relpath(absolute, root).replace(os.sep, "/")
    normal = posixpath.normpath(text) if text else ""
    if normal in (".", ""):
        return ""
    if normal == ".." or normal.startswith("../"):
        raise ToolError(_outside(path))
    if root is not None:
        # A symbolic link inside the root may point outside it: follow it and check.
        real = os.path.realpath(os.path.join(root, normal))
        if not _inside(real, root):
            raise ToolError(_outside(path))
    return normal


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _outside(path: str) -> str:
    return (
        f"'{path}' is outside the Jupyter root; these tools only see files under the folder "
        "the Jupyter server was started in. Give a path relative to that folder."
    )


def _hidden_allowed(contents: Any) -> bool:
    return bool(getattr(contents, "allow_hidden", False))


def _is_hidden_name(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/") if part)


async def _model(contents: Any, path: str, *, what: str) -> dict[str, Any]:
    """The contents model of *path* without its content; ToolErrors a person can act on."""
    if not _hidden_allowed(contents) and _is_hidden_name(path):
        raise ToolError(
            f"'{path}' is hidden, and this Jupyter server does not show hidden files "
            "(ContentsManager.allow_hidden is off)."
        )
    try:
        model = await ensure_async(contents.get(path, content=False))
    except web.HTTPError as error:
        reason = error.log_message or str(error)
        if error.status_code == 404 and "outside root" in reason:
            raise ToolError(_outside(path)) from None
        if error.status_code == 404:
            raise ToolError(
                f"There is no {what} '{path or '/'}' in the Jupyter root. "
                "Call list_files to see what exists."
            ) from None
        raise ToolError(f"Cannot open '{path}': {reason}.") from None
    except OSError as error:
        raise ToolError(f"Cannot open '{path}': {error.strerror or error}.") from None
    return dict(model)


def _os_path(contents: Any, path: str) -> str | None:
    """The file on disk behind *path*, for managers that keep files on disk."""
    getter = getattr(contents, "_get_os_path", None)
    if getter is None:
        return None
    try:
        return str(getter(path))
    except web.HTTPError:
        raise ToolError(_outside(path)) from None


def _when(modified: Any) -> str:
    if isinstance(modified, datetime):
        stamp = modified if modified.tzinfo else modified.replace(tzinfo=timezone.utc)
        return stamp.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return str(modified) if modified else "time unknown"


# -- list_files ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    path: str
    kind: str
    size: int | None
    modified: Any

    def line(self) -> str:
        if self.kind == "directory":
            return f"{self.path}/  (folder, modified {_when(self.modified)})"
        return f"{self.path}  ({human_size(self.size)}, modified {_when(self.modified)})"


@aaep_tool(risk_level="low", read_only=True, label="list files")
async def list_files(
    ctx: ToolContext, directory: str = "", pattern: str | None = None, depth: int = 1
) -> ToolResult:
    """List the files and folders in a folder of the Jupyter root, with their size and modification time.

    Use it before you write code that opens a file: look at what exists instead of guessing a
    name or asking to run a cell. It needs no approval. Hidden files are left out unless the
    server shows them. At most 200 entries are listed.

    Parameters
    ----------
    directory : str
        Folder relative to the Jupyter root; "" is the root itself.
    pattern : str, optional
        Glob pattern on the file name, e.g. "*.csv" or "sales_202?.*" (folders are still entered when depth > 1).
    depth : int
        How many folder levels to list: 1 is only this folder, at most 3.
    """
    contents = _contents(ctx)
    start = _api_path(contents, directory)
    top = await _model(contents, start, what="folder")
    if top.get("type") != "directory":
        raise ToolError(f"'{start}' is a file, not a folder; read it with read_file.")
    depth = min(max(depth, 1), MAX_DEPTH)
    show_hidden = _hidden_allowed(contents)
    found: list[_Entry] = []
    more = False
    queue: list[tuple[str, int]] = [(start, 1)]
    while queue and not more:
        folder, level = queue.pop(0)
        try:
            model = await ensure_async(contents.get(folder, content=True, type="directory"))
        except (web.HTTPError, OSError):
            continue  # a subfolder that vanished or cannot be read: list the rest
        for item in sorted(model.get("content") or [], key=lambda m: str(m.get("name", ""))):
            name = str(item.get("name", ""))
            if not show_hidden and name.startswith("."):
                continue
            kind = "directory" if item.get("type") == "directory" else "file"
            if kind == "directory" and level < depth:
                queue.append((str(item["path"]), level + 1))
            if pattern and not fnmatch.fnmatch(name, pattern):
                continue
            if len(found) == MAX_ENTRIES:
                more = True
                break
            found.append(
                _Entry(str(item["path"]), kind, item.get("size"), item.get("last_modified"))
            )
    files = sum(e.kind == "file" for e in found)
    folders = len(found) - files
    where = f"{start}/" if start else "the root folder"
    counted = " and ".join(
        [plural(files, "file")] * bool(files or not folders)
        + [plural(folders, "folder")] * bool(folders)
    )
    matching = f" matching {pattern}" if pattern else ""
    if not found:
        text = f"Nothing{matching} in {where}."
    else:
        header = f"# {where}: {counted}{matching}"
        if more:
            header += (
                f" (the first {MAX_ENTRIES}; narrow with pattern or a subfolder to see others)"
            )
        text = "\n".join([header, *(e.line() for e in found)])
    summary = (
        f"Listed {counted}{matching} in {where}."
        if found
        else f"Found nothing{matching} in {where}."
    )
    if more:
        summary = f"Listed the first {MAX_ENTRIES} entries{matching} in {where}."
    return ToolResult(content=text, summary=summary)


@aaep_tool(risk_level="low", read_only=True, label="read a file")
async def read_file(ctx: ToolContext, path: str, max_lines: int = 200) -> ToolResult:
    """Read the start of a file in the Jupyter root: text, the header and first rows of CSV/TSV, JSON (pretty-printed, with its top-level keys), or a Parquet file's schema and first rows.

    Use it to learn a data file's columns, delimiter and format before writing code that loads
    it; it needs no approval. Large files are never read whole: you get the start, a marker
    where it was cut, and the total size (and row count when it is cheap to get). Binary files
    are refused. For notebooks use get_notebook_state.

    Parameters
    ----------
    path : str
        The file, relative to the Jupyter root (as list_files shows it).
    max_lines : int
        The most lines (or rows) to show, 1 to 1000; the text is also cut at about 16,000 characters.
    """
    contents = _contents(ctx)
    api_path = _api_path(contents, path)
    if not api_path:
        raise ToolError("That is the root folder; list it with list_files, or give a file path.")
    model = await _model(contents, api_path, what="file")
    kind = model.get("type")
    if kind == "directory":
        raise ToolError(f"'{api_path}' is a folder; list it with list_files.")
    if kind == "notebook":
        raise ToolError(
            f"'{api_path}' is a notebook; read it with get_notebook_state(notebook_path='{api_path}')."
        )
    max_lines = min(max(max_lines, 1), 1_000)
    os_path = _os_path(contents, api_path)
    ext = posixpath.splitext(api_path)[1].lower()
    if os_path is None:
        raise ToolError(
            f"'{api_path}' is stored where read_file cannot read a bounded part of it "
            "(this server's contents manager does not keep files on disk)."
        )
    try:
        if ext == ".parquet":
            text, summary = await asyncio.to_thread(render_parquet, api_path, os_path, max_lines)
            return ToolResult(content=text, summary=summary)
        data, size, complete = await asyncio.to_thread(read_head, os_path)
    except OSError as error:
        raise ToolError(f"Cannot read '{api_path}': {error.strerror or error}.") from None
    decoded = None if ext in BINARY_TYPES else decode(data, complete)
    if decoded is None:
        raise ToolError(
            f"'{api_path}' is {article(binary_kind(api_path, data))} ({human_size(size)}), not text; "
            "read_file shows text, CSV, JSON and Parquet files. Load it in a cell with a library "
            "that understands the format."
        )
    lines, exact = await asyncio.to_thread(count_lines, os_path, size, data)
    head = Head(decoded, size, complete, lines, exact)
    if ext in (".csv", ".tsv", ".tab"):
        delimiter = "\t" if ext != ".csv" else sniff(decoded)
        text, summary = render_table(api_path, head, max_lines, delimiter)
    elif ext == ".json":
        text, summary = render_json(api_path, head, max_lines)
    else:
        text, summary = render_text(api_path, head, max_lines)
    return ToolResult(content=text, summary=summary)
