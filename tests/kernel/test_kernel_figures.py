"""Explorable figures in a real IPython kernel (``kernel/figures.py``).

The kernel loads the extension as kernels of this environment do; the tests read the outputs
a frontend receives: a figure's ``image/png`` and, beside it, our MIME bundle with maidr's data.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from jupyter_client.manager import start_new_async_kernel

from jupyter_aaep.figure_mime import MAIDR_MIME
from jupyter_aaep.notebook.accessibility import check_cells

pytestmark = [pytest.mark.slow]

pytest.importorskip("matplotlib")
pytest.importorskip("maidr")


async def start(tmp_path: Path, **env: str) -> tuple[Any, Any]:
    environment = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython"), **env}
    environment.pop("MPLBACKEND", None)
    root = str(Path(__file__).resolve().parents[2])
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, environment.get("PYTHONPATH", "")) if p
    )
    return await start_new_async_kernel(
        kernel_name="python3",
        env=environment,
        extra_arguments=["--ext=jupyter_aaep"],
        startup_timeout=120,
    )


async def run(client: Any, code: str) -> list[dict[str, Any]]:
    """The outputs of *code*, as a frontend receives them (display data and results)."""
    msg_id = client.execute(code)
    outputs: list[dict[str, Any]] = []
    while True:
        msg = await client.get_iopub_msg(timeout=180)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            return outputs
        if kind in ("display_data", "execute_result", "stream", "error"):
            outputs.append({"type": kind, **msg["content"]})


def figures(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["data"] for o in outputs if "image/png" in o.get("data", {})]


@pytest.fixture
async def kernel(tmp_path: Path) -> AsyncIterator[Any]:
    manager, client = await start(tmp_path)
    try:
        yield client
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def drawing_kernel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """One kernel for the colour-check cases, which each draw one figure in one cell (the
    inline backend closes it after the cell) and read only that cell's outputs: a kernel
    start and the imports of matplotlib and maidr each, 3–9 s, saved six times. The tests of
    what a fresh kernel does first (import order, the backend) keep a kernel of their own."""
    manager, client = await start(tmp_path_factory.mktemp("drawing"))
    try:
        yield client
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


async def test_a_bar_chart_carries_its_values_and_the_backend_stays_the_users(kernel: Any) -> None:
    # The extension waits for the notebook's own import: a kernel that never plots never
    # pays for matplotlib (0.35 s at every kernel start when the extension imported it).
    (loaded,) = await run(
        kernel, "import sys; print(sorted(m for m in sys.modules if m.startswith('matplotlib')))"
    )
    assert loaded["text"].strip() == "[]", loaded
    # seaborn first: it imports pyplot half-way through its own import, when maidr cannot
    # patch it yet (maidr then comes in with the first figure).
    outputs = await run(
        kernel,
        "import seaborn as sns\n"
        "import matplotlib.pyplot as plt\n"
        "plt.bar(['North', 'South', 'East'], [12, 17, 9])\n"
        "plt.title('Sales'); plt.ylabel('Units');",
    )
    assert [o for o in outputs if o["type"] in ("error", "stream")] == []  # maidr said nothing
    (figure,) = figures(outputs)
    bundle = figure[MAIDR_MIME]
    assert bundle["explorable"] is True and bundle["version"] == 1
    (layer,) = bundle["maidr"]["subplots"][0][0]["layers"]
    assert layer["type"] == "bar" and layer["title"] == "Sales"
    assert layer["axes"]["y"]["label"] == "Units"
    assert layer["data"] == [
        {"x": "North", "y": 12.0},
        {"x": "South", "y": 17.0},
        {"x": "East", "y": 9.0},
    ]
    # maidr switches matplotlib to its own backend on import; here the notebook's stays.
    backend = await run(kernel, "import matplotlib; print(matplotlib.get_backend())")
    assert backend[0]["text"].strip() == "module://matplotlib_inline.backend_inline"

    # A gap in a line (NaN) is a null, so the bundle stays JSON.
    outputs = await run(
        kernel, "fig, ax = plt.subplots(); ax.plot([1, 2, 3], [1, float('nan'), 3]);"
    )
    (figure,) = figures(outputs)
    (layer,) = figure[MAIDR_MIME]["maidr"]["subplots"][0][0]["layers"]
    assert [p["y"] for p in layer["data"][0]] == [1.0, None, 3.0]

    # A chart type maidr cannot explore keeps its image and says so.
    outputs = await run(
        kernel, "fig, ax = plt.subplots(); ax.quiver([0, 1], [0, 1], [1, 1], [1, 0]);"
    )
    (figure,) = figures(outputs)
    bundle = dict(figure[MAIDR_MIME])
    styles = bundle.pop("styles")  # how its series are drawn is still recorded
    assert bundle == {"version": 1, "explorable": False, "reason": "unsupported"}
    assert styles["axes"][0]["series"] == []

    # A figure as a cell's value, and seaborn, go the same way.
    outputs = await run(kernel, "import seaborn as sns\nsns.barplot(x=['a', 'b'], y=[3, 4]).figure")
    shown = figures(outputs)
    assert shown and all(f[MAIDR_MIME]["explorable"] for f in shown)
    data = shown[0][MAIDR_MIME]["maidr"]["subplots"][0][0]["layers"][0]["data"]
    assert [(p["x"], p["y"]) for p in data] == [("a", 3.0), ("b", 4.0)]
    outputs = await run(kernel, "sns.lineplot(x=[1, 2, 3], y=[3, 1, 2]);")
    (figure,) = figures(outputs)
    (layer,) = figure[MAIDR_MIME]["maidr"]["subplots"][0][0]["layers"]
    assert layer["type"] == "line" and [p["y"] for p in layer["data"][0]] == [3.0, 1.0, 2.0]


def colour_only(outputs: list[dict[str, Any]]) -> list[str]:
    """What the accessibility check says about colour for a cell with these outputs."""
    cell = {
        "id": "c",
        "cell_type": "code",
        "source": "",
        "outputs": [
            {"output_type": "display_data", "data": o["data"], "metadata": o.get("metadata", {})}
            for o in outputs
            if o["type"] in ("display_data", "execute_result")
        ],
    }
    title = {"id": "t", "cell_type": "markdown", "source": "# Title"}
    return [p.sentence for p in check_cells([title, cell]) if p.rule == "colour-only"]


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (  # (a) two lines told apart only by colour, with a legend (which does not help)
            (
                "plt.plot([1, 2, 3], [1, 3, 2], label='North')\n"
                "plt.plot([1, 2, 3], [2, 1, 3], label='South')\nplt.legend();"
            ),
            "Cell 2: In its figure (output 1), 2 lines (“North”, “South”) differ only by colour.",
        ),
        (  # (b) the same with their own markers
            (
                "plt.plot([1, 2, 3], [1, 3, 2], marker='o', label='North')\n"
                "plt.plot([1, 2, 3], [2, 1, 3], marker='s', label='South')\nplt.legend();"
            ),
            None,
        ),
        ("plt.plot([1, 2, 3], [1, 3, 2]);", None),  # (c) a single series
        (  # (d) bars told apart by their hatches
            (
                "plt.bar([1, 2], [3, 4], width=0.4, hatch='//', label='2023')\n"
                "plt.bar([1.4, 2.4], [2, 5], width=0.4, hatch='..', label='2024')\nplt.legend();"
            ),
            None,
        ),
        (  # the same bars without hatches
            (
                "plt.bar([1, 2], [3, 4], width=0.4, label='2023')\n"
                "plt.bar([1.4, 2.4], [2, 5], width=0.4, label='2024');"
            ),
            "Cell 2: In its figure (output 1), 2 bar series (“2023”, “2024”) differ only by colour.",
        ),
        (  # seaborn: hue alone, then hue and style
            (
                "import pandas as pd, seaborn as sns\n"
                "df = pd.DataFrame({'x': [1, 2, 1, 2], 'y': [1, 2, 3, 1], 'g': list('aabb')})\n"
                "sns.lineplot(df, x='x', y='y', hue='g');"
            ),
            "Cell 2: In its figure (output 1), 2 lines differ only by colour.",
        ),
        (
            (
                "import pandas as pd, seaborn as sns\n"
                "df = pd.DataFrame({'x': [1, 2, 1, 2], 'y': [1, 2, 3, 1], 'g': list('aabb')})\n"
                "sns.lineplot(df, x='x', y='y', hue='g', style='g');"
            ),
            None,
        ),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_the_kernel_records_how_series_are_drawn_for_the_colour_check(
    drawing_kernel: Any, code: str, said: str | None
) -> None:
    leftover = await run(
        drawing_kernel, "import matplotlib.pyplot as plt\nprint(plt.get_fignums())"
    )
    assert leftover[-1]["text"].strip() == "[]"  # no figure of an earlier case is open
    outputs = await run(drawing_kernel, "import matplotlib.pyplot as plt\n" + code)
    assert [o for o in outputs if o["type"] == "error"] == []
    (figure,) = figures(outputs)
    assert figure[MAIDR_MIME]["styles"]["version"] == 1
    assert len(json.dumps(figure[MAIDR_MIME]["styles"])) < 2000  # small beside the data
    assert colour_only(outputs) == ([said] if said else [])


async def test_the_setting_off_sends_images_only(tmp_path: Path) -> None:
    manager, client = await start(tmp_path, AAEP_EXPLORABLE_FIGURES="0")
    try:
        outputs = await run(client, "import matplotlib.pyplot as plt\nplt.bar(['a'], [1]);")
        (figure,) = figures(outputs)
        assert MAIDR_MIME not in figure
        imported = await run(client, "import sys; print('maidr' in sys.modules)")
        assert imported[0]["text"].strip() == "False"  # not even loaded
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


async def test_the_bundle_says_where_each_value_is_drawn(kernel: Any) -> None:
    """The panel outlines the current value over the image: each bar's box and each line
    point, as fractions of the PNG the kernel sent (cropped tight, as matplotlib_inline saves)."""
    import base64
    import io

    from PIL import Image

    outputs = await run(
        kernel,
        "import matplotlib.pyplot as plt\n"
        "plt.bar(['North', 'South', 'East'], [12, 17, 9], color='black');",
    )
    (figure,) = figures(outputs)
    bundle = figure[MAIDR_MIME]
    (layer,) = bundle["maidr"]["subplots"][0][0]["layers"]
    boxes = bundle["marks"][layer["id"]]
    assert len(boxes) == 3
    image = Image.open(io.BytesIO(base64.b64decode(figure["image/png"]))).convert("L")
    width, height = image.size
    tops = []
    for left, top, right, bottom in boxes:
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
        centre = (int((left + right) / 2 * width), int((top + bottom) / 2 * height))
        assert image.getpixel(centre) < 50  # inside the black bar
        above = (centre[0], int(top * height) - 4)
        assert image.getpixel(above) > 200  # just above it: the white background
        tops.append(top)
    assert tops[1] < tops[0] < tops[2]  # South (17) is the tallest, East (9) the shortest
    assert boxes[0][3] == boxes[1][3] == boxes[2][3]  # one baseline

    outputs = await run(kernel, "fig, ax = plt.subplots(); ax.plot([1, 2, 3], [4, 1, 5]);")
    (figure,) = figures(outputs)
    bundle = figure[MAIDR_MIME]
    (layer,) = bundle["maidr"]["subplots"][0][0]["layers"]
    ((first, low, high),) = bundle["marks"][layer["id"]]  # one line of three points
    assert first[0] == first[2] and first[1] == first[3]  # a point is a box of no size
    assert first[0] < low[0] < high[0]  # left to right
    assert low[1] > first[1] > high[1]  # 1 is drawn lowest, 5 highest
