"""The package's layers (DESIGN §2), read from the source: who may import whom, and no circles.

Imports are read with :mod:`ast`, so an import inside a function or under ``TYPE_CHECKING``
counts as much as one at the top: moving an import out of sight does not hide a circle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_aaep"

#: The layers each layer may import (besides itself). Imports point downwards only.
#: ``words`` (plurals and durations) imports nothing, so every layer above the store may use it; so does
#: ``figure_mime`` (the MIME type the kernel sends a figure's data under and the tools read).
#: Three packages where there was one: the engine (``agent``: loop, dispatch, context, prompts,
#: tools) knows nothing of chats or storage; the chats (``chats``: the runner, the chat record,
#: persistence) use the engine and the store; the store (``store``: SQLite) imports nothing of ours.
ALLOWED: dict[str, set[str]] = {
    "words": set(),
    "figure_mime": set(),
    "aaep": {"words"},
    "store": set(),
    "agent": {"aaep", "errors", "_version", "words"},
    "chats": {"aaep", "agent", "store", "errors", "_version", "words"},
    "notebook": {"aaep", "errors", "_version", "words", "figure_mime"},
    "tools": {"aaep", "agent", "notebook", "errors", "_version", "words", "figure_mime"},
    "kernel": {"aaep", "agent", "errors", "_version", "words", "figure_mime"},
    # Outside agents' MCP server and the hub's gateway: below the server, which loads them.
    "mcp": {"aaep", "agent", "chats", "store", "tools", "notebook", "errors", "_version", "words"},
    "hub": {"aaep", "agent", "errors", "_version", "words"},
    # The ACP client sits beside tools: it runs chats' sessions with another agent, and reaches
    # the server's MCP endpoint only through callables the server hands it.
    "acp": {"aaep", "agent", "chats", "store", "errors", "_version", "words"},
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


#: The one circle left, type-only: ``agent_parts`` names the extension whose options it reads
#: (about 35 of them). It goes when the options live on the configurables that use them (issue
#: 32); a protocol repeating every option's type here would be a second declaration of each.
KNOWN_CIRCLES: list[list[str]] = []


def test_no_import_circle_anywhere_even_through_hidden_imports() -> None:
    """Counting imports in functions and under ``TYPE_CHECKING``: two modules that need each other
    are one concept split by size, or a shared piece that belongs below both. (The chat record, the
    runner and persistence once did; so did ``kernel/view.py`` and ``_view_cards.py`` (the cards
    now name what they use of the view as a protocol) and ``notebook/running.py`` and
    ``service.py`` (the run's record, ``CellRun``, now lives with the running cell).)"""
    graph = {
        name: {target for target, _ in _imports(path, top_level_only=False)}
        for name, path in MODULES.items()
    }
    assert _cycles(graph) == KNOWN_CIRCLES, "a new circle, or a known one gone (drop it above)"


def _external_imports(path: Path) -> Iterator[tuple[str, int]]:
    """The top-level names of what *path* imports from outside the package, with the line."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "jupyter_aaep":
                yield name.split(".")[0], node.lineno


def test_the_store_imports_only_the_standard_library() -> None:
    """The store is SQLite and files: nothing from PyPI, nothing of ours (checked above)."""
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for module, path in MODULES.items()
        if _layer(module) == "store"
        for name, line in _external_imports(path)
        if name not in sys.stdlib_module_names and name != "__future__"
    ]
    assert not wrong, "\n".join(wrong)


def test_the_engine_knows_no_sqlite() -> None:
    """No ``sqlite3`` under ``agent/``: the loop works the same with or without a store."""
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for module, path in MODULES.items()
        if _layer(module) == "agent"
        for name, line in _external_imports(path)
        if name == "sqlite3"
    ]
    assert not wrong, "\n".join(wrong)


def test_the_checker_finds_a_circle() -> None:
    """The cycle search itself, on a graph with one circle and one tail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
