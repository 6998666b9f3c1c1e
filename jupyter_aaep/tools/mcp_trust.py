"""Which of the user's MCP tool servers a person trusts when they say a tool changes nothing.

A tool's ``readOnlyHint`` is the server's claim, not a fact: a tool titled "Show Cache Size"
can delete files. So a claim counts only once a person has said, for that server, "trust its
claims from now on" (asked the first time one of its tools claims to change nothing); until
then its "read-only" tools ask like any other. The answer is kept per user, in one private
file (``0600`` in a ``0700`` folder, ``{jupyter data dir}/aaep/mcp-trust.json``), keyed by the
server's name *and* what starts it (command and arguments, or URL): a server whose entry in
``mcp.json`` now starts something else is a stranger again. The file is read on every check,
so a revocation (``DELETE /aaep/v1/mcp/trust/{server}``) holds at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ..aaep.redaction import mask_secrets
from .mcp_config import ServerConfig

__all__ = ["MCPTrust", "origin_of", "trust_key"]


def origin_of(config: ServerConfig) -> str:
    """What starts the server, as a person reads it (secrets masked): its command line or URL."""
    if config.transport == "http":
        return mask_secrets(config.url)
    return mask_secrets(" ".join([config.command, *config.args]))


def trust_key(config: ServerConfig) -> str:
    """What identifies the server as configured: its name is not enough (an entry can change)."""
    what = json.dumps([config.transport, config.command, list(config.args), config.url])
    return hashlib.sha256(what.encode()).hexdigest()


class MCPTrust:
    """The trust a person gave to servers' read-only claims, stored in *path*."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no file (nobody trusted yet) or a broken one: trust nothing
        servers = data.get("servers") if isinstance(data, dict) else None
        return {
            str(name): entry
            for name, entry in (servers or {}).items()
            if isinstance(entry, dict) and isinstance(entry.get("key"), str)
        }

    def _write(self, servers: dict[str, dict[str, Any]]) -> None:
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"servers": servers}, handle, indent=1)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        os.replace(temporary, self.path)

    def trusted(self, config: ServerConfig) -> bool:
        """Whether a person trusts this server, as it is configured now, about its claims."""
        entry = self._read().get(config.name)
        return entry is not None and entry["key"] == trust_key(config)

    def grant(self, config: ServerConfig) -> None:
        servers = self._read()
        servers[config.name] = {
            "key": trust_key(config),
            "origin": origin_of(config),
            "granted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self._write(servers)

    def revoke(self, name: str) -> bool:
        """Forget the trust in server *name*; whether there was any."""
        servers = self._read()
        if servers.pop(name, None) is None:
            return False
        self._write(servers)
        return True

    def listed(self) -> list[dict[str, str]]:
        """The trusted servers, for ``GET /aaep/v1/mcp/trust`` (never the key itself)."""
        return [
            {
                "server": name,
                "origin": str(entry.get("origin", "")),
                "granted_at": str(entry.get("granted_at", "")),
            }
            for name, entry in sorted(self._read().items())
        ]
