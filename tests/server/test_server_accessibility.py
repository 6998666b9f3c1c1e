"""Through a real server: the agent's ``check_accessibility`` tool and the panel's
``GET /aaep/v1/chats/{chat}/accessibility``, on a notebook a screen-reader user would trip over.

The acceptance case of issue 28: a Markdown image without alt text, a title-less ``###``
heading, a "click here" link and a header-less table are each named by their cell number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from kernel_helpers import _private_cwd, jp_server_config, result_text, tool_results  # noqa: F401
from server_helpers import of_type

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

CELLS = [
    ("img", "![](rainfall.png)"),
    ("head", "### Results"),
    ("link", "The readings come from the weather service: [click here](https://example.org/data)."),
    ("table", "| | |\n|---|---|\n| Oslo | 3 |"),
    (
        "fine",
        "Rain fell on 12 of 30 days; [the monthly summary](https://example.org/june) has more.",
    ),
]


def trouble_notebook(root: Path, path: str = "trouble.ipynb") -> str:
    nb = nbformat.v4.new_notebook()
    for cell_id, source in CELLS:
        cell = nbformat.v4.new_markdown_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    (root / path).write_text(nbformat.writes(nb))
    return path


async def ask(api: Any, sse: Any, chat_id: str, text: str) -> list[dict[str, Any]]:
    async with sse(chat_id) as stream:
        status, body, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
        )
        assert status == 202, body
        return await stream.until(of_type("session.completed"), timeout=60)


async def test_the_agent_checks_and_each_problem_is_named_by_its_cell(
    api, sse, new_chat, fake_model, jp_root_dir
) -> None:
    path = trouble_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    fake_model.add(
        Turn(tool_uses=[ToolUse("check_accessibility", {})]),
        Turn(text="I found five problems; shall I fix them?"),
    )
    events = await ask(api, sse, chat_id, "Is this notebook accessible?")

    tools = fake_model.requests[0].body["tools"]
    [spec] = [t for t in tools if t["name"] == "check_accessibility"]
    assert spec["input_schema"].get("properties", {}) == {}  # no arguments
    [block] = tool_results(fake_model, 1)
    assert not block.get("is_error"), block
    said = result_text(block)
    assert "Cell 1 (id img): The image rainfall.png has no alt text." in said
    assert "Whole notebook: The notebook has no title (a level-1 heading)." in said
    assert "Cell 2 (id head): The heading “Results” is level 3" in said
    assert "Cell 3 (id link): The link “click here” says nothing" in said
    assert "Cell 4 (id table): A table has no column headers" in said
    assert "Cell 5" not in said.split("The Markdown cells with problems")[0]  # a good cell passes
    assert "![A description of what it shows](rainfall.png)" in said  # how to fix it
    assert "Not checked: whether colour is the only thing" in said
    # what people hear: the count, and the list by number without ids
    [done] = [e for e in events if e["type"].endswith("tool.completed")]
    assert done["summary_normal"] == "Found 5 accessibility problems in 4 cells."
    assert "Cell 1: The image rainfall.png has no alt text." in done["summary_detailed"]
    assert "id " not in done["summary_detailed"]
    # nothing changed: the check is read-only and asked nothing
    assert not [e for e in events if e["type"].endswith("awaiting.confirmation")]


async def test_the_agent_fixes_an_image_right_after_the_check(
    api, sse, new_chat, fake_model, jp_root_dir
) -> None:
    """The check shows the cells it names, so an edit needs no second read."""
    path = trouble_notebook(jp_root_dir)
    chat_id = await new_chat(path)
    fixed = "![Bar chart of June rainfall in Oslo, wettest on the 12th](rainfall.png)"
    fake_model.add(
        Turn(tool_uses=[ToolUse("check_accessibility", {})]),
        Turn(tool_uses=[ToolUse("edit_cell", {"cell_id": "img", "source": fixed})]),
        Turn(tool_uses=[ToolUse("check_accessibility", {})]),
        Turn(text="The image has alt text now."),
    )
    await ask(api, sse, chat_id, "Fix the image's alt text")
    [edit] = tool_results(fake_model, 2)
    assert not edit.get("is_error"), result_text(edit)
    [again] = tool_results(fake_model, 3)
    assert "Cell 1 (id img)" not in result_text(again)
    status, body, _ = await api("chats", chat_id, "accessibility")
    assert status == 200 and body["summary"] == "Found 4 accessibility problems in 3 cells."


async def test_the_panel_route_lists_problems_by_cell(api, new_chat, jp_root_dir) -> None:
    path = trouble_notebook(jp_root_dir)
    before = (jp_root_dir / path).read_text()
    chat_id = await new_chat(path)
    status, body, _ = await api("chats", chat_id, "accessibility")
    assert status == 200, body
    assert body["notebook_path"] == path
    assert body["summary"] == "Found 5 accessibility problems in 4 cells."
    assert [(p["cell_number"], p["cell_id"], p["rule"]) for p in body["problems"]] == [
        (None, None, "title-missing"),
        (1, "img", "image-alt"),
        (2, "head", "heading-order"),
        (3, "link", "link-text"),
        (4, "table", "table-headers"),
    ]
    assert body["problems"][1]["text"] == "Cell 1: The image rainfall.png has no alt text."
    assert body["not_checked"].startswith("Not checked: whether colour alone")
    assert json.loads((jp_root_dir / path).read_text()) == json.loads(before)  # read, not written


async def test_the_route_answers_a_clean_notebook_and_a_chat_without_one(
    api, new_chat, jp_root_dir
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Rain in June\n\n## Data")]
    (jp_root_dir / "clean.ipynb").write_text(nbformat.writes(nb))
    chat_id = await new_chat("clean.ipynb")
    status, body, _ = await api("chats", chat_id, "accessibility")
    assert status == 200 and body["problems"] == []
    assert body["summary"] == "No accessibility problems found."

    status, made, _ = await api("chats", method="POST", body={})
    assert status == 201, made
    status, body, _ = await api("chats", made["chat_id"], "accessibility")
    assert status == 409 and "no notebook to check" in body["message"]
    status, body, _ = await api("chats", "no-such-chat", "accessibility")
    assert status == 404
