"""Building a cell's outputs from kernel messages, and writing them into a shared cell."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jupyter_ydoc import YNotebook
from nb_helpers import on_server_loop
from pycrdt import Text

from jupyter_aaep.notebook import _cell_writer
from jupyter_aaep.notebook._cell_writer import LiveCellWriter
from jupyter_aaep.notebook._iopub import joined
from jupyter_aaep.notebook._outputs import (
    AppendOutput,
    CellOutputs,
    ClearOutputs,
    ReplaceOutput,
    StreamEdit,
    merge_ops,
)
from jupyter_aaep.notebook.documents import LiveNotebook
from jupyter_aaep.notebook.kernel_run import MessageNumbers

pytestmark = pytest.mark.shared_server


def stream(model: CellOutputs, text: str, name: str = "stdout") -> list[Any]:
    return model.handle("stream", {"name": name, "text": text})


def replay(chunks: list[str]) -> tuple[str, str]:
    """The mirror's text and the text a CRDT gets from the edit operations, for *chunks*."""
    model = CellOutputs()
    ytext: Text | None = None
    from pycrdt import Doc

    doc = Doc()
    holder = doc.get("t", type=Text)
    for chunk in chunks:
        for op in stream(model, chunk):
            if isinstance(op, AppendOutput):
                holder += op.output["text"]
                ytext = holder
            else:
                assert isinstance(op, StreamEdit) and ytext is not None
                del ytext[op.keep_bytes :]
                ytext += op.text
    return model.outputs()[0]["text"], str(holder)


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (["a", "b\n", "c"], "ab\nc"),
        (["progress 10%\r", "progress 100%\n", "done\n"], "progress 100%\ndone\n"),
        (["abcdef\rXY"], "XYcdef"),
        (["loading", "\b\b\b", "ed\n"], "loaded\n"),
        (
            ["é😀 10%\r", "é😀 20%\r", "fin\n"],
            "fin20%\n",
        ),  # multi-byte text: offsets are UTF-8 bytes
        (["line 1\r\n", "line 2\n"], "line 1\nline 2\n"),
        (["x\r", "\ny\n"], "x\ny\n"),
    ],
)
def test_stream_text_follows_carriage_returns_and_backspaces(
    chunks: list[str], expected: str
) -> None:
    mirror, crdt = replay(chunks)
    assert mirror == expected
    assert crdt == expected


def _terminal(text: str) -> str:
    """What a terminal shows for *text*, one character at a time (the reference)."""
    lines: list[list[str]] = [[]]
    cursor = 0
    for char in text:
        line = lines[-1]
        if char == "\n":
            lines.append([])
            cursor = 0
        elif char == "\r":
            cursor = 0
        elif char == "\b":
            if cursor:
                del line[cursor - 1]
                cursor -= 1
        elif cursor < len(line):
            line[cursor] = char
            cursor += 1
        else:
            line.append(char)
            cursor += 1
    return "\n".join("".join(line) for line in lines)


CHUNKS = st.lists(st.text(alphabet="ab é😀\r\n\b%", max_size=12), min_size=1, max_size=25)


@settings(max_examples=300, deadline=None)
@given(CHUNKS, st.integers(min_value=1, max_value=6))
def test_folded_edits_and_joined_chunks_give_what_a_terminal_shows(
    chunks: list[str], fold: int
) -> None:
    """Chunks joined as the executor joins messages, and edits folded as the writer folds them
    between writes, end in the exact text of one message at a time (and of a terminal)."""
    expected = _terminal("".join(chunks))
    joined_chunks = ["".join(chunks[i : i + fold]) for i in range(0, len(chunks), fold)]
    mirror, crdt = replay(joined_chunks)
    assert mirror == crdt == expected

    from pycrdt import Doc

    model, holder = CellOutputs(), Doc().get("t", type=Text)
    pending: list[Any] = []
    for number, chunk in enumerate(chunks):
        for op in stream(model, chunk):
            merge_ops(pending, op)
        if number % fold == fold - 1 or number == len(chunks) - 1:
            for op in pending:
                if isinstance(op, AppendOutput):
                    holder += op.output["text"]
                else:
                    assert isinstance(op, StreamEdit) and len(holder) >= op.keep_bytes
                    del holder[op.keep_bytes :]
                    holder += op.text
            pending = []
    assert str(holder) == expected


def _message(msg_type: str, parent: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": msg_type, "parent_header": {"msg_id": parent}, "content": content}


def _numbered(n: int, parent: str, state: str = "") -> dict[str, Any]:
    msg: dict[str, Any] = {
        "header": {"msg_id": f"s-1_42_{n}", "session": "s-1"},
        "parent_header": {"msg_id": parent},
        "content": {"execution_state": state} if state else {"text": "."},
    }
    return msg


def test_message_numbers_count_what_the_kernel_dropped_from_a_run_only() -> None:
    """ipykernel numbers every message it sends; the runs of numbers a run's IOPub never showed
    are what it dropped; single and paired gaps are its replies on other sockets."""
    others_before = [_numbered(1, "other"), _numbered(3, "other", "idle")]  # reply 2: on shell
    run = [_numbered(n, "ours") for n in (4, 5, 7, 8, 9, 10, 13, 14, 15, 16)]  # replies: 6, 11-12
    run += [_numbered(n, "ours") for n in range(40, 60)] + [_numbered(61, "ours", "idle")]
    after = [_numbered(80, "other")]
    numbers = MessageNumbers("ours")
    numbers.note(others_before + run[:3])
    numbers.note(run[3:] + after)
    assert numbers.missed == 23  # 17-39 dropped; 60 was our execute_reply; 6, 11-12 elsewhere
    late = MessageNumbers("ours")
    late.note(run[:-1] + [_numbered(25, "ours")] + run[-1:])  # sent by another thread, late
    assert late.missed == 8 + 14  # 17-24 and 26-39
    whole = MessageNumbers("ours")
    whole.note([_numbered(n, "ours") for n in range(4, 30)] + [_numbered(31, "ours", "idle")])
    assert whole.missed == 0
    unnumbered = MessageNumbers("ours")
    unnumbered.note([{**m, "header": {"msg_id": "a1b2c3", "session": "s-1"}} for m in run])
    assert unnumbered.missed == 0  # a kernel whose ids carry no number: nothing is claimed


def test_joined_keeps_order_and_joins_only_one_runs_stream_on_one_name() -> None:
    messages = [
        _message("stream", "run", name="stdout", text="\r1"),
        _message("stream", "run", name="stdout", text="\r2"),
        _message("stream", "run", name="stderr", text="warn\n"),
        _message("stream", "other", name="stderr", text="elsewhere\n"),
        _message("stream", "run", name="stderr", text="again\n"),
        _message("display_data", "run", data={}),
        _message("stream", "run", name="stdout", text="\r3"),
        _message("stream", "run", name="stdout", text="\r4\n"),
        _message("status", "run", execution_state="idle"),
    ]
    assert [(m["msg_type"], m["content"].get("text")) for m in joined(messages, "run")] == [
        ("stream", "\r1\r2"),
        ("stream", "warn\n"),
        ("stream", "elsewhere\n"),
        ("stream", "again\n"),
        ("display_data", None),
        ("stream", "\r3\r4\n"),
        ("status", None),
    ]
    assert messages[0]["content"]["text"] == "\r1"  # the kernel's messages are left as they are


def test_streams_of_one_name_join_and_others_start_new_outputs() -> None:
    model = CellOutputs()
    stream(model, "a\n")
    stream(model, "b\n")
    stream(model, "oops\n", "stderr")
    stream(model, "c\n")
    assert [(o["name"], o["text"]) for o in model.outputs()] == [
        ("stdout", "a\nb\n"),
        ("stderr", "oops\n"),
        ("stdout", "c\n"),
    ]


def test_clear_output_wait_clears_just_before_the_next_output() -> None:
    model = CellOutputs()
    stream(model, "old\n")
    assert model.handle("clear_output", {"wait": True}) == []
    assert len(model) == 1
    ops = stream(model, "new\n")
    assert isinstance(ops[0], ClearOutputs) and isinstance(ops[1], AppendOutput)
    assert model.outputs() == [{"output_type": "stream", "name": "stdout", "text": "new\n"}]
    assert model.handle("clear_output", {"wait": False}) == [ClearOutputs()]
    assert model.outputs() == []


def test_update_display_data_rewrites_outputs_with_that_display_id() -> None:
    model = CellOutputs()
    model.handle(
        "display_data",
        {"data": {"text/plain": "0%"}, "metadata": {}, "transient": {"display_id": "bar"}},
    )
    model.handle("display_data", {"data": {"text/plain": "other"}, "metadata": {}})
    ops = model.handle(
        "update_display_data",
        {"data": {"text/plain": "100%"}, "metadata": {}, "transient": {"display_id": "bar"}},
    )
    assert ops == [ReplaceOutput(0, {"text/plain": "100%"}, {})]
    assert [o["data"]["text/plain"] for o in model.outputs()] == ["100%", "other"]
    assert model.display_ids == {"bar"}
    assert (
        model.handle(
            "update_display_data", {"data": {}, "metadata": {}, "transient": {"display_id": "nope"}}
        )
        == []
    )


def test_results_and_errors_are_nbformat_outputs() -> None:
    model = CellOutputs()
    model.handle("execute_input", {"execution_count": 7, "code": "1"})
    model.handle(
        "execute_result", {"data": {"text/plain": "1"}, "metadata": {}, "execution_count": 7}
    )
    model.handle("error", {"ename": "E", "evalue": "v", "traceback": ["t"]})
    model.handle("status", {"execution_state": "idle"})
    assert model.execution_count == 7
    assert model.outputs() == [
        {
            "output_type": "execute_result",
            "data": {"text/plain": "1"},
            "metadata": {},
            "execution_count": 7,
        },
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]},
    ]


class _Documents:
    """Stands in for NotebookDocuments: serves a local shared notebook (swappable)."""

    def __init__(self, doc: YNotebook) -> None:
        self.doc = doc

    async def open(self, path: str) -> LiveNotebook:
        return LiveNotebook(path, self.doc)


def _notebook() -> YNotebook:
    doc = YNotebook()
    doc.set(
        {
            "cells": [
                {
                    "id": "c1",
                    "cell_type": "code",
                    "source": "print(1)",
                    "metadata": {},
                    "execution_count": 3,
                    "outputs": [{"output_type": "stream", "name": "stdout", "text": "stale\n"}],
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return doc


@on_server_loop
async def test_writer_clears_in_place_streams_and_finishes_in_one_step() -> None:
    doc = _notebook()
    original_outputs = doc.ycells[0]["outputs"]
    writer = LiveCellWriter(_Documents(doc), "n.ipynb", "c1")  # type: ignore[arg-type]
    await writer.begin()
    cell = doc.ycells[0]
    assert (
        cell["outputs"] is not None
        and len(cell["outputs"]) == 0
        and cell["execution_state"] == "running"
    )
    assert cell["execution_count"] is None and cell["metadata"]["trusted"] is True

    await writer.handle("stream", {"name": "stdout", "text": "one\n"})
    await writer.flush()
    assert len(original_outputs) == 1  # the same shared array, cleared then appended to
    ytext = doc.ycells[0]["outputs"][0]["text"]
    assert isinstance(ytext, Text)
    await writer.handle("stream", {"name": "stdout", "text": "two\n"})
    await writer.flush()
    assert str(ytext) == "one\ntwo\n"  # the same text object grew in place

    events: list[Any] = []
    subscription = doc.ydoc.observe(lambda event: events.append(event))
    await writer.finish(4)
    doc.ydoc.unobserve(subscription)
    assert len(events) == 1  # count and idle state in one transaction
    assert doc.get_cell(0)["execution_count"] == 4 and doc.ycells[0]["execution_state"] == "idle"


@on_server_loop
async def test_a_flood_of_messages_is_one_write_per_tenth_of_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [1000.0]  # the writer's clock moves only when the test says, however loaded the machine
    monkeypatch.setattr(_cell_writer, "_now", lambda: clock[0])
    doc = _notebook()
    writer = LiveCellWriter(_Documents(doc), "n.ipynb", "c1")  # type: ignore[arg-type]
    await writer.begin()
    events: list[Any] = []
    subscription = doc.ydoc.observe(lambda event: events.append(event))
    for i in range(1000):
        await writer.handle("stream", {"name": "stderr", "text": f"\r{i // 20:3d}%|{i}/2000"})
    assert len(events) == 1 and writer.pending  # the first write at once, the rest kept back
    clock[0] += 0.05
    await writer.handle("stream", {"name": "stderr", "text": "\r 50%|1000/2000"})
    assert len(events) == 1  # still within the tenth of a second
    clock[0] += 0.06
    await writer.handle("stream", {"name": "stderr", "text": "\r 50%|1001/2000"})
    assert len(events) == 2 and not writer.pending  # a tenth has passed: one write of all kept
    for i in range(1002, 2001):
        await writer.handle("stream", {"name": "stderr", "text": f"\r{i // 20:3d}%|{i}/2000"})
    assert len(events) == 2 and writer.pending
    await writer.flush()
    assert not writer.pending
    assert str(doc.ycells[0]["outputs"][0]["text"]) == "100%|2000/2000"
    await writer.handle("stream", {"name": "stderr", "text": "\n"})
    await writer.finish(9)  # what was kept back is written with the end
    doc.ydoc.unobserve(subscription)
    assert len(events) <= 5
    assert doc.get_cell(0)["outputs"][0]["text"] == "100%|2000/2000\n"
    assert doc.ycells[0]["execution_state"] == "idle"


@on_server_loop
async def test_writer_rebuilds_the_cell_when_the_room_was_replaced_or_outputs_changed() -> None:
    documents = _Documents(_notebook())
    writer = LiveCellWriter(documents, "n.ipynb", "c1")  # type: ignore[arg-type]
    writer.refresh_seconds = 0
    await writer.begin()
    await writer.handle("stream", {"name": "stdout", "text": "a\n"})
    await writer.flush()
    documents.doc = _notebook()  # the room was dropped and re-opened from disk
    await writer.handle("stream", {"name": "stdout", "text": "b\n"})
    await writer.flush()
    assert documents.doc.get_cell(0)["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "a\nb\n"}
    ]

    documents.doc.ycells[0][
        "outputs"
    ].clear()  # someone cleared the outputs mid-run: they stay cleared
    await writer.handle("display_data", {"data": {"text/plain": "x"}, "metadata": {}})
    await writer.flush()
    assert [o["output_type"] for o in documents.doc.get_cell(0)["outputs"]] == ["display_data"]

    del documents.doc.ycells[
        0
    ]  # the user deleted the cell: the run goes on, outputs stay in the mirror
    await writer.handle("stream", {"name": "stdout", "text": "c\n"})
    await writer.flush()
    await writer.finish(5)
    assert writer.cell_missing
    assert [o.get("text") for o in writer.outputs()] == ["a\nb\n", None, "c\n"]


def test_a_big_output_is_measured_and_freed_memory_given_back() -> None:
    from jupyter_aaep.notebook._memory import give_back_freed_memory, output_chars

    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "x" * 700},
        {"output_type": "execute_result", "data": {"text/plain": "abc", "image/png": "QUJD"}},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]},
    ]
    assert output_chars(outputs) == 707
    assert give_back_freed_memory() is True  # glibc (the test machines): malloc_trim ran


def _longest_text(root: Any) -> int:
    """The longest string reachable from *root* through the objects gc knows."""
    seen, stack, longest = {id(root)}, [root], 0
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if isinstance(ref, str):
                longest = max(longest, len(ref))
            elif id(ref) not in seen and not isinstance(ref, type):
                seen.add(id(ref))
                stack.append(ref)
    return longest


@on_server_loop
async def test_a_run_kept_for_its_display_updates_keeps_no_copy_of_its_outputs() -> None:
    """A run that shows a display id is kept for its later updates until the cell runs again;
    it used to keep its whole mirror (a 2 MB print beside a progress display stayed in the
    server). Its updates still land in place, also in a room opened again from the file."""
    from jupyter_aaep.notebook.kernel_run import remember_displays

    documents = _Documents(_notebook())
    writer = LiveCellWriter(documents, "n.ipynb", "c1")  # type: ignore[arg-type]
    writer.refresh_seconds = 0
    printed = "".join(f"{i:099d}\n" for i in range(20_000))
    bar = {"metadata": {}, "transient": {"display_id": "bar"}}
    await writer.begin()
    await writer.handle("stream", {"name": "stdout", "text": printed})
    await writer.handle("display_data", {"data": {"text/plain": "0%"}, **bar})
    await writer.handle("execute_result", {"data": {"text/plain": "x" * 5000}, "metadata": {}})
    await writer.finish(4)
    assert len(writer.outputs()[0]["text"]) == len(printed) and _longest_text(writer) >= 2_000_000
    displays: dict[str, Any] = {}
    remember_displays(displays, writer)
    assert displays == {"bar": {"c1": writer}} and _longest_text(writer) < 5000

    await writer.handle("update_display_data", {"data": {"text/plain": "50%"}, **bar})
    await writer.flush()
    cell = documents.doc.get_cell(0)
    assert cell["outputs"][0]["text"] == printed and cell["outputs"][1]["data"] == {
        "text/plain": "50%"
    }
    released = weakref.ref(documents.doc)
    again = YNotebook()  # the room was released and opened again from the saved file
    again.set({**documents.doc.source})
    documents.doc = again
    gc.collect()
    assert released() is None, "the kept run holds no shared notebook between updates"
    await writer.handle("update_display_data", {"data": {"text/plain": "100%"}, **bar})
    await writer.flush()
    outputs = again.get_cell(0)["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream", "display_data", "execute_result"]
    assert outputs[0]["text"] == printed and outputs[1]["data"] == {"text/plain": "100%"}
    assert outputs[2]["data"] == {"text/plain": "x" * 5000}
