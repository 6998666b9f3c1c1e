"""A risk scan for code the agent wants to run, so dangerous cells always reach a person.

Approval is bound to the exact source a person saw, but "auto-approve in this chat" would let
any code through. :func:`scan_code` names what a cell could do that deserves a second look —
shell commands, deleting files, installing packages, sending data out, reading credentials,
running code built from strings — and the approval policy asks for every flagged call, even
in auto-approve mode. It is a tripwire for honest mistakes, not a sandbox: obfuscated code can
always hide its intent, so an empty result means "nothing obvious", never "safe".

IPython syntax (``!cmd``, ``%pip``, ``%%bash``) is first rewritten to plain Python by IPython's
own input transformer, so one AST walk sees magics and Python alike; shell text is split into
commands and checked by name. When the cell is not valid Python, a pattern scan stands in.

The reasons are read aloud in confirmations, so they are short phrases ("deletes files or
folders (shutil.rmtree)") and never repeat secret-looking text from the cell.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..aaep.events import RiskLevel
from ..aaep.redaction import is_secret_name, mask_secrets
from ._shell_risk import SECRET_PATHS, Category, scan_shell

__all__ = ["RiskFinding", "risk_level_for", "scan", "scan_code"]

Severity = Literal["medium", "high"]
_MESSAGES: dict[Category, tuple[str, Severity]] = {
    "delete": ("deletes files or folders", "high"),
    "credentials": ("reads credentials or secrets", "high"),
    "privilege": ("uses administrator rights", "high"),
    "network": ("sends data over the network", "medium"),
    "install": ("installs packages", "medium"),
    "shell": ("runs shell commands", "medium"),
    "eval": ("runs code built from strings", "medium"),
    "write": ("writes a file", "medium"),
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


def scan(source: str) -> tuple[RiskFinding, ...]:
    """The findings for *source*, one per category, high severity first."""
    hits = _Hits()
    _scan_python(_to_python(source), hits)
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
_PY_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "python", "python3"}
_INSTALL_MAGICS = {"pip", "conda", "mamba", "micromamba", "uv"}
_SHELL_LINE_MAGICS = {"sx", "system", "sc", "alias", "!"}


def _ipython_call(call: ast.Call, hits: _Hits) -> bool:
    """Handle ``get_ipython().system(...)`` and friends; ``True`` when *call* was one."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "get_ipython"
    ):
        return False
    args = [
        a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
        for a in call.args
    ]
    method = func.attr
    if method in ("system", "getoutput"):
        _shell(args[0] if args else None, hits)
    elif method == "run_line_magic" and args and args[0] is not None:
        _line_magic(args[0].lstrip("%"), (args[1] if len(args) > 1 else None) or "", hits)
    elif method == "run_cell_magic" and args and args[0] is not None:
        name, line = args[0].lstrip("%"), (args[1] if len(args) > 1 else None) or ""
        body = (args[2] if len(args) > 2 else None) or ""
        if name in _SHELL_CELL_MAGICS:
            _shell(body if name != "script" or line.split()[:1] != ["python"] else None, hits)
            if name == "script" and line.split()[:1] == ["python"]:
                _scan_python(_to_python(body), hits)
        elif name in _PY_CELL_MAGICS:
            _scan_python(_to_python(body), hits)
        elif name == "writefile":
            hits.add("write", f"%%writefile {line.split()[-1] if line.split() else ''}")
        elif name in ("javascript", "js", "html"):
            hits.add("browser", f"%%{name}")
    elif method in ("run_cell", "ex", "ev"):
        hits.add("eval", f"get_ipython().{method}")
    return True


def _line_magic(name: str, line: str, hits: _Hits) -> None:
    if name in _INSTALL_MAGICS and line.split()[:1] in (["install"], ["add"], ["sync"]):
        hits.add("install", f"%{name} {line}")
    elif name in _SHELL_LINE_MAGICS:
        _shell(line, hits)
    elif name in ("rm", "rmdir"):
        hits.add("delete", f"%{name}")
    elif name == "env":
        target = line.split("=")[0].strip()
        if not target or " " in target or is_secret_name(target):
            hits.add("credentials", "%env" + (f" {target}" if target and " " not in target else ""))
    elif name in ("reset", "reset_selective", "xdel"):
        hits.add("kernel", f"%{name}")
    elif name in ("run", "load"):
        hits.add("eval", f"%{name}")


# -- Python -----------------------------------------------------------------------------------

_DELETE_CALLS = {
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "shutil.rmtree",
    "os.truncate",
    "pathlib.Path.unlink",
    "pathlib.Path.rmdir",
}
_SHELL_CALLS = {
    "os.system",
    "os.popen",
    "os.startfile",
    "pty.spawn",
    "commands.getoutput",
    "os.posix_spawn",
    "os.posix_spawnp",
}
_SHELL_PREFIXES = ("subprocess.", "os.spawn", "os.exec", "asyncio.create_subprocess")
_NETWORK_CALLS = {
    "socket.socket",
    "socket.create_connection",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "ftplib.FTP",
    "ftplib.FTP_TLS",
    "telnetlib.Telnet",
    "paramiko.SSHClient",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
}
_HTTP_WRITE_METHODS = {"post", "put", "patch", "delete"}
_HTTP_LIBS = ("requests", "httpx", "aiohttp", "urllib3")
_ENV_READERS = {"os.getenv", "os.environ.get", "os.environ.pop", "os.getenvb"}
_KERNEL_CALLS = {"os._exit", "sys.exit", "os.kill", "os.abort", "exit", "quit", "os.killpg"}
_EVAL_CALLS = {"eval", "exec", "compile", "builtins.eval", "builtins.exec"}


def _shell(text: str | None, hits: _Hits) -> None:
    scan_shell(text, hits.add)


def _scan_python(code: str, hits: _Hits) -> None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        _scan_text(code, hits)
        return
    _Visitor(hits).visit(tree)


class _Visitor(ast.NodeVisitor):
    """Resolves import aliases, then checks calls, subscripts and string constants."""

    def __init__(self, hits: _Hits) -> None:
        self.hits = hits
        self.aliases: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}".lstrip(
                "."
            )

    def visit_Assign(self, node: ast.Assign) -> None:
        # ``s = requests.Session()`` makes ``s.post(...)`` a requests call.
        if isinstance(node.value, ast.Call):
            origin = self.qualname(node.value.func)
            if origin and origin.split(".")[0] in _HTTP_LIBS:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.aliases[target.id] = origin.split(".")[0]
        self.generic_visit(node)

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted origin of *node* (``o.remove`` → ``os.remove`` after ``import os as o``)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            func = self.qualname(node.func)
            if func in ("__import__", "importlib.import_module") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    return first.value
            if func in ("pathlib.Path", "pathlib.PurePath", "Path"):
                return "pathlib.Path"
            return func  # ``requests.Session().post`` → ``requests.Session.post``
        return None

    def visit_Call(self, node: ast.Call) -> None:
        if not _ipython_call(node, self.hits):
            self.check_call(node)
        self.generic_visit(node)

    def check_call(self, node: ast.Call) -> None:
        name = self.qualname(node.func) or ""
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        first = node.args[0] if node.args else None
        hits = self.hits
        if name in _DELETE_CALLS or method in ("unlink", "rmdir", "rmtree"):
            hits.add("delete", name if name in _DELETE_CALLS else f".{method}()")
        elif name in _SHELL_CALLS or name.startswith(_SHELL_PREFIXES):
            hits.add("shell", name)
            if first is not None:
                _shell(_literal_command(first), hits)
        elif name in _NETWORK_CALLS:
            hits.add("network", name)
        elif name.split(".")[0] in _HTTP_LIBS and (
            method in _HTTP_WRITE_METHODS or (method == "request" and _writes(first))
        ):
            hits.add("network", f"{name.split('.')[0]}.{method}")
        elif name in ("urllib.request.urlopen", "urllib.request.Request") and (
            len(node.args) > 1 or any(k.arg in ("data", "method") for k in node.keywords)
        ):
            hits.add("network", name)
        elif method in ("upload_file", "upload_fileobj", "sendmail", "send_message"):
            hits.add("network", f".{method}()")
        elif (
            name in _ENV_READERS
            and isinstance(first, ast.Constant)
            and is_secret_name(str(first.value))
        ):
            hits.add("credentials", f"environment variable {first.value!s}")
        elif name.startswith("keyring.") or name in (
            "os.environ.copy",
            "os.environ.items",
            "os.environ.values",
            "dict.os.environ",
        ):
            hits.add("credentials", name)
        elif name in _KERNEL_CALLS:
            hits.add("kernel", name)
        elif name in _EVAL_CALLS:
            hits.add("eval", name.rsplit(".", 1)[-1])
        elif name == "pip.main" or name.startswith("pip._internal"):
            hits.add("install", "pip")
        elif name == "os.setuid":
            hits.add("privilege", name)
        # dict(os.environ) / print(os.environ) / json.dumps(os.environ): the whole environment
        for arg in node.args:
            if self.qualname(arg) == "os.environ":
                hits.add("credentials", "all environment variables")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.qualname(node.value) == "os.environ":
            key = node.slice
            if isinstance(key, ast.Constant) and is_secret_name(str(key.value)):
                self.hits.add("credentials", f"environment variable {key.value!s}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            match = SECRET_PATHS.search(node.value)
            if match:
                self.hits.add("credentials", match.group(1))


def _literal_command(node: ast.AST) -> str | None:
    """The shell text of a ``subprocess``/``os.system`` argument, when it is a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        return shlex.join(parts) if len(parts) == len(node.elts) else (parts[0] if parts else None)
    if isinstance(node, ast.JoinedStr):  # f"rm {path}": the literal head names the command
        head = node.values[0] if node.values else None
        return (
            head.value if isinstance(head, ast.Constant) and isinstance(head.value, str) else None
        )
    return None


def _writes(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and str(node.value).lower() in _HTTP_WRITE_METHODS


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


def _scan_text(code: str, hits: _Hits) -> None:
    """Fallback for code that does not parse: look for the same calls by pattern."""
    for match in re.finditer(r"get_ipython\(\)\.(system|getoutput)\((['\"])(.*?)\2\)", code):
        _shell(match.group(3), hits)
    for category, pattern in _TEXT_PATTERNS:
        for match in pattern.finditer(code):
            hits.add(category, match.group(0).rstrip("( ").strip())
    secret = SECRET_PATHS.search(code)
    if secret:
        hits.add("credentials", secret.group(1))
