"""The default of the class a server option configures.

An option of :class:`~jupyter_aaep.server.app.AAEPExtension` that feeds a dataclass field or a
constructor parameter states that default as a literal, so that loading the extension imports
none of those classes (issue 31: a class's servers start at once); ``tests/server/
test_option_defaults.py`` reads the class's own default with :func:`default_of` and holds the
two equal, so a default changed in one place cannot silently differ from the other.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["default_of"]


def default_of(target: Callable[..., object], name: str) -> Any:
    """The default of *name* in *target*: a dataclass field (its default or a fresh value of
    its factory) or a parameter of a class's constructor or of a function.

    Raises ``LookupError`` when *target* has no such parameter or it has no default, so a
    renamed field fails at import, not with a silently different default.
    """
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        for field in dataclasses.fields(target):
            if field.name != name:
                continue
            if field.default is not dataclasses.MISSING:
                return field.default
            if field.default_factory is not dataclasses.MISSING:
                return field.default_factory()
            raise LookupError(f"{target.__name__}.{name} has no default.")
        raise LookupError(f"{target.__name__} has no field {name!r}.")
    try:
        parameter = inspect.signature(target).parameters[name]
    except KeyError:
        raise LookupError(f"{target.__qualname__} has no parameter {name!r}.") from None
    if parameter.default is inspect.Parameter.empty:
        raise LookupError(f"{target.__qualname__}'s parameter {name!r} has no default.")
    return parameter.default
