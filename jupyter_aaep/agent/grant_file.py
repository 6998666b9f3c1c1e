"""Standing permissions of scope ``always``: one private JSON file in the user's config folder.

``always`` means this user on this server, whatever notebook or chat: it belongs with the
user's other settings (``{jupyter config dir}/aaep/permissions.json``, beside ``mcp.json``),
not in one server root's chat database. The file is the user's alone (0600, its folder 0700
when we make it), written whole through a temporary file so a crash never leaves half of it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

from .grants import Grant, GrantError

log = logging.getLogger(__name__)


class GrantFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[Grant]:
        """The grants in the file; none when it is missing or unreadable (said in the log)."""
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode)
            if mode & 0o077:
                os.chmod(self.path, 0o600)
                log.warning(
                    "AAEP permissions: %s could be read by other users; made private to you (0600).",
                    self.path,
                )
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as error:
            log.warning(
                "AAEP permissions: %s cannot be read (%s); no permission of scope 'always' "
                "applies until it can. Fix or delete the file.",
                self.path,
                error,
            )
            return []
        grants = []
        for item in data.get("permissions", []) if isinstance(data, dict) else []:
            try:
                grants.append(Grant.from_json(item))
            except (GrantError, AttributeError, TypeError) as error:
                log.warning("AAEP permissions: an entry of %s was skipped (%s)", self.path, error)
        return grants

    def save(self, grants: list[Grant]) -> None:
        """Write *grants* (every ``always`` one) as the whole file; ``OSError`` if it cannot."""
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(parents=True, mode=0o700)
        body = json.dumps(
            {"version": 1, "permissions": [g.to_json() for g in grants]}, indent=2, sort_keys=True
        )
        temporary = folder / f".{self.path.name}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(body)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise
