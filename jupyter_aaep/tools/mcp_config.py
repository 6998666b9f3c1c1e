"""The user's MCP servers, read from the ``mcpServers`` JSON most MCP clients share.

One file (``{jupyter config dir}/aaep/mcp.json`` unless ``c.AAEPExtension.mcp_config_file``
says otherwise) names each server: ``command``/``args``/``env`` for one started over stdio,
``"type": "http"`` with ``url``/``headers`` for a remote one. ``${VAR}`` (and ``${VAR:-default}``)
in any of these is taken from the Jupyter server's environment, so secrets stay out of the file.
An extra key, ``"approval": "always"``, makes every tool of a server ask, whatever it claims.

A file or entry that cannot be used gives one sentence (:class:`ServerProblem`) and is left out;
the others still load.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ServerConfig", "ServerProblem", "command_allowed", "expand", "read_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class ServerConfig:
    name: str
    transport: str
    """``"stdio"`` or ``"http"``."""
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    always_ask: bool = False


@dataclass(frozen=True)
class ServerProblem:
    name: str
    """The server's name, or ``""`` when the file itself is the problem."""
    sentence: str


def expand(text: str, environ: dict[str, str] | os._Environ[str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from *environ* (an unset variable: empty)."""
    return _VAR.sub(lambda m: environ.get(m.group(1), m.group(2) or ""), text)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must be an object of text values")
    return {k: expand(v, os.environ) for k, v in value.items()}


def _entry(name: str, body: Any) -> ServerConfig:
    if not _NAME.match(name):
        raise ValueError("its name must be 1 to 40 letters, digits, '_' or '-'")
    if not isinstance(body, dict):
        raise ValueError("it must be an object")  # noqa: TRY004 - one kind of problem: a sentence
    approval = body.get("approval")
    if approval not in (None, "always", "hints"):
        raise ValueError(f'"approval" must be "always" or "hints", not {approval!r}')
    kind = body.get("type") or ("http" if "url" in body else "stdio")
    if kind in ("http", "streamable-http", "streamable_http"):
        url = body.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError('an http server needs a "url"')
        url = expand(url, os.environ)
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"its url must start with http:// or https://, not {url[:40]!r}")
        return ServerConfig(
            name,
            "http",
            url=url,
            headers=_strings(body.get("headers"), '"headers"'),
            always_ask=approval == "always",
        )
    if kind != "stdio":
        raise ValueError(f'its type must be "stdio" or "http", not {kind!r}')
    command = body.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError('a stdio server needs a "command"')
    args = body.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError('"args" must be a list of text')
    return ServerConfig(
        name,
        "stdio",
        command=expand(command, os.environ),
        args=tuple(expand(a, os.environ) for a in args),
        env=_strings(body.get("env"), '"env"'),
        always_ask=approval == "always",
    )


def read_config(path: Path) -> tuple[list[ServerConfig], list[ServerProblem]]:
    """The servers *path* names and a sentence for each problem; no file means no servers."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    except OSError as error:
        return [], [
            ServerProblem("", f"The tool server list {path} could not be read ({error.strerror}).")
        ]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return [], [
            ServerProblem(
                "",
                f"The tool server list {path} is not valid JSON (line {error.lineno}: "
                f"{error.msg}); no tool servers were started.",
            )
        ]
    servers_json = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers_json, dict):
        return [], [
            ServerProblem(
                "",
                f'The tool server list {path} has no "mcpServers" object; '
                "no tool servers were started.",
            )
        ]
    servers: list[ServerConfig] = []
    problems: list[ServerProblem] = []
    for name, body in servers_json.items():
        try:
            servers.append(_entry(str(name), body))
        except ValueError as error:
            problems.append(
                ServerProblem(
                    str(name), f"The tool server {name} in {path} was not started: {error}."
                )
            )
    return servers, problems


def command_allowed(command: str, allowed: tuple[str, ...] | None) -> bool:
    """Whether the administrator's list lets *command* start: a bare name matches the same bare
    name; an absolute path matches the path the command resolves to."""
    if allowed is None:
        return True
    if command in allowed and "/" not in command:
        return True
    resolved = shutil.which(command) if "/" not in command else command
    if resolved is None:
        return False
    real = os.path.realpath(resolved)
    return any("/" in entry and os.path.realpath(entry) == real for entry in allowed)
