"""The Python half of the code-risk scan: one walk over the syntax tree of a cell.

A helper of :mod:`.code_risk`. Names are resolved through imports and simple assignments
(``o = open``, ``import os as m``, ``s = requests.Session()``), so an alias reaches the same
rule as the original; string expressions built from literals (``'o' + 's'``, f-strings,
``'/'.join([...])``, ``Path('/proc') / 'self'``) are folded before they are checked. Every
*reference* to a risky function counts, not only direct calls, so ``map(os.remove, files)`` or
``f = os.system`` are caught too. Risky modules (``os``, ``shutil``, ``subprocess``, ``sys``…)
use allowlists: an attribute not known to be harmless is flagged.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Callable, Sequence

from ..aaep.redaction import is_secret_name
from ._flow_risk import FlowCheck
from ._risk_rules import (
    AGENT_NAMES,
    AGENT_SERVER,
    AMBIGUOUS,
    AS_VALUE,
    DANGEROUS_DUNDERS,
    DYNAMIC_PREFIXES,
    ENV_LOOKUPS,
    ENV_WHOLE,
    EXACT,
    FRAME_ATTRIBUTES,
    HTTP_LIBS,
    HTTP_WRITES,
    IPYTHON,
    MODE,
    MODULE_RULES,
    OPENERS,
    OS_RULES,
    OS_SAFE,
    PATH_MAKERS,
    PATH_ONLY_WRITES,
    PATH_WRITES,
    REACH_PREFIXES,
    RISKY_MODULES,
)
from ._server_risk import ServerReach
from ._shell_risk import SECRET_PATHS, Add, scan_shell

__all__ = ["PythonScan", "fold"]

IPythonCall = Callable[[str, list["str | None"]], None]
"""Handles ``get_ipython().<method>(*args)`` (args folded to text, ``None`` when computed)."""

UNKNOWN = "*"


def fold(node: ast.AST | None) -> str | None:
    """The text a string expression builds, ``*`` for computed parts; ``None`` if not text."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(
            fold(v) or UNKNOWN if not isinstance(v, ast.FormattedValue) else UNKNOWN
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = fold(node.left), fold(node.right)
        if left is None and right is None:
            return None
        joiner = "/" if isinstance(node.op, ast.Div) else ""
        return f"{left if left is not None else UNKNOWN}{joiner}{right if right is not None else UNKNOWN}"
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1:
            sep = fold(func.value)
            items = node.args[0]
            if isinstance(items, (ast.List, ast.Tuple)):
                parts = [fold(e) or UNKNOWN for e in items.elts]
                return (sep if sep is not None else "/").join(parts)  # unknown: read it as a path
        if (
            isinstance(func, ast.Attribute) and func.attr == "join" and node.args
        ):  # os.path.join(a, b)
            return "/".join(fold(a) or UNKNOWN for a in node.args)
        if (
            isinstance(func, ast.Name)
            and func.id in ("Path", "PurePath", "str")
            and len(node.args) == 1
        ):
            return fold(node.args[0])
        if isinstance(func, ast.Name) and func.id == "chr" and node.args:
            code = node.args[0]
            if (
                isinstance(code, ast.Constant)
                and isinstance(code.value, int)
                and 0 <= code.value < 0x110000
            ):
                return chr(code.value)
    return None


class PythonScan(ast.NodeVisitor):
    """Reports every risky reference in a module's tree through *add*."""

    def __init__(self, add: Add, ipython: IPythonCall) -> None:
        self.add = add
        self.ipython = ipython
        self.aliases: dict[str, str] = {}
        self.modules: set[str] = set()
        """Qualified names known to be modules (for ``getattr`` on a module)."""
        self.imported: set[str] = set()
        """Top-level module names this cell imports."""
        self.flow = FlowCheck(add, self.qualname)
        self.server = ServerReach(add)

    def scan(self, tree: ast.AST, context: Sequence[ast.AST] = ()) -> None:
        """Two walks: the first learns every import and alias, so that a function using ``m``
        before ``import os as m`` (or ``o = open``) further down is read with that binding.

        *context* are other cells of the notebook (already run, or run before this one): only
        their imports and aliases are learned, so ``sp.run(...)`` after ``import subprocess as
        sp`` in another cell is still read as ``subprocess.run``.
        """
        learner = PythonScan(lambda category, detail: None, lambda method, args: None)
        for other in (*context, tree):
            learner.visit(other)
        self.aliases, self.modules, self.imported = (
            dict(learner.aliases),
            learner.modules,
            learner.imported,
        )
        self.visit(tree)
        self.server.finish()

    # -- names ------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        """The dotted origin of *node* (``o.remove`` → ``os.remove`` after ``import os as o``)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            func = self.qualname(node.func)
            if func in ("__import__", "importlib.import_module", "builtins.__import__"):
                return fold(node.args[0]) if node.args else None
            if func in ("get_ipython", "IPython.get_ipython"):
                return IPYTHON
            if func in PATH_MAKERS or (func or "").startswith("pathlib.Path."):
                return "pathlib.Path()"
            return f"{func}()" if func else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.qualname(node.left)
            return "pathlib.Path()" if left and left.startswith("pathlib.") else None
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            self.aliases[bound] = target
            self.modules.add(target)
            self.imported.add(target.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                if module.split(".")[0] in RISKY_MODULES:
                    self.add("dynamic", f"from {module} import *")
                continue
            origin = f"{module}.{alias.name}".lstrip(".")
            self.aliases[alias.asname or alias.name] = origin
            self.imported.add(module.split(".")[0])
            self.reference(
                origin, node
            )  # ``from subprocess import run``: risky wherever it is used

    def visit_Assign(self, node: ast.Assign) -> None:
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for target in node.targets:
            value = node.value
            if (
                isinstance(target, ast.Tuple)
                and isinstance(value, ast.Tuple)
                and len(target.elts) == len(value.elts)
            ):
                pairs.extend(zip(target.elts, value.elts))
            else:
                pairs.append((target, value))
        to_visit: list[ast.expr] = []
        for target, value in pairs:
            if not isinstance(target, ast.Name):
                self.visit(target)
                to_visit.append(value)
                continue
            origin = self.qualname(value)
            if (
                origin is not None
                and isinstance(value, (ast.Name, ast.Attribute))
                and (
                    origin.removeprefix("builtins.") in (*OPENERS, "getattr", "setattr", "delattr")
                )
            ):
                self.aliases[target.id] = origin  # ``o = open``: checked where it is called
                continue
            if origin is not None:
                self.aliases[target.id] = origin
            else:
                self.aliases.pop(target.id, None)
            to_visit.append(value)
        self.flow.assigned(list(node.targets), node.value)
        for shown in dict.fromkeys(to_visit):  # one value shared by ``a = b = x`` is read once
            self.visit(shown)

    # -- references -------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.reference(self.qualname(node), node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.chain(node, by_name=not self.reference(self.qualname(node), node))

    def chain(self, node: ast.Attribute, *, by_name: bool = True) -> None:
        """Check every attribute of ``a.b.c`` by name, then visit a base that is not a name."""
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            if base.attr in DANGEROUS_DUNDERS:
                self.add("dynamic", f".{base.attr}")
            if base.attr in FRAME_ATTRIBUTES:
                self.add("reach", f".{base.attr}")
            if base.attr in PATH_WRITES and by_name:
                self.add(PATH_WRITES[base.attr], f".{base.attr}()")
            base = base.value
        if not isinstance(base, ast.Name):
            self.visit(base)

    def reference(self, name: str | None, node: ast.AST, *, called: bool = False) -> bool:
        """Flag *name* when what it refers to is risky on its own; ``True`` if it was."""
        if not name:
            return False
        name = name.removeprefix("builtins.")
        self.server.named(name)
        raw = name.split(".")
        parts = [part.removesuffix("()") for part in raw]  # os.getcwd().split → getcwd
        root, attr = parts[0], parts[-1]
        if len(parts) > 1 and (
            raw[0] in (*OPENERS, "getattr", "setattr", "eval", "exec")
            or any(
                part in AS_VALUE for part in parts[1:-1] if not (root == "os" and part == "path")
            )
        ):
            self.add("dynamic", name)  # open.__call__, pandas.io.common.os.system
            return True
        if name in OPENERS or name in ("getattr", "setattr", "delattr"):
            if not called:
                self.add("dynamic", f"{name} used as a value")
            return True
        if name in ("os.environ", "os.environb", "posix.environ"):
            self.add("credentials", "all environment variables")
            return True
        if called and name in ("__import__", "importlib.import_module"):
            return True  # the call names the module it imports
        category = EXACT.get(name)
        if category is None and name.startswith(DYNAMIC_PREFIXES):
            category = "dynamic"
        if category is None and (name.startswith(REACH_PREFIXES) or attr in AGENT_NAMES):
            category = "agent" if attr in AGENT_NAMES else "reach"
        if category is None and root == "os" and len(parts) > 1 and parts[1] not in OS_SAFE:
            category = OS_RULES.get(
                parts[1], "shell" if parts[1].startswith(("exec", "spawn")) else "system"
            )
        if category is None and root in MODULE_RULES and len(parts) > 1:
            default, allowed = MODULE_RULES[root]
            known = root in self.imported or root not in AMBIGUOUS or parts[1] in AMBIGUOUS[root]
            constant = parts[1].isupper() and root in AMBIGUOUS  # signal.SIGINT, socket.AF_INET
            if known and parts[1] not in allowed and not constant:
                category = "delete" if parts[1] == "rmtree" else default
        if category is None and name.startswith("pathlib.") and attr in PATH_ONLY_WRITES:
            category = "write"
        if category is None and name.startswith(IPYTHON + ".") and not called:
            category = "magic"
        if category is not None:
            self.add(category, name)
            return True
        risky_module = name in AS_VALUE or (name in RISKY_MODULES and name in self.imported)
        if isinstance(node, ast.Name) and risky_module and name not in ("pathlib", "io", "codecs"):
            self.add("dynamic", f"the {name} module used as a value")
            return True
        return False

    # -- calls --------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = (self.qualname(func) or "").removeprefix("builtins.")
        method = func.attr if isinstance(func, ast.Attribute) else ""
        receiver = self.qualname(func.value) if isinstance(func, ast.Attribute) else None
        env_call = name in ENV_LOOKUPS or (name.startswith("os.environ.") and bool(method))
        flagged = False
        if isinstance(func, (ast.Name, ast.Attribute)) and receiver != IPYTHON and not env_call:
            flagged = self.reference(self.qualname(func), func, called=True)
        if isinstance(func, ast.Attribute):
            self.chain(func, by_name=not flagged)
        elif not isinstance(func, ast.Name):
            self.visit(func)
        self.flow.called(node, name, method)
        self.server.called(node, name, method, receiver)
        if receiver == IPYTHON:
            self.ipython(method, [fold(a) for a in node.args])
        elif env_call:
            self.check_env_call(node, name, method)
        elif name in OPENERS:
            self.check_open(node, name, OPENERS[name])
        elif receiver == "pathlib.Path()" and method == "open":
            self.check_open(node, "Path.open", 0)
        elif (
            method == "open"
            and node.args
            and MODE.match(fold(node.args[0]) or "")
            and not set(fold(node.args[0]) or "r") <= set("rbtU")
        ):
            self.add("write", f".open({fold(node.args[0])!r})")  # a path from a loop or a parameter
        elif name in ("getattr", "setattr", "delattr"):
            self.check_getattr(node, name)
        elif name in ("__import__", "importlib.import_module"):
            shown = fold(node.args[0]) if node.args else None
            known = shown and UNKNOWN not in shown
            self.add("dynamic", f"{name}({shown!r})" if known else f"{name} of a computed name")
        elif name == "vars" and node.args and self.is_module(node.args[0]):
            self.add("dynamic", f"{name}() of a module")
        elif _is_shell_call(name):
            scan_shell(_command(node.args[0]) if node.args else None, self.add)
        elif name.split(".")[0] in HTTP_LIBS and (
            method in HTTP_WRITES
            or (
                method == "request"
                and ((fold(node.args[0]) if node.args else None) or "").lower() in HTTP_WRITES
            )
        ):
            self.add("network", f"{name.split('.')[0]}.{method}")
        elif name in ("urllib.request.urlopen", "urllib.request.Request") and (
            len(node.args) > 1 or any(k.arg in ("data", "method") for k in node.keywords)
        ):
            self.add("network", name)
        elif method in ("upload_file", "upload_fileobj", "sendmail", "send_message"):
            self.add("network", f".{method}()")
        elif (
            method in PATH_ONLY_WRITES and receiver is not None and receiver.startswith("pathlib.")
        ):
            self.add("write", f"Path.{method}")
        elif (
            name.endswith("HTML")
            and "<script" in ((fold(node.args[0]) if node.args else None) or "").lower()
        ):
            self.add("browser", "HTML with a script")
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            self.visit(arg)
        built = fold(node)  # os.path.join('/proc', pid, 'environ'), '/'.join([...])
        if built is not None:
            self.check_text(built)

    def check_open(self, node: ast.Call, name: str, position: int) -> None:
        mode_node = node.args[position] if len(node.args) > position else None
        for keyword in node.keywords:
            if keyword.arg == "mode":
                mode_node = keyword.value
            elif keyword.arg is None:
                mode_node = keyword.value  # **options: the mode is not known
        if any(isinstance(a, ast.Starred) for a in node.args):
            mode_node = node.args[-1]
        mode = "r" if mode_node is None else fold(mode_node)
        if mode is None or UNKNOWN in mode:
            self.add("write", f"{name} with a computed mode")
        elif set(mode) & set("wax+"):
            self.add("write", f"{name}(…, {mode!r})")

    def check_getattr(self, node: ast.Call, name: str) -> None:
        target = node.args[0] if node.args else None
        attribute = fold(node.args[1]) if len(node.args) > 1 else None
        if attribute is None or UNKNOWN in attribute:
            self.add("dynamic", f"{name} with a computed name")
            return
        if attribute.startswith("__"):
            self.add("dynamic", f"{name} of {attribute}")
        if attribute in FRAME_ATTRIBUTES:
            self.add("reach", f"{name} of {attribute}")
        if target is not None and self.is_module(target):
            module = self.qualname(target) or "a module"
            self.add("dynamic", f"{name} on {module}")
            self.reference(f"{module}.{attribute}", node)

    def check_env_call(self, node: ast.Call, name: str, method: str) -> None:
        if method in ENV_WHOLE:
            self.add("credentials", "all environment variables")
            return
        if name in ENV_LOOKUPS:
            key = fold(node.args[0]) if node.args else None
            if key is None or UNKNOWN in key:
                self.add("credentials", "a computed environment variable")
            elif is_secret_name(key):
                self.add("credentials", f"environment variable {key}")
            else:
                self.add("environment", key)
            return
        self.add("environment", name)

    def is_module(self, node: ast.AST) -> bool:
        name = self.qualname(node)
        if name is None:
            return False
        if isinstance(node, ast.Call):  # __import__('os') / importlib.import_module('os')
            return self.qualname(node.func) in (
                "__import__",
                "importlib.import_module",
                "builtins.__import__",
            )
        return name in self.modules or name in RISKY_MODULES

    # -- subscripts and strings -------------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> None:
        value = self.qualname(node.value)
        if value in ("os.environ", "os.environb"):
            key = fold(node.slice)
            if isinstance(node.ctx, ast.Store):
                self.add("environment", f"sets {key or 'a variable'}")
            elif key is None or UNKNOWN in key:
                self.add("credentials", "a computed environment variable")
            elif is_secret_name(key):
                self.add("credentials", f"environment variable {key}")
            else:
                self.add("environment", key)
            self.visit(node.slice)
            return
        if value in ("globals()", "locals()", "vars()"):
            self.add("dynamic", f"{value} lookup")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.check_text(node.value)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        text = fold(node)
        if text is not None:
            self.check_text(text)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.check_text(fold(node) or "")
        self.generic_visit(node)

    def check_text(self, text: str) -> None:
        self.server.text(text)
        agent = AGENT_SERVER.search(text)
        if agent:
            self.add("agent", agent.group(1))
        match = SECRET_PATHS.search(text)
        if match:
            self.add("credentials", match.group(1))
        elif text.startswith("/proc/") and UNKNOWN in text:
            self.add("credentials", "a computed /proc path")


def _is_shell_call(name: str) -> bool:
    return name in (
        "os.system",
        "os.popen",
        "os.startfile",
        "pty.spawn",
        "os.posix_spawn",
        "os.posix_spawnp",
        "commands.getoutput",
        "platform.popen",
    ) or name.startswith(("subprocess.", "os.spawn", "os.exec", "asyncio.create_subprocess"))


def _command(node: ast.AST) -> str | None:
    """The shell text of a ``subprocess``/``os.system`` argument, when it can be folded."""
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [fold(e) for e in node.elts]
        known = [p for p in parts if p is not None and UNKNOWN not in p]
        return shlex.join(known) if len(known) == len(parts) else (known[0] if known else None)
    text = fold(node)
    if text is None:
        return None
    head = text.split(UNKNOWN, 1)[0]  # f"rm {path}": the literal head names the command
    return head or None
