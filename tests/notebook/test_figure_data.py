"""A figure's maidr data as the model reads it (``notebook/figure_data.py``), alone and in a
cell's rendered outputs."""

from __future__ import annotations

import pytest

from jupyter_aaep.figure_mime import MAIDR_MIME
from jupyter_aaep.notebook.figure_data import describe_data
from jupyter_aaep.notebook.render import render_output

pytestmark = pytest.mark.shared_server


def bundle(*layers: dict[str, object]) -> dict[str, object]:
    return {"version": 1, "explorable": True, "maidr": {"subplots": [[{"layers": list(layers)}]]}}


BARS = {
    "type": "bar",
    "title": "Sales",
    "axes": {"x": {"label": "X"}, "y": {"label": "Units"}},
    "data": [{"x": "North", "y": 12.0}, {"x": "South", "y": 17.0}, {"x": "East", "y": 9.5}],
}


def test_values_are_listed_with_the_chart_kind_title_and_axes() -> None:
    text = describe_data(bundle(BARS))
    assert "- bar chart 'Sales'; y axis 'Units'" in text
    assert "x axis 'X'" not in text  # maidr's word for "no label" is not a label
    assert "3 values: North: 12; South: 17; East: 9.5" in text


def test_several_series_and_panels_are_told_apart() -> None:
    lines = {
        "type": "line",
        "axes": {"x": {"label": "day"}},
        "legend": ["Oslo", "Rome"],
        "data": [[{"x": 1.0, "y": 3.0}], [{"x": 1.0, "y": 21.0}]],
    }
    data = {
        "version": 1,
        "explorable": True,
        "maidr": {"subplots": [[{"layers": [BARS]}, {"layers": [lines]}]]},
    }
    text = describe_data(data)
    assert "Panel 1:" in text and "Panel 2:" in text
    assert "Oslo: 1 value: 1: 3" in text and "Rome: 1 value: 1: 21" in text


def test_a_long_series_is_cut_visibly() -> None:
    many = {**BARS, "data": [{"x": f"day {i}", "y": float(i)} for i in range(2000)]}
    text = describe_data(bundle(many), limit=500)
    assert len(text) < 560 and text.endswith("[cut: more values than fit here]")


def test_a_figure_without_data_says_why() -> None:
    for reason, words in [
        ("unsupported", "maidr cannot explore this kind of chart"),
        ("too_large", "too large"),
        ("failed", "could not read"),
        ("anything else", "could not read"),
    ]:
        text = describe_data({"version": 1, "explorable": False, "reason": reason})
        assert text.startswith("The figure cannot be explored by keyboard") and words in text
    assert describe_data("not a dict") == "The figure's data could not be read."


def test_a_cells_output_carries_the_values_not_the_json() -> None:
    output = {
        "output_type": "display_data",
        "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>", MAIDR_MIME: bundle(BARS)},
        "metadata": {},
    }
    text = render_output(output)
    assert "North: 12; South: 17" in text
    assert MAIDR_MIME not in text and '"subplots"' not in text
