"""Cell citations through a real server and a live notebook: people get "cell 2", the extension
the id, and nothing spoken or stored holds the markup."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_helpers import _private_cwd, jp_server_config, write_notebook  # noqa: F401
from server_helpers import of_type

from jupyter_aaep.agent.citations import CITATIONS_CONTEXT
from jupyter_aaep.agent.grant_gate import PERMISSION_CONTEXT
from jupyter_aaep.agent.services import LEFT_RUNNING_CONTEXT
from jupyter_aaep.testing.fake_anthropic import Turn


async def test_a_cited_cell_is_said_by_number_and_named_by_id_in_the_extension(
    api, sse, new_chat, fake_model, jp_root_dir: Path
) -> None:
    path = write_notebook(jp_root_dir, "cite.ipynb", ["import pandas", "total = 1 + 2"])
    chat_id = await new_chat(path)
    fake_model.add(
        Turn(text="The total is computed in [[cell:c2]], lines [[cell:c2:1-1]]; see [[cell:gone]].")
    )
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "where?"},
        )
        assert status == 202
        events = await stream.until(of_type("session.completed"), timeout=30)
    outputs = [e for e in events if e["type"].endswith("output.streaming")]
    said = "".join(e["chunk"] for e in outputs)
    assert said == (
        "The total is computed in cell 2, lines cell 2, line 1; see a cell that no longer exists."
    )
    cited = [
        (c["cell_id"], c["exists"])
        for e in outputs
        for c in e.get("extensions", {}).get("jaaep", {}).get("citations", [])
    ]
    assert cited == [("c2", True), ("c2", True), ("gone", False)]
    assert all(CITATIONS_CONTEXT in e["@context"] for e in outputs if "extensions" in e)
    everything = json.dumps([e for e in events if e["type"] != "aaep:agent.output.streaming"])
    assert "[[cell" not in everything and "[[cell" not in said
    _, view, _ = await api("chats", chat_id)
    assert "[[cell" not in json.dumps(view["transcript"])
    # The model was taught the markup.
    system = "\n".join(b["text"] for b in fake_model.requests[0].body["system"])
    assert "[[cell:<cell id>]]" in system
    _, manifest, _ = await api("manifest")
    assert manifest["extensions_supported"] == [
        CITATIONS_CONTEXT,
        PERMISSION_CONTEXT,
        LEFT_RUNNING_CONTEXT,
    ]
