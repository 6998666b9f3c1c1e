"""The coding agents a chat can use: ours, the ones in ``agents.json``, the adapters on PATH.

``{jupyter config dir}/aaep/agents.json`` has Zed's ``agent_servers`` shape, so a person can
copy their editor's settings::

    {"agent_servers": {"Claude Code": {"command": "npx", "args": ["@zed-industries/claude-agent-acp"],
                                        "env": {"HOME": "/home/me"}}}}

Known adapters found on ``PATH`` are offered too, under their product's name, unless the file
already names that product. An agent that cannot be used (its command is missing) is listed
with one sentence saying what to install, never hidden: the person learns why it is not there.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUILT_IN", "KNOWN_ADAPTERS", "AgentCatalog", "AgentSpec"]

BUILT_IN = "Jupyter agent"
"""The name of our own agent in the list (it runs in the server, on the configured model)."""


@dataclass(frozen=True)
class Adapter:
    """A known ACP adapter: its command, its arguments and what installs it."""

    name: str
    command: str
    args: tuple[str, ...]
    install: str


KNOWN_ADAPTERS = (
    Adapter(
        "Claude Code",
        "claude-agent-acp",
        (),
        "npm install -g @zed-industries/claude-agent-acp",
    ),
    Adapter("Codex", "codex-acp", (), "npm install -g @zed-industries/codex-acp"),
    Adapter("Gemini CLI", "gemini", ("--experimental-acp",), "npm install -g @google/gemini-cli"),
)


@dataclass(frozen=True)
class AgentSpec:
    """One agent a chat can choose: how to start it, and why it cannot start when it cannot."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    source: str = "path"
    """``"agents.json"`` or ``"path"``."""
    problem: str | None = None
    """One sentence saying why it cannot be used and what to install; ``None`` when it can."""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "acp",
            "source": self.source,
            "available": self.problem is None,
            "problem": self.problem,
        }


def _install_hint(command: str) -> str:
    for adapter in KNOWN_ADAPTERS:
        if adapter.command == os.path.basename(command):
            return f" Install it with: {adapter.install}."
    return " Install it, or fix the command in agents.json."


def _resolved(command: str, env: dict[str, str]) -> str | None:
    """The command's full path, looked up on the agent's own PATH when it sets one."""
    if os.path.isabs(command):
        return command if os.access(command, os.X_OK) else None
    return shutil.which(command, path=env.get("PATH") or os.environ.get("PATH"))


class AgentCatalog:
    """Reads the agents on offer each time it is asked (a person edits the file while working).

    Parameters
    ----------
    config_dirs
        Jupyter's config path, most important first; the first ``aaep/agents.json`` found wins.
    """

    def __init__(self, config_dirs: list[str]) -> None:
        self.config_dirs = config_dirs

    def config_file(self) -> str | None:
        for folder in self.config_dirs:
            path = os.path.join(folder, "aaep", "agents.json")
            if os.path.isfile(path):
                return path
        return None

    def agents(self) -> tuple[list[AgentSpec], str | None]:
        """The agents (from the file first, then PATH) and a sentence about the file if it is wrong."""
        found: dict[str, AgentSpec] = {}
        problem = None
        path = self.config_file()
        if path is not None:
            try:
                with open(path, encoding="utf-8") as handle:
                    data = json.load(handle)
                servers = data.get("agent_servers") if isinstance(data, dict) else None
                if not isinstance(servers, dict):
                    raise ValueError('it has no "agent_servers" object')  # noqa: TRY004 - read as bad content
                for name, entry in servers.items():
                    spec = _from_entry(str(name), entry)
                    if spec is not None:
                        found[spec.name] = spec
            except (OSError, ValueError) as error:
                problem = (
                    f"{path} could not be read ({error}); it should hold "
                    '{"agent_servers": {"Claude Code": {"command": "claude-agent-acp", "args": []}}}.'
                )
        for adapter in KNOWN_ADAPTERS:
            if adapter.name in found:
                continue
            where = shutil.which(adapter.command)
            if where is not None:
                found[adapter.name] = AgentSpec(adapter.name, where, adapter.args)
        return list(found.values()), problem

    def get(self, name: str) -> AgentSpec | None:
        return next((a for a in self.agents()[0] if a.name == name), None)

    def describe(self) -> dict[str, Any]:
        """The list for ``GET /aaep/v1/agents``: our own agent first, then the others."""
        agents, problem = self.agents()
        listed = [
            {
                "name": BUILT_IN,
                "kind": "built_in",
                "source": "server",
                "available": True,
                "problem": None,
            }
        ]
        listed.extend(a.describe() for a in agents)
        missing = [
            f"{a.name}: {a.install}"
            for a in KNOWN_ADAPTERS
            if a.name not in {s.name for s in agents}
        ]
        return {
            "agents": listed,
            "default": BUILT_IN,
            "config_file": self.config_file(),
            "problem": problem,
            "not_installed": missing,
        }


def _from_entry(name: str, entry: Any) -> AgentSpec | None:
    name = " ".join(name.split())[:60]
    if not name or name == BUILT_IN:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return AgentSpec(
            name,
            "",
            source="agents.json",
            problem=f'{name} in agents.json has no "command"; give the adapter\'s command there.',
        )
    args = entry.get("args") or []
    env = entry.get("env") or {}
    if not isinstance(args, list) or not isinstance(env, dict):
        return AgentSpec(
            name,
            entry["command"],
            source="agents.json",
            problem=f'{name} in agents.json needs "args" as a list and "env" as an object.',
        )
    env = {str(k): str(v) for k, v in env.items()}
    command = str(entry["command"])
    where = _resolved(command, env)
    problem = None
    if where is None:
        problem = f"{name} cannot start: the command {command!r} was not found." + _install_hint(
            command
        )
    return AgentSpec(
        name,
        where or command,
        tuple(str(a) for a in args),
        env,
        source="agents.json",
        problem=problem,
    )
