"""The data of an explorable figure, as text the model can read.

A kernel of this environment sends, beside a matplotlib figure's image, a MIME bundle of our own
(:data:`MAIDR_MIME`, made by ``kernel/figures.py``) with maidr's description of the chart: its
subplots, layers (one per plotted call: bars, a line, a scatter, …), axis labels and values.
The image lets the model see the chart; this text lets it state values exactly ("South is
highest at 17") instead of reading them off pixels.

Pure functions over the bundle as stored in the notebook: no maidr, no kernel.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..figure_mime import MAIDR_MIME
from ..words import plural

__all__ = ["MAIDR_MIME", "describe_data"]

_REASONS = {
    "unsupported": "maidr cannot explore this kind of chart, so only the image is available",
    "too_large": "its data is too large to send with it, so only the image is available",
    "failed": "maidr could not read it, so only the image is available",
}
_NAMES = {
    "bar": "bar chart",
    "dodged_bar": "grouped bar chart",
    "stacked_bar": "stacked bar chart",
    "stacked_normalized_bar": "normalized stacked bar chart",
    "line": "line chart",
    "point": "scatter plot",
    "hist": "histogram",
    "box": "box plot",
    "heat": "heatmap",
    "smooth": "smoothed line",
    "candlestick": "candlestick chart",
}


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def _point(item: Any) -> str:
    """``North: 12`` for ``{"x": "North", "y": 12}``; other keys as ``key=value``."""
    if not isinstance(item, dict):
        return _number(item) if not isinstance(item, (list, dict)) else json.dumps(item)
    if "x" in item and "y" in item and set(item) <= {"x", "y", "fill", "z"}:
        text = f"{_number(item['x'])}: {_number(item['y'])}"
        extra = [f"{k}={_number(item[k])}" for k in ("fill", "z") if k in item]
        return text + (f" ({', '.join(extra)})" if extra else "")
    return ", ".join(
        f"{k}={_number(v) if not isinstance(v, (list, dict)) else json.dumps(v)}"
        for k, v in item.items()
    )


def _series(data: Any) -> list[list[Any]]:
    """The data of a layer as a list of series (lines and grouped bars hold several)."""
    if isinstance(data, list) and data and all(isinstance(s, list) for s in data):
        return data
    if isinstance(data, list):
        return [data]
    return []


def _axes(layer: dict[str, Any]) -> str:
    axes = layer.get("axes") or {}
    parts = []
    for name in ("x", "y", "fill"):
        label = (axes.get(name) or {}).get("label") if isinstance(axes.get(name), dict) else None
        if label and label != name.upper():  # "X" and "Y" are maidr's words for "no label"
            parts.append(f"{name} axis '{label}'")
    return ", ".join(parts)


def _layer_lines(layer: dict[str, Any]) -> list[str]:
    kind = str(layer.get("type", "chart"))
    name = _NAMES.get(kind, f"{kind} chart")
    title = layer.get("title")
    head = name + (f" '{title}'" if title else "")
    axes = _axes(layer)
    lines = [f"- {head}" + (f"; {axes}" if axes else "")]
    data = layer.get("data")
    series = _series(data)
    if not series:
        lines.append("  data: " + json.dumps(data, ensure_ascii=False, default=str))
        return lines
    labels = layer.get("legend") if isinstance(layer.get("legend"), list) else None
    for i, points in enumerate(series):
        label = ""
        if len(series) > 1:
            name_of = labels[i] if labels and i < len(labels) else f"series {i + 1}"
            label = f"{name_of}: "
        values = "; ".join(_point(p) for p in points)
        lines.append(f"  {label}{plural(len(points), 'value')}: {values}")
    return lines


def describe_data(bundle: Any, limit: int = 6000) -> str:
    """The figure's data from its bundle, as lines of text of at most about *limit* characters."""
    if not isinstance(bundle, dict):
        return "The figure's data could not be read."
    if not bundle.get("explorable"):
        reason = _REASONS.get(str(bundle.get("reason")), _REASONS["failed"])
        return f"The figure cannot be explored by keyboard: {reason}."
    schema = bundle.get("maidr") or {}
    lines = ["Data of the figure (exact values, from maidr; use them in descriptions):"]
    grid = schema.get("subplots") or []
    panels = [p for row in grid if isinstance(row, list) for p in row if isinstance(p, dict)]
    for number, panel in enumerate(panels, start=1):
        if len(panels) > 1:
            lines.append(f"Panel {number}:")
        for layer in panel.get("layers") or []:
            if isinstance(layer, dict):
                lines.extend(_layer_lines(layer))
    text = "\n".join(lines)
    if len(text) > limit:
        text = text[:limit].rsplit(";", 1)[0] + " … [cut: more values than fit here]"
    return text
