"""Where each value of an explorable figure is drawn, as fractions of the figure's image.

The panel outlines the value a keyboard reader is on (``labextension/src/figureMarks.ts``), so a
sighted colleague beside them can follow. The image is a PNG, so the panel cannot find the bars
in it; the kernel, which drew them, says where they are. Fractions of the image (left, top,
right, bottom; 0 to 1 from the top-left corner), not pixels: the same numbers fit a HiDPI image
and one the page has scaled.

The frame is the image matplotlib_inline saves: with ``bbox_inches="tight"`` (its default) the
figure is cropped to its drawn contents plus ``pad_inches``, computed here the same way.
Only layers whose marks match maidr's values one to one get positions (bars: one rectangle per
value; lines: one point per value); any other layer has none and is explored without an outline.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["figure_marks"]

_log = logging.getLogger(__name__)

Box = list[float]


def _frame(figure: Any, renderer: Any) -> Any:
    """The saved image's extent in display pixels (the figure's, or its tight crop)."""
    from matplotlib import rcParams
    from matplotlib.transforms import Bbox

    options: dict[str, Any] = {"bbox_inches": "tight"}
    try:
        from matplotlib_inline.config import InlineBackend

        options = dict(InlineBackend.instance().print_figure_kwargs)
    except Exception:  # noqa: BLE001 - no inline backend here: its default
        _log.debug("inline backend options not readable", exc_info=True)
    if options.get("bbox_inches") != "tight":
        return figure.bbox
    pad = options.get("pad_inches")
    pad = rcParams["savefig.pad_inches"] if pad in (None, "layout") else float(pad)
    inches = figure.get_tightbbox(renderer).padded(pad)
    return Bbox(inches.get_points() * figure.dpi)


def _box(extent: Any, frame: Any) -> Box:
    """*extent* (display pixels, origin bottom-left) as fractions of *frame* from its top-left."""
    width, height = frame.width or 1.0, frame.height or 1.0
    edges = (
        (extent.x0 - frame.x0) / width,
        (frame.y1 - extent.y1) / height,
        (extent.x1 - frame.x0) / width,
        (frame.y1 - extent.y0) / height,
    )
    return [round(float(edge), 5) for edge in edges]


def _point(x: float, y: float, frame: Any) -> Box:
    from matplotlib.transforms import Bbox

    return _box(Bbox([[x, y], [x, y]]), frame)


def _layer_marks(plot: Any, layer: dict[str, Any], renderer: Any, frame: Any) -> list[Any] | None:
    """The boxes of *layer*'s values, in the shape of its data, or None when they do not match."""
    data = layer.get("data")
    elements = list(getattr(plot, "_elements", None) or [])
    kind = layer.get("type")
    if kind == "bar" and isinstance(data, list) and len(elements) == len(data):
        return [_box(bar.get_window_extent(renderer), frame) for bar in elements]
    if kind == "line" and isinstance(data, list) and len(elements) == len(data):
        rows = []
        for line, values in zip(elements, data, strict=True):
            if not hasattr(line, "get_xydata") or not isinstance(values, list):
                return None
            points = line.get_transform().transform(line.get_xydata())
            if len(points) != len(values):
                return None
            rows.append([_point(float(x), float(y), frame) for x, y in points])
        return rows
    return None


def figure_marks(figure: Any, record: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """``{layer id: boxes}`` for the layers of maidr's *schema* whose marks can be placed.

    *record* is maidr's record of *figure* (its plots keep the artists they describe).
    Never raises: a figure without positions is still explorable, only not outlined.
    """
    try:
        plots = {str(plot.schema.get("id")): plot for plot in getattr(record, "_plots", [])}
        figure.draw_without_rendering()  # layout and autoscaled limits as the image has them
        renderer = figure.canvas.get_renderer()
        frame = _frame(figure, renderer)
        marks: dict[str, Any] = {}
        for row in schema.get("subplots") or []:
            for panel in row or []:
                for layer in (panel or {}).get("layers") or []:
                    plot = plots.get(str(layer.get("id")))
                    boxes = plot and _layer_marks(plot, layer, renderer, frame)
                    if boxes:
                        marks[str(layer["id"])] = boxes
        return marks
    except Exception:  # noqa: BLE001 - positions are a help, never why a figure fails
        _log.debug("figure marks could not be placed", exc_info=True)
        return {}
