"""The package's layers (DESIGN §2), read from the source: who may import whom, and no circles.

Imports are read with :mod:`ast`, so an import inside a function or under ``TYPE_CHECKING``
counts as much as one at the top: moving an import out of sight does not hide a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_aaep"

#: The layers each layer may import (besides itself). Imports point downwards only.
#: ``words`` (plurals and durations) imports nothing, so every layer may use it.
ALLOWED: dict[str, set[str]] = {
    "words": set(),
    "aaep": {"words"},
    "agent": {"aaep", "errors", "_version", "words"},
    "notebook": {"aaep", "errors", "_version", "words"},
    "tools": {"aaep", "agent", "notebook", "errors", "_version", "words"},
    "kernel": {"aaep", "agent", "errors", "_version", "words"},
    # The ACP client sits beside tools: it runs chats' sessions with another agent, and reaches
    # the server's MCP endpoint only through callables the server hands it.
    "acp": {"aaep", "agent", "errors", "_version", "words"},
}


def _module_name(path: Path) -> str:
    parts = ["jupyter_aaep", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path, *, top_level_only: bool) -> Iterator[tuple[str, int]]:
    """The package modules *path* imports, with the line, resolved to module names."""
    module = _module_name(path)
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _top_level(tree.body) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = base[: len(base) - node.level + 1] if node.level else []
            prefix = ".".join(anchor + ([node.module] if node.module else []))
            targets = [
                f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in MODULES else prefix
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target in MODULES and target != module:
                yield target, node.lineno


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at import time: not in functions, not under ``if TYPE_CHECKING``."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _top_level(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _top_level([n for n in inner if isinstance(n, ast.stmt)])
            if field == "handlers" and isinstance(inner, list):
                for handler in inner:
                    yield from _top_level(handler.body)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}"
        for name, path in MODULES.items()
        if _layer(name) == layer
        for target, line in _imports(path, top_level_only=False)
        if _layer(target) not in ALLOWED[layer] | {layer}
    ]
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back_at_import_time() -> None:
    graph = {
        name: {target for target, _ in _imports(path, top_level_only=True)}
        for name, path in MODULES.items()
    }
    assert _cycles(graph) == []


def test_the_agent_layer_has_no_circle_even_through_hidden_imports() -> None:
    """Counting imports in functions and under ``TYPE_CHECKING``: the chat record, the runner
    and the persistence layer used to import each other (now they share ``agent/chat.py``)."""
    agent = {name: path for name, path in MODULES.items() if _layer(name) == "agent"}
    graph = {
        name: {t for t, _ in _imports(path, top_level_only=False) if t in agent}
        for name, path in agent.items()
    }
    assert _cycles(graph) == []


def test_the_checker_finds_a_circle() -> None:
    """The cycle search itself, on a graph with one circle and one tail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
