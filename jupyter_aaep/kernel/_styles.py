"""How a matplotlib figure tells its series apart: each series' colour, marker, line style and
hatch, and whether it has a legend or a label written beside it.

A stored figure is only an image, so nothing in a notebook could show whether colour alone
carries the difference between two lines (which people who do not see colours, and everyone
listening, cannot use). The kernel knows while it draws; these facts go with the figure in our
MIME bundle (``styles``), and ``notebook/accessibility.py`` checks them.

Small on purpose: a few short strings per series, at most :data:`MAX_SERIES` series per axes and
:data:`MAX_AXES` axes. Read with public matplotlib calls only; anything unexpected leaves the
series out rather than failing the figure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_AXES", "MAX_SERIES", "figure_styles"]

MAX_AXES = 24
MAX_SERIES = 40
_NO_MARKER = ("", " ", "None", "none", None)
_NAMED_MARKERS = tuple("os^v<>DdpHh*+xXP8.,|_1234")  # each a one-letter matplotlib marker


def _colour(value: Any) -> str | None:
    from matplotlib.colors import to_hex

    try:
        return str(to_hex(value, keep_alpha=False))
    except (ValueError, TypeError):
        return None


def _label(artist: Any) -> str | None:
    label = str(artist.get_label() or "")
    return None if not label or label.startswith("_") else label[:80]


def _marker_names() -> dict[tuple[Any, ...], str]:
    """The drawn path of each common marker, so a scatter's marker can be named again."""
    from matplotlib.markers import MarkerStyle

    names: dict[tuple[Any, ...], str] = {}
    for name in _NAMED_MARKERS:
        style = MarkerStyle(name)
        path = style.get_path().transformed(style.get_transform())
        names.setdefault(_path_key(path), name)
    return names


def _path_key(path: Any) -> tuple[Any, ...]:
    vertices = tuple(round(float(v), 3) for v in path.vertices.flatten())
    codes = tuple(int(c) for c in path.codes) if path.codes is not None else ()
    return vertices, codes


def _line(line: Any, texts: set[str]) -> dict[str, Any] | None:
    marker = line.get_marker()
    style = line.get_linestyle()
    if (style in _NO_MARKER and marker in _NO_MARKER) or len(line.get_xdata()) == 0:
        return None  # draws nothing (seaborn's legend keys are such lines)
    label = _label(line)
    return {
        "kind": "line",
        "label": label,
        "color": _colour(line.get_color()),
        "marker": "none" if marker in _NO_MARKER else str(marker),
        "linestyle": "none" if style in _NO_MARKER else str(style),
        "hatch": "",
        "labelled_directly": label is not None and label in texts,
    }


def _bars(container: Any, texts: set[str]) -> dict[str, Any] | None:
    patches = list(container.patches)
    if not patches:
        return None
    first = patches[0]
    label = _label(container)
    return {
        "kind": "bar",
        "label": label,
        "color": _colour(first.get_facecolor()),
        "marker": "none",
        "linestyle": "none",
        "hatch": str(first.get_hatch() or ""),
        "labelled_directly": label is not None and label in texts,
    }


def _scatter(
    collection: Any, texts: set[str], names: dict[tuple[Any, ...], str]
) -> dict[str, Any] | None:
    faces = collection.get_facecolor()
    if len(faces) == 0:  # hollow markers: the edge carries the colour
        faces = collection.get_edgecolor()
    if len(faces) != 1:
        return None  # colour shows the data (a colour map), not which series a point is in
    paths = collection.get_paths()
    marker = names.get(_path_key(paths[0]), "custom") if paths else "none"
    label = _label(collection)
    return {
        "kind": "scatter",
        "label": label,
        "color": _colour(faces[0]),
        "marker": marker,
        "linestyle": "none",
        "hatch": str(collection.get_hatch() or ""),
        "labelled_directly": label is not None and label in texts,
    }


def _axes(ax: Any, names: dict[tuple[Any, ...], str]) -> dict[str, Any]:
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer

    texts = {" ".join(str(t.get_text()).split()) for t in ax.texts}
    series: list[dict[str, Any] | None] = [_line(line, texts) for line in ax.get_lines()]
    series += [_bars(c, texts) for c in ax.containers if isinstance(c, BarContainer)]
    series += [_scatter(c, texts, names) for c in ax.collections if isinstance(c, PathCollection)]
    kept = [s for s in series if s is not None]
    return {
        "legend": ax.get_legend() is not None,
        "texts": len(ax.texts),
        "series": kept[:MAX_SERIES],
    }


def figure_styles(figure: Any) -> dict[str, Any] | None:
    """``{"version": 1, "legend": bool, "axes": [...]}`` for *figure*, or ``None`` when it
    cannot be read (then nothing is claimed about it)."""
    try:
        names = _marker_names()
        axes = [_axes(ax, names) for ax in list(figure.axes)[:MAX_AXES]]
        return {"version": 1, "legend": bool(figure.legends), "axes": axes}
    except Exception:  # noqa: BLE001 - never why a figure fails; the check then says nothing
        return None
