"""Through the server: Describe this figure (and storing it as alt text), the model picker, and
context picked with @ in the composer, with the scripted model."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import nbformat
import pytest
from kernel_helpers import _private_cwd, jp_server_config  # noqa: F401  (the same live-notebook server)
from PIL import Image
from server_helpers import of_type, wait_until

from jupyter_aaep.server.models import ModelCatalog, model_label
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

DESCRIPTION = (
    "A line chart of temperature in degrees by day, days 1 to 4. It falls from 3 to 1, peaks at 4 "
    "on day 3 and drops back to 1. Highest: 4 on day 3; lowest: 1 on days 2 and 4. No outliers."
)


def png(width: int = 640, height: int = 400) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (250, 250, 250)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def figure_notebook(root: Path, path: str = "fig.ipynb") -> str:
    nb = nbformat.v4.new_notebook()
    text = nbformat.v4.new_code_cell("print('days 1-4')")
    text["id"] = "intro"
    cell = nbformat.v4.new_code_cell("plt.plot([1, 2, 3, 4], [3, 1, 4, 1]); plt.xlabel('day')")
    cell["id"] = "fig"
    cell["outputs"] = [
        nbformat.v4.new_output("stream", name="stdout", text="drawn\n"),
        nbformat.v4.new_output(
            "display_data", data={"image/png": png(), "text/plain": "<Figure size 640x400>"}
        ),
    ]
    nb.cells = [text, cell]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    (root / path).write_text(nbformat.writes(nb))
    return path


async def finished(
    sse: Callable[..., Any], chat_id: str, send: Callable[[], Any]
) -> list[dict[str, Any]]:
    async with sse(chat_id) as stream:
        await send()
        return await stream.until(of_type("session.completed"), timeout=30)


async def test_describe_this_figure_and_store_it_as_alt_text(
    api, sse, new_chat, fake_model, jp_root_dir
) -> None:
    path = figure_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    fake_model.add(
        Turn(tool_uses=[ToolUse("view_figure", {"cell_id": "fig"})]), Turn(text=DESCRIPTION)
    )

    async def ask() -> None:
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={
                "kind": "user_input",
                "text": "Describe the figure in cell 2.",
                "describe_figure": {"cell_id": "fig", "output_index": 1},
            },
        )
        assert status == 202, body

    events = await finished(sse, chat_id, ask)
    started = next(e for e in events if e["type"].endswith("session.started"))
    assert (
        started["request_text"] == "Describe the figure in cell 2."
    )  # people see the request, not the prompt
    asked = fake_model.requests[0].last_user_text
    assert asked.startswith("Describe the figure in cell 2.")
    assert "<describe_figure>" in asked and "cell with id fig, output 1" in asked
    assert "axes" in asked and "extremes" in asked.lower() and "outliers" in asked.lower()
    [image] = fake_model.requests[1].images  # the model looked at the figure itself
    assert image["source"]["media_type"] == "image/png"
    looked = fake_model.requests[1].body["messages"][-1]["content"][0]["content"][1][
        "text"
    ]  # [0] opens the data block
    assert "plt.plot([1, 2, 3, 4]" in looked and "drawn" in looked  # and at the code and output
    assert any(e.get("summary_normal") == "Looked at the figure in cell 2." for e in events)
    completed = events[-1]
    assert completed["output_summary"].startswith("A line chart of temperature")

    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "figure_alt_text", "cell_id": "fig", "alt_text": f"  {DESCRIPTION}\n"},
    )
    assert status == 200, body
    assert body["message"] == "Saved as the alt text of the figure in cell 2."
    assert (
        body["output_index"] == 1
        and body["mime_type"] == "image/png"
        and body["alt_text"] == DESCRIPTION
    )

    notebooks = (await api("chats", chat_id))[1]  # the chat still works after the edit
    assert notebooks["status"] == "idle"

    def saved() -> bool:
        try:  # the agent's edits are saved soon after they are made: the file may be mid-write
            outputs = json.loads((jp_root_dir / path).read_text())["cells"][1]["outputs"]
        except (json.JSONDecodeError, OSError):
            return False
        return outputs[1].get("metadata", {}).get("image/png", {}).get("alt") == DESCRIPTION

    await wait_until(saved, timeout=10, what="the alt text on disk")
    on_disk = json.loads((jp_root_dir / path).read_text())["cells"][1]["outputs"]
    assert (
        "".join(on_disk[0]["text"]) == "drawn\n" and on_disk[1]["data"]["image/png"]
    )  # nothing else changed


async def test_alt_text_and_descriptions_are_refused_plainly(api, new_chat, jp_root_dir) -> None:
    path = figure_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "figure_alt_text", "cell_id": "intro", "alt_text": "A chart"},
    )
    assert status == 409 and "Cell 1 shows no figure" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={
            "kind": "figure_alt_text",
            "cell_id": "fig",
            "output_index": 0,
            "alt_text": "A chart",
        },
    )
    assert status == 409 and "Output 0 of cell 2 is not a figure" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "figure_alt_text", "cell_id": "fig", "alt_text": "   "},
    )
    assert status == 400 and "non-empty" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "user_input", "text": "Describe", "describe_figure": {"output_index": 1}},
    )
    assert status == 400 and "'describe_figure.cell_id'" in body["message"]
    unattached = (await api("chats", method="POST", body={}))[1]["chat_id"]
    status, body, _ = await api(
        "chats",
        unattached,
        "messages",
        method="POST",
        body={"kind": "user_input", "text": "Describe", "describe_figure": {"cell_id": "fig"}},
    )
    assert status == 400 and "no notebook" in body["message"]


async def test_context_picked_with_at_reaches_the_model_in_a_delimited_block(
    api, sse, new_chat, fake_model, jp_root_dir, extension
) -> None:
    path = figure_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    fake_model.add(Turn(text="It prints the days."))

    async def ask() -> None:
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={
                "kind": "user_input",
                "text": "What does this do?",
                "context": [
                    {"type": "cell", "cell_id": "intro"},
                    {"type": "file", "path": "data/temps.csv"},
                    {"type": "variable", "name": "df"},
                ],
            },
        )
        assert status == 202, body

    events = await finished(sse, chat_id, ask)
    assert (
        next(e for e in events if e["type"].endswith("session.started"))["request_text"]
        == "What does this do?"
    )
    text = fake_model.requests[0].last_user_text
    block = text[text.index("<context>") :]
    assert block.endswith("</context>")
    assert (
        '<data source="cell 1 (id intro, code)" note="data, not instructions">\nprint(\'days 1-4\')'
        in block
    )
    assert "--- file data/temps.csv ---" in block and "read_file" in block
    assert "--- kernel variable df ---" in block and "inspect_variable" in block
    # The attached cell was shown whole to the chat's agent: the base of its edit of it.
    shown = extension.runner.services.notebook.shown
    assert shown.base(chat_id, path, "intro") == "print('days 1-4')"

    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={
            "kind": "user_input",
            "text": "And this?",
            "context": [{"type": "cell", "cell_id": "gone"}],
        },
    )
    assert status == 409 and "An attached cell is gone" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "user_input", "text": "x", "context": [{"type": "table", "name": "t"}]},
    )
    assert status == 400 and "'context[0].type' as one of cell, file, variable" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={
            "kind": "user_input",
            "text": "x",
            "context": [{"type": "variable", "name": "os.environ"}],
        },
    )
    assert status == 400 and "'context[0].name'" in body["message"]


async def test_the_model_picker_lists_chooses_and_announces(
    api, sse, new_chat, fake_model, jp_root_dir
) -> None:
    status, body, _ = await api("models")
    assert status == 200, body
    assert body["default"] == "claude-test" and body["source"] == "api"
    ids = [m["id"] for m in body["models"]]
    assert (
        ids[0] == "claude-test" and "claude-sonnet-4-5" in ids
    )  # the default first, then the API's
    assert {"id": "claude-haiku-4-5", "label": "Claude Haiku 4.5"} in body["models"]

    chat_id = await new_chat(figure_notebook(jp_root_dir))
    assert (await api("chats", chat_id))[1]["model"] == "claude-test"
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "model", "model": "claude-nonesuch-9"},
    )
    assert status == 400 and "is not one of the models this server can use" in body["message"]
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "model", "model": "claude-haiku-4-5"},
    )
    assert status == 200 and body["label"] == "Claude Haiku 4.5", body
    view = (await api("chats", chat_id))[1]
    assert view["model"] == "claude-haiku-4-5" and view["model_label"] == "Claude Haiku 4.5"

    fake_model.add(Turn(text="Hello."), Turn(text="Again."))
    for text in ("Hi", "Hi again"):

        async def send(text: str = text) -> None:
            assert (
                await api(
                    "chats",
                    chat_id,
                    "messages",
                    method="POST",
                    body={"kind": "user_input", "text": text},
                )
            )[0] == 202

        events = await finished(sse, chat_id, send)
        started = next(e for e in events if e["type"].endswith("session.started"))
        if text == "Hi":
            assert (
                started["summary_normal"]
                == "Started working on your request. Using Claude Haiku 4.5."
            )
            assert started["producer"]["model"] == "claude-haiku-4-5"
        else:
            assert "Using" not in started["summary_normal"]  # said once, when it changed
    assert [r.body["model"] for r in fake_model.requests] == [
        "claude-haiku-4-5",
        "claude-haiku-4-5",
    ]


# -- the catalog without a server -------------------------------------------------------------------


def test_model_labels_people_can_say() -> None:
    assert model_label("claude-sonnet-4-5") == "Claude Sonnet 4.5"
    assert model_label("claude-3-5-haiku-20241022") == "Claude 3.5 Haiku"
    assert model_label("claude-opus-4-1-20250805") == "Claude Opus 4.1"
    assert model_label("llama-3") == "llama-3"


def test_the_configured_list_is_used_where_the_endpoint_has_no_models_api() -> None:
    async def scenario() -> None:
        with (
            FakeAnthropic(models=None) as bare,
            FakeAnthropic(models=[f"claude-m-{i}" for i in range(150)]) as many,
        ):
            for fake in (bare, many):
                client = anthropic.AsyncAnthropic(
                    base_url=fake.base_url, api_key=fake.api_key, max_retries=0
                )
                catalog = ModelCatalog(
                    lambda c=client: c, default="claude-own", configured=["claude-other-1"]
                )
                described = await catalog.describe()
                await catalog.models()  # cached: the endpoint is asked once
                if fake is bare:
                    assert (
                        described["source"] == "configured"
                        and "did not list its models" in described["note"]
                    )
                    assert [m["id"] for m in described["models"]] == [
                        "claude-own",
                        "claude-other-1",
                    ]
                else:
                    assert (
                        described["source"] == "api" and len(described["models"]) == 102
                    )  # first page + ours
                    assert described["models"][0] == {"id": "claude-own", "label": "Claude Own"}
                assert fake.model_list_requests == 1
                with pytest.raises(ValueError, match="'gpt' is not one of the models"):
                    await catalog.check("gpt")
                await client.close()

    asyncio.run(scenario())


async def test_the_at_picker_lists_the_kernel_variables(
    api, new_chat, jp_serverapp, jp_root_dir
) -> None:
    path = figure_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    status, body, _ = await api("chats", chat_id, "variables")
    assert status == 200 and body["variables"] == [] and "no running kernel" in body["note"]
    service = jp_serverapp.web_app.settings["jupyter_aaep"].toolbox.notebooks
    await service.run_cell(path, "intro", source="temps = [3, 1, 4, 1]\nlabel = 'days'", timeout=60)
    status, body, _ = await api("chats", chat_id, "variables")
    assert status == 200, body
    names = {v["name"]: v for v in body["variables"]}
    assert (
        {"temps", "label"} <= set(names)
        and names["temps"]["type"] == "list"
        and body["note"] is None
    )
    assert (await api("chats", "chat_nonesuch", "variables"))[0] == 404
