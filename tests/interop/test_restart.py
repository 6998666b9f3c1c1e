"""A real ``jupyter server`` stopped with SIGTERM in the middle of a session, then started again
on the same data directory: the chat, its history and its events come back, the interrupted
session is closed as a recoverable error, a subscriber reconnecting with ``Last-Event-ID`` gets
exactly what it missed, Continue picks the work up, and the agent's last edit is on disk."""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_interop_tools import Server, stop

from jupyter_aaep.aaep.check import SequenceChecker
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn
from jupyter_aaep.testing.schemas import SchemaValidator

pytestmark = pytest.mark.slow

NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


class SSEReader:
    """Reads one chat's event stream on a thread, keeping each AAEP event (with its SSE id)."""

    def __init__(self, server: Server, chat_id: str, last_event_id: str | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.ended = threading.Event()
        self.error: Exception | None = None
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request(
            "GET", f"{server.base_url}aaep/v1/chats/{chat_id}/events", headers=headers
        )
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        ident, data = None, []
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("id:"):
                    ident = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    message = json.loads("\n".join(data))
                    if "@context" in message:
                        self.events.append(message)
                        self.ids.append(ident or "")
                    ident, data = None, []
        except (OSError, http.client.HTTPException, ValueError, AttributeError) as error:
            self.error = (
                error  # the server went away (the point), or close() shut the response under us
            )
        finally:
            self.ended.set()

    def wait(self, predicate: Any, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}: {[e['type'] for e in self.events]}"
                )
            time.sleep(0.05)

    def close(self) -> None:
        self.conn.close()


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["type"]).removeprefix("aaep:agent.") for e in events]


@pytest.fixture
def fake_model() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic().start()
    yield fake
    fake.release()
    fake.stop()


# Also under a JupyterHub user's base URL (an escaped name in it), as each user's server runs there.
@pytest.mark.parametrize("base_url", ["/", "/user/a%40b/"])
def test_a_server_restart_mid_session_loses_nothing(
    tmp_path: Path, fake_model: FakeAnthropic, aaep_schema_validator: SchemaValidator, base_url: str
) -> None:
    home = tmp_path / "server"
    (home / "root").mkdir(parents=True)
    notebook = home / "root" / "work.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    server = Server(home, fake_model.base_url, fake_model.api_key, base_url=base_url).start()
    readers: list[SSEReader] = []
    try:
        chat_id = server.api("POST", "aaep/v1/chats", {"notebook_path": "work.ipynb"})["chat_id"]
        reader = SSEReader(server, chat_id)
        readers.append(reader)
        fake_model.add(
            Turn(
                text="I will add the cell.",
                tool_uses=[ToolUse("create_cell", {"source": "answer = 41 + 1"})],
            ),
            Turn(text="Now I check it.", stall_after_chunks=0),  # the server stops during this turn
        )
        session_id = server.api(
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "user_input", "text": "Add a cell computing the answer."},
        )["session_id"]
        reader.wait(
            lambda ev: (
                "tool.completed" in kinds(ev)
                and kinds(ev)[-1] == "state.changed"
                and ev[-1]["to_state"] == "thinking"
            ),
            "the second model turn",
        )
        time.sleep(0.3)  # let the store's writer catch up, as it would in normal use
        seen = list(reader.events)
        assert server.process is not None
        stop(server.process, first=signal.SIGTERM, grace=20.0)  # by PID
        assert reader.ended.wait(10)
        reader.close()
        assert not any(
            k.startswith("session.") and k != "session.started" for k in kinds(reader.events)
        ), "the stop is not announced as a cancellation: the next start closes the session"
        log_before = server.log()

        # The same data directory, a new process.
        server.port = Server(home, "", "").port
        server.start()
        assert "chats are stored in" in server.log(), server.log()[-3000:]
        listing = server.api("GET", "aaep/v1/chats?notebook_path=work.ipynb&limit=5")
        assert [c["chat_id"] for c in listing["chats"]] == [chat_id] and listing["next"] is None
        described = listing["chats"][0]
        assert (
            described["can_continue"] is True
            and described["title"] == "Add a cell computing the answer."
        )

        again = SSEReader(server, chat_id, last_event_id=reader.ids[len(seen) - 1])
        readers.append(again)
        again.wait(lambda ev: "session.errored" in kinds(ev), "the replayed end of the session")
        missed = again.events
        assert kinds(missed)[-1] == "session.errored", kinds(missed)
        errored = missed[-1]
        assert errored["session_id"] == session_id
        assert (errored["error_code"], errored["error_category"], errored["recoverable"]) == (
            "SERVER_RESTARTED",
            "transient",
            True,
        )
        assert errored["remediation_hint"] == "Choose Continue to pick up where the agent stopped."
        whole = seen + missed
        ids = [e["event_id"] for e in whole]
        assert len(ids) == len(set(ids)), "nothing duplicated"
        view = server.api("GET", f"aaep/v1/chats/{chat_id}")
        assert [e["event_id"] for e in view["transcript"]] == ids, "nothing lost"
        checker = SequenceChecker()
        for event in whole:
            aaep_schema_validator.validate(event)
            checker.feed(event)
        checker.finish()

        # The agent's edit reached the disk before the server stopped.
        cells = json.loads(notebook.read_text())["cells"]
        sources = [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
        ]
        assert "answer = 41 + 1" in sources, (sources, log_before[-3000:])

        # Continue: a new session from the stored history.
        fake_model.add(Turn(text="The cell is there; the answer is 42."))
        answer = server.api(
            "POST", f"aaep/v1/chats/{chat_id}/messages", {"kind": "control", "action": "continue"}
        )
        assert answer["session_id"] != session_id
        again.wait(lambda ev: "session.completed" in kinds(ev), "the continued session to complete")
        sent = fake_model.requests[-1].body["messages"]
        assert sent[0]["content"][0]["text"] == "Add a cell computing the answer."
        assert any(
            b.get("type") == "tool_use" and b.get("name") == "create_cell"
            for b in sent[1]["content"]
        )
        assert sent[2]["content"][0]["type"] == "tool_result"
        assert "Continue that request" in fake_model.requests[-1].last_user_text
        assert server.api("GET", f"aaep/v1/chats/{chat_id}")["can_continue"] is False
    finally:
        for open_reader in readers:
            open_reader.close()
        server.stop()


def test_an_edit_reported_done_is_on_disk_even_if_the_server_is_killed_at_once(
    tmp_path: Path, fake_model: FakeAnthropic
) -> None:
    """SIGKILL right after ``session.completed``, well inside the shared document's 1 s autosave
    delay: the session's end saved the notebook, and the completed session stays completed."""
    home = tmp_path / "server"
    (home / "root").mkdir(parents=True)
    notebook = home / "root" / "work.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    server = Server(home, fake_model.base_url, fake_model.api_key).start()
    reader: SSEReader | None = None
    try:
        chat_id = server.api("POST", "aaep/v1/chats", {"notebook_path": "work.ipynb"})["chat_id"]
        reader = SSEReader(server, chat_id)
        fake_model.add(
            Turn(tool_uses=[ToolUse("create_cell", {"source": "saved = True"})]),
            Turn(text="Added."),
        )
        server.api(
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "user_input", "text": "Add a cell."},
        )
        reader.wait(lambda ev: "session.completed" in kinds(ev), "the session to complete")
        time.sleep(0.2)  # the save runs right after the terminal event; the autosave would wait 1 s
        assert server.process is not None
        stop(server.process, first=signal.SIGKILL, grace=10.0)
        sources = [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in json.loads(notebook.read_text())["cells"]
        ]
        assert "saved = True" in sources, server.log()[-3000:]
        server.port = Server(home, "", "").port
        server.start()
        view = server.api("GET", f"aaep/v1/chats/{chat_id}")
        assert (
            kinds(view["transcript"])[-1] == "session.completed" and view["can_continue"] is False
        )
    finally:
        if reader is not None:
            reader.close()
        server.stop()
