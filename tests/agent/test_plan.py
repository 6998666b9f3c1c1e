"""A plan as a document: its Markdown, what a person's edit of it says, and its file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from jupyter_aaep.agent.plan import Plan, PlanFiles, plan_changes

PLAN = Plan("Train and plot", ("Run cell 4 (the training loop)", "Plot the losses"))


def test_the_markdown_reads_back_as_the_same_plan_and_its_note_is_no_step() -> None:
    text = PLAN.markdown()
    assert text.startswith("# Train and plot\n\n1. Run cell 4 (the training loop)\n2. Plot")
    assert "<!--" in text
    assert Plan.from_markdown(text) == PLAN


def test_what_a_person_writes_is_read_as_they_mean_it() -> None:
    saved = (
        "# Train, then plot\n\n"
        "1. Run cell 4\n   (the training loop)\n"
        "- Plot the losses\n"
        "3. \n"  # the editor continued the list on Enter: not a step
        "<!-- a note\nover two lines -->\n"
    )
    plan = Plan.from_markdown(saved)
    assert plan.summary == "Train, then plot"
    assert plan.steps == ("Run cell 4 (the training loop)", "Plot the losses")
    assert Plan.from_markdown("1. Only a step", fallback_summary="Kept").summary == "Kept"


def test_changes_are_told_in_sentences_numbered_as_saved() -> None:
    after = Plan("Train only", ("Run cell 3 first", "Run cell 4 (the training loop)", "Save"))
    told = plan_changes(PLAN, after)
    assert told == [
        "The title now reads: 'Train only'.",
        "Added as step 1: 'Run cell 3 first'.",
        "Step 3 now reads: 'Save' (was 'Plot the losses').",
    ]
    assert plan_changes(PLAN, PLAN) == []
    assert plan_changes(PLAN, Plan(PLAN.summary, PLAN.steps[:1])) == [
        "Removed: the step 'Plot the losses'."
    ]


def test_plan_files_are_private_and_only_plan_names_are_opened(tmp_path: Path) -> None:
    files = PlanFiles(tmp_path)
    name = files.new_name()
    assert files.write(name, PLAN) == f".aaep/plans/{name}"
    path = tmp_path / ".aaep" / "plans" / name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert files.read(name) == PLAN.markdown()
    for bad in ("../secrets.md", "plan-xyz.md", "notes.md"):
        assert files.read(bad) is None
        with pytest.raises(ValueError):
            files.save_text(bad, "x")


def test_old_plans_are_removed_when_a_new_one_is_made(tmp_path: Path) -> None:
    import os
    import time

    files = PlanFiles(tmp_path)
    old, recent = files.new_name(), files.new_name()
    files.write(old, PLAN)
    files.write(recent, PLAN)
    week_ago = time.time() - 8 * 86400
    os.utime(tmp_path / ".aaep" / "plans" / old, (week_ago, week_ago))
    files.new_name()
    assert files.read(old) is None and files.read(recent) is not None
