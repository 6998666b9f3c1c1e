"""A chat database that cannot be opened at start: one sentence in the log, and a server that runs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from server_helpers import wait_until

from jupyter_aaep.testing.fake_anthropic import Turn


@pytest.fixture
def aaep_config(tmp_path: Path) -> dict[str, Any]:
    broken = tmp_path / "store" / "chats.sqlite3"
    broken.parent.mkdir(mode=0o700)
    broken.write_bytes(b"not a database: a text file where the chats should be\n" * 100)
    broken.chmod(0o600)
    return {"db_path": str(broken), "store_lock_timeout": 0.2, "store_retry_max_seconds": 0.2}


async def test_an_unopenable_database_is_one_sentence_and_the_agent_still_answers(
    api, extension, fake_model, caplog
) -> None:
    status, chat, _ = await api("chats", method="POST", body={})
    assert status == 201 and chat["saved"] is False
    # The store opens with the agent's first use (issue 31), so the sentence comes then.
    started = caplog.get_records("setup") + caplog.get_records("call")
    said = [
        r for r in started if r.levelno >= logging.WARNING and "AAEP chat store" in r.getMessage()
    ]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert said[0].exc_info is None and "Traceback" not in said[0].getMessage()
    assert (
        "cannot be written" in said[0].getMessage()
        and "runs without saving chats" in said[0].getMessage()
    )
    fake_model.add(Turn(text="Answered without history."))
    status, _, _ = await api(
        "chats",
        chat["chat_id"],
        "messages",
        method="POST",
        body={"kind": "user_input", "text": "hello"},
    )
    assert status == 202
    live = extension.runner.get(chat["chat_id"])
    await wait_until(lambda: not live.running, what="the session to end")
    assert live.results[-1].answer == "Answered without history."
    heard = [
        e
        for e in live.emitter.history
        if "not being saved right now" in str(e.get("summary_normal"))
    ]
    assert len(heard) == 1 and "server log" in heard[0]["summary_normal"]
    status, listing, _ = await api("chats")
    assert status == 200 and chat["chat_id"] in [c["chat_id"] for c in listing["chats"]]
