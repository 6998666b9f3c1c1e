"""Text UTF-8 cannot encode never enters a chat's model history, where it would fail every
later request of the chat (the SDK encodes the request body as UTF-8)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from jupyter_aaep.agent.history import append_assistant, append_user_blocks, append_user_text


def test_user_text_and_tool_results_with_lone_surrogates_are_repaired() -> None:
    history: list[dict] = []
    append_user_text(history, "plot data\udcff.csv")
    append_user_blocks(
        history, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "out \ud800"}]
    )
    blocks = history[-1]["content"]
    assert blocks[0]["content"] == "out \ufffd" and blocks[1]["text"] == "plot data\ufffd.csv"
    json.dumps(history, ensure_ascii=False).encode("utf-8")


def test_assistant_blocks_are_repaired_too() -> None:
    history: list[dict] = [{"role": "user", "content": "hi"}]
    append_assistant(
        history, [SimpleNamespace(type="text", text="answer \udc80")], keep_tool_use=False
    )
    assert history[-1]["content"][0]["text"] == "answer \ufffd"
