"""A risk scan for code the agent wants to run, so dangerous cells always reach a person.

Approval is bound to the exact source a person saw, but "auto-approve in this chat" would let
any code through. :func:`scan_code` names what a cell could do that deserves a second look —
shell commands, deleting or writing files, installing packages, sending data out, reading the
environment or credentials, running code built from strings, hiding what it calls (dynamic
imports, ``getattr`` on modules) — and the approval policy asks for every flagged call, even in
auto-approve mode. It is a tripwire, not a sandbox: code can always hide its intent from a
static reading (data sent out through an allowed library, a payload decoded at run time), so an
empty result means "nothing the scan recognises", never "safe".

The scan reads the syntax tree (``ast``), never the text: IPython syntax (``!cmd``, ``%pip``,
``%%bash``) is first rewritten to plain Python by IPython's own input transformer, so one walk
(:mod:`._python_risk`) sees magics and Python alike; shell text is split into commands and
checked by name (:mod:`._shell_risk`). Magics not known to be harmless ask. Code that does not
parse always asks; a pattern scan then adds what it can recognise to the reason.

The reasons are read aloud in confirmations, so they are short phrases ("deletes files or
folders (shutil.rmtree)") and never repeat secret-looking text from the cell.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..aaep.events import RiskLevel
from ..aaep.redaction import is_secret_name, mask_secrets
from ._python_risk import PythonScan
from ._shell_risk import SECRET_PATHS, Category, scan_shell

__all__ = ["RiskFinding", "risk_level_for", "scan", "scan_cells", "scan_code"]

Severity = Literal["medium", "high"]
_MESSAGES: dict[Category, tuple[str, Severity]] = {
    "delete": ("deletes files or folders", "high"),
    "credentials": ("reads credentials or secrets", "high"),
    "server_token": ("reads the Jupyter server's login token", "high"),
    "runtime": ("reads Jupyter's runtime folder, where the server's login token is kept", "high"),
    "server_address": ("looks up the Jupyter server's address, to send it requests", "high"),
    "background_send": ("sends data to a web address in the background", "high"),
    "agent": (
        "talks to the agent's own server, so it could answer the agent's approvals by itself",
        "high",
    ),
    "reach": (
        (
            "reaches into the kernel's loaded modules or live objects, where the agent's connection is, "
            "so it could answer the agent's approvals by itself"
        ),
        "high",
    ),
    "background": (
        (
            "starts work that goes on after the cell ends (threads, timers), which could act later "
            "without you"
        ),
        "medium",
    ),
    "privilege": ("uses administrator rights", "high"),
    "network": ("sends data over the network", "medium"),
    "install": ("installs packages", "medium"),
    "environment": ("reads environment variables, which can hold keys", "medium"),
    "dynamic": ("hides what it calls", "medium"),
    "system": ("uses operating-system functions", "medium"),
    "magic": ("runs an IPython magic that can do anything", "medium"),
    "unparsed": ("could not be checked because it is not valid Python", "medium"),
    "shell": ("runs shell commands", "medium"),
    "eval": ("runs code built from strings", "medium"),
    "write": ("writes, moves or copies files", "medium"),
    "kernel": ("stops or resets the kernel", "medium"),
    "browser": ("runs JavaScript in your browser", "medium"),
}


@dataclass(frozen=True)
class RiskFinding:
    """One reason a piece of code deserves a person's attention."""

    category: Category
    severity: Severity
    reason: str
    """A short phrase for listeners, e.g. "deletes files or folders (os.remove, rm)"."""


def scan_code(source: str) -> tuple[str, ...]:
    """Human-readable reasons why *source* is risky to run, most dangerous first; ``()`` if none."""
    return tuple(finding.reason for finding in scan(source))


def risk_level_for(findings: Iterable[RiskFinding], base: RiskLevel = "medium") -> RiskLevel:
    """The risk level a call should carry given its findings: "high" for the most dangerous."""
    return "high" if any(f.severity == "high" for f in findings) else base


def scan(source: str, *, context: Iterable[str] = ()) -> tuple[RiskFinding, ...]:
    """The findings for *source*, one per category, high severity first.

    *context* is the code of the notebook's other cells: the kernel has probably run them, so
    their imports and aliases (``import subprocess as sp``) tell what names in *source* mean.
    Nothing in *context* is itself reported.
    """
    hits = _Hits()
    _scan(source, hits, context=_context_trees(context))
    return hits.findings()


def _context_trees(sources: Iterable[str]) -> list[ast.AST]:
    trees: list[ast.AST] = []
    for source in sources:
        try:
            trees.append(ast.parse(_to_python(source)))
        except (SyntaxError, ValueError):
            continue  # a broken cell defines nothing the kernel could use
    return trees


def scan_cells(sources: Iterable[str]) -> tuple[RiskFinding, ...]:
    """The findings for several cells run in order, read as one program.

    Each cell's magics are rewritten on their own (``%%bash`` is a cell magic only at the top of
    a cell), then the cells are read together, so ``import os as o`` in one cell reaches
    ``o.system`` in a later one.
    """
    hits = _Hits()
    _scan("\n\n".join(_to_python(source) for source in sources), hits, transformed=True)
    return hits.findings()


class _Hits:
    """Collects details per category in first-seen order."""

    def __init__(self) -> None:
        self._details: dict[Category, list[str]] = {}

    def add(self, category: Category, detail: str) -> None:
        details = self._details.setdefault(category, [])
        detail = mask_secrets(detail.strip())[:40]
        if detail and detail not in details:
            details.append(detail)

    def findings(self) -> tuple[RiskFinding, ...]:
        out = []
        for category, details in self._details.items():
            message, severity = _MESSAGES[category]
            shown = ", ".join(details[:3]) + (
                f" and {len(details) - 3} more" if len(details) > 3 else ""
            )
            out.append(
                RiskFinding(category, severity, f"{message} ({shown})" if shown else message)
            )
        out.sort(key=lambda f: f.severity != "high")  # stable: first-seen order within a level
        return tuple(out)


# -- IPython syntax ---------------------------------------------------------------------------


def _to_python(source: str) -> str:
    """*source* with IPython magics and ``!`` escapes rewritten as ``get_ipython()`` calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return source
    try:
        return str(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - malformed magics raise assorted errors: scan the raw text
        return source


_SHELL_CELL_MAGICS = {"bash", "sh", "zsh", "script", "system", "!", "sx", "perl", "ruby"}
_PY_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_SAFE_CELL_MAGICS = {"markdown", "latex"}
_INSTALL_MAGICS = {"pip", "conda", "mamba", "micromamba", "uv"}
_PY_LINE_MAGICS = {"time", "timeit", "prun", "debug"}
_SHELL_LINE_MAGICS = {
    "sx",
    "system",
    "sc",
    "alias",
    "!",
    "ls",
    "cat",
    "less",
    "more",
    "man",
    "ldir",
    "lf",
    "lk",
    "lx",
}
_SAFE_LINE_MAGICS = {
    "matplotlib", "who", "whos", "who_ls", "autoreload", "aimport", "load_ext", "reload_ext",
    "precision", "pprint", "xmode", "pwd", "lsmagic", "magic", "history", "pinfo", "pinfo2", "pdoc",
    "pdef", "psource", "config", "colors", "autocall", "automagic", "doctest_mode", "page", "set_env",
    "cd", "dhist", "dirs", "quickref", "tb", "notebook", "gui", "pylab", "killbgscripts",
}  # fmt: skip
_WRITE_LINE_MAGICS = {"store", "save", "logstart", "mkdir", "cp", "mv", "bookmark", "pycat"}
_EVAL_LINE_MAGICS = {"run", "load", "recall", "rerun", "macro", "edit", "paste", "cpaste"}
_QUIET_PIP = {
    "list",
    "show",
    "freeze",
    "check",
    "help",
    "--version",
    "-V",
    "config",
    "index",
    "search",
    "info",
}


def _ipython_method(method: str, args: list[str | None], hits: _Hits, depth: int) -> None:
    """``get_ipython().<method>(*args)``, as IPython writes ``!cmd``, ``%magic`` and ``%%magic``."""
    if method in ("system", "getoutput", "system_raw", "system_piped"):
        scan_shell(args[0] if args else None, hits.add)
        if args and args[0] is not None and not args[0].strip():
            hits.add("shell", "!")
        return
    if method in ("run_line_magic", "magic", "run_cell_magic") and (not args or args[0] is None):
        hits.add("magic", "a computed magic")
        return
    if method == "run_line_magic":
        _line_magic(str(args[0]).lstrip("%"), (args[1] if len(args) > 1 else None), hits, depth)
    elif method == "run_cell_magic":
        line = (args[1] if len(args) > 1 else None) or ""
        _cell_magic(str(args[0]).lstrip("%"), line, args[2] if len(args) > 2 else None, hits, depth)
    elif method in (
        "run_cell",
        "ex",
        "ev",
        "run_code",
        "safe_execfile",
        "safe_run_module",
        "push",
        "user_ns",
    ):
        hits.add("eval", f"get_ipython().{method}")
    else:
        hits.add("magic", f"get_ipython().{method}")


def _cell_magic(name: str, line: str, body: str | None, hits: _Hits, depth: int) -> None:
    if body is None:
        hits.add("magic", f"%%{name} with a computed body")
    elif name in _SHELL_CELL_MAGICS:
        if name == "script" and line.split()[:1] in (["python"], ["python3"]):
            _scan(body, hits, depth + 1)
        else:
            scan_shell(body, hits.add)
            if not body.strip():
                hits.add("shell", f"%%{name}")
    elif name in _PY_CELL_MAGICS:
        _scan(body, hits, depth + 1)
    elif name in ("writefile", "file"):
        hits.add("write", f"%%{name} {line.split()[-1] if line.split() else ''}")
    elif name in ("javascript", "js", "html", "svg"):
        hits.add("browser", f"%%{name}")
    elif name not in _SAFE_CELL_MAGICS:
        hits.add("magic", f"%%{name}")


def _line_magic(name: str, line: str | None, hits: _Hits, depth: int) -> None:
    if line is None:
        hits.add("magic", f"%{name} with a computed argument")
        return
    words = line.split()
    if name in _INSTALL_MAGICS:
        if words[:1] in (
            ["install"],
            ["add"],
            ["sync"],
            ["uninstall"],
            ["remove"],
            ["update"],
            ["upgrade"],
        ):
            hits.add("install", f"%{name} {line}")
        elif words[:1] and words[0] not in _QUIET_PIP:
            hits.add("install", f"%{name} {words[0]}")
    elif name in _SHELL_LINE_MAGICS:
        command = line if name not in ("ls", "cat", "less", "more", "man") else f"{name} {line}"
        scan_shell(command, hits.add)
        if not command.strip():
            hits.add("shell", f"%{name}")
    elif name in ("rm", "rmdir"):
        hits.add("delete", f"%{name}")
    elif name == "env":
        target = line.split("=")[0].strip()
        if "=" in line and target and " " not in target:
            return  # setting a variable: %env NAME=value
        if not target or " " in target or is_secret_name(target):
            hits.add("credentials", "%env" + (f" {target}" if target and " " not in target else ""))
        else:
            hits.add("environment", f"%env {target}")
    elif name in ("reset", "reset_selective", "xdel"):
        hits.add("kernel", f"%{name}")
    elif name in _EVAL_LINE_MAGICS:
        hits.add("eval", f"%{name}")
    elif name in _WRITE_LINE_MAGICS:
        hits.add("write", f"%{name}")
    elif name in _PY_LINE_MAGICS:
        while words and words[0].startswith("-"):  # %timeit -n 10 -r 3 expr
            words = words[2:] if len(words) > 1 and words[1].isdigit() else words[1:]
        _scan(" ".join(words), hits, depth + 1)
    elif name not in _SAFE_LINE_MAGICS:
        hits.add("magic", f"%{name}")


def _scan(
    source: str,
    hits: _Hits,
    depth: int = 0,
    *,
    transformed: bool = False,
    context: Sequence[ast.AST] = (),
) -> None:
    """Scan *source* (IPython syntax allowed, unless already *transformed*) into *hits*."""
    if depth > 8:  # %%time inside %%time inside …: a person can read it
        hits.add("dynamic", "deeply nested magics")
        return
    code = source if transformed else _to_python(source)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        hits.add("unparsed", "")
        _scan_text(code, hits, depth)
        return
    PythonScan(hits.add, lambda method, args: _ipython_method(method, args, hits, depth)).scan(
        tree, context
    )


_TEXT_PATTERNS: list[tuple[Category, re.Pattern[str]]] = [
    (
        "delete",
        re.compile(r"\b(os\.(remove|unlink|rmdir|removedirs)|shutil\.rmtree|\.unlink)\s*\("),
    ),
    ("shell", re.compile(r"\b(os\.(system|popen|exec\w*|spawn\w*)|subprocess\.\w+)\s*\(")),
    (
        "network",
        re.compile(
            r"\b(requests|httpx)\.(post|put|patch|delete)\s*\(|\bsocket\.socket\s*\(|\bsmtplib\."
        ),
    ),
    ("credentials", re.compile(r"\bkeyring\.|\bos\.environ\b")),
    ("eval", re.compile(r"(?<![\w.])(eval|exec)\s*\(")),
]


def _scan_text(code: str, hits: _Hits, depth: int) -> None:
    """For code that does not parse (it asks anyway): name what the lines that do parse on
    their own, and the calls a pattern recognises, would do."""
    for line in code.splitlines():
        try:
            tree = ast.parse(line.strip())
        except (SyntaxError, ValueError):
            continue
        PythonScan(hits.add, lambda method, args: _ipython_method(method, args, hits, depth)).scan(
            tree
        )
    for match in re.finditer(r"get_ipython\(\)\.(system|getoutput)\((['\"])(.*?)\2\)", code):
        scan_shell(match.group(3), hits.add)
    for category, pattern in _TEXT_PATTERNS:
        for match in pattern.finditer(code):
            hits.add(category, match.group(0).rstrip("( ").strip())
    secret = SECRET_PATHS.search(code)
    if secret:
        hits.add("credentials", secret.group(1))
