"""Shell commands in a cell (``!cmd``, ``%%bash``, ``subprocess``): which ones deserve a look.

A helper of :mod:`.code_risk`: splits shell text into commands and reports each worth a
person's attention through an ``add(category, detail)`` callback, by command name —
``rm`` deletes, ``pip install`` installs, ``curl -d`` sends data, ``sudo`` elevates.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Literal

from ..aaep.redaction import is_secret_name

__all__ = [
    "SECRET_PATHS",
    "SERVER_TEXTS",
    "Add",
    "Category",
    "scan_shell",
]

Category = Literal[
    "delete",
    "credentials",
    "privilege",
    "network",
    "install",
    "shell",
    "eval",
    "write",
    "kernel",
    "browser",
    "dynamic",
    "system",
    "environment",
    "magic",
    "unparsed",
    "agent",
    "reach",
    "background",
    "runtime",
    "server_token",
    "server_address",
    "background_send",
]
Add = Callable[[Category, str], None]
"""Reports one finding: its category and a short detail ("rm -rf", "pip install torch")."""

_SPLIT = re.compile(r"\|\||&&|[;|&\n]|\$\(|`")
_DELETE_CMDS = {"rm", "rmdir", "shred", "unlink", "mkfs", "dd", "srm", "trash"}
_INSTALLERS = {
    "pip",
    "pip3",
    "conda",
    "mamba",
    "micromamba",
    "apt",
    "apt-get",
    "yum",
    "dnf",
    "brew",
    "npm",
    "yarn",
    "uv",
    "poetry",
    "gem",
    "cargo",
}
_NETWORK_CMDS = {"scp", "rsync", "sftp", "ftp", "nc", "ncat", "netcat", "ssh", "telnet"}
_CURL_WRITE = re.compile(
    r"(^|\s)(-d|--data\S*|-F|--form\S*|-T|--upload-file|--post\S*|"
    r"-X\s*(POST|PUT|PATCH|DELETE)|--request\s*(POST|PUT|PATCH|DELETE))(\s|=|$)",
    re.IGNORECASE,
)
SECRET_PATHS = re.compile(
    r"(\.ssh\b|id_rsa|id_ed25519|id_ecdsa|\.aws/credentials|\.netrc|\.pgpass|\.git-credentials|"
    r"\.docker/config\.json|\.kube/config|/etc/shadow|\.gnupg|\.config/gcloud|\.azure/|"
    r"\.config/anthropic|/proc/[^/\s'\"]*/environ)"
)
RUNTIME_TEXT = re.compile(
    r"jupyter/runtime|jupyter_runtime|JUPYTER_RUNTIME_DIR|kernel-(\*|[0-9a-f-]{8,})[\w*?-]*\.json"
)
"""Names of Jupyter's runtime folder and the kernels' files in it."""
SERVER_TOKEN_TEXT = re.compile(
    r"\b(JUPYTER_TOKEN|JPY_API_TOKEN|JUPYTERHUB_API_TOKEN)\b|(jp|nb)server(-|(?![\w]))"
)
"""Environment variables and files (``jpserver-<pid>.json``) that hold a Jupyter server's token."""
SERVER_ADDRESS_TEXT = re.compile(
    r"\b(JUPYTER_SERVER_URL|JUPYTERHUB_API_URL|JUPYTERHUB_SERVICE_URL)\b"
)
"""Environment variables that hold the address of the Jupyter server or its hub."""
SERVER_TEXTS: tuple[tuple[re.Pattern[str], Category], ...] = (
    (RUNTIME_TEXT, "runtime"),
    (SERVER_TOKEN_TEXT, "server_token"),
    (SERVER_ADDRESS_TEXT, "server_address"),
)
"""Text that reaches for the Jupyter server, in shell commands and Python strings alike."""


def scan_shell(text: str | None, add: Add) -> None:
    """Flag the commands in shell *text* (``None`` when the command is not a literal)."""
    if text is None:
        add("shell", "a computed command")
        return
    for piece in _SPLIT.split(text):
        try:
            words = shlex.split(piece, comments=True)
        except ValueError:
            words = piece.split()
        while words and re.match(r"^\w+=", words[0]):  # VAR=value cmd
            words = words[1:]
        if not words:
            continue
        if words[0] in ("sudo", "su", "doas"):
            add("privilege", words[0])
            words = words[1:] or [""]
        cmd = words[0].rsplit("/", 1)[-1]
        if not cmd:
            continue
        rest = " ".join(words[1:])
        add("shell", cmd)
        if cmd in ("python", "python3") and words[1:3] == ["-m", "pip"]:
            cmd, words = "pip", words[2:]
        if (
            cmd in _DELETE_CMDS
            or (cmd == "find" and "-delete" in words)
            or (cmd == "git" and words[1:2] == ["clean"])
        ):
            add("delete", " ".join(words[:2]) if cmd in ("rm", "git") else cmd)
        elif cmd in _INSTALLERS and any(w in ("install", "add", "sync") for w in words[1:3]):
            packages = [w for w in words[2:] if not w.startswith("-")][:1]
            add("install", " ".join([cmd, "install", *packages]))
        elif cmd in _NETWORK_CMDS or (cmd in ("curl", "wget") and _CURL_WRITE.search(" " + rest)):
            add("network", cmd)
        elif (
            cmd in ("env", "printenv", "set", "export")
            and not rest.strip()
            or (cmd == "printenv" and is_secret_name(rest))
        ):
            add("credentials", cmd)
        runtime_dir = any(w.startswith("--runtime-dir") for w in words)
        if cmd == "jupyter" and (
            runtime_dir or ("list" in words[1:3] and "kernelspec" not in words)
        ):
            add("runtime" if runtime_dir else "server_token", " ".join(words[:3]).rstrip(")"))
        for pattern, category in SERVER_TEXTS:
            found = pattern.search(rest)
            if found:
                add(category, f"{cmd} {found.group(0)}")
        secret = SECRET_PATHS.search(rest)
        if secret:
            add("credentials", f"{cmd} {secret.group(1)}")
