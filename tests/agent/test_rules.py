"""The rules files: which are found, in which order, which apply, and what the person hears."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_aaep.agent.rules import RULE_CHARS, TOTAL_CHARS, AppliedRules, RuleFiles, RuleTarget

PY = RuleTarget("project/analysis/nb.ipynb", kernel_name="python3", language="python")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, user = tmp_path / "root", tmp_path / "config" / "aaep" / "rules"
    write(user / "mine.md", "Answer in British English.")
    write(root / "AGENTS.md", "Use pandas, never polars.")
    write(root / "project" / "CLAUDE.md", "Name dataframes df_<thing>.")
    write(root / "project" / "analysis" / "AGENTS.md", "Plots use seaborn.")
    write(
        root / ".aaep" / "rules" / "python.md",
        "---\nscope:\n  kernel_names: [python3]\n---\nType hints.\n",
    )
    write(
        root / ".aaep" / "rules" / "r.md", "---\nscope: {languages: [R]}\n---\nUse the tidyverse.\n"
    )
    write(root / "project" / ".aaep" / "rules" / "off.md", "---\nactive: false\n---\nNever used.\n")
    write(root / "elsewhere" / "AGENTS.md", "Not on the notebook's path.")
    return root, user


def test_the_documented_order_and_scopes(tree: tuple[Path, Path]) -> None:
    root, user = tree
    applied = RuleFiles(root, user).applicable(PY)
    assert [r.label for r in applied.rules] == [
        "your rules/mine.md",
        "AGENTS.md",
        "project/CLAUDE.md",
        "project/analysis/AGENTS.md",
        ".aaep/rules/python.md",
    ]
    assert [r.label for r in applied.skipped] == [".aaep/rules/r.md", "project/.aaep/rules/off.md"]
    prompt = applied.prompt_text()
    assert prompt.index("British English") < prompt.index("pandas") < prompt.index("seaborn")
    assert "Type hints." in prompt and "tidyverse" not in prompt and "Never used" not in prompt
    assert "Not on the notebook's path" not in prompt
    assert applied.sentence() == (
        "5 rules apply: your rules/mine.md, AGENTS.md, project/CLAUDE.md, "
        "project/analysis/AGENTS.md, .aaep/rules/python.md."
    )
    # An R notebook gets the R rule, not the Python one; scopes match case-insensitively.
    r = RuleFiles(root, user).applicable(RuleTarget("project/analysis/nb.ipynb", "ir", "R"))
    labels = [x.label for x in r.rules]
    assert ".aaep/rules/r.md" in labels and ".aaep/rules/python.md" not in labels


def test_file_patterns_match_the_path_or_the_name(tmp_path: Path) -> None:
    write(
        tmp_path / ".aaep" / "rules" / "plots.md",
        "---\nscope:\n  file_patterns: ['reports/*.ipynb']\n---\nx",
    )
    write(
        tmp_path / ".aaep" / "rules" / "any.md",
        "---\nscope:\n  file_patterns: 'draft*.ipynb'\n---\ny",
    )
    files = RuleFiles(tmp_path)
    assert [r.label for r in files.applicable(RuleTarget("reports/q1.ipynb")).rules] == [
        ".aaep/rules/plots.md"
    ]
    assert [r.label for r in files.applicable(RuleTarget("a/draft2.ipynb")).rules] == [
        ".aaep/rules/any.md"
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("---\nscope: [1, 2\n---\nbody", "front matter that is not valid YAML"),
        ("---\nscope: x\n---\nbody", "its scope is not a mapping"),
        ("---\nscope: {kernels: [a]}\n---\nbody", "its scope has unknown keys (kernels)"),
        ("---\nscope: {languages: 3}\n---\nbody", "its scope's languages is not a list"),
        ("---\nactive: false\nbody with no end", "never ends"),
        ("---\n- a list\n---\nbody", "not a mapping"),
    ],
)
def test_a_broken_file_is_named_in_one_sentence_and_left_out(
    tmp_path: Path, text: str, said: str
) -> None:
    write(tmp_path / "AGENTS.md", text)
    write(tmp_path / "CLAUDE.md", "Still read.")
    applied = RuleFiles(tmp_path).applicable(RuleTarget("nb.ipynb"))
    assert [r.label for r in applied.rules] == ["CLAUDE.md"]
    (problem,) = applied.problems
    assert problem.startswith("AGENTS.md") and said in problem and problem.endswith(".")
    assert problem in applied.sentence()


def test_a_file_that_is_not_text_is_named(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"\xff\xfe\x00bad")
    applied = RuleFiles(tmp_path).applicable(RuleTarget("nb.ipynb"))
    assert applied.rules == () and "not UTF-8 text" in applied.problems[0]
    assert applied.sentence().startswith("No rules apply. AGENTS.md could not be read")


def test_long_rules_are_cut_and_said_so(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "a" * (RULE_CHARS + 10))
    for i in range(4):
        write(tmp_path / ".aaep" / "rules" / f"r{i}.md", "b" * RULE_CHARS)
    applied = RuleFiles(tmp_path).applicable(RuleTarget("nb.ipynb"))
    assert applied.rules[0].cut and len(applied.rules[0].text) == RULE_CHARS
    assert sum(len(r.text) for r in applied.rules) == TOTAL_CHARS
    assert (
        "AGENTS.md was cut to fit" in applied.sentence() or "were cut to fit" in applied.sentence()
    )
    assert any("left out" in p for p in applied.problems)


def test_a_changed_file_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    rule = write(tmp_path / "AGENTS.md", "First version.")
    files = RuleFiles(tmp_path)
    first = files.applicable(RuleTarget("nb.ipynb"))
    assert "First version." in first.prompt_text()
    rule.write_text("Second version, longer.")
    second = files.applicable(RuleTarget("nb.ipynb"))
    assert "Second version" in second.prompt_text()
    # Same size and time: the cached parse is used (no read).
    stat = rule.stat()
    rule.write_text("Third version, longer!!")  # same length as the second
    os.utime(rule, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "Second version" in files.applicable(RuleTarget("nb.ipynb")).prompt_text()


def test_nothing_outside_the_root_is_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    write(tmp_path / "AGENTS.md", "Outside the root.")
    applied = RuleFiles(root).applicable(RuleTarget("../nb.ipynb"))
    assert applied.rules == ()


def test_no_rules_say_nothing() -> None:
    assert AppliedRules().sentence() == "" and AppliedRules().prompt_text() == ""
