"""The outputs of one cell run, built from kernel messages the way JupyterLab builds them.

Pure Python (no CRDT types): :class:`CellOutputs` keeps a plain nbformat mirror of a cell's
outputs and turns each IOPub message into a few small edit operations. ``documents.py``
applies the operations to the shared cell, so the browser sees outputs grow as they arrive,
and can rebuild the whole cell from the mirror if the shared document was replaced mid-run.

Rules followed (JupyterLab's output area): consecutive stream messages of the same name join
one output; ``\\r`` returns to the start of the line (later text overwrites it), ``\\b``
deletes the previous character; ``clear_output(wait=True)`` clears just before the next
output; ``update_display_data`` rewrites every output carrying that ``display_id``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AppendOutput",
    "CellOutputs",
    "ClearOutputs",
    "OutputOp",
    "ReplaceOutput",
    "StreamEdit",
    "merge_ops",
]


@dataclass(frozen=True)
class ClearOutputs:
    """Remove every output of the cell (the array itself is kept, as JupyterLab expects)."""


@dataclass(frozen=True)
class AppendOutput:
    index: int
    """Where the output lands; always the current length of the outputs."""
    output: dict[str, Any]


@dataclass(frozen=True)
class StreamEdit:
    """Cut the stream text at ``keep_bytes`` (UTF-8, as CRDT text counts) and append ``text``."""

    index: int
    keep_bytes: int
    text: str


@dataclass(frozen=True)
class ReplaceOutput:
    """Replace ``data`` and ``metadata`` of the output at ``index`` (``update_display_data``)."""

    index: int
    data: dict[str, Any]
    metadata: dict[str, Any]


OutputOp = ClearOutputs | AppendOutput | StreamEdit | ReplaceOutput


@dataclass
class _Stream:
    """A stream output's text as finished lines plus the line being written."""

    name: str
    done: list[str] = field(default_factory=list)
    done_bytes: int = 0
    line: str = ""
    cursor: int = 0  # where the next character goes in ``line`` (after a ``\r`` it is 0)

    def text(self) -> str:
        return "".join(self.done) + self.line

    def write(self, chunk: str) -> tuple[int, str]:
        """Apply *chunk*; returns ``(keep_bytes, appended)`` describing the change."""
        if "\r" not in chunk and "\b" not in chunk and self.cursor == len(self.line):
            keep = self.done_bytes + len(self.line.encode("utf-8"))
            head, sep, tail = chunk.rpartition("\n")
            if sep:
                completed = self.line + head + sep
                self.done.append(completed)
                self.done_bytes += len(completed.encode("utf-8"))
                self.line = tail
            else:
                self.line += tail
            self.cursor = len(self.line)
            return keep, chunk
        # Only the current line can change, so diff against it. Each piece between two
        # ``\r`` overwrites the line from the cursor on, as a terminal does; ``\b`` is the
        # rare case, taken one character at a time.
        start_bytes, old_line = self.done_bytes, self.line
        finished: list[str] = []
        line, cursor = self.line, self.cursor
        segments = chunk.split("\n")
        for number, segment in enumerate(segments):
            if number:
                finished.append(line + "\n")
                line, cursor = "", 0
            if "\b" in segment:
                line, cursor = _backspaced(line, cursor, segment)
                continue
            for index, piece in enumerate(segment.split("\r")):
                if index:
                    cursor = 0
                if piece:
                    line = line[:cursor] + piece + line[cursor + len(piece) :]
                    cursor += len(piece)
        self.line, self.cursor = line, cursor
        if finished:
            block = "".join(finished)
            self.done.append(block)
            self.done_bytes += len(block.encode("utf-8"))
        new_tail = "".join(finished) + self.line
        common = 0
        for a, b in zip(old_line, new_tail):
            if a != b:
                break
            common += 1
        return start_bytes + len(old_line[:common].encode("utf-8")), new_tail[common:]


def _backspaced(line: str, cursor: int, segment: str) -> tuple[str, int]:
    """*segment* (no newline) written at *cursor* of *line*, character by character."""
    chars = list(line)
    for char in segment:
        if char == "\r":
            cursor = 0
        elif char == "\b":
            if cursor > 0:
                del chars[cursor - 1]
                cursor -= 1
        elif cursor < len(chars):
            chars[cursor] = char
            cursor += 1
        else:
            chars.append(char)
            cursor += 1
    return "".join(chars), cursor


def merge_ops(pending: list[OutputOp], op: OutputOp) -> None:
    """Add *op* to *pending*, folding a stream edit into the one before it on the same output,
    so many kernel messages become one edit of the shared cell (the end text is the same)."""
    last = pending[-1] if pending else None
    if not isinstance(op, StreamEdit) or not isinstance(last, StreamEdit) or last.index != op.index:
        pending.append(op)
        return
    if op.keep_bytes <= last.keep_bytes:
        pending[-1] = StreamEdit(op.index, op.keep_bytes, op.text)
        return
    written = last.text.encode("utf-8")
    kept = written[: op.keep_bytes - last.keep_bytes].decode("utf-8")
    pending[-1] = StreamEdit(op.index, last.keep_bytes, kept + op.text)


class CellOutputs:
    """The nbformat outputs of one run, plus the edit operations that build them."""

    def __init__(self) -> None:
        self._outputs: list[dict[str, Any] | _Stream] = []
        self._clear_pending = False
        self._displays: dict[str, list[int]] = {}
        self.execution_count: int | None = None

    # -- reading -----------------------------------------------------------------------------
    def outputs(self) -> list[dict[str, Any]]:
        """The outputs as nbformat dicts (deep copies: safe to keep or change)."""
        return [self._as_dict(item) for item in self._outputs]

    def __len__(self) -> int:
        return len(self._outputs)

    @property
    def display_ids(self) -> set[str]:
        return set(self._displays)

    @staticmethod
    def _as_dict(item: dict[str, Any] | _Stream) -> dict[str, Any]:
        if isinstance(item, _Stream):
            return {"output_type": "stream", "name": item.name, "text": item.text()}
        return copy.deepcopy(item)

    def keep_displays_only(self) -> None:
        """Drop every output but those with a display id (a stream's text, a result, an image),
        keeping their places: what later display updates need. The outputs are in the shared
        cell and the notebook; this mirror can no longer rebuild them."""
        shown = {index for indexes in self._displays.values() for index in indexes}
        self._outputs = [
            item if index in shown else _Stream(item.name) if isinstance(item, _Stream) else {}
            for index, item in enumerate(self._outputs)
        ]

    # -- kernel messages -----------------------------------------------------------------------
    def handle(self, msg_type: str, content: dict[str, Any]) -> list[OutputOp]:
        """The operations for one IOPub message of the running request (others: ``[]``)."""
        if msg_type == "stream":
            return self._stream(str(content.get("name", "stdout")), str(content.get("text", "")))
        if msg_type in ("display_data", "execute_result"):
            output: dict[str, Any] = {
                "output_type": msg_type,
                "data": copy.deepcopy(content.get("data", {})),
                "metadata": copy.deepcopy(content.get("metadata", {})),
            }
            if msg_type == "execute_result":
                output["execution_count"] = content.get("execution_count")
            display_id = (content.get("transient") or {}).get("display_id")
            ops = self._append(output)
            if display_id:
                self._displays.setdefault(str(display_id), []).append(len(self._outputs) - 1)
            return ops
        if msg_type == "error":
            return self._append(
                {
                    "output_type": "error",
                    "ename": str(content.get("ename", "")),
                    "evalue": str(content.get("evalue", "")),
                    "traceback": [str(line) for line in content.get("traceback", [])],
                }
            )
        if msg_type == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
                return []
            return self.clear()
        if msg_type == "update_display_data":
            display_id = (content.get("transient") or {}).get("display_id")
            return self.update_display(
                str(display_id or ""), content.get("data", {}), content.get("metadata", {})
            )
        if msg_type == "execute_input":
            self.execution_count = content.get("execution_count")
        return []

    def clear(self) -> list[OutputOp]:
        self._outputs.clear()
        self._displays.clear()
        self._clear_pending = False
        return [ClearOutputs()]

    def update_display(
        self, display_id: str, data: dict[str, Any], metadata: dict[str, Any]
    ) -> list[OutputOp]:
        ops: list[OutputOp] = []
        for index in self._displays.get(display_id, []):
            item = self._outputs[index]
            assert isinstance(item, dict)
            item["data"], item["metadata"] = copy.deepcopy(data), copy.deepcopy(metadata)
            ops.append(ReplaceOutput(index, copy.deepcopy(data), copy.deepcopy(metadata)))
        return ops

    def _pending_clear(self) -> list[OutputOp]:
        return self.clear() if self._clear_pending else []

    def _append(self, output: dict[str, Any]) -> list[OutputOp]:
        ops = self._pending_clear()
        self._outputs.append(output)
        ops.append(AppendOutput(len(self._outputs) - 1, copy.deepcopy(output)))
        return ops

    def _stream(self, name: str, text: str) -> list[OutputOp]:
        ops = self._pending_clear()
        last = self._outputs[-1] if self._outputs else None
        if isinstance(last, _Stream) and last.name == name:
            keep, appended = last.write(text)
            ops.append(StreamEdit(len(self._outputs) - 1, keep, appended))
            return ops
        stream = _Stream(name)
        stream.write(text)
        self._outputs.append(stream)
        ops.append(AppendOutput(len(self._outputs) - 1, self._as_dict(stream)))
        return ops
