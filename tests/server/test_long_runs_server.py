"""Long cells through the real server: the agent's session ends while its cell runs, its last
words say so, the end is told once in the chat, and *How far along?* answers meanwhile.

A real Jupyter server with jupyter-aaep and collaboration, a real kernel, the real agent loop
and SDK against the scripted fake model. The wait window is shortened to 1 second.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle
from server_helpers import wait_until
from traitlets import TraitError

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.aaep.session import Producer
from jupyter_aaep.agent.services import LEFT_RUNNING_CONTEXT
from jupyter_aaep.notebook.kernel_watch import PersonRun
from jupyter_aaep.server.app import AAEPExtension
from jupyter_aaep.server.long_runs import PERSON_RUN, LongRunNews, _Story
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

LONG = "import time\nfor i in range(1, 41):\n    print(f'epoch {i}/40', flush=True)\n    time.sleep(0.1)\nprint('accuracy 0.91')"


async def test_the_agent_ends_its_turn_while_its_cell_runs(
    kernels, api, extension, fake_model, sse
) -> None:
    extension.toolbox.notebooks.run_cell_wait_seconds = 1.0
    path = new_name()
    await kernels.notebook(path, [LONG])
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    chat_id = body["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="Training runs; I will not wait for it."),
    )
    async with sse(chat_id) as panel:
        status, _, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Train it."},
        )
        assert status == 202
        confirmation = (
            await panel.until(
                lambda m: str(m.get("type", "")).endswith("awaiting.confirmation"), 30
            )
        )[-1]
        reply = {
            "type": "confirmation.reply",
            "reply_token": confirmation["reply_token"],
            "subscription_id": new_subscription_id(),
            "timestamp": SessionClock().now(),
            "decision": "accept",
        }
        await api("chats", chat_id, "messages", method="POST", body=reply)
        events = await wait_idle(extension, chat_id)
        # The model read "still running" (nothing was interrupted) …
        result = json.dumps(fake_model.requests[1].body["messages"][-1]["content"])
        assert "Cell 1 is still running (" in result and "wait_for_cell" in result
        # … and the session's last words say the cell still runs.
        completed = of(events, "session.completed")[-1]
        assert completed["summary_normal"].endswith(
            "Cell 1 is still running; you will hear when it ends."
        )
        # … and says how many as data, declared in its @context (the %aaep view reads it).
        assert completed["extensions"]["jaaep_cells"] == {"left_running": 1}
        assert LEFT_RUNNING_CONTEXT in completed["@context"]
        # How far along? while it runs.
        status, answer, _ = await api("chats", chat_id, "progress")
        assert status == 200 and answer["sentence"].startswith("Cell 1 is still running (")
        assert (
            answer["running"][0]["cell_id"] == "c1"
            and answer["running"][0]["started_by"] == "agent"
        )
        # Its end: one sentence, once, in a session of its own in the chat.
        chat = extension.runner.get(chat_id)
        await wait_until(
            lambda: len(of(chat.emitter.history, "session.completed")) >= 2,
            timeout=20,
            what="the cell's end",
        )
        await asyncio.sleep(1)
    ends = of(chat.emitter.history, "session.completed") + of(
        chat.emitter.history, "session.errored"
    )
    told = [e for e in ends if e["session_id"] != completed["session_id"]]
    assert len(told) == 1 and told[0]["summary_normal"].startswith("Cell 1 finished after ")
    assert told[0]["summary_normal"].endswith(": accuracy 0.91.")
    # Every event of the cell's own session names the session that left it running, so a client
    # that followed the request (the %aaep view) follows the cell to its end.
    story = [e for e in chat.emitter.history if e["session_id"] == told[0]["session_id"]]
    assert story and {e.get("correlation_id") for e in story} == {completed["session_id"]}
    status, answer, _ = await api("chats", chat_id, "progress")
    assert answer == {"running": [], "sentence": "No cell is running in this notebook."}


def test_the_long_run_options_are_checked() -> None:
    extension = AAEPExtension()
    assert extension.run_cell_wait_seconds == 30 and extension.progress_announce_seconds == 60
    assert extension.announce_person_runs_after_seconds == 10
    for name, bad in (
        ("run_cell_wait_seconds", 0.5),
        ("progress_announce_seconds", 5),
        ("announce_person_runs_after_seconds", -1),
    ):
        with pytest.raises(TraitError, match=name):
            setattr(extension, name, bad)
    extension.announce_person_runs_after_seconds = 0  # off


class _Doc:
    def __init__(self, sources: list[str]) -> None:
        self._cells = [{"cell_type": "code", "source": s} for s in sources]

    def cells(self) -> list[dict[str, Any]]:
        return self._cells


class _LaggingNotebooks:
    """The server's copy of the notebook gets the last keystrokes on the third look."""

    def __init__(self, code: str) -> None:
        self.code, self.opened = code, 0

    async def open(self, path: str) -> _Doc:
        self.opened += 1
        return _Doc(["x = 1", self.code if self.opened >= 3 else self.code[:-3]])


async def test_a_cell_typed_and_run_at_once_is_still_found_by_its_number() -> None:
    code = "import time\ntime.sleep(12)"
    notebooks = _LaggingNotebooks(code)
    news = LongRunNews(None, notebooks, Producer(model="claude-test"))  # type: ignore[arg-type]
    news.find_cell_seconds = 0.01
    run = PersonRun(msg_id="m1", code=code, execution_count=3, started_at=time.monotonic())
    story = _Story("chat-1", requested_by=PERSON_RUN)
    await news._find_cell("lag.ipynb", run, story)
    assert story.number == 2 and story.name == "Cell 2" and notebooks.opened == 3
    # A run that already ended (a quick cell) is not looked for again and again.
    ended = PersonRun(msg_id="m2", code="print(2)", execution_count=4, started_at=0.0, ended_at=1.0)
    other = _Story("chat-1", requested_by=PERSON_RUN)
    notebooks.opened = 0
    await news._find_cell("lag.ipynb", ended, other)
    assert other.number is None and other.name == "A cell" and notebooks.opened == 1
