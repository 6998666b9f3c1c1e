"""Chats in the database behind the REST API: paging, the stored fields, a database another program locks."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from server_helpers import of_type, wait_until

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn
from tests.store.store_faults import ForeignLock


async def test_chats_are_paged_newest_first_with_title_and_times(
    api, extension, fake_model
) -> None:
    made = []
    for number in range(3):
        status, chat, _ = await api("chats", method="POST", body={"notebook_path": "paged.ipynb"})
        assert status == 201 and chat["title"] == "" and chat["created"] and chat["updated"]
        assert (
            chat["can_continue"] is False
            and chat["supports"]["continue"] is True
            and chat["saved"] is True
        )
        made.append(chat["chat_id"])
        fake_model.add(Turn(text=f"Answer {number}."))
        await api(
            "chats",
            chat["chat_id"],
            "messages",
            method="POST",
            body={"kind": "user_input", "text": f"Question number {number}"},
        )
        await wait_until(
            lambda: not extension.runner.get(made[-1]).running, what="the session to end"
        )
    status, first, _ = await api("chats", params={"notebook_path": "paged.ipynb", "limit": "2"})
    assert status == 200 and [c["chat_id"] for c in first["chats"]] == made[::-1][:2]
    assert first["chats"][0]["title"] == "Question number 2" and first["next"]
    status, second, _ = await api(
        "chats", params={"notebook_path": "paged.ipynb", "limit": "2", "before": first["next"]}
    )
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
    status, _, _ = await api(
        "chats",
        chat["chat_id"],
        "messages",
        method="POST",
        body={"kind": "control", "action": "continue"},
    )
    assert status == 409


@pytest.mark.parametrize(
    "aaep_config", [{"store_lock_timeout": 0.3, "store_retry_max_seconds": 0.2}]
)
async def test_a_foreign_lock_is_told_once_each_way_on_the_stream_and_every_session_is_stored(
    api, extension, fake_model, sse
) -> None:
    """Another process holds the chat database while a request runs: the person hears once that
    the chat is not being saved (and why), once that it is again, and nothing is lost."""
    _, chat, _ = await api("chats", method="POST", body={})
    chat_id = chat["chat_id"]
    path = Path(extension.store.path)

    async def ask(text: str) -> None:
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
        )
        assert status == 202

    def says(words: str) -> Any:
        return lambda m: words in str(m.get("summary_normal"))

    async with sse(chat_id) as stream:
        fake_model.add(Turn(text="First."))
        await ask("one")
        await stream.until(of_type("session.completed"))
        lock = ForeignLock(path)
        fake_model.add(Turn(text="Working on it. Done now.", stall_after_chunks=1))
        await ask("two")
        heard = await stream.until(says("not being saved right now"))
        notice = heard[-1]
        assert notice["type"] == "aaep:agent.progress.updated" and notice["urgency"] == "normal"
        assert "another program is using the chat database" in notice["summary_normal"]
        assert "disk space" not in notice["summary_normal"]
        _, view, _ = await api("chats", chat_id)
        assert view["saved"] is False
        fake_model.release()
        await stream.until(of_type("session.completed"))
        released = lock.release()
        await wait_until(lambda: extension.store.ok, what="storing to resume")
        assert time.monotonic() - released < 2.0
        _, view, _ = await api("chats", chat_id)
        assert view["saved"] is True
        fake_model.add(Turn(text="Third."))
        await ask("three")
        await stream.until(says("being saved again"))
        await stream.until(of_type("session.completed"))
        frames = [f.data for f in stream.frames]
    assert len([f for f in frames if says("not being saved")(f)]) == 1
    assert len([f for f in frames if says("being saved again")(f)]) == 1
    assert extension.store.flush()
    with sqlite3.connect(path) as conn:
        statuses = [
            s for (s,) in conn.execute("SELECT status FROM sessions WHERE chat_id=?", (chat_id,))
        ]
        ends = conn.execute(
            "SELECT count(*) FROM events WHERE chat_id=? AND body LIKE '%session.completed%'",
            (chat_id,),
        ).fetchone()[0]
    assert statuses == ["completed"] * 3 and ends == 3


async def test_a_sessions_steps_are_listed_with_latency_and_tokens(
    api, extension, fake_model
) -> None:
    _, chat, _ = await api("chats", method="POST", body={})
    chat_id = chat["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("fetch_data", {"source": "sample"})]), Turn(text="Fetched.")
    )
    await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "fetch it"}
    )
    live = extension.runner.get(chat_id)
    await wait_until(lambda: not live.running, what="the session to end")
    session_id = live.results[-1].terminal_event["session_id"]
    assert extension.store.flush()
    status, body, _ = await api("chats", chat_id, "sessions", session_id, "steps")
    assert status == 200 and body["session_id"] == session_id
    kinds = [(s["kind"], s["status"], s["name"]) for s in body["steps"]]
    assert kinds == [
        ("model_request", "success", "claude-test"),
        ("tool", "success", "fetch_data"),
        ("model_request", "success", "claude-test"),
    ], kinds
    tool = body["steps"][1]
    assert isinstance(tool["latency_ms"], int) and tool["latency_ms"] >= 0
    for step in body["steps"][::2]:  # prompt tokens, however the cache served them, and output
        assert step["input_tokens"] + step["cache_read_tokens"] + step["cache_write_tokens"] > 0, (
            step
        )
        assert step["output_tokens"] > 0 and step["latency_ms"] >= 0, step
    # Another chat's session, or one that never was, is a 404 with a sentence.
    _, other, _ = await api("chats", method="POST", body={})
    status, error, _ = await api("chats", other["chat_id"], "sessions", session_id, "steps")
    assert status == 404 and "no session" in error["message"]
    status, _, _ = await api("chats", "nope", "sessions", session_id, "steps")
    assert status == 404
