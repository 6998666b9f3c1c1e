"""The MIME type of an explorable figure's data, declared once for the kernel that sends it and
the server that reads it (a leaf module: it imports nothing, so every layer may use it)."""

from __future__ import annotations

__all__ = ["MAIDR_MIME", "MAX_DATA_CHARS"]

MAIDR_MIME = "application/vnd.jupyter-aaep.maidr+json"
"""maidr's data for a figure, beside the figure's image in the same output (``kernel/figures.py``)."""
MAX_DATA_CHARS = 2_000_000
"""A figure whose data is larger is shown as an image only (its bundle says ``too_large``)."""
