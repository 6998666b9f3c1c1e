"""Chats in the database behind the REST API: paging, the stored fields, a failing disk."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from server_helpers import wait_until

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn


async def test_chats_are_paged_newest_first_with_title_and_times(api, extension, fake_model) -> None:
    made = []
    for number in range(3):
        status, chat, _ = await api("chats", method="POST", body={"notebook_path": "paged.ipynb"})
        assert status == 201 and chat["title"] == "" and chat["created"] and chat["updated"]
        assert chat["can_continue"] is False and chat["supports"]["continue"] is True and chat["saved"] is True
        made.append(chat["chat_id"])
        fake_model.add(Turn(text=f"Answer {number}."))
        await api("chats", chat["chat_id"], "messages", method="POST",
                  body={"kind": "user_input", "text": f"Question number {number}"})
        await wait_until(lambda: not extension.runner.get(made[-1]).running, what="the session to end")
    status, first, _ = await api("chats", params={"notebook_path": "paged.ipynb", "limit": "2"})
    assert status == 200 and [c["chat_id"] for c in first["chats"]] == made[::-1][:2]
    assert first["chats"][0]["title"] == "Question number 2" and first["next"]
    status, second, _ = await api("chats", params={"notebook_path": "paged.ipynb", "limit": "2", "before": first["next"]})
    assert [c["chat_id"] for c in second["chats"]] == [made[0]] and second["next"] is None
    for query in [{"limit": "0"}, {"limit": "x"}, {"limit": "201"}, {"before": "zz"}]:
        status, _, _ = await api("chats", params=query)
        assert status == 400, query
    assert extension.store.flush()
    with sqlite3.connect(extension.store.path) as conn:
        titles = {row[0] for row in conn.execute("SELECT title FROM chats")}
    assert {"Question number 0", "Question number 1", "Question number 2"} <= titles


async def test_continue_without_an_interruption_is_refused(api) -> None:
    _, chat, _ = await api("chats", method="POST", body={})
    status, _, _ = await api("chats", chat["chat_id"], "messages", method="POST",
                             body={"kind": "control", "action": "continue"})
    assert status == 409


@pytest.mark.parametrize("aaep_config", [{"db_path": ":memory:"}])
async def test_a_failing_store_is_announced_once_and_the_agent_goes_on(api, extension, fake_model) -> None:
    status, chat, _ = await api("chats", method="POST", body={})
    notices: list[dict[str, Any]] = []
    live = extension.runner.get(chat["chat_id"])
    live.emitter.subscribe(type("Notes", (), {"deliver": lambda self, e: notices.append(e)})())

    class FullDisk:
        def execute(self, sql: str, *args: Any) -> Any:
            if sql in ("BEGIN IMMEDIATE", "ROLLBACK"):
                return None
            raise sqlite3.OperationalError("database or disk is full")

    store = extension.store
    store.flush()
    real = store._writer
    store._writer = FullDisk()
    try:
        fake_model.add(Turn(text="Still answering."))
        status, _, _ = await api("chats", chat["chat_id"], "messages", method="POST",
                                 body={"kind": "user_input", "text": "hello"})
        assert status == 202
        def heard() -> list[dict[str, Any]]:
            return [n for n in notices if "no longer being saved" in str(n.get("summary_normal"))]

        await wait_until(lambda: not live.running and heard(), what="the session to end and the warning")
        assert len(heard()) == 1 and "disk is full" in heard()[0]["summary_normal"]
        assert all("@context" in n for n in notices), "AAEP events only on the stream"
        assert live.results[-1].answer == "Still answering."
        _, view, _ = await api("chats", chat["chat_id"])
        assert view["saved"] is False
    finally:
        store._writer = real


async def test_a_sessions_steps_are_listed_with_latency_and_tokens(api, extension, fake_model) -> None:
    _, chat, _ = await api("chats", method="POST", body={})
    chat_id = chat["chat_id"]
    fake_model.add(Turn(tool_uses=[ToolUse("fetch_data", {"source": "sample"})]), Turn(text="Fetched."))
    await api("chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "fetch it"})
    live = extension.runner.get(chat_id)
    await wait_until(lambda: not live.running, what="the session to end")
    session_id = live.results[-1].terminal_event["session_id"]
    assert extension.store.flush()
    status, body, _ = await api("chats", chat_id, "sessions", session_id, "steps")
    assert status == 200 and body["session_id"] == session_id
    kinds = [(s["kind"], s["status"], s["name"]) for s in body["steps"]]
    assert kinds == [("model_request", "success", "claude-test"), ("tool", "success", "fetch_data"),
                     ("model_request", "success", "claude-test")], kinds
    tool = body["steps"][1]
    assert isinstance(tool["latency_ms"], int) and tool["latency_ms"] >= 0
    for step in body["steps"][::2]:  # prompt tokens, however the cache served them, and output
        assert step["input_tokens"] + step["cache_read_tokens"] + step["cache_write_tokens"] > 0, step
        assert step["output_tokens"] > 0 and step["latency_ms"] >= 0, step
    # Another chat's session, or one that never was, is a 404 with a sentence.
    _, other, _ = await api("chats", method="POST", body={})
    status, error, _ = await api("chats", other["chat_id"], "sessions", session_id, "steps")
    assert status == 404 and "no session" in error["message"]
    status, _, _ = await api("chats", "nope", "sessions", session_id, "steps")
    assert status == 404
