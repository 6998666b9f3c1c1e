"""Read-only file tools: ``list_files`` and ``read_file``.

They let the agent see which data files exist, and what is in them, without asking the user to
approve a cell that would do the same. Both go through the server's contents manager, so they
see exactly what JupyterLab's file browser sees: only the Jupyter root, hidden files only when
``ContentsManager.allow_hidden`` is on. Reads are always bounded: a huge file is never read
whole, only a prefix of it.
"""

from __future__ import annotations

import asyncio
import codecs
import csv
import fnmatch
import io
import json
import mimetypes
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
from ._tool_common import service_of

__all__ = ["list_files", "read_file"]

MAX_ENTRIES = 200
MAX_DEPTH = 3
TEXT_BUDGET = 16_000
"""Characters of file text returned to the model by one ``read_file``."""
LINE_LIMIT = 1_000
"""Characters of one line shown before it is cut (a minified JSON file is one long line)."""
PREFIX_BYTES = 256 * 1024
"""The most read from a file for its head; enough for the text budget in any encoding."""
COUNT_LIMIT = 16 * 1024 * 1024
"""Files up to this size have their lines counted exactly; larger ones get an estimate."""
JSON_PARSE_LIMIT = 8 * 1024 * 1024
"""JSON files up to this size are parsed (for their top-level keys); larger ones shown raw."""

_BINARY_TYPES = {
    ".xlsx": "Excel workbook",
    ".xls": "Excel workbook",
    ".h5": "HDF5 file",
    ".hdf5": "HDF5 file",
    ".feather": "Feather file",
    ".arrow": "Arrow file",
    ".pkl": "Python pickle",
    ".pickle": "Python pickle",
    ".npy": "NumPy array file",
    ".npz": "NumPy archive",
    ".zip": "ZIP archive",
    ".gz": "gzip file",
    ".sqlite": "SQLite database",
    ".db": "database file",
}


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


# -- formatting ---------------------------------------------------------------------------------


def human_size(size: int | None) -> str:
    """A size people read at once: "812 bytes", "1.2 MB"."""
    if size is None:
        return "size unknown"
    if size < 1024:
        return plural(size, "byte")
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def _when(modified: Any) -> str:
    if isinstance(modified, datetime):
        stamp = modified if modified.tzinfo else modified.replace(tzinfo=timezone.utc)
        return stamp.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return str(modified) if modified else "time unknown"


def _size_words(size: int) -> str:
    """ "1.2 MB (1,258,291 bytes)": the exact figure too, when the short one rounds."""
    return human_size(size) if size < 1024 else f"{human_size(size)} ({size:,} bytes)"


def _cut_line(line: str) -> str:
    if len(line) <= LINE_LIMIT:
        return line
    return f"{line[:LINE_LIMIT]} [… line cut: {len(line):,} characters]"


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


# -- read_file ----------------------------------------------------------------------------------


@dataclass
class _Head:
    """The start of a file: its decoded text and what is known about the whole."""

    text: str
    size: int
    complete: bool
    """The whole file was read (it fits in the prefix)."""
    lines: int | None = None
    lines_exact: bool = True


def _read_head(os_path: str) -> tuple[bytes, int, bool]:
    """The first bytes of the file (at most PREFIX_BYTES), its size, and whether that is all."""
    with open(os_path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(PREFIX_BYTES)
    return data, size, len(data) >= size


def _count_lines(os_path: str, size: int, head: bytes) -> tuple[int, bool]:
    """Lines in the file: counted when the file is not huge, else estimated from its head."""
    if size <= COUNT_LIMIT:
        count, last = 0, b""
        with open(os_path, "rb") as handle:
            while chunk := handle.read(1024 * 1024):
                count += chunk.count(b"\n")
                last = chunk
        return count + (1 if last and not last.endswith(b"\n") else 0), True
    per_line = max(len(head) / max(head.count(b"\n"), 1), 1.0)
    return int(size / per_line), False


def _decode(data: bytes, complete: bool) -> str | None:
    """The text in *data*, or None when it is not text (NUL bytes, or not UTF-8/Latin text)."""
    if b"\0" in data[:8192]:
        return None
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    try:
        return str(decoder.decode(data, final=complete))
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\t\r\n\f")
    return None if controls > len(text[:8192]) // 100 else text


def _binary_kind(path: str, data: bytes) -> str:
    ext = posixpath.splitext(path)[1].lower()
    if ext in _BINARY_TYPES:
        return _BINARY_TYPES[ext]
    signatures = {
        b"\x89PNG": "PNG image",
        b"\xff\xd8\xff": "JPEG image",
        b"GIF8": "GIF image",
        b"%PDF": "PDF document",
        b"PK\x03\x04": "ZIP archive (or an Office document)",
        b"\x1f\x8b": "gzip file",
        b"SQLite format 3": "SQLite database",
        b"PAR1": "Parquet file",
    }
    for magic, kind in signatures.items():
        if data.startswith(magic):
            return kind
    guessed = mimetypes.guess_type(path)[0]
    return f"binary file ({guessed})" if guessed else "binary file"


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _take_lines(text: str, max_lines: int, budget: int) -> tuple[list[str], bool]:
    """The first *max_lines* lines of *text* within *budget* characters; (lines, cut)."""
    lines = text.splitlines()
    shown: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        line = _cut_line(line)
        if used + len(line) + 1 > budget and shown:
            return shown, True
        shown.append(line)
        used += len(line) + 1
    return shown, len(lines) > len(shown)


def _cut_marker(shown: int, unit: str, total: int | None, exact: bool, size: int) -> str:
    of = ""
    if total is not None:
        of = f" of {total:,}" if exact else f" of about {total:,}"
    return f"[… cut: showed the first {plural(shown, unit)}{of}; the file has {_size_words(size)}.]"


def _count_phrase(total: int | None, exact: bool, unit: str) -> str:
    if total is None:
        return ""
    return ("" if exact else "about ") + plural(total, unit, thousands=True)


def _render_text(path: str, head: _Head, max_lines: int) -> tuple[str, str]:
    shown, cut = _take_lines(head.text, max_lines, TEXT_BUDGET)
    count = _count_phrase(head.lines, head.lines_exact, "line")
    parts = [f"# {path}: text, {human_size(head.size)}, {count}", *shown]
    if cut or not head.complete:
        parts.append(_cut_marker(len(shown), "line", head.lines, head.lines_exact, head.size))
        summary = f"Read the first {plural(len(shown), 'line')} of {path} ({count})."
    else:
        summary = f"Read {path} ({count})."
    return "\n".join(parts), summary


def _render_table(path: str, head: _Head, max_lines: int, delimiter: str) -> tuple[str, str]:
    lines = head.text.splitlines()
    if not head.complete and len(lines) > 1:
        lines = lines[:-1]  # the last line of a prefix may stop in the middle of a row
    if not lines:
        return _render_text(path, head, max_lines)
    try:
        header = next(csv.reader(io.StringIO(lines[0]), delimiter=delimiter))
    except (csv.Error, StopIteration):
        header = lines[0].split(delimiter)
    rows = None if head.lines is None else max(head.lines - 1, 0)
    count = _count_phrase(rows, head.lines_exact, "row")
    kind = "TSV" if delimiter == "\t" else "CSV"
    shown, cut = _take_lines("\n".join(lines[1:]), max_lines, TEXT_BUDGET - len(lines[0]))
    separator = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}.get(
        delimiter, repr(delimiter)
    )
    parts = [
        (
            f"# {path}: {kind} ({separator}-separated), {human_size(head.size)}, "
            f"{plural(len(header), 'column')}, {count}"
        ),
        "columns: " + ", ".join(_cut_line(h) for h in header),
        _cut_line(lines[0]),
        *shown,
    ]
    if cut or not head.complete:
        parts.append(_cut_marker(len(shown), "row", rows, head.lines_exact, head.size))
        summary = f"Read the header and first {plural(len(shown), 'row')} of {path} ({count})."
    else:
        summary = f"Read {path} ({count})."
    return "\n".join(parts), summary


def _json_shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)
        shown = ", ".join(repr(k) for k in keys[:30])
        more = f", … ({len(keys) - 30} more)" if len(keys) > 30 else ""
        return f"an object with {plural(len(keys), 'key')}: {shown}{more}"
    if isinstance(value, list):
        first = ""
        kinds = {"dict": "an object", "list": "a list", "str": "a string"}
        if value:
            first = (
                f"; the first item is {kinds.get(type(value[0]).__name__, type(value[0]).__name__)}"
            )
        return f"a list of {plural(len(value), 'item')}{first}"
    return f"a single {type(value).__name__} value"


def _render_json(path: str, head: _Head, max_lines: int) -> tuple[str, str]:
    if head.complete and head.size <= JSON_PARSE_LIMIT:
        try:
            value = json.loads(head.text)
        except ValueError as error:
            text, summary = _render_text(path, head, max_lines)
            return f"(Not valid JSON: {error}; shown as text.)\n{text}", summary
        shape = _json_shape(value)
        pretty = json.dumps(value, indent=1, ensure_ascii=False, default=str)
        total = pretty.count("\n") + 1
        shown, cut = _take_lines(pretty, max_lines, TEXT_BUDGET)
        parts = [f"# {path}: JSON, {human_size(head.size)}; top level: {shape}", *shown]
        if cut:
            parts.append(
                f"[… cut: showed the first {len(shown):,} of {total:,} pretty-printed lines; "
                f"the file has {_size_words(head.size)}.]"
            )
            return "\n".join(parts), f"Read the start of {path}: {shape.split(':')[0]}."
        return "\n".join(parts), f"Read {path}: {shape.split(':')[0]}."
    # Too big to parse: show the raw start and say what the top level is.
    first = head.text.lstrip()[:1]
    shape = {"{": "an object", "[": "a list"}.get(first, "not an object or list")
    text, summary = _render_text(path, head, max_lines)
    return f"(JSON too large to parse whole; top level: {shape}. Raw start:)\n{text}", summary


def _render_parquet(path: str, os_path: str, max_lines: int) -> tuple[str, str]:
    size = os.path.getsize(os_path)
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return (
            (
                f"{path} is a Parquet file ({human_size(size)}). Its schema and rows cannot be shown "
                "because pyarrow is not installed on the Jupyter server; install pyarrow there, or "
                "read it in a cell with pandas.read_parquet."
            ),
            f"{path} is a Parquet file; its contents cannot be shown without pyarrow.",
        )
    parquet = pq.ParquetFile(os_path)
    rows = parquet.metadata.num_rows
    schema = parquet.schema_arrow
    parts = [
        f"# {path}: Parquet, {human_size(size)}, {rows:,} rows, {len(schema)} columns",
        *(f"{field.name}: {field.type}" for field in schema),
    ]
    take = min(max_lines, 50, rows)
    if take:
        batch = next(parquet.iter_batches(batch_size=take), None)
        records = batch.to_pylist() if batch is not None else []
        parts.append(f"first {plural(len(records), 'row')}:")
        parts.extend(_cut_line(json.dumps(r, ensure_ascii=False, default=str)) for r in records)
    text = "\n".join(parts)
    if len(text) > TEXT_BUDGET:
        text = text[:TEXT_BUDGET] + "\n[… cut to fit]"
    return text, f"Read the schema and first rows of {path} ({rows:,} rows)."


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
            text, summary = await asyncio.to_thread(_render_parquet, api_path, os_path, max_lines)
            return ToolResult(content=text, summary=summary)
        data, size, complete = await asyncio.to_thread(_read_head, os_path)
    except OSError as error:
        raise ToolError(f"Cannot read '{api_path}': {error.strerror or error}.") from None
    decoded = None if ext in _BINARY_TYPES else _decode(data, complete)
    if decoded is None:
        raise ToolError(
            f"'{api_path}' is {_article(_binary_kind(api_path, data))} ({human_size(size)}), not text; "
            "read_file shows text, CSV, JSON and Parquet files. Load it in a cell with a library "
            "that understands the format."
        )
    lines, exact = await asyncio.to_thread(_count_lines, os_path, size, data)
    head = _Head(decoded, size, complete, lines, exact)
    if ext in (".csv", ".tsv", ".tab"):
        delimiter = "\t" if ext != ".csv" else _sniff(decoded)
        text, summary = _render_table(api_path, head, max_lines, delimiter)
    elif ext == ".json":
        text, summary = _render_json(api_path, head, max_lines)
    else:
        text, summary = _render_text(api_path, head, max_lines)
    return ToolResult(content=text, summary=summary)


def _sniff(text: str) -> str:
    """The CSV delimiter (comma, semicolon, tab or pipe) from the first lines."""
    sample = "\n".join(text.splitlines()[:20])
    try:
        return str(csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter)
    except csv.Error:
        return ","
