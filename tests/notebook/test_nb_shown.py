"""What each reader was shown (the base of an edit without a version), and the line merge that
uses it: non-overlapping line changes keep both sides, changes of the same lines refuse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_aaep.notebook._text_edits import merge_three_way
from jupyter_aaep.notebook.shown import ShownSources

pytestmark = pytest.mark.shared_server


def test_each_reader_has_its_own_base_per_notebook_and_cell() -> None:
    shown = ShownSources()
    shown.remember("chat-1", "a.ipynb", "c1", "x = 1")
    shown.remember("outside:claude", "/a.ipynb", "c1", "x = 2")
    assert shown.base("chat-1", "a.ipynb", "c1") == "x = 1"
    assert shown.base("outside:claude", "a.ipynb", "c1") == "x = 2"  # the same path, normalised
    assert shown.base("chat-2", "a.ipynb", "c1") is None
    assert shown.base("chat-1", "b.ipynb", "c1") is None
    shown.remember("chat-1", "a.ipynb", "c1", "x = 3")  # its own edit is its new base
    assert shown.base("chat-1", "a.ipynb", "c1") == "x = 3" and len(shown) == 2


def test_the_oldest_bases_go_first_when_entries_or_characters_run_out() -> None:
    shown = ShownSources(entries=3, chars=100)
    for n in range(4):
        shown.remember("r", "a.ipynb", f"c{n}", "x")
    assert shown.base("r", "a.ipynb", "c0") is None and len(shown) == 3
    shown.remember("r", "a.ipynb", "c1", "x")  # seen again: now the newest
    shown.remember("r", "a.ipynb", "big", "y" * 99)
    assert shown.base("r", "a.ipynb", "big") == "y" * 99
    # Four entries, then 101 characters: the two oldest went, the one seen again stayed.
    assert [shown.base("r", "a.ipynb", c) for c in ("c1", "c2", "c3")] == ["x", None, None]
    assert len(shown) == 2
    shown.remember("r", "a.ipynb", "huge", "z" * 101)  # larger than the whole budget: not kept
    assert shown.base("r", "a.ipynb", "huge") is None and len(shown) == 0


BASE_LINES = st.integers(min_value=1, max_value=12)


@st.composite
def disjoint_edits(draw: st.DrawFn) -> tuple[list[str], dict[int, str], dict[int, str], int]:
    """Base lines, the agent's replaced lines, the other side's replaced lines (never the same
    line) and where the other side inserts a line (not inside a block the agent replaced)."""
    count = draw(BASE_LINES)
    base = [f"b{i} = {i}\n" for i in range(count)]
    owners = draw(
        st.lists(st.sampled_from(["ours", "theirs", None]), min_size=count, max_size=count)
    )
    ours = {i: f"o{i} = 0\n" for i, who in enumerate(owners) if who == "ours"}
    theirs = {i: f"t{i} = 1\n" for i, who in enumerate(owners) if who == "theirs"}
    allowed = [p for p in range(count + 1) if not (p - 1 in ours and p in ours)]
    insert_at = draw(st.sampled_from(allowed))
    return base, ours, theirs, insert_at


@settings(max_examples=300, deadline=None)
@given(disjoint_edits())
def test_line_changes_that_do_not_overlap_keep_both(
    case: tuple[list[str], dict[int, str], dict[int, str], int],
) -> None:
    base, ours, theirs, insert_at = case
    fix = "total += important_human_fix()\n"
    mine = "".join(ours.get(i, line) for i, line in enumerate(base))
    other_lines = [theirs.get(i, line) for i, line in enumerate(base)]
    other = "".join(other_lines[:insert_at] + [fix] + other_lines[insert_at:])
    expected_lines = [ours.get(i, theirs.get(i, line)) for i, line in enumerate(base)]
    expected = "".join(expected_lines[:insert_at] + [fix] + expected_lines[insert_at:])
    assert merge_three_way("".join(base), mine, other) == expected


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_changes_of_the_same_line_refuse(data: st.DataObject) -> None:
    count = data.draw(BASE_LINES)
    base = [f"b{i} = {i}\n" for i in range(count)]
    line = data.draw(st.integers(min_value=0, max_value=count - 1))
    mine = base.copy()
    mine[line] = "mine = 1\n"
    other = base.copy()
    other[line] = "theirs = 2\n"
    assert merge_three_way("".join(base), "".join(mine), "".join(other)) is None
