"""The packages that import their names on first use (``aaep/_lazy.py``) name each export three
times, because type checkers and linters read only literals: the ``TYPE_CHECKING`` imports, the
``__all__`` list and the ``_WHERE`` table the run uses. These tests hold the three to the same
names and modules, so a name added to one and not the others fails here, not in a user's
import."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

PACKAGES = ["jupyter_aaep", "jupyter_aaep.aaep"]


def _type_checking_imports(package: str) -> dict[str, str]:
    """``name -> submodule`` from the package's ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(inspect.getsource(importlib.import_module(package)))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1
                for alias in statement.names:
                    found[alias.name] = str(statement.module)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checkers_and_the_run_see_the_same_names(package: str) -> None:
    module = importlib.import_module(package)
    assert _type_checking_imports(package) == module._WHERE
    assert set(module.__all__) - {"__version__"} == set(module._WHERE)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_from_its_module(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        if name in module._WHERE:
            source = importlib.import_module(f"{package}.{module._WHERE[name]}")
            assert getattr(source, name) is value


def test_an_unknown_name_is_an_attribute_error() -> None:
    module = importlib.import_module("jupyter_aaep.aaep")
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        module.Nope  # noqa: B018
