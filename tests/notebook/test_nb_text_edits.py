"""Minimal text changes of a shared string, and the three-way merge of the agent's edit."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc, Text

from jupyter_aaep.notebook._text_edits import apply_text, merge_three_way, version_tag
from jupyter_aaep.notebook.edit_record import CellOperation, EditRecord

pytestmark = pytest.mark.shared_server


def shared(text: str) -> tuple[Doc, Text, list[Any]]:
    doc: Doc = Doc()
    ytext = doc.get("source", type=Text)
    ytext += text
    deltas: list[Any] = []
    ytext.observe(lambda event: deltas.append(event.delta))
    return doc, ytext, deltas


@pytest.mark.parametrize(
    "old,new",
    [
        ("x = 1\nprint(x)", "x = 100\nprint(x)"),
        ("café = 1\n😀 = 2", "café = 10\n😀 = 2\nthé = 3"),
        ("abc", ""),
        ("", "abc"),
        ("λ = 1", "λ = 1"),
    ],
)
def test_apply_text_reaches_the_new_text(old: str, new: str) -> None:
    _, ytext, _ = shared(old)
    assert apply_text(ytext, new) is (old != new)
    assert str(ytext) == new


def test_apply_text_changes_only_the_differing_span() -> None:
    """A whole replacement would delete everything; a cursor elsewhere in the cell would jump."""
    _, ytext, deltas = shared("import math\nradius = 2\narea = math.pi * radius\n")
    apply_text(ytext, "import math\nradius = 2\narea = math.pi * radius ** 2\n")
    assert deltas == [
        [{"retain": len("import math\nradius = 2\narea = math.pi * radius")}, {"insert": " ** 2"}]
    ]


def test_a_concurrent_typist_keeps_their_characters() -> None:
    """The person's insertion (another doc, merged afterwards) survives the agent's span edit."""
    agent_doc, agent_text, _ = shared("a = 1\nb = 2\n")
    person_doc: Doc = Doc()
    person_doc.apply_update(agent_doc.get_update())
    person_text = person_doc.get("source", type=Text)
    person_text.insert(len("a = 1\nb = 2"), "0")  # b = 20
    apply_text(agent_text, "a = 5\nb = 2\n")
    agent_doc.apply_update(person_doc.get_update())
    assert str(agent_text) == "a = 5\nb = 20\n"


@pytest.mark.parametrize(
    "base,ours,theirs,merged",
    [
        ("a\nb\nc", "A\nb\nc", "a\nb\nc\nd", "A\nb\nc\nd"),  # a line added at the end survives
        ("a = 1", "a = 2", "a = 1\nb = 2", "a = 2\nb = 2"),  # added right after the changed line
        ("a = 1", "a = 2", "b = 0\na = 1", "b = 0\na = 2"),  # added right before it
        ("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n", "A\nb\nC\n"),  # changes of different lines
        ("a\nb", "a\nb", "a\nB", "a\nB"),  # the agent changed nothing
        ("a\nb", "a\nX", "a\nX", "a\nX"),  # both made the same change
    ],
)
def test_merge_keeps_both_changes_when_they_touch_different_lines(
    base: str, ours: str, theirs: str, merged: str
) -> None:
    assert merge_three_way(base, ours, theirs) == merged


@pytest.mark.parametrize(
    "base,ours,theirs",
    [
        ("rate = 0.1\nprint(rate)", "rate = 0.2\nprint(rate)", "rate = 0.15\nprint(rate)"),
        ("a\nb\n", "a\nX\nb\n", "a\nY\nb\n"),  # different lines inserted at the same place
        ("a\nb\nc", "a\nc", "a\nb2\nc"),  # the agent deleted the line the person changed
    ],
)
def test_merge_refuses_changes_of_the_same_lines(base: str, ours: str, theirs: str) -> None:
    assert merge_three_way(base, ours, theirs) is None


def test_version_tags_are_short_and_follow_the_text() -> None:
    assert len(version_tag("x = 1")) == 6 and version_tag("x = 1") != version_tag("x = 2")


def test_the_record_names_what_a_file_lacks() -> None:
    record = EditRecord("n.ipynb", "s1")
    record.add(CellOperation("create", "new", after={"source": "made = 1", "cell_type": "code"}))
    record.add(
        CellOperation(
            "edit", "a", before={"source": "a = 1"}, after={"source": "a = 2", "cell_type": "code"}
        )
    )
    record.add(CellOperation("delete", "d", before={"id": "d", "source": "gone = 1"}))
    stored = EditRecord.from_json(record.to_json())
    assert stored is not None and stored.operations == record.operations
    on_disk = [{"id": "a", "source": "a = 1"}, {"id": "d", "source": "gone = 1"}]
    assert stored.missing_from(on_disk) == [
        "the new cell 'made = 1'",
        "the edit of the cell that now begins 'a = 1'",
        "the deletion of the cell that began 'gone = 1'",
    ]
    assert (
        stored.missing_from([{"id": "a", "source": "a = 2"}, {"id": "new", "source": "made = 1"}])
        == []
    )
    assert EditRecord.from_json({"path": "n.ipynb", "cells": []}) is None, (
        "old whole-notebook snapshots"
    )


def test_the_record_names_a_move_the_file_lacks() -> None:
    record = EditRecord("n.ipynb", "s1")
    record.add(
        CellOperation(
            "move", "c", before={"source": "c = 3"}, after={"prev": None}, index=2, prev="b"
        )
    )
    assert record.missing_from(
        [{"id": "a", "source": "a"}, {"id": "b", "source": "b"}, {"id": "c", "source": "c = 3"}]
    ) == ["the move of the cell that begins 'c = 3'"]
    assert record.missing_from([{"id": "c", "source": "c = 3"}, {"id": "a", "source": "a"}]) == []


def test_the_record_names_cleared_outputs_the_file_still_holds() -> None:
    output = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    record = EditRecord("n.ipynb", "s1")
    record.add(
        CellOperation(
            "clear",
            "p",
            before={"source": "print('hello')", "outputs": [output], "execution_count": 3},
        )
    )
    stored = EditRecord.from_json(record.to_json())
    assert stored is not None
    as_cleared = {"id": "p", "source": "print('hello')", "outputs": [], "execution_count": None}
    assert stored.missing_from([{**as_cleared, "outputs": [output], "execution_count": 3}]) == [
        "the cleared outputs of the cell that begins 'print('hello')'"
    ]
    assert stored.missing_from([as_cleared]) == []
    rerun = {**as_cleared, "outputs": [output], "execution_count": 4}
    assert stored.missing_from([rerun]) == [], "outputs of a later run are not the cleared ones"
    assert stored.missing_from([]) == [], "a cell deleted since has no outputs to clear"
