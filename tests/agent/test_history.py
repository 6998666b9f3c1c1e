from __future__ import annotations

from types import SimpleNamespace

from jupyter_aaep.agent.history import (
    append_assistant,
    append_user_blocks,
    append_user_text,
    block_to_param,
    close_open_tool_uses,
    tool_result,
)


def test_user_messages_merge_with_results_first() -> None:
    history: list[dict] = []
    append_user_text(history, "hi")
    append_user_blocks(history, [tool_result("toolu_1", "x", is_error=False)])
    append_user_blocks(history, [])
    assert history == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                {"type": "text", "text": "hi"},
            ],
        }
    ]
    history = [{"role": "user", "content": "plain string"}]
    append_user_text(history, "more")
    assert history[0]["content"] == [
        {"type": "text", "text": "plain string"},
        {"type": "text", "text": "more"},
    ]


def test_assistant_blocks_and_cut_tool_uses() -> None:
    text = SimpleNamespace(type="text", text="Hi")
    empty = SimpleNamespace(type="text", text="")
    use = SimpleNamespace(type="tool_use", id="toolu_1", name="t", input={})
    thinking = SimpleNamespace(type="thinking", thinking="hm", signature="sig")
    redacted = SimpleNamespace(type="redacted_thinking", data="zz")
    other = SimpleNamespace(
        type="server_tool_use", model_dump=lambda exclude_none: {"type": "server_tool_use"}
    )
    assert block_to_param(SimpleNamespace(type="mystery")) is None
    history: list[dict] = []
    assert append_assistant(history, [empty], keep_tool_use=False) == []
    assert history == []
    append_assistant(history, [thinking, redacted, text, use, other], keep_tool_use=False)
    assert [b["type"] for b in history[0]["content"]] == [
        "thinking",
        "redacted_thinking",
        "text",
        "server_tool_use",
    ]
    append_assistant(history, [use], keep_tool_use=True)  # pause_turn continuation merges
    assert len(history) == 1 and history[0]["content"][-1]["type"] == "tool_use"


def test_closing_open_tool_uses() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "t", "input": {}},
                {"type": "tool_use", "id": "b", "name": "t", "input": {}},
            ],
        },
        {"role": "user", "content": [tool_result("a", "done", is_error=False)]},
    ]
    close_open_tool_uses(history, "stopped")
    assert history[-1]["content"][-1] == {
        "type": "tool_result",
        "tool_use_id": "b",
        "content": "stopped",
        "is_error": True,
    }
    before = [dict(m) for m in history]
    close_open_tool_uses(history, "stopped")
    assert history == before
    empty: list[dict] = []
    close_open_tool_uses(empty, "x")
    only_user = [{"role": "user", "content": "x"}]
    close_open_tool_uses(only_user, "x")
    assert only_user == [{"role": "user", "content": "x"}]
