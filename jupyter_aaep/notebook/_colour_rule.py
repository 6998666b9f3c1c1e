"""The *colour only* rule: a figure whose series differ only by colour.

Two lines with the same marker, line style and hatch, told apart by colour alone, are the same
line to someone who does not see the colours (colour blindness, a greyscale print, a screen
reader's description of the legend). The kernel records how each series is drawn beside the
figure (``styles`` in our MIME bundle, made by ``kernel/_styles.py``); this reads those facts.
A legend does not help (its keys differ by colour too); a label written beside each series
does, so directly labelled series are not counted. A figure without the facts (drawn before
this extension, or by another library) is not judged.

Pure functions over the bundle as stored in the notebook.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..words import plural

__all__ = ["ColourOnly", "colour_only"]

_NOUNS = {
    "line": ("line", "lines"),
    "bar": ("bar series", "bar series"),
    "scatter": ("group of points", "groups of points"),
}
_HOW = {
    "line": "give each line its own marker or line style (marker='o', linestyle='--'), or "
    "label the lines directly (ax.annotate beside each line)",
    "bar": "give each bar series its own hatch (hatch='//'), or label the bars directly",
    "scatter": "give each group of points its own marker (marker='s'), or label the groups "
    "directly",
}


@dataclass(frozen=True)
class ColourOnly:
    """Series of one subplot that only their colours tell apart."""

    kind: str
    count: int
    labels: tuple[str, ...]
    subplot: int | None
    """1-based, when the figure has several subplots."""

    @property
    def what(self) -> str:
        one, many = _NOUNS.get(self.kind, ("series", "series"))
        named = ""
        if self.labels:
            quoted = [f"“{label}”" for label in self.labels[:4]]
            more = " and others" if len(self.labels) > 4 else ""
            named = f" ({', '.join(quoted)}{more})"
        where = f" in subplot {self.subplot}" if self.subplot is not None else ""
        return f"{plural(self.count, one, many)}{named}{where} differ only by colour"

    @property
    def how(self) -> str:
        return _HOW.get(self.kind, _HOW["line"])


def _key(series: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(series.get("kind", "")),
        str(series.get("marker", "")),
        str(series.get("linestyle", "")),
        str(series.get("hatch", "")),
    )


def colour_only(bundle: Any) -> list[ColourOnly]:
    """The groups of series that differ only by colour in a figure's bundle (none when the
    bundle has no ``styles``: then nothing is known)."""
    styles = bundle.get("styles") if isinstance(bundle, Mapping) else None
    axes = styles.get("axes") if isinstance(styles, Mapping) else None
    if not isinstance(axes, list):
        return []
    found: list[ColourOnly] = []
    for position, ax in enumerate(axes):
        series = ax.get("series") if isinstance(ax, Mapping) else None
        if not isinstance(series, list):
            continue
        groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
        for one in series:
            if isinstance(one, Mapping) and not one.get("labelled_directly"):
                groups.setdefault(_key(one), []).append(one)
        for key, members in groups.items():
            colours = {str(m.get("color")) for m in members if m.get("color")}
            if len(colours) < 2:
                continue  # one colour: not told apart by colour (nor at all)
            labels = tuple(str(m["label"]) for m in members if m.get("label"))
            found.append(
                ColourOnly(
                    kind=key[0],
                    count=len(members),
                    labels=labels,
                    subplot=position + 1 if len(axes) > 1 else None,
                )
            )
    return found
