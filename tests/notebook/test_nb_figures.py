"""The agent sees figures: plots reach the scripted model as image blocks, within the budget."""

from __future__ import annotations

import asyncio
import base64
import io
import re
from typing import Any

import anthropic
import pytest
from nb_helpers import on_server_loop, wait_for
from PIL import Image

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, ReplyBroker, Session
from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.context import ContextSettings
from jupyter_aaep.agent.loop import AgentConfig, AgentLoop, ChatContext
from jupyter_aaep.agent.services import AgentServices
from jupyter_aaep.agent.tools import ToolError, ToolRegistry
from jupyter_aaep.notebook._figures import ImageBudget, figure_blocks, prepare_image
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.tools._figure_tools import view_figure
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server

PLOT = """\
import matplotlib
matplotlib.use("module://matplotlib_inline.backend_inline")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(16, 10), dpi=150)
ax.plot([1, 2, 3, 4], [3, 1, 4, 1], label="temperature")
ax.set_xlabel("day"); ax.set_ylabel("degrees")
plt.show()
"""


def png(width: int, height: int, *, noise: bool = False) -> str:
    image = Image.new("RGB", (width, height), (255, 255, 255))
    if noise:
        image = Image.effect_noise((width, height), 120).convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def size_of(block: dict[str, Any]) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))).size


# -- the budget, without a server ---------------------------------------------------------------


def test_a_small_figure_goes_as_it_is_and_a_large_one_is_downscaled() -> None:
    small = png(300, 200)
    block, note, scaled = prepare_image("image/png", small, ImageBudget())
    assert block is not None and note is None and not scaled
    assert block["source"]["data"] == small and block["source"]["media_type"] == "image/png"
    block, note, scaled = prepare_image("image/png", png(3000, 1500), ImageBudget(max_edge=800))
    assert block is not None and scaled and size_of(block) == (800, 400)


def test_a_figure_too_heavy_for_png_is_sent_as_jpeg_within_the_character_budget() -> None:
    budget = ImageBudget(max_edge=1024, max_chars=120_000)
    block, _, scaled = prepare_image("image/png", png(1200, 900, noise=True), budget)
    assert block is not None and scaled
    assert block["source"]["media_type"] == "image/jpeg" and len(block["source"]["data"]) <= 120_000
    assert max(size_of(block)) <= 1024


def test_what_is_not_sent_is_said() -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
    outputs = [
        {"output_type": "display_data", "data": {"image/svg+xml": svg}},
        {"output_type": "display_data", "data": {"image/png": "%%% not base64"}},
        {
            "output_type": "display_data",
            "data": {"image/png": base64.b64encode(b"text, not a picture").decode()},
        },
        {
            "output_type": "display_data",
            "data": {"image/png": png(20, 20), "text/plain": "<Figure>"},
        },
        {"output_type": "display_data", "data": {"image/png": png(20, 20)}},
        {"output_type": "display_data", "data": {"image/png": png(20, 20)}},
    ]
    found = figure_blocks(outputs, ImageBudget(max_images=2))
    assert len(found.blocks) == 2
    try:
        import cairosvg  # noqa: F401
    except (ImportError, OSError):
        assert "An SVG figure was not sent to you" in found.notes[0]
    assert any("not valid base64" in n for n in found.notes)
    assert any("not a valid image" in n for n in found.notes)
    assert found.notes[-1] == "1 more figure was not sent (at most 2 per result)."


def test_a_mislabelled_figure_is_sent_under_its_real_type() -> None:
    out = io.BytesIO()
    Image.new("RGB", (40, 30)).save(out, format="JPEG")
    block, _, _ = prepare_image(
        "image/png", base64.b64encode(out.getvalue()).decode(), ImageBudget()
    )
    assert block is not None and block["source"]["media_type"] == "image/jpeg"


# -- through the agent loop, a real kernel and the scripted model ------------------------------


@pytest.fixture
def fake_model() -> Any:
    fake = FakeAnthropic().start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


def make_loop(
    fake: FakeAnthropic, service: Any, path: str, **context: Any
) -> tuple[AgentLoop, ChatContext, Emitter, ListSubscriber, ReplyBroker]:
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
    broker = ReplyBroker()
    emitter, events = Emitter(), ListSubscriber()
    emitter.subscribe(events)
    chat = ChatContext(
        chat_id="chat-1",
        notebook_path=path,
        services=AgentServices(notebook=service),
        approval=ApprovalPolicy(),
    )
    loop = AgentLoop(
        client,
        ToolRegistry(notebook_tools()),
        broker=broker,
        config=AgentConfig(model="claude-test", context=ContextSettings(**context)),
    )
    return loop, chat, emitter, events, broker


def approve(broker: ReplyBroker, event: dict[str, Any]) -> None:
    assert broker.submit(
        {
            "type": "confirmation.reply",
            "reply_token": event["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "decision": "accept",
        }
    )


@on_server_loop
async def test_the_model_receives_the_plot_it_drew(notebook_file, service, fake_model) -> None:
    path = notebook_file(
        "plot.ipynb", [{"id": "plot", "source": PLOT}, {"id": "plot2", "source": PLOT}]
    )
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "plot"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "plot2"})]),
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "plot"})]),
        Turn(text="The line rises to 4 on day 3."),
    )
    loop, chat, emitter, events, broker = make_loop(fake_model, service, path, max_images=2)
    history: list[dict[str, Any]] = []
    task = asyncio.ensure_future(
        loop.run(
            Session(emitter, Producer(model="claude-test")), history, "Plot it twice.", chat=chat
        )
    )
    for count in (1, 2):
        approve(
            broker,
            await wait_for(
                lambda c=count: (
                    len(events.of_type("awaiting.confirmation")) >= c
                    and events.of_type("awaiting.confirmation")[c - 1]
                ),
                timeout=60,
                what=f"confirmation {count}",
            ),
        )
    result = await asyncio.wait_for(task, 90)
    await loop.client.close()
    assert result.status == "completed"

    after_first = fake_model.requests[1]
    [figure] = after_first.images
    assert figure["source"]["media_type"] in ("image/png", "image/jpeg")
    width, height = size_of(figure)
    assert (
        max(width, height) == 1024 and width > height
    )  # about 2000×1250 from the kernel, downscaled
    result_block = after_first.body["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["content"][1]["type"] == "text"
    assert result_block["content"][0]["text"].startswith(
        "<data source="
    )  # the result is data (issue 16)
    shown = re.search(r"\[image/png (\d+)×(\d+)", result_block["content"][1]["text"])
    assert shown and int(shown.group(1)) > 1024  # the model reads the figure's real size too
    # The prompt counts the figure by its pixels (about 1400 tokens), not by its base64.
    assert after_first.prompt_tokens is not None and after_first.prompt_tokens < 12_000

    # Two plots in, two images; with view_figure a third arrives and the oldest becomes a note.
    assert len(fake_model.requests[2].images) == 2
    last = fake_model.requests[3]
    assert len(last.images) == 2
    assert "only the most recent images are kept" in str(last.body["messages"][2]["content"])
    looked = [e for e in events.of_type("tool.completed") if e["tool"] == "view_figure"]
    assert looked[0]["summary_normal"] == "Looked at the figure in cell 1."
    ran = [e for e in events.of_type("tool.completed") if e["tool"] == "run_cell"]
    assert "showed 1 image" in ran[0]["summary_normal"]


@on_server_loop
async def test_view_figure_refuses_a_cell_without_a_figure(notebook_file, make_ctx) -> None:
    path = notebook_file(
        "none.ipynb",
        [
            {
                "id": "t",
                "source": "print(1)",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}],
            },
            {
                "id": "f",
                "source": "show()",
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": "drawing\n"},
                    {
                        "output_type": "display_data",
                        "data": {"image/png": png(64, 48), "text/plain": "<Figure>"},
                        "metadata": {},
                    },
                ],
            },
        ],
    )
    with pytest.raises(ToolError, match="Cell 1 shows no figure"):
        await view_figure(make_ctx(path), cell_id="t")
    with pytest.raises(
        ToolError, match="Output 0 of cell 2 is not a figure; its figures are outputs 1"
    ):
        await view_figure(make_ctx(path), cell_id="f", output_index=0)
    result = await view_figure(make_ctx(path), cell_id="f", output_index=1)
    assert isinstance(result.content, list) and result.content[1]["type"] == "image"
    text = result.content[0]["text"]
    assert "Code:\nshow()" in text and "drawing" in text


def _png_chunks(raw: bytes) -> list[bytes]:
    import struct

    kinds, at = [], 8
    while at < len(raw):
        (length,) = struct.unpack(">I", raw[at : at + 4])
        kinds.append(raw[at + 4 : at + 8])
        at += 12 + length
    return kinds


def test_a_png_with_a_broken_optional_chunk_is_read_as_image_viewers_read_it() -> None:
    """An optional chunk (here a text note) with a wrong checksum is skipped, as libpng and
    browsers do (server-everything's tiny image has such a colour profile); Pillow alone would
    refuse the whole picture. A broken required chunk still makes it unreadable."""
    import struct
    import zlib

    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "made for the test")
    out = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 30)).save(out, format="PNG", pnginfo=info)
    raw = bytearray(out.getvalue())
    text_at = raw.index(b"tEXt")
    raw[text_at + 6] ^= 0xFF  # one byte of the note changes; its checksum no longer matches
    block, note, downscaled = prepare_image(
        "image/png", base64.b64encode(bytes(raw)).decode(), ImageBudget()
    )
    assert note is None and not downscaled and block is not None
    sent = base64.b64decode(block["source"]["data"])
    assert b"tEXt" not in _png_chunks(sent) and b"IDAT" in _png_chunks(sent)
    with Image.open(io.BytesIO(sent)) as image:
        assert image.size == (8, 6)
    header_at = bytes(raw).index(b"IHDR")
    (length,) = struct.unpack(">I", raw[header_at - 4 : header_at])
    raw[header_at + 4] ^= 0x01  # the width: a required chunk
    assert (
        zlib.crc32(bytes(raw[header_at : header_at + 4 + length]))
        != struct.unpack(">I", raw[header_at + 4 + length : header_at + 8 + length])[0]
    )
    block, note, _ = prepare_image(
        "image/png", base64.b64encode(bytes(raw)).decode(), ImageBudget()
    )
    assert block is None and note is not None and "could not be read" in note
