"""Figures in cell outputs as image blocks the model can read, within a size budget.

A plot is worth sending to the model (it can then say what it drew, or describe it for a
screen-reader user), but a notebook figure can be several megabytes, and the Messages API
refuses images over 5 MB or 8000 pixels and bills about ``width × height / 750`` tokens for
each. So every figure is decoded and, when it is larger than the budget, downscaled with
Pillow (long edge at most ``max_edge`` pixels) and re-encoded as PNG, or as JPEG when a PNG
would still be over ``max_chars`` of base64. SVG is rendered to PNG when ``cairosvg`` is
installed; otherwise the model is told plainly that an SVG figure was not sent.

Whatever is not sent (too many figures, unreadable data, SVG without a renderer) becomes one
sentence in :attr:`FigureBlocks.notes`, so the model knows a figure exists that it did not see.
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..words import plural

__all__ = ["MODEL_IMAGE_TYPES", "FigureBlocks", "ImageBudget", "figure_blocks", "prepare_image"]

MODEL_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""What the Messages API accepts as an image ``media_type``."""
_PILLOW_FORMATS = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
}
_SVG = "image/svg+xml"


@dataclass(frozen=True)
class ImageBudget:
    """How much of a figure goes to the model."""

    max_images: int = 2
    """Figures per tool result; the rest are named in a note."""
    max_edge: int = 1024
    """Longest side in pixels after downscaling (the API itself scales down past 1568)."""
    max_chars: int = 300_000
    """Most base64 characters of one image (about 220 KB); the API's limit is 5 MB."""


@dataclass
class FigureBlocks:
    """The image blocks for the model, and a sentence for each figure that was not sent."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    downscaled: int = 0


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _block(mime: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _svg_to_png(svg: str, max_edge: int) -> bytes | None:
    """PNG bytes of an SVG figure, or ``None`` when no renderer is installed (no browser, no
    binary download: only the optional ``cairosvg`` package over the system's cairo)."""
    try:
        import cairosvg  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except (ImportError, OSError):
        return None
    try:
        return bytes(cairosvg.svg2png(bytestring=svg.encode("utf-8"), output_width=max_edge))
    except Exception:  # noqa: BLE001 - a broken SVG is reported like a missing renderer
        return None


def _encode(image: Any, budget: ImageBudget) -> tuple[str, str]:
    """``(media_type, base64)`` of a Pillow image within the budget: PNG, else JPEG, else smaller."""
    edge = budget.max_edge
    while True:
        copy = image.copy()
        copy.thumbnail((edge, edge))
        out = io.BytesIO()
        copy.save(out, format="PNG", optimize=True)
        data = base64.b64encode(out.getvalue()).decode("ascii")
        if len(data) <= budget.max_chars:
            return "image/png", data
        rgb = copy.convert("RGBA")
        flat = _white(rgb)
        out = io.BytesIO()
        flat.save(out, format="JPEG", quality=80)
        data = base64.b64encode(out.getvalue()).decode("ascii")
        if len(data) <= budget.max_chars or edge <= 64:
            return "image/jpeg", data
        edge //= 2


def _white(rgba: Any) -> Any:
    """Transparent parts on white, as a notebook shows a plot (JPEG has no alpha)."""
    from PIL import Image

    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background


def prepare_image(
    mime: str, value: Any, budget: ImageBudget
) -> tuple[dict[str, Any] | None, str | None, bool]:
    """One figure as ``(image block, None, downscaled)`` or ``(None, note, False)``."""
    if mime == _SVG:
        png = _svg_to_png(_text(value), budget.max_edge)
        if png is None:
            return (
                None,
                (
                    "An SVG figure was not sent to you: this server cannot turn SVG into an image "
                    "(install cairosvg to allow it). Ask the user, or draw it as PNG "
                    "(for matplotlib: %config InlineBackend.figure_formats = ['png'])."
                ),
                False,
            )
        raw, mime = png, "image/png"
    else:
        text = "".join(_text(value).split())  # base64 from kernels may carry newlines
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return (
                None,
                f"A {mime} figure could not be read (its data is not valid base64); it was not sent.",
                False,
            )
    try:
        from PIL import Image, UnidentifiedImageError
    except (
        ImportError
    ):  # pragma: no cover - Pillow is a dependency; without it send small ones as they are
        data = base64.b64encode(raw).decode("ascii")
        if mime in MODEL_IMAGE_TYPES and len(data) <= budget.max_chars:
            return _block(mime, data), None, False
        return None, f"A {mime} figure was too large to send and cannot be downscaled here.", False
    image: Any
    try:
        try:
            image = Image.open(io.BytesIO(raw))
            image.load()
        except (UnidentifiedImageError, OSError, SyntaxError):
            repaired = _png_without_broken_extras(raw)
            if repaired is None:
                raise
            raw = repaired
            image = Image.open(io.BytesIO(raw))
            image.load()
    except (
        UnidentifiedImageError,
        OSError,
        SyntaxError,
        ValueError,
        Image.DecompressionBombError,
    ):
        return (
            None,
            f"A {mime} figure could not be read (the data is not a valid image); it was not sent.",
            False,
        )
    actual = _PILLOW_FORMATS.get(str(image.format))
    data = base64.b64encode(raw).decode("ascii")
    fits = max(image.size) <= budget.max_edge and len(data) <= budget.max_chars
    if fits and actual is not None and not getattr(image, "is_animated", False):
        return _block(actual, data), None, False  # sent as it is, under its real type
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA")
    media_type, encoded = _encode(image, budget)
    return _block(media_type, encoded), None, True


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_without_broken_extras(raw: bytes) -> bytes | None:
    """The PNG without its optional chunks whose checksum is wrong, as image viewers (libpng)
    read it: they skip such a chunk (a colour profile, metadata) and show the picture, while
    Pillow refuses the whole file. ``None`` when it is not a PNG or nothing was skipped."""
    if not raw.startswith(_PNG_SIGNATURE):
        return None
    kept, at, skipped = [_PNG_SIGNATURE], len(_PNG_SIGNATURE), False
    while at + 12 <= len(raw):
        (length,) = struct.unpack(">I", raw[at : at + 4])
        end = at + 12 + length
        if end > len(raw):
            return None
        kind, body = raw[at + 4 : at + 8], raw[at + 8 : at + 8 + length]
        (checksum,) = struct.unpack(">I", raw[at + 8 + length : end])
        optional = bool(kind[0] & 0x20)  # a lower-case first letter: an ancillary chunk
        if optional and zlib.crc32(kind + body) & 0xFFFFFFFF != checksum:
            skipped = True
        else:
            kept.append(raw[at:end])
        at = end
    return b"".join(kept) if skipped else None


def figure_blocks(outputs: Sequence[dict[str, Any]], budget: ImageBudget) -> FigureBlocks:
    """The figures of a cell's outputs (one per output: PNG first, then JPEG, GIF, WebP, SVG)."""
    found = FigureBlocks()
    skipped = 0
    for output in outputs:
        data = output.get("data") or {}
        mime = next((m for m in (*MODEL_IMAGE_TYPES, _SVG) if m in data), None)
        if mime is None:
            continue
        if len(found.blocks) >= budget.max_images:
            skipped += 1
            continue
        block, note, downscaled = prepare_image(mime, data[mime], budget)
        if block is not None:
            found.blocks.append(block)
            found.downscaled += downscaled
        elif note is not None:
            found.notes.append(note)
    if skipped:
        found.notes.append(
            f"{plural(skipped, 'more figure')} {'was' if skipped == 1 else 'were'} not sent "
            f"(at most {budget.max_images} per result)."
        )
    return found
