"""A figure output's alt text in the live notebook: read it, write it, and know which picture it
belongs to. Shared by the agent's ``set_figure_alt_text``, the panel's *Save as alt text* and
the undo of the agent's edits (:mod:`.edit_record`).

The text lives in ``metadata[mime]["alt"]`` of the output, where nbconvert's HTML export and
our image renderer read it. A description belongs to one picture, so the figure's data is
fingerprinted: a cell that ran again and drew something else is not given (or given back) a
description of the old one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .documents import LiveNotebook

__all__ = ["FIGURE_TYPES", "figure_fingerprint", "figure_mime", "output_alt", "write_alt"]

FIGURE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
"""Output mime types that hold a figure."""


def figure_mime(output: Any) -> str | None:
    """The figure's mime type in *output*, or ``None`` when it shows no figure."""
    data = output.get("data") if isinstance(output, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    return next((m for m in FIGURE_TYPES if m in data), None)


def figure_fingerprint(output: Any) -> str:
    """Which picture an output shows: a hash of its figure's data (the same plot drawn again
    gives the same bytes; another plot, other bytes). ``""`` for an output without a figure."""
    mime = figure_mime(output)
    if mime is None:
        return ""
    value = output["data"][mime]
    text = "".join(value) if isinstance(value, list) else str(value)
    return hashlib.sha256("".join(text.split()).encode("utf-8")).hexdigest()[:32]


def output_alt(output: Any, mime: str) -> str | None:
    """The alt text stored on *output*'s figure of type *mime*, or ``None``."""
    metadata = output.get("metadata") if isinstance(output, Mapping) else None
    meta = metadata.get(mime) if isinstance(metadata, Mapping) else None
    alt = meta.get("alt") if isinstance(meta, Mapping) else None
    return alt if isinstance(alt, str) else None


def write_alt(nb: LiveNotebook, cell_id: str, index: int, mime: str, alt: str | None) -> None:
    """Set (or, with ``None``, remove) the alt text of output *index* of *cell_id*. The output
    is replaced as a whole, so open notebooks pick the change up."""
    from pycrdt import Map

    output = dict(list(nb.cell(cell_id).get("outputs") or [])[index])
    metadata = dict(output.get("metadata") or {})
    meta = {key: value for key, value in dict(metadata.get(mime) or {}).items() if key != "alt"}
    if alt is not None:
        meta["alt"] = alt
    if meta:
        metadata[mime] = meta
    else:
        metadata.pop(mime, None)
    youtputs = nb.ynotebook.ycells[nb.index_of(cell_id)].get("outputs")
    with nb.transaction():
        del youtputs[index]
        youtputs.insert(index, Map({**output, "metadata": metadata}))
