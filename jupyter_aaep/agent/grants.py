"""Standing permissions: what the person lets the agent do without asking, in their words.

A grant is a *rule* (what kind of step) plus a *scope* (where it holds):

- rules: ``run_cell:unflagged`` (run code the risk scan does not flag), ``run_cell:<hash>``
  (this exact code again; the hash is :func:`source_hash` of the cell's source),
  ``create_cell``, ``edit_cell``, ``read_file:<glob>``, ``mcp__<server>__<tool>``,
  ``acp__<agent>__<kind>`` (one kind of step of a coding agent over ACP: its commands, its
  file edits; :func:`acp_rule`);
- scopes: ``chat`` (this chat), ``notebook`` (this notebook), ``always`` (this user on this
  server).

An *allow* grant answers a confirmation on the person's behalf; a *deny* grant refuses the
step without asking, and beats every allow. No grant ever covers a step the risk scan
flagged: those always wait for a person. This module is pure (no storage, no Jupyter): the
words, the checks and the matching; :mod:`.grant_book` keeps the grants.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

Scope = Literal["chat", "notebook", "always"]
Effect = Literal["allow", "deny"]
SCOPES: tuple[Scope, ...] = ("chat", "notebook", "always")
EFFECTS: tuple[Effect, ...] = ("allow", "deny")

RUN_TOOLS = ("run_cell", "run_all_cells")
"""The tools ``run_cell:unflagged`` covers (every cell they run passed the scan)."""
_HASH = re.compile(r"^[0-9a-f]{64}$")
_MCP = re.compile(r"^mcp__[A-Za-z0-9_-]+?__[A-Za-z0-9_-]+$")
_ID = re.compile(r"^grt_[0-9a-f]{16}$")
ACP_KINDS = (
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
)
"""ACP's tool kinds (``ToolKind``): what an ``acp__<agent>__<kind>`` rule names."""
_ACP = re.compile(r"^acp__([a-z0-9]+(?:-[a-z0-9]+)*)__([a-z_]+)$")
_ACP_WORDS = {  # kind: what the rule lets through, as the object of "permission for …"
    "read": "files {agent} reads",
    "edit": "file edits by {agent}",
    "delete": "files {agent} deletes",
    "move": "files {agent} moves or renames",
    "search": "searches by {agent}",
    "execute": "commands {agent} runs",
    "think": "{agent} thinking a step over",
    "fetch": "{agent} reaching the network",
    "switch_mode": "{agent} switching its mode",
    "other": "other tools of {agent}",
}
MAX_GLOB = 200

RULE_HELP = (
    "A rule is one of: run_cell:unflagged, run_cell:<64 hex digits of the code's hash>, "
    "create_cell, edit_cell, read_file:<glob such as data/*.csv>, mcp__<server>__<tool>, "
    "acp__<agent>__<kind> (such as acp__claude-code__execute: the commands Claude Code runs)."
)
SCOPE_HELP = (
    "A scope is one of: chat (this chat, give chat_id), notebook (this notebook, give "
    "notebook_path), always (every notebook of this user on this server)."
)


class GrantError(ValueError):
    """A rule, scope or grant that cannot be: the message says what to send instead."""


def new_grant_id() -> str:
    return f"grt_{secrets.token_hex(8)}"


def is_grant_id(value: object) -> bool:
    return isinstance(value, str) and bool(_ID.match(value))


def normalised_source(source: str) -> str:
    """Code as the ``run_cell:<hash>`` rule compares it: line ends unified, trailing spaces and
    blank lines at either end dropped (what an editor changes without changing the code)."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def source_hash(source: str) -> str:
    return hashlib.sha256(normalised_source(source).encode("utf-8")).hexdigest()


def agent_slug(agent: str) -> str:
    """An agent's name as a rule spells it: "Claude Code" → ``claude-code``."""
    return "-".join(re.findall(r"[a-z0-9]+", agent.lower()))[:40].strip("-")


def acp_rule(agent: str, kind: str) -> str | None:
    """The rule for one kind of step of an ACP agent (``None``: a name or kind it cannot spell)."""
    slug = agent_slug(agent)
    kind = kind if kind in ACP_KINDS else "other"
    return f"acp__{slug}__{kind}" if slug else None


def check_rule(rule: object) -> str:
    """The rule, if it is one this server knows; else :class:`GrantError` saying what to send."""
    if not isinstance(rule, str) or not rule:
        raise GrantError(f"Send the rule as a string. {RULE_HELP}")
    if rule in ("run_cell:unflagged", "create_cell", "edit_cell"):
        return rule
    if rule.startswith("run_cell:"):
        if _HASH.match(rule[len("run_cell:") :]):
            return rule
        raise GrantError(
            "run_cell: takes 'unflagged' or the 64 lowercase hex digits of the SHA-256 of the "
            f"code (trailing spaces and blank lines at either end removed). {RULE_HELP}"
        )
    if rule.startswith("read_file:"):
        glob = rule[len("read_file:") :]
        if not glob or len(glob) > MAX_GLOB or not glob.isprintable():
            raise GrantError(
                f"read_file: takes a file pattern of 1 to {MAX_GLOB} printable characters, "
                "such as data/*.csv. " + RULE_HELP
            )
        return rule
    if rule.startswith("acp__"):
        match = _ACP.match(rule)
        if match and len(match.group(1)) <= 40 and match.group(2) in ACP_KINDS:
            return rule
        raise GrantError(
            "acp__ takes the agent's name in lowercase letters, digits and dashes, then __ and "
            f"one kind of step: {', '.join(ACP_KINDS)}. {RULE_HELP}"
        )
    if len(rule) <= 64 and _MCP.match(rule):
        return rule
    raise GrantError(f"{rule[:80]!r} is not a rule this server knows. {RULE_HELP}")


def check_scope(scope: object) -> Scope:
    if scope not in SCOPES:
        raise GrantError(f"{str(scope)[:40]!r} is not a scope. {SCOPE_HELP}")
    return scope


def rule_words(rule: str, label: str | None = None) -> str:
    """What a rule lets through, as the object of "permission for …" ("unflagged code")."""
    if rule == "run_cell:unflagged":
        return "unflagged code"
    if rule.startswith("run_cell:"):
        return f"this exact code ({label})" if label else "one exact piece of code"
    if rule == "create_cell":
        return "adding cells"
    if rule == "edit_cell":
        return "editing cells"
    if rule.startswith("read_file:"):
        return f"reading files matching {rule[len('read_file:') :]}"
    match = _ACP.match(rule)
    if match:
        agent = label or f"the agent {match.group(1).replace('-', ' ')}"
        return _ACP_WORDS.get(match.group(2), _ACP_WORDS["other"]).format(agent=agent)
    server, _, tool = rule[len("mcp__") :].partition("__")
    return f"the tool {tool} of the {server} tool server"


def scope_words(
    scope: Scope, notebook_path: str | None, *, here: bool, chat_title: str | None = None
) -> str:
    """Where a grant holds: "in this notebook" (*here*: said where it applies), else by name
    (a chat by its title, the first request, when it is known)."""
    if scope == "always":
        return "in every notebook"
    if scope == "chat":
        if here:
            return "in this chat"
        return f"in the chat “{chat_title}”" if chat_title else "in one chat"
    return "in this notebook" if here or not notebook_path else f"in {notebook_path}"


@dataclass(frozen=True)
class Grant:
    """One standing permission, as stored and listed."""

    id: str
    rule: str
    scope: Scope
    effect: Effect = "allow"
    chat_id: str | None = None
    notebook_path: str | None = None
    granted_at: str = ""
    granted_in: str | None = None
    """Where the person was when they gave it (a notebook path), for the list."""
    label: str | None = None
    """For ``run_cell:<hash>``: the code's first line, so the person knows which code; for
    ``acp__…``: the agent's own name ("Claude Code")."""

    def words(self, *, here: bool = True) -> str:
        """ "your permission for unflagged code in this notebook" (or its deny form)."""
        what = rule_words(self.rule, self.label)
        where = scope_words(self.scope, self.notebook_path, here=here)
        if self.effect == "deny":
            return f"your rule never to allow {what} {where}"
        return f"your permission for {what} {where}"

    def sentence(self, chat_title: str | None = None) -> str:
        """The list's sentence: what it allows, where (a chat by *chat_title*), when and where
        it was given."""
        what = rule_words(self.rule, self.label)
        where = scope_words(self.scope, self.notebook_path, here=False, chat_title=chat_title)
        head = (
            f"Never without asking: {what} {where}"
            if self.effect == "deny"
            else f"Without asking: {what} {where}"
        )
        when = f", given {self.granted_at[:16].replace('T', ' ')} UTC" if self.granted_at else ""
        # where it was given, unless that is the notebook it is for (said already)
        given_in = (
            f" in {self.granted_in}"
            if self.granted_in and self.granted_in != self.notebook_path
            else ""
        )
        return f"{head}{when}{given_in}."

    def applies_to(self, chat_id: str | None, notebook_path: str | None) -> bool:
        if self.scope == "always":
            return True
        if self.scope == "chat":
            return chat_id is not None and self.chat_id == chat_id
        return notebook_path is not None and self.notebook_path == notebook_path

    def covers(self, tool: str, tool_input: Mapping[str, Any], code: str | None) -> bool:
        """Whether the rule names this step (flags are checked by the caller)."""
        rule = self.rule
        if rule == "run_cell:unflagged":
            return tool in RUN_TOOLS
        if rule.startswith("run_cell:"):
            return tool == "run_cell" and code is not None and source_hash(code) == rule[9:]
        if rule.startswith("read_file:"):
            path = tool_input.get("path")
            return tool == "read_file" and isinstance(path, str) and _glob(path, rule[10:])
        return tool == rule

    def to_json(self, chat_title: str | None = None) -> dict[str, Any]:
        out = asdict(self)
        out["sentence"] = self.sentence(chat_title)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        """A stored grant; :class:`GrantError` when it is not one (a hand-edited file)."""
        if not is_grant_id(data.get("id")):
            raise GrantError("a stored permission has no valid id")
        effect = data.get("effect", "allow")
        if effect not in EFFECTS:
            raise GrantError("a stored permission has an unknown effect")
        return cls(
            id=str(data["id"]),
            rule=check_rule(data.get("rule")),
            scope=check_scope(data.get("scope")),
            effect=effect,
            chat_id=_text(data.get("chat_id")),
            notebook_path=_text(data.get("notebook_path")),
            granted_at=_text(data.get("granted_at")) or "",
            granted_in=_text(data.get("granted_in")),
            label=_text(data.get("label")),
        )


@dataclass(frozen=True)
class Verdict:
    """What the standing permissions say of one step: the grant that decides it."""

    grant: Grant

    @property
    def denied(self) -> bool:
        return self.grant.effect == "deny"


def decide(
    grants: Iterable[Grant],
    *,
    tool: str,
    tool_input: Mapping[str, Any],
    code: str | None,
    flagged: bool,
    chat_id: str | None,
    notebook_path: str | None,
) -> Verdict | None:
    """The grant that decides this step, or ``None`` (the approval mode decides). A deny beats
    every allow; a flagged step is never allowed by a grant; the narrowest allow wins."""
    matching = [
        g
        for g in grants
        if g.applies_to(chat_id, notebook_path) and g.covers(tool, tool_input, code)
    ]
    for grant in matching:
        if grant.effect == "deny":
            return Verdict(grant)
    if flagged:
        return None
    allows = sorted(matching, key=lambda g: SCOPES.index(g.scope))
    return Verdict(allows[0]) if allows else None


@dataclass(frozen=True)
class Offer:
    """A grant the approval card offers with its approval."""

    rule: str
    scope: Scope
    label: str | None = None

    def choice(self, notebook_path: str | None) -> str:
        """The card's button: exactly what it allows."""
        what = rule_words(self.rule, self.label)
        where = scope_words(self.scope, notebook_path, here=True)
        return f"Approve, and don't ask again for {what} {where}"

    def to_json(self, notebook_path: str | None) -> dict[str, Any]:
        return {"rule": self.rule, "scope": self.scope, "label": self.choice(notebook_path)}


def offers_for(
    tool: str,
    tool_input: Mapping[str, Any],
    *,
    flagged: bool,
    notebook_path: str | None,
    label: str | None = None,
) -> tuple[Offer, ...]:
    """The grants an approval card for this step offers, narrowest first: the same kind of step
    in this chat, then in this notebook (a chat with no notebook: this chat only). None for a
    flagged step: no grant covers it. An ACP agent's kind of step is offered for this chat only
    (its words name the agent: *label*)."""
    if flagged:
        return ()
    if tool.startswith("acp__") and _ACP.match(tool):
        return (Offer(tool, "chat", label),)
    rule = _offered_rule(tool, tool_input)
    if rule is None:
        return ()
    scopes: tuple[Scope, ...] = ("chat", "notebook") if notebook_path else ("chat",)
    return tuple(Offer(rule, scope) for scope in scopes)


def _offered_rule(tool: str, tool_input: Mapping[str, Any]) -> str | None:
    """The rule a card offers for this step: its kind, as narrow as the person can read it."""
    if tool in RUN_TOOLS:
        return "run_cell:unflagged"
    if tool in ("create_cell", "edit_cell"):
        return tool
    if tool.startswith("mcp__") and _MCP.match(tool):
        return tool
    path = tool_input.get("path")
    if tool == "read_file" and isinstance(path, str) and path and len(path) <= MAX_GLOB:
        return f"read_file:{_escape_glob(path)}"
    return None


def code_label(code: str) -> str:
    """The first line of code, short, for a ``run_cell:<hash>`` grant's words."""
    first = next((line.strip() for line in normalised_source(code).split("\n") if line.strip()), "")
    return f'"{first[:40]}{"…" if len(first) > 40 else ""}"' if first else "empty code"


def _glob(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path.lstrip("/"), pattern.lstrip("/"))


def _escape_glob(path: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", path)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


__all__ = [
    "ACP_KINDS",
    "EFFECTS",
    "RULE_HELP",
    "SCOPES",
    "SCOPE_HELP",
    "Effect",
    "Grant",
    "GrantError",
    "Offer",
    "Scope",
    "Verdict",
    "acp_rule",
    "agent_slug",
    "check_rule",
    "check_scope",
    "code_label",
    "decide",
    "is_grant_id",
    "new_grant_id",
    "normalised_source",
    "offers_for",
    "source_hash",
]
