"""A package's names imported on first use (PEP 562 ``__getattr__``).

Jupyter Server imports ``jupyter_aaep`` to find the extension, and a server nobody opened the
agent in should not pay for the tool machinery or the whole protocol (issue 31). Standard
library only, so the protocol package can use it too.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of *package*: each name in *where* comes from the submodule named
    there, imported when the name is first asked for and then kept in the package."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
