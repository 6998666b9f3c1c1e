"""Credentials for outside agents: each opens the MCP endpoint only, and can be revoked.

Why this shape: an outside agent (Claude Code, Codex, …) given the person's Jupyter token can do
everything the person can, including answering its own approval requests through the chat
endpoints. A credential minted here is accepted by ``{base_url}aaep/v1/mcp`` alone (and so by
the stdio bridge, which forwards it there); every other AAEP endpoint refuses any request that
carries one (:func:`presented` finds it), and Jupyter's own endpoints do not know it.

A credential is ``aaep_mcp_`` followed by 32 random bytes (URL-safe base64): the prefix lets a
handler recognise one without a lookup, and a leaked one is easy to grep for. Only its SHA-256
is kept (a high-entropy secret needs no slow hash), in a ``0600`` JSON file beside the chat
database, rewritten whole on each change; the records in memory are what requests are checked
against, so a revocation holds from the next request on. "Last used" is kept in memory and
written when the file is written anyway (minting or revoking), never once per request.

Standard library only (and the package's error root).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import RequestError
from ..store import files as store_files

log = logging.getLogger(__name__)

__all__ = [
    "CREDENTIAL_SCOPE_KEY",
    "MAX_CREDENTIALS",
    "MCP_ONLY",
    "PREFIX",
    "OutsideCredential",
    "OutsideCredentials",
    "presented",
    "scrubbed",
    "session_key",
]

PREFIX = "aaep_mcp_"
CREDENTIAL_SCOPE_KEY = "aaep.credential"
"""Where the MCP endpoint's ASGI scope carries the caller's credential (``{"id", "name"}``)."""
MAX_NAME_CHARS = 60
MAX_CREDENTIALS = 100
"""Live credentials at most: a person connects a few agents, not hundreds."""
MCP_ONLY = (
    "This credential only lets an outside agent use the notebook tools over MCP "
    "(at aaep/v1/mcp, or through python -m jupyter_aaep.mcp); it cannot read or answer the "
    "chats, change their settings or manage credentials. Use your Jupyter login for that."
)
"""The sentence every endpoint but the MCP one answers (403) to a request carrying a credential."""


@dataclass(frozen=True)
class OutsideCredential:
    """One credential as it is listed: never its secret, only who it is for and when it was used."""

    id: str
    name: str
    created: float
    """Seconds since the epoch."""
    last_used: float | None = None
    digest: str = ""
    """SHA-256 of the secret (hex); never sent to a client."""

    def public(self) -> dict[str, Any]:
        """The record for the person: id, name, created and last used (ISO 8601 UTC), no digest."""
        return {
            "id": self.id,
            "name": self.name,
            "created": _iso(self.created),
            "last_used": _iso(self.last_used) if self.last_used else None,
        }


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def check_name(value: Any) -> str:
    """The name people will hear ("Claude Code (laptop) is working on …"), tidied; else a sentence."""
    if not isinstance(value, str) or not value.strip():
        raise RequestError(
            400, 'Give the outside agent a name people will hear, e.g. "Claude Code (laptop)".'
        )
    name = " ".join("".join(c for c in " ".join(value.split()) if c.isprintable()).split())
    if not name:
        raise RequestError(400, "The name has no printable characters; type a name such as Codex.")
    if len(name) > MAX_NAME_CHARS:
        raise RequestError(
            400, f"The name is {len(name)} characters long; use at most {MAX_NAME_CHARS}."
        )
    return name


def presented(headers: Mapping[str, str], query_token: str | None) -> str | None:
    """The outside-agent credential a request carries (``Authorization: Bearer|token …`` or
    ``?token=``), whether or not it is valid; ``None`` when it carries none."""
    header = headers.get("Authorization", "") or ""
    scheme, _, value = header.strip().partition(" ")
    candidates = [value.strip()] if scheme.lower() in ("bearer", "token") else []
    if query_token:
        candidates.append(query_token.strip())
    return next((c for c in candidates if c.startswith(PREFIX)), None)


def session_key(credential_id: str | None, session: str) -> str:
    """How outside agents key an MCP session: with whose it is, so another credential that learnt
    the session's id gets a session of its own, never a turn in this one under its name."""
    return f"credential:{credential_id}|{session}" if credential_id else f"person|{session}"


def scrubbed(summary: str) -> str:
    """A request's log line without a token given in its address (tornado logs the whole URI
    of a refused request; Jupyter's access log scrubs its own line, not that one)."""
    return re.sub(r"(?i)([?&]token=)[^&\s]*", r"\1[secret]", summary)


class OutsideCredentials:
    """The person's outside-agent credentials, kept hashed in *path* (``None``: memory only)."""

    def __init__(self, path: str | None, *, clock: Any = time.time) -> None:
        self.path = path
        self._clock = clock
        self._records: dict[str, OutsideCredential] = {}  # id -> record
        self._load()

    @classmethod
    def beside(cls, db_path: str) -> OutsideCredentials:
        """Stored next to the chat database (memory only when the chats are)."""
        if not db_path or db_path == ":memory:":
            return cls(None)
        folder = os.path.dirname(os.path.abspath(db_path))
        return cls(os.path.join(folder, store_files.CREDENTIALS_FILE))

    # -- the person's side ---------------------------------------------------------------------
    def mint(self, name: Any) -> tuple[OutsideCredential, str]:
        """A new credential named *name*: its record and its secret (shown to the person once)."""
        clean = check_name(name)
        if len(self._records) >= MAX_CREDENTIALS:
            raise RequestError(
                409,
                f"There are already {MAX_CREDENTIALS} outside-agent credentials; revoke the ones "
                "no longer used first.",
            )
        token = PREFIX + secrets.token_urlsafe(32)
        record = OutsideCredential(
            id="cred_" + secrets.token_hex(8),
            name=clean,
            created=self._clock(),
            digest=_digest(token),
        )
        self._records[record.id] = record
        self._save()
        return record, token

    def listed(self) -> list[dict[str, Any]]:
        """Every credential, oldest first, without secrets."""
        return [r.public() for r in sorted(self._records.values(), key=lambda r: r.created)]

    def revoke(self, credential_id: str) -> OutsideCredential | None:
        """Forget a credential (it opens nothing from the next request on); the record, if it existed."""
        record = self._records.pop(credential_id, None)
        if record is not None:
            self._save()
        return record

    # -- the MCP endpoint's side ---------------------------------------------------------------
    def check(self, token: str) -> OutsideCredential | None:
        """The credential *token* is, if it is a live one (its last use is noted); else ``None``."""
        if not token.startswith(PREFIX):
            return None
        digest = _digest(token)
        for record in self._records.values():
            if hmac.compare_digest(record.digest, digest):
                used = replace(record, last_used=self._clock())
                self._records[record.id] = used
                return used
        return None

    # -- the file ------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            for item in data.get("credentials", []):
                record = OutsideCredential(**{k: item[k] for k in item if k != "public"})
                if record.digest and record.id:
                    self._records[record.id] = record
        except (OSError, ValueError, TypeError, AttributeError) as error:
            # Refusing every credential is the safe failure: the person mints new ones.
            log.warning(
                "AAEP agent: the outside-agent credentials in %s cannot be read (%s); none are "
                "accepted until new ones are made in the panel.",
                self.path,
                type(error).__name__,
            )
            self._records.clear()

    def _save(self) -> None:
        if self.path is None:
            return
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=store_files.DIRECTORY_MODE, exist_ok=True)
            os.chmod(folder, store_files.DIRECTORY_MODE)  # makedirs' mode is filtered by the umask
        temporary = f"{self.path}.{os.getpid()}.tmp"
        body = json.dumps({"credentials": [asdict(r) for r in self._records.values()]}, indent=1)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, store_files.FILE_MODE)
        try:
            os.fchmod(fd, store_files.FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
        except BaseException:
            os.unlink(temporary)
            raise
        os.replace(temporary, self.path)
