"""A plan as a document: its Markdown, what a person's edit changed, and where it is kept.

In plan mode (:mod:`.plan_gate`) the agent's proposal is written as Markdown to a file under a
hidden folder of the server root (``.aaep/plans/``), never into the notebook, so a person can
edit it in JupyterLab's own editor before choosing how it runs. What is saved there when they
choose is what the agent follows; :func:`plan_changes` says in sentences what their edit changed,
for the model.

The Markdown is deliberately plain: a ``#`` title (the summary) and a numbered list (the
steps). Lines that continue a step (indented, or not a list item) belong to it; HTML comments
blank lines and list markers with nothing after them are ignored, so the note at the end of the
file never becomes a step.
"""

from __future__ import annotations

import difflib
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_STEPS", "Plan", "PlanFiles", "plan_changes"]

MAX_STEPS = 30
"""More steps than anyone reviews at once: a longer plan is refused with a sentence."""

KEEP_DAYS = 7
"""Days a plan file is kept after it was last written."""

PLAN_FOLDER = ".aaep/plans"
"""Under the server root; hidden, so it stays out of the file browser and the notebook."""

_NOTE = (
    "<!-- Edit the title and the numbered steps, then save. When you choose how the plan runs, "
    "the agent follows what is saved here and is told what you changed. -->"
)
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+(.*\S)\s*$")
_EMPTY_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s*$")
"""A list marker with nothing after it (an editor continues a list on Enter): no step."""
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class Plan:
    """What the agent proposes to do: one summary, steps in order."""

    summary: str
    steps: tuple[str, ...]

    def markdown(self) -> str:
        lines = [f"# {_one_line(self.summary)}", ""]
        lines += [f"{n}. {_one_line(step)}" for n, step in enumerate(self.steps, 1)]
        return "\n".join([*lines, "", _NOTE, ""])

    def numbered(self) -> str:
        """The steps as a numbered list, one per line ("1. Load the data")."""
        return "\n".join(f"{n}. {step}" for n, step in enumerate(self.steps, 1))

    @classmethod
    def from_markdown(cls, text: str, *, fallback_summary: str = "") -> Plan:
        """The plan a person saved; a missing title keeps *fallback_summary*."""
        summary = fallback_summary
        steps: list[str] = []
        for line in _COMMENT.sub("", text).splitlines():
            if not line.strip() or _EMPTY_ITEM.match(line):
                continue
            if line.startswith("#"):
                if not steps:
                    summary = line.lstrip("#").strip() or summary
                continue
            item = _ITEM.match(line)
            if item:
                steps.append(item.group(1))
            elif steps:  # a step written over several lines
                steps[-1] = f"{steps[-1]} {line.strip()}"
        return cls(summary, tuple(steps))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plan_changes(before: Plan, after: Plan) -> list[str]:
    """What a person's edit changed, one sentence per change, numbered as in *after*."""
    told: list[str] = []
    if _one_line(before.summary) != _one_line(after.summary):
        told.append(f"The title now reads: {after.summary!r}.")
    old = [_one_line(s) for s in before.steps]
    new = [_one_line(s) for s in after.steps]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                told.append(f"Step {j1 + k + 1} now reads: {new[j1 + k]!r} (was {old[i1 + k]!r}).")
            continue
        for k in range(i1, i2):
            told.append(f"Removed: the step {old[k]!r}.")
        for k in range(j1, j2):
            told.append(f"Added as step {k + 1}: {new[k]!r}.")
    return told


class PlanFiles:
    """Plan documents under ``<root>/.aaep/plans``: one file per request, rewritten on each
    proposal of that request, private to the user (0600, folder 0700)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def new_name(self) -> str:
        """A fresh file name; plans older than :data:`KEEP_DAYS` are removed meanwhile (a plan
        matters only while its request runs, and the folder must not grow for ever)."""
        cutoff = time.time() - KEEP_DAYS * 86400
        for old in (self.root / PLAN_FOLDER).glob("plan-*.md"):
            try:
                if old.stat().st_mtime < cutoff:
                    old.unlink()
            except OSError:
                pass
        return f"plan-{secrets.token_hex(6)}.md"

    def relative(self, name: str) -> str:
        """The path JupyterLab opens, relative to the server root."""
        return f"{PLAN_FOLDER}/{name}"

    def _path(self, name: str) -> Path:
        if not re.fullmatch(r"plan-[0-9a-f]{12}\.md", name):
            raise ValueError(f"{name!r} is not the name of a plan file")
        return self.root / PLAN_FOLDER / name

    def write(self, name: str, plan: Plan) -> str:
        """Write *plan*; returns its path relative to the server root."""
        self.save_text(name, plan.markdown())
        return self.relative(name)

    def save_text(self, name: str, text: str) -> None:
        """Write the file as a person saved it (the panel's editor)."""
        path = self._path(name)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)

    def modified(self, name: str) -> float | None:
        """When the file was last written (seconds since the epoch), or ``None``."""
        try:
            return self._path(name).stat().st_mtime
        except (OSError, ValueError):
            return None

    def read(self, name: str) -> str | None:
        """The saved text, or ``None`` when the file is gone or unreadable."""
        try:
            return self._path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None
