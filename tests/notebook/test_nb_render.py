"""Compact text for the model: truncation markers, images, errors, budgets."""

from __future__ import annotations

import base64
import importlib.util
import struct
from pathlib import Path

import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.notebook.render import (
    CellView,
    describe_image,
    render_cells,
    render_error,
    render_output,
    strip_ansi,
    truncate,
)

pytestmark = pytest.mark.shared_server

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "notebook_state_size.py"


def load_benchmark():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("notebook_state_size", BENCHMARK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_truncate_keeps_head_and_tail_with_a_visible_marker() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    cut = truncate(text, 300)
    assert cut.startswith("line 0\n") and cut.endswith("line 999")
    assert "characters cut" in cut and len(cut) < 400
    assert truncate("short", 300) == "short"
    assert "5000 characters cut" in truncate("x" * 5000, 0)


def test_images_are_described_not_sent() -> None:
    png = (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13)
        + b"IHDR"
        + struct.pack(">II", 640, 480)
        + b"\x08\x02\x00\x00\x00"
    )
    assert describe_image("image/png", base64.b64encode(png + b"\x00" * 2000).decode()).startswith(
        "image/png 640×480, 2 KB"
    )
    gif = b"GIF89a" + struct.pack("<HH", 20, 10) + b"\x00" * 10
    assert describe_image("image/gif", base64.b64encode(gif).decode()).startswith("image/gif 20×10")
    jpeg = (
        b"\xff\xd8\xff\xe0"
        + struct.pack(">H", 4)
        + b"JF"
        + b"\xff\xc0"
        + struct.pack(">HBHH", 17, 8, 300, 400)
        + b"\x00" * 20
    )
    assert describe_image("image/jpeg", base64.b64encode(jpeg).decode()).startswith(
        "image/jpeg 400×300"
    )
    assert describe_image("image/svg+xml", "<svg/>").startswith("image/svg+xml")
    output = {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"},
    }
    text = render_output(output)
    assert "[image/png 640×480" in text and "<Figure>" in text and "iVBOR" not in text


def test_html_only_and_widget_outputs_become_text() -> None:
    html = {
        "output_type": "display_data",
        "data": {"text/html": "<table><tr><th>a</th><td>1</td></tr><script>x()</script></table>"},
    }
    text = render_output(html)
    assert "(html as text)" in text and "a" in text and "1" in text and "x()" not in text
    widget = {
        "output_type": "display_data",
        "data": {
            "application/vnd.jupyter.widget-view+json": {"model_id": "m1"},
            "text/plain": "IntSlider()",
        },
    }
    assert "[interactive widget m1]" in render_output(widget)


def test_errors_keep_the_exception_and_the_last_frames_without_colours() -> None:
    frames = [f"\x1b[0;32mFile /lib/mod_{i}.py:{i}\x1b[0m, in f{i}\n    call()" for i in range(10)]
    error = {
        "output_type": "error",
        "ename": "KeyError",
        "evalue": "'price'",
        "traceback": [*frames, "\x1b[0;31mKeyError\x1b[0m: 'price'"],
    }
    text = render_error(error)
    assert text.startswith("KeyError: 'price'") and "mod_9.py" in text and "mod_7.py" in text
    assert "mod_5.py" not in text and "\x1b" not in text
    assert strip_ansi("\x1b[1;31mred\x1b[0m") == "red"


def test_every_cell_id_survives_a_tiny_budget() -> None:
    cells = [CellView(i + 1, f"id{i:04d}", "code", "x = 1\n" * 50) for i in range(300)]
    text = render_cells(cells, title="# t", budget=32_000)
    assert len(text) <= 32_000 and all(f"id id{i:04d} " in text for i in range(300))
    many = [CellView(i + 1, f"id{i:05d}", "code", "x") for i in range(3000)]
    index = render_cells(many, title="# t", budget=32_000)
    assert len(index) <= 32_000 and "this is an index" in index and "pass start=" in index


@on_server_loop
async def test_benchmark_notebook_state_fits_the_budget_with_every_id() -> None:
    bench = load_benchmark()
    figures = await bench.measure(bench.make_notebook(100))
    assert figures["within_budget"] and figures["state_chars"] <= 32_000
    assert figures["all_ids_listed"]
    assert figures["ratio"] < 0.05
    assert (
        "[image/png 640×480" in figures["text"]
        and "ValueError: Input contains NaN" in figures["text"]
    )


@on_server_loop
async def test_get_notebook_state_of_a_100_cell_notebook_on_the_server(
    jp_root_dir, make_ctx
) -> None:
    import nbformat

    from jupyter_aaep.tools.notebook import get_notebook_state

    bench = load_benchmark()
    nb = bench.make_notebook(100)
    (jp_root_dir / "big.ipynb").write_text(nbformat.writes(nb))
    result = await get_notebook_state(make_ctx("big.ipynb"))
    assert len(result.content) <= 32_000
    assert all(f"id {cell.id} " in result.content for cell in nb.cells)
    focused = await get_notebook_state(make_ctx("big.ipynb"), cell_ids=["cell-003"])
    assert "epoch 150" in focused.content  # one cell gets the whole budget


@pytest.mark.parametrize("budget", [8_000, 32_000])
def test_budget_is_respected_for_heavy_cells(budget: int) -> None:
    long_output = {"output_type": "stream", "name": "stdout", "text": "y" * 100_000}
    cells = [CellView(i + 1, f"c{i}", "code", "z" * 20_000, (long_output,), 1) for i in range(20)]
    text = render_cells(cells, title="# heavy", budget=budget)
    assert len(text) <= budget and all(f"id c{i} " in text for i in range(20))
