"""What a file holds, as read_file shows it to the model: its head read, decoded and rendered.

A file is never read whole: only a prefix (:data:`PREFIX_BYTES`), its lines counted exactly up
to :data:`COUNT_LIMIT` and estimated beyond. Text, CSV/TSV (header and first rows), JSON
(pretty-printed, with its top-level keys) and Parquet (schema and first rows) each have a
renderer that returns the text for the model and a one-line summary.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import mimetypes
import os
import posixpath
from dataclasses import dataclass
from typing import Any

from ..words import plural

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

BINARY_TYPES = {
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


def size_words(size: int) -> str:
    """ "1.2 MB (1,258,291 bytes)": the exact figure too, when the short one rounds."""
    return human_size(size) if size < 1024 else f"{human_size(size)} ({size:,} bytes)"


def cut_line(line: str) -> str:
    if len(line) <= LINE_LIMIT:
        return line
    return f"{line[:LINE_LIMIT]} [… line cut: {len(line):,} characters]"


# -- a file's head --------------------------------------------------------------------------------


@dataclass
class Head:
    """The start of a file: its decoded text and what is known about the whole."""

    text: str
    size: int
    complete: bool
    """The whole file was read (it fits in the prefix)."""
    lines: int | None = None
    lines_exact: bool = True


def read_head(os_path: str) -> tuple[bytes, int, bool]:
    """The first bytes of the file (at most PREFIX_BYTES), its size, and whether that is all."""
    with open(os_path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(PREFIX_BYTES)
    return data, size, len(data) >= size


def count_lines(os_path: str, size: int, head: bytes) -> tuple[int, bool]:
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


def decode(data: bytes, complete: bool) -> str | None:
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


def binary_kind(path: str, data: bytes) -> str:
    ext = posixpath.splitext(path)[1].lower()
    if ext in BINARY_TYPES:
        return BINARY_TYPES[ext]
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


def article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _take_lines(text: str, max_lines: int, budget: int) -> tuple[list[str], bool]:
    """The first *max_lines* lines of *text* within *budget* characters; (lines, cut)."""
    lines = text.splitlines()
    shown: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        line = cut_line(line)
        if used + len(line) + 1 > budget and shown:
            return shown, True
        shown.append(line)
        used += len(line) + 1
    return shown, len(lines) > len(shown)


def _cut_marker(shown: int, unit: str, total: int | None, exact: bool, size: int) -> str:
    of = ""
    if total is not None:
        of = f" of {total:,}" if exact else f" of about {total:,}"
    return f"[… cut: showed the first {plural(shown, unit)}{of}; the file has {size_words(size)}.]"


def _count_phrase(total: int | None, exact: bool, unit: str) -> str:
    if total is None:
        return ""
    return ("" if exact else "about ") + plural(total, unit, thousands=True)


def render_text(path: str, head: Head, max_lines: int) -> tuple[str, str]:
    shown, cut = _take_lines(head.text, max_lines, TEXT_BUDGET)
    count = _count_phrase(head.lines, head.lines_exact, "line")
    parts = [f"# {path}: text, {human_size(head.size)}, {count}", *shown]
    if cut or not head.complete:
        parts.append(_cut_marker(len(shown), "line", head.lines, head.lines_exact, head.size))
        summary = f"Read the first {plural(len(shown), 'line')} of {path} ({count})."
    else:
        summary = f"Read {path} ({count})."
    return "\n".join(parts), summary


def render_table(path: str, head: Head, max_lines: int, delimiter: str) -> tuple[str, str]:
    lines = head.text.splitlines()
    if not head.complete and len(lines) > 1:
        lines = lines[:-1]  # the last line of a prefix may stop in the middle of a row
    if not lines:
        return render_text(path, head, max_lines)
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
        "columns: " + ", ".join(cut_line(h) for h in header),
        cut_line(lines[0]),
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


def render_json(path: str, head: Head, max_lines: int) -> tuple[str, str]:
    if head.complete and head.size <= JSON_PARSE_LIMIT:
        try:
            value = json.loads(head.text)
        except ValueError as error:
            text, summary = render_text(path, head, max_lines)
            return f"(Not valid JSON: {error}; shown as text.)\n{text}", summary
        shape = _json_shape(value)
        pretty = json.dumps(value, indent=1, ensure_ascii=False, default=str)
        total = pretty.count("\n") + 1
        shown, cut = _take_lines(pretty, max_lines, TEXT_BUDGET)
        parts = [f"# {path}: JSON, {human_size(head.size)}; top level: {shape}", *shown]
        if cut:
            parts.append(
                f"[… cut: showed the first {len(shown):,} of {total:,} pretty-printed lines; "
                f"the file has {size_words(head.size)}.]"
            )
            return "\n".join(parts), f"Read the start of {path}: {shape.split(':')[0]}."
        return "\n".join(parts), f"Read {path}: {shape.split(':')[0]}."
    # Too big to parse: show the raw start and say what the top level is.
    first = head.text.lstrip()[:1]
    shape = {"{": "an object", "[": "a list"}.get(first, "not an object or list")
    text, summary = render_text(path, head, max_lines)
    return f"(JSON too large to parse whole; top level: {shape}. Raw start:)\n{text}", summary


def render_parquet(path: str, os_path: str, max_lines: int) -> tuple[str, str]:
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
        parts.extend(cut_line(json.dumps(r, ensure_ascii=False, default=str)) for r in records)
    text = "\n".join(parts)
    if len(text) > TEXT_BUDGET:
        text = text[:TEXT_BUDGET] + "\n[… cut to fit]"
    return text, f"Read the schema and first rows of {path} ({rows:,} rows)."


def sniff(text: str) -> str:
    """The CSV delimiter (comma, semicolon, tab or pipe) from the first lines."""
    sample = "\n".join(text.splitlines()[:20])
    try:
        return str(csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter)
    except csv.Error:
        return ","
