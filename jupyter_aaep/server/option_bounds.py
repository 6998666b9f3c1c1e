"""The lowest value each numeric server option accepts, and the sentence that refuses less.

Each options class lists its bounds in one table (:class:`Lowest` by option name) and checks
them all with one ``@validate`` through :func:`checked`, so a new bounded option is a row, not
another validator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traitlets import TraitError

__all__ = ["Lowest", "checked"]


@dataclass(frozen=True)
class Lowest:
    """An option's lowest value; *above* excludes the value itself, *zero* says what 0 means."""

    value: float
    above: bool = False
    zero: str | None = None
    unit: str = ""


def checked(proposal: Any, bounds: dict[str, Lowest]) -> Any:
    """The proposed value when it is within its option's bound; ``TraitError`` with a sentence
    naming the option, the bound and the value otherwise."""
    name, value = proposal["trait"].name, proposal["value"]
    low = bounds[name]
    if value > low.value or (value == low.value and not low.above):
        return value
    unit = f" {low.unit}" if low.unit else ""
    if low.above:
        wanted = f"more than {low.value:g}{unit}"
    elif low.zero is not None and low.value == 0:
        wanted = f"0 ({low.zero}) or more"
    else:
        wanted = f"at least {low.value:g}{unit}"
    raise TraitError(f"{name} must be {wanted}, not {value}.")
