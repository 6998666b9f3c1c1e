"""A stdio tool server's private log, and the sentence for a server that did not start."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TextIO

from ..aaep.redaction import mask_secrets
from .mcp_config import ServerConfig

__all__ = ["ERROR_LINE", "private_log", "why_not_started"]


def private_log(path: Path) -> TextIO:
    """A stdio server's stderr log, opened for appending and readable by its owner only
    (``0600`` whatever the umask): what a tool server writes may quote the user's files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a log made by an older version, or under a loose umask
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception)\b\S*:? ")
"""A line that states an error: "Error: Cannot find module …", "ModuleNotFoundError: No module …"."""


def why_not_started(
    config: ServerConfig, error: BaseException, timeout: float, said: str | None = None
) -> str:
    if isinstance(error, TimeoutError):
        return f"it did not answer within {timeout:g} seconds of starting."
    if isinstance(error, FileNotFoundError):
        return f"the command {config.command} was not found."
    inner = getattr(error, "exceptions", None)
    if inner:
        return why_not_started(config, inner[0], timeout, said)
    if config.transport == "http":
        return mask_secrets(
            f"{config.url} did not accept the connection ({error or type(error).__name__}); check its url and headers."
        )[:300]
    if said:
        quoted = said.rstrip(".")
        return f"it stopped while starting, saying “{quoted}” (its log: aaep-mcp-{config.name}.log in the Jupyter runtime folder)."
    return f"it could not start ({type(error).__name__}: {error or 'no details'})."[:300]
