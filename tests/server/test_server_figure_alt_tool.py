"""The agent saves a figure's description as its alt text (``set_figure_alt_text``, issue 28),
through a real server, a real kernel drawing with matplotlib and the scripted model: stored with
the output on disk, narrated in a sentence, refused in one sentence when the model is careless,
asked first where the chat's approval mode says so, and taken back by Undo agent changes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, result_text, tool_results, wait_idle
from server_helpers import of_type, wait_until

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow
pytest.importorskip("matplotlib")

PLOT = (
    "import matplotlib\n"
    "matplotlib.use('module://matplotlib_inline.backend_inline')\n"
    "import matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3, 4], [3, 1, 4, 1])\n"
    "plt.xlabel('day'); plt.ylabel('degrees')\n"
    "plt.show()"
)
OTHER_PLOT = PLOT.replace("[3, 1, 4, 1]", "[5, 6, 2, 8]")
DESCRIPTION = (
    "A line chart of temperature in degrees by day, days 1 to 4: it falls from 3 to 1, peaks at "
    "4 on day 3 and drops back to 1."
)


async def _chat(api: Any, path: str, mode: str = "auto") -> str:
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    chat_id = str(body["chat_id"])
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "approval_mode", "mode": mode}
    )
    assert status in (200, 204), body
    return chat_id


async def _ask(api: Any, chat_id: str, text: str) -> None:
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
    )
    assert status == 202, body


def _alt_on_disk(root: Path, path: str, cell: int, output: int = 0) -> str | None:
    try:
        outputs = json.loads((root / path).read_text())["cells"][cell]["outputs"]
    except (json.JSONDecodeError, OSError, KeyError, IndexError):
        return None
    if len(outputs) <= output:
        return None
    alt = outputs[output].get("metadata", {}).get("image/png", {}).get("alt")
    return alt if isinstance(alt, str) else None


async def _read(root: Path, path: str) -> Any:
    """The saved notebook (read again while Jupyter is writing it)."""
    for _ in range(250):
        try:
            return nbformat.reads((root / path).read_text(), as_version=4)
        except (json.JSONDecodeError, OSError, nbformat.reader.NotJSONError):
            await asyncio.sleep(0.02)
    raise AssertionError(f"{path} could not be read")


async def test_the_agent_plots_then_saves_its_description_as_the_figures_alt_text(
    kernels, api, sse, extension, fake_model, jp_root_dir
) -> None:
    path = new_name()
    await kernels.notebook(path, [PLOT, "print('no figure here')"])
    chat_id = await _chat(api, path)
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
        # A careless model: no text, a cell that does not exist, a cell without a figure, only
        # whitespace, an output that is not a figure.
        Turn(tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "zz", "alt_text": "A line"})]),
        Turn(tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "c2", "alt_text": "A line"})]),
        Turn(tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "c1", "alt_text": " \n\t "})]),
        Turn(
            tool_uses=[
                ToolUse(
                    "set_figure_alt_text", {"cell_id": "c1", "alt_text": "A", "output_index": 7}
                )
            ]
        ),
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "c1"})]),
        Turn(
            tool_uses=[
                ToolUse("set_figure_alt_text", {"cell_id": "c1", "alt_text": f" {DESCRIPTION}\n"})
            ]
        ),
        Turn(text="Saved the description."),
    )
    async with sse(chat_id):  # a listener: auto mode approves runs only with one there
        await _ask(api, chat_id, "Plot the temperatures and describe the chart.")
        events = await wait_idle(extension, chat_id, timeout=120)
    assert of(events, "session.completed")
    done = [(e["tool"], e["status"]) for e in of(events, "tool.completed")]
    assert done == [
        ("run_cell", "success"),
        ("run_cell", "success"),
        *[("set_figure_alt_text", "error")] * 5,
        ("view_figure", "success"),
        ("set_figure_alt_text", "success"),
    ], done
    saved = of(events, "tool.completed")[-1]
    assert saved["summary_normal"] == (
        "Saved a description of the figure in cell 1 as its alt text."
    )

    # Each refusal reached the model as one sentence it can act on.
    said = [result_text(tool_results(fake_model, i)[0]) for i in range(3, 8)]
    assert "alt_text" in said[0]
    assert "zz" in said[1]
    assert said[2].startswith("Cell 2 shows no figure")
    assert said[3].startswith("The description is empty")
    assert said[4] == "Output 7 of cell 1 is not a figure; its figures are outputs 0."
    for sentence in said:
        assert sentence.count("\n") == 0, sentence
    # view_figure told the model to save its description with the new tool.
    assert "set_figure_alt_text" in result_text(tool_results(fake_model, 8)[0])
    assert "alt text of the figure in cell 1" in result_text(tool_results(fake_model, 9)[0])

    await wait_until(
        lambda: _alt_on_disk(jp_root_dir, path, 0) == DESCRIPTION,
        timeout=15,
        what="the alt text in the saved notebook",
    )
    cell = (await _read(jp_root_dir, path)).cells[0]
    assert [o["output_type"] for o in cell.outputs] == ["display_data"]
    assert cell.outputs[0]["data"]["image/png"]  # the figure itself stays as it was


async def test_a_description_is_refused_when_the_cell_drew_another_figure_since(
    kernels, api, sse, extension, fake_model, jp_root_dir
) -> None:
    path = new_name()
    await kernels.notebook(path, [PLOT])
    chat_id = await _chat(api, path)
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("get_notebook_state", {})]),
        Turn(tool_uses=[ToolUse("edit_cell", {"cell_id": "c1", "source": OTHER_PLOT})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(
            tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "c1", "alt_text": DESCRIPTION})]
        ),
        Turn(text="The figure changed."),
    )
    async with sse(chat_id):
        await _ask(api, chat_id, "Plot, look, change the plot, then save the old description.")
        events = await wait_idle(extension, chat_id, timeout=120)
    last = of(events, "tool.completed")[-1]
    assert (last["tool"], last["status"]) == ("set_figure_alt_text", "error"), last
    refused = result_text(tool_results(fake_model)[0])
    assert refused == (
        "The figure in cell 1 changed since you looked at it (the cell ran again), so the "
        "description was not saved; look at it again with view_figure first."
    )
    assert _alt_on_disk(jp_root_dir, path, 0) is None


def _figure_notebook(root: Path, alt: str | None = None) -> str:
    from test_server_figures import figure_notebook

    path = figure_notebook(root, new_name())
    if alt is not None:
        nb = nbformat.reads((root / path).read_text(), as_version=4)
        nb.cells[1].outputs[1]["metadata"] = {"image/png": {"alt": alt}}
        (root / path).write_text(nbformat.writes(nb))
    return path


@pytest.mark.parametrize(
    ("mode", "alt", "asked"),
    [
        ("ask_all", None, True),  # every change asks in "Ask before every change"
        ("ask_all", "Chart of days written by a colleague.", True),  # and says what it replaces
        ("ask", None, False),  # an ordinary edit: Undo takes it back
        ("ask", "Chart of days written by a colleague.", False),
    ],
)
async def test_saving_alt_text_is_approved_as_the_other_edits_are(
    api, sse, extension, fake_model, jp_root_dir, mode: str, alt: str | None, asked: bool
) -> None:
    path = _figure_notebook(jp_root_dir, alt)
    chat_id = await _chat(api, path, mode)

    async def approve(panel: Any) -> None:
        card = (
            await panel.until(
                lambda m: str(m.get("type", "")).endswith("awaiting.confirmation"), 30
            )
        )[-1]
        action = card["action"]
        assert action.startswith("Save this description as the alt text of the figure in cell 2"), (
            action
        )
        assert DESCRIPTION in action and "fig" not in action.replace("figure", "")
        assert ("replacing its alt text" in action) == (alt is not None)
        assert card["extra_context"]["change"] == {
            "kind": "alt_text",
            "cell_number": 2,
            "output_index": 1,
        }
        reply = {
            "type": "confirmation.reply",
            "reply_token": card["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "decision": "accept",
        }
        assert (await api("chats", chat_id, "messages", method="POST", body=reply))[0] == 204

    await _agent_saves_the_description(
        api, sse, fake_model, chat_id, during=approve if asked else None
    )
    events = await wait_idle(extension, chat_id)
    confirmations = [
        e
        for e in of(events, "awaiting.confirmation")
        if not e["extra_context"].get("auto_approved")
    ]
    assert bool(confirmations) == asked
    assert of(events, "tool.completed")[-1]["status"] == "success"
    await wait_until(
        lambda: _alt_on_disk(jp_root_dir, path, 1, 1) == DESCRIPTION,
        timeout=15,
        what="the alt text in the saved notebook",
    )


async def _agent_saves_the_description(
    api, sse, fake_model, chat_id: str, *, during: Any = None
) -> list[dict[str, Any]]:
    """The agent saves DESCRIPTION as the figure's alt text; the session's events, to its end.
    *during*, if given, is awaited with the panel's stream while the session runs (to answer
    its confirmation)."""
    fake_model.add(
        Turn(
            tool_uses=[ToolUse("set_figure_alt_text", {"cell_id": "fig", "alt_text": DESCRIPTION})]
        ),
        Turn(text="Saved."),
    )
    async with sse(chat_id) as panel:
        await _ask(api, chat_id, "Save the description.")
        if during is not None:
            await during(panel)
        return await panel.until(of_type("session.completed"), timeout=30)


@pytest.mark.parametrize("earlier", [None, "Chart of days written by a colleague."])
async def test_undo_gives_the_figure_its_earlier_alt_text_back(
    api, sse, extension, fake_model, jp_root_dir, earlier: str | None
) -> None:
    path = _figure_notebook(jp_root_dir, earlier)
    chat_id = await _chat(api, path, "ask")
    events = await _agent_saves_the_description(api, sse, fake_model, chat_id)
    await wait_until(
        lambda: _alt_on_disk(jp_root_dir, path, 1, 1) == DESCRIPTION,
        timeout=15,
        what="the alt text in the saved notebook",
    )
    session_id = events[-1]["session_id"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "control", "action": "revert", "session_id": session_id},
    )
    assert status == 200, body
    assert body["kept"] == [], body

    def undone() -> dict[str, Any] | None:
        try:  # the file may be mid-write
            output = json.loads((jp_root_dir / path).read_text())["cells"][1]["outputs"][1]
        except (json.JSONDecodeError, OSError):
            return None
        return output if _alt_on_disk(jp_root_dir, path, 1, 1) == earlier else None

    output = undone()
    for _ in range(750):
        if output is not None:
            break
        await asyncio.sleep(0.02)
        output = undone()
    assert output is not None, "the earlier alt text never came back on disk"
    assert output["data"]["image/png"]  # the figure itself untouched
    if earlier is None:
        assert "image/png" not in output.get("metadata", {})  # no empty shell left behind


async def test_undo_keeps_an_alt_text_someone_wrote_after_the_agent(
    api, sse, fake_model, jp_root_dir
) -> None:
    path = _figure_notebook(jp_root_dir)
    chat_id = await _chat(api, path, "ask")
    events = await _agent_saves_the_description(api, sse, fake_model, chat_id)
    mine = "My own words for this chart."
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "figure_alt_text", "cell_id": "fig", "alt_text": mine},
    )
    assert status == 200, body
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "control", "action": "revert", "session_id": events[-1]["session_id"]},
    )
    assert status == 200, body
    assert body["kept"] == ["Cell 2 was kept as it is: someone changed it after this request."]
    await wait_until(
        lambda: _alt_on_disk(jp_root_dir, path, 1, 1) == mine,
        timeout=15,
        what="the person's alt text kept on disk",
    )
