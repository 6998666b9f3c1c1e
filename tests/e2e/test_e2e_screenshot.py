"""The README's picture is made by ``scripts/screenshot`` from the real panel, so CI runs the
script (into a temporary file): a panel change that would leave the picture stale or wrong (no
card, Approve off screen, the demo not starting) fails here."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_readme_picture_is_retaken_from_the_real_panel(browser, tmp_path: Path) -> None:
    """``browser`` only for its skip (no Chromium, no playwright) and CI's failure rules."""
    out = tmp_path / "panel.png"
    done = subprocess.run(
        [str(REPO / "scripts" / "screenshot"), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _png_size(out) == (1400, 860)
    assert _png_size(REPO / "docs" / "images" / "panel.png") == (1400, 860)
    assert out.stat().st_size > 50_000, "an empty page, not the panel with its card"
