"""The project's rules files, read for the agent's system prompt and said aloud when they change.

Teams write down how they work (``AGENTS.md``, ``CLAUDE.md``, rule folders) and expect every agent
to follow it; the failure to avoid is the silent one, a rule that did not load or did not match
and nobody noticed. So every session in a notebook knows exactly which rules apply, and the person
hears it once per change.

Read in this order (the prompt keeps that order, stable text first so the prompt cache holds):

1. the user's own rules, ``{jupyter config dir}/aaep/rules/*.md``;
2. ``AGENTS.md`` and ``CLAUDE.md`` in the server root and each folder down to the notebook's;
3. the project's ``.aaep/rules/*.md`` in the server root and each folder down to the notebook's.

A rule file may start with YAML front matter::

    ---
    active: false            # kept, not applied
    scope:                   # every listed key must match; a rule without scope always applies
      kernel_names: [python3]
      languages: [python]
      file_patterns: ["analysis/*.ipynb"]
    ---

Files are re-read when their size or modification time changes (checked at each request). A file
that cannot be read or parsed is named in one sentence and left out, never fatal; a long rule is
cut with a sentence saying so.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

log = logging.getLogger(__name__)

RULE_CHARS = 8_000
"""The most of one rule file the model gets; the rest is cut, and the person is told."""
TOTAL_CHARS = 24_000
"""The most rule text one request carries; later files are cut first."""
PROJECT_NAMES = ("AGENTS.md", "CLAUDE.md")


@dataclass(frozen=True)
class RuleTarget:
    """What a rule's scope is matched against: the notebook and its kernel."""

    notebook_path: str
    """Root-relative, with ``/`` separators."""
    kernel_name: str | None = None
    language: str | None = None


@dataclass(frozen=True)
class RuleScope:
    kernel_names: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    file_patterns: tuple[str, ...] = ()

    def matches(self, target: RuleTarget) -> bool:
        """Every key the scope lists must match; a key it leaves out matches anything."""
        if self.kernel_names and (target.kernel_name or "").lower() not in self.kernel_names:
            return False
        if self.languages and (target.language or "").lower() not in self.languages:
            return False
        if self.file_patterns:
            path = target.notebook_path
            name = PurePosixPath(path).name
            if not any(
                fnmatch.fnmatch(path, p) or fnmatch.fnmatch(name, p) for p in self.file_patterns
            ):
                return False
        return True

    def words(self) -> str:
        """The scope in a sentence fragment ("Python kernels, files matching *.ipynb")."""
        parts = []
        if self.kernel_names:
            parts.append("kernels " + ", ".join(self.kernel_names))
        if self.languages:
            parts.append("languages " + ", ".join(self.languages))
        if self.file_patterns:
            parts.append("files matching " + ", ".join(self.file_patterns))
        return "; ".join(parts)


@dataclass(frozen=True)
class Rule:
    label: str
    """How the person knows the file: root-relative (``.aaep/rules/plots.md``), or
    ``your rules/<name>`` for the user's own."""
    path: Path
    text: str
    scope: RuleScope | None = None
    active: bool = True
    cut: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "path": str(self.path),
            "active": self.active,
            "scope": self.scope.words() if self.scope else None,
            "cut": self.cut,
        }


@dataclass(frozen=True)
class AppliedRules:
    """The rules of one request, the ones left out, and the problems met while reading."""

    rules: tuple[Rule, ...] = ()
    skipped: tuple[Rule, ...] = ()
    """Inactive, or scoped to another kernel, language or file."""
    problems: tuple[str, ...] = ()

    @property
    def signature(self) -> tuple[Any, ...]:
        """What the person was told about; a change is said again."""
        return (tuple((r.label, r.cut) for r in self.rules), self.problems)

    def prompt_text(self) -> str:
        if not self.rules:
            return ""
        blocks = [
            f'<rules source="{rule.label}">\n{rule.text.strip()}\n</rules>' for rule in self.rules
        ]
        return (
            "\nThe user's and the project's rules for this notebook follow, from the most general "
            "to the most specific; follow them (a later rule wins over an earlier one), unless the "
            "user asks otherwise in this conversation.\n" + "\n".join(blocks)
        )

    def sentence(self) -> str:
        """What the person hears ("2 rules apply: AGENTS.md, .aaep/rules/plots.md.")."""
        said = []
        if self.rules:
            count = "1 rule applies" if len(self.rules) == 1 else f"{len(self.rules)} rules apply"
            said.append(f"{count}: {', '.join(r.label for r in self.rules)}.")
            cut = [r.label for r in self.rules if r.cut]
            if cut:
                said.append(
                    f"{', '.join(cut)} {'was' if len(cut) == 1 else 'were'} cut to fit: "
                    "the agent reads only its beginning."
                )
        elif self.problems or self.skipped:
            said.append("No rules apply.")
        said.extend(self.problems)
        return " ".join(said)

    def describe(self) -> dict[str, Any]:
        return {
            "applies": [r.describe() for r in self.rules],
            "skipped": [r.describe() for r in self.skipped],
            "problems": list(self.problems),
            "sentence": self.sentence() or "No rules files were found for this notebook.",
        }


RulesProvider = Callable[[str], Awaitable[AppliedRules]]
"""The host's reader of a notebook's rules (its path → the rules that apply)."""


@dataclass
class _Cached:
    stamp: tuple[int, int]
    rule: Rule | None
    problem: str | None


@dataclass
class RuleFiles:
    """Finds, parses and caches the rules files of one server root."""

    root: Path
    user_dir: Path | None = None
    _cache: dict[Path, _Cached] = field(default_factory=dict)

    def candidates(self, notebook_path: str) -> Iterator[tuple[str, Path]]:
        """(label, path) of every rules file that may apply, in the documented order."""
        if self.user_dir is not None and self.user_dir.is_dir():
            for path in sorted(self.user_dir.glob("*.md")):
                yield f"your rules/{path.name}", path
        folders = self._folders(notebook_path)
        for folder, prefix in folders:
            for name in PROJECT_NAMES:
                path = folder / name
                if path.is_file():
                    yield prefix + name, path
        for folder, prefix in folders:
            rules = folder / ".aaep" / "rules"
            if rules.is_dir():
                for path in sorted(rules.glob("*.md")):
                    yield f"{prefix}.aaep/rules/{path.name}", path

    def _folders(self, notebook_path: str) -> list[tuple[Path, str]]:
        """The root and each folder down to the notebook's, with their root-relative prefixes;
        nothing outside the root (a path that climbs out is cut at the root)."""
        parts = [p for p in PurePosixPath(notebook_path).parent.parts if p not in ("", ".", "/")]
        if ".." in parts:
            parts = []
        found = [(self.root, "")]
        for depth in range(1, len(parts) + 1):
            found.append((self.root.joinpath(*parts[:depth]), "/".join(parts[:depth]) + "/"))
        return found

    def applicable(self, target: RuleTarget) -> AppliedRules:
        rules: list[Rule] = []
        skipped: list[Rule] = []
        problems: list[str] = []
        budget = TOTAL_CHARS
        for label, path in self.candidates(target.notebook_path):
            rule, problem = self._read(label, path)
            if problem:
                problems.append(problem)
            if rule is None:
                continue
            if not rule.active or (rule.scope is not None and not rule.scope.matches(target)):
                skipped.append(rule)
                continue
            if budget <= 0:
                problems.append(
                    f"{label} was left out: the rules before it fill the space for rules."
                )
                continue
            if len(rule.text) > budget:
                rule = Rule(rule.label, rule.path, rule.text[:budget], rule.scope, True, True)
            budget -= len(rule.text)
            rules.append(rule)
        return AppliedRules(tuple(rules), tuple(skipped), tuple(problems))

    def _read(self, label: str, path: Path) -> tuple[Rule | None, str | None]:
        try:
            stat = path.stat()
        except OSError as error:
            return None, f"{label} could not be read ({error.strerror or error})."
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached.rule, cached.problem
        rule, problem = _parse(label, path)
        self._cache[path] = _Cached(stamp, rule, problem)
        return rule, problem


def _parse(label: str, path: Path) -> tuple[Rule | None, str | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = "it is not UTF-8 text" if isinstance(error, UnicodeDecodeError) else str(error)
        return None, f"{label} could not be read ({reason}), so it does not apply."
    front: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        head, sep, rest = text[3:].partition("\n---")
        if not sep:
            return (
                None,
                f"{label} starts a front matter block (---) that never ends, so it does not apply.",
            )
        try:
            # PyYAML comes with Jupyter Server (jupyter_events requires it).
            import yaml  # type: ignore[import-untyped]

            loaded = yaml.safe_load(head) or {}
        except Exception as error:  # noqa: BLE001 - any YAML error is the file's problem
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            return (
                None,
                f"{label} has front matter that is not valid YAML ({first}), so it does not apply.",
            )
        if not isinstance(loaded, dict):
            return None, f"{label} has front matter that is not a mapping, so it does not apply."
        front = loaded
        body = rest.partition("\n")[2]
    try:
        scope = _scope(front.get("scope"))
    except _BadScope as error:
        return None, f"{label}: {error} So it does not apply."
    cut = len(body) > RULE_CHARS
    return (
        Rule(
            label=label,
            path=path,
            text=body[:RULE_CHARS],
            scope=scope,
            active=front.get("active", True) is not False,
            cut=cut,
        ),
        None,
    )


class _BadScope(Exception):
    """A scope that cannot be read; its message is the person's sentence."""


def _scope(raw: Any) -> RuleScope | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _BadScope("its scope is not a mapping of kernel_names, languages and file_patterns.")
    unknown = set(raw) - {"kernel_names", "languages", "file_patterns"}
    if unknown:
        raise _BadScope(f"its scope has unknown keys ({', '.join(sorted(map(str, unknown)))}).")

    def listed(key: str, lower: bool) -> tuple[str, ...]:
        value = raw.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise _BadScope(f"its scope's {key} is not a list.")
        return tuple(str(v).lower() if lower else str(v) for v in value)

    return RuleScope(
        kernel_names=listed("kernel_names", True),
        languages=listed("languages", True),
        file_patterns=listed("file_patterns", False),
    )


__all__ = [
    "AppliedRules",
    "Rule",
    "RuleFiles",
    "RuleScope",
    "RuleTarget",
    "RulesProvider",
]
