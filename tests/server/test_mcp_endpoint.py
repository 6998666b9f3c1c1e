"""The notebook as an MCP server: the SDK's own client against ``aaep/v1/mcp`` on a live server.

An outside agent's calls are one AAEP session in the notebook's chat, narrated like the agent's
own; running code waits for a person's answer on an AAEP stream; nothing runs without it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from conftest import read_frame
from kernel_helpers import _private_cwd, kernels, new_name, write_notebook  # noqa: F401
from mcp_helpers import (
    agent_calls,
    is_type,
    live_server_config,
    mcp_client,
    mcp_url,
    off_loop,
    reply,
    text_of,
)
from server_helpers import panel_key, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The live-notebook server of kernel_helpers, with outside agents' sessions ending after 3 s
    idle: soon, for the tests that wait for the end, and longer than the gap between one
    agent's calls on a loaded machine (at 1 s, one agent's calls became two sessions)."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=3.0)


@pytest.fixture
def url(jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    """The endpoint of a running server (``jp_fetch`` makes the server listen)."""
    return mcp_url(jp_http_port, jp_base_url)


async def _chat_of(api: Any, path: str) -> str:
    status, body, _ = await api("chats", params={"notebook_path": path})
    assert status == 200, body
    return str(body["chats"][0]["chat_id"])


async def test_an_unauthenticated_client_is_refused_and_nothing_is_created(
    url, extension, api
) -> None:
    assert (await api("chats"))[0] == 200
    async with httpx.AsyncClient() as client:
        response = await client.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert response.status_code in (401, 403)
    assert list(extension.runner.chats()) == []  # no chat, no session: nothing ran


async def test_tools_are_the_agents_own_with_honest_annotations(url, jp_auth_header) -> None:
    async def agent() -> Any:
        async with mcp_client(url, dict(jp_auth_header)) as client:
            return (await client.list_tools()).tools

    listed = {tool.name: tool for tool in await off_loop(agent)}
    for name in (
        "get_notebook_state",
        "create_cell",
        "edit_cell",
        "move_cell",
        "delete_cell",
        "run_cell",
        "run_all_cells",
        "interrupt_kernel",
        "list_notebooks",
        "list_files",
        "read_file",
        "list_variables",
        "inspect_variable",
        "view_figure",
    ):
        assert name in listed, name
    assert "ask_user" not in listed and "request_handoff" not in listed  # they talk to our own user
    for tool in listed.values():
        assert tool.input_schema["required"][0] == "notebook_path"
        assert tool.annotations.open_world_hint is False and tool.title and "_" not in tool.title
    state, run, delete, create = (
        listed[n].annotations
        for n in ("get_notebook_state", "run_cell", "delete_cell", "create_cell")
    )
    assert state.read_only_hint is True and state.destructive_hint is False
    assert (
        run.read_only_hint is False
        and run.destructive_hint is True
        and delete.destructive_hint is True
    )
    assert create.read_only_hint is False and create.destructive_hint is False  # it only adds
    assert listed["run_cell"].title == "Run a cell"


async def test_an_outside_session_is_one_narrated_text_a_listener_can_follow(
    url, jp_auth_header, api, sse, kernels
) -> None:
    """Start, a read, an edit, a run that asks for approval, the approval, the output and the
    idle end: one session in the notebook's chat, each step said in the user's words, saying
    who is at work (Claude Code), with no tool names and no ids."""
    path = new_name()
    await kernels.notebook(path, ["print('hello from the cell')"])
    chat_id = await _chat_of_new(api, path)
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers in the panel
        call = agent_calls(
            url,
            dict(jp_auth_header),
            ("get_notebook_state", {"notebook_path": path}),
            ("create_cell", {"notebook_path": path, "source": "y = 2"}),
            ("run_cell", {"notebook_path": path, "cell_id": "c1"}),
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 60))[-1]
        await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept", key)
        )
        state, created, ran = await asyncio.wait_for(call, 60)
        events = await panel.until(is_type("session.completed"), timeout=30)
    assert not state.is_error and "hello from the cell" in text_of(state)
    assert not created.is_error, text_of(created)
    assert not ran.is_error and "hello from the cell" in text_of(ran)
    _, body, _ = await api("chats", chat_id)
    transcript = body["transcript"]
    started = [e for e in transcript if is_type("session.started")(e)]
    assert len(started) == 1 and started[0]["producer"]["agent_name"] == "Claude Code"
    said = [e["summary_normal"] for e in transcript if e.get("summary_normal")]
    heard = [
        e["summary_normal"]
        for e in transcript
        if e.get("summary_normal") and e.get("urgency") != "background"
    ]
    print("NARRATION (all):", " | ".join(said))
    print("NARRATION (heard at normal verbosity):", " | ".join(heard))
    assert said[0] == f"Claude Code is working on {path}."
    assert "Claude Code is reading the notebook." in said  # the state line says who and what
    assert not any(s.startswith("The agent is") for s in said), said
    assert any(
        s.startswith("Approval needed for Claude Code, medium risk: Run cell 1") for s in heard
    )
    assert "Approved in the panel." in heard, heard  # where the approval came from (issue 16)
    assert any(s.startswith("Created code cell 2") for s in heard), heard
    assert any(s.startswith("Cell 1 ran: hello from the cell") for s in heard), heard
    assert said[-1] == "Claude Code finished: 3 steps."
    text = " ".join(said)
    for internal in ("get_notebook_state", "create_cell", "run_cell", "c1", "toolu_", "sess_"):
        assert internal not in text, internal  # no tool names, no ids
    assert events[-1]["tool_invocations_count"] == 3


async def test_running_code_waits_for_a_person_rejected_runs_nothing(
    url,
    jp_auth_header,
    api,
    sse,
    kernels,
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, ["ran = 'yes'\nprint('hello from the cell')"])
    chat_id = await _chat_of_new(api, path)
    progress: list[str] = []
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers in the panel
        call = agent_calls(
            url,
            dict(jp_auth_header),
            ("run_cell", {"notebook_path": path, "cell_id": "c1"}),
            progress=progress,
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        assert "ran = 'yes'" in confirmation["extra_context"]["code"]
        await wait_until(  # the client hears that it waits for a person (said every 2 s)
            lambda: any("approve" in p for p in progress), 15, "the waiting progress"
        )
        assert not call.done()
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "reject", key)
        )
        assert status == 204
        [result] = await asyncio.wait_for(call, 20)
    assert (
        result.is_error
        and "declined" in text_of(result)
        and "run_cell was not run" in text_of(result)
    )
    assert any("approve" in p for p in progress)
    assert "nothing" in await kernel.run("print(globals().get('ran', 'nothing'))")


async def test_running_code_approved_returns_its_output(
    url,
    jp_auth_header,
    api,
    sse,
    kernels,
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, ["ran = 'yes'\nprint('hello from the cell')"])
    chat_id = await _chat_of_new(api, path)
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers in the panel
        call = agent_calls(
            url, dict(jp_auth_header), ("run_cell", {"notebook_path": path, "cell_id": "c1"})
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept", key)
        )
        [result] = await asyncio.wait_for(call, 60)
    assert not result.is_error and "hello from the cell" in text_of(result)
    assert "yes" in await kernel.run("print(ran)")


async def test_a_client_that_cancels_withdraws_the_confirmation(
    url,
    jp_auth_header,
    api,
    sse,
    kernels,
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, ["ran = 'yes'"])
    chat_id = await _chat_of_new(api, path)
    cancel = threading.Event()
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)  # the person answers in the panel
        call = agent_calls(
            url,
            dict(jp_auth_header),
            ("run_cell", {"notebook_path": path, "cell_id": "c1"}),
            cancel=cancel,
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        cancel.set()
        withdrawn = await panel.until(lambda m: "withdrew" in str(m.get("summary_normal", "")), 15)
        await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept", key)
        )  # too late
        await asyncio.wait_for(call, 20)
    assert withdrawn[-1]["to_state"] == "thinking"
    assert "nothing" in await kernel.run("print(globals().get('ran', 'nothing'))")


async def test_an_outside_agent_cannot_answer_its_own_request(
    url, jp_auth_header, api, sse, ws, kernels
) -> None:
    """Issue 25: Claude Code asks to run a cell, then answers its own request with the person's
    token, over POST (as its shell would with curl) and over the chat's WebSocket naming itself.
    Both are refused (204, as AAEP answers every reply), said in the chat, and the cell waits
    for the person, who approves in the panel."""
    path = new_name()
    kernel = await kernels.notebook(path, ["ran = 'yes'"])
    chat_id = await _chat_of_new(api, path)
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        call = agent_calls(
            url, dict(jp_auth_header), ("run_cell", {"notebook_path": path, "cell_id": "c1"})
        )
        confirmation = (await panel.until(is_type("awaiting.confirmation"), 30))[-1]
        forged = {**reply(confirmation, "accept"), "decided_by": "user:jupyterlab"}
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=forged)
        assert status == 204
        said = (await panel.until(lambda m: "tried to answer" in m.get("summary_normal", ""), 10))[
            -1
        ]
        assert said["summary_normal"].startswith(
            "A program using your Jupyter login tried to answer Claude Code's request; it was "
            "ignored, since that program may be Claude Code itself."
        )
        socket = await ws(chat_id, subprotocols=["aaep.v1"])
        await socket.write_message(
            json.dumps(
                {
                    "type": "subscription.request",
                    "aaep_version": "1.0.0",
                    "subscriber_id": "claude-code",
                    "capabilities": {"supports_confirmation_reply": True},
                }
            )
        )
        accepted = await read_frame(socket)
        while accepted.get("type") != "subscription.accepted":  # the running session comes first
            accepted = await read_frame(socket)
        own = {**reply(confirmation, "accept"), "subscription_id": accepted["subscription_id"]}
        await socket.write_message(json.dumps(own))
        said = (await panel.until(lambda m: "its own request" in m.get("summary_normal", ""), 10))[
            -1
        ]
        assert said["summary_normal"] == (
            "Claude Code tried to answer its own request; that answer was ignored. "
            "The step still waits for you."
        )
        socket.close()
        await asyncio.sleep(1.0)
        assert not call.done(), "the step still waits for the person"
        assert "nothing" in await kernel.run("print(globals().get('ran', 'nothing'))")
        await api(
            "chats", chat_id, "messages", method="POST", body=reply(confirmation, "accept", key)
        )
        [result] = await asyncio.wait_for(call, 60)
        heard = await panel.until(is_type("state.changed"), 10)
    assert not result.is_error, text_of(result)
    assert any(m.get("summary_normal") == "Approved in the panel." for m in heard), heard
    assert "yes" in await kernel.run("print(ran)")


async def test_stop_in_the_panel_stops_the_outside_agent(
    url,
    jp_auth_header,
    api,
    sse,
    kernels,
) -> None:
    path = new_name()
    await kernels.notebook(path, ["ran = 'yes'"])
    chat_id = await _chat_of_new(api, path)
    async with sse(chat_id) as panel:
        call = agent_calls(
            url, dict(jp_auth_header), ("run_cell", {"notebook_path": path, "cell_id": "c1"})
        )
        await panel.until(is_type("awaiting.confirmation"), 30)
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "control", "action": "stop"}
        )
        assert status == 202
        cancelled = (await panel.until(is_type("session.cancelled"), 15))[-1]
        [result] = await asyncio.wait_for(call, 15)
    assert cancelled["summary_normal"].startswith("You stopped Claude Code.")
    assert result.is_error and "stopped" in text_of(result)


async def test_the_person_cannot_start_the_agent_while_an_outside_agent_works(
    url, jp_auth_header, jp_root_dir, api, sse
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["x = 1"])
    chat_id = await _chat_of_new(api, path)
    hold = threading.Event()
    async with sse(chat_id) as panel:
        call = agent_calls(
            url, dict(jp_auth_header), ("get_notebook_state", {"notebook_path": path}), hold=hold
        )
        await panel.until(is_type("tool.completed"), 15)
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Tidy up."},
        )
        hold.set()
        await asyncio.wait_for(call, 15)
        await panel.until(is_type("session.completed"), 15)
    assert status == 409 and body["message"].startswith(
        f"Claude Code is working on {path} right now."
    )


async def test_bad_calls_get_sentences_and_nothing_runs(
    url, jp_auth_header, jp_root_dir, extension
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["x = 1"])
    results = await agent_calls(
        url,
        dict(jp_auth_header),
        ("get_notebook_state", {"notebook_path": "../../etc/passwd.ipynb"}),
        ("get_notebook_state", {"notebook_path": "/etc/x.ipynb"}),
        ("get_notebook_state", {"notebook_path": "nowhere.ipynb"}),
        ("format_disk", {"notebook_path": path}),
        ("create_cell", {"notebook_path": path, "source": 42}),
        ("get_notebook_state", {}),
    )
    outside, absolute, missing, unknown, wrong, none = results
    assert "outside the Jupyter root" in text_of(outside)
    assert "relative to the Jupyter root" in text_of(absolute)
    assert "There is no notebook at 'nowhere.ipynb'" in text_of(missing)
    assert "There is no tool named 'format_disk'" in text_of(unknown)
    assert "Invalid input for create_cell" in text_of(wrong)
    assert "The notebook_path argument is required" in text_of(none)
    for result in results:
        assert result.is_error and text_of(result).rstrip().endswith((".", ")"))
    assert not any(c.running for c in extension.runner.chats())  # no session was started


async def _chat_of_new(api: Any, path: str) -> str:
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    return str(body["chat_id"])


async def test_the_built_in_agent_and_an_outside_agent_never_work_on_one_notebook_at_once(
    url, jp_auth_header, jp_root_dir, api, sse, fake_model, extension
) -> None:
    """Across the notebook's chats too: the outside agent's calls go to the chat the panel shows,
    the built-in agent may be working in another one; each is refused with a sentence saying who
    is working, and nothing interleaves."""
    from jupyter_aaep.testing.fake_anthropic import Turn

    path = write_notebook(jp_root_dir, new_name(), ["x = 1"])
    older = await _chat_of_new(api, path)
    fake_model.add(Turn(text="Thinking it over.", delay=10.0))
    async with sse(older) as panel:
        status, _, _ = await api(
            "chats", older, "messages", method="POST", body={"kind": "user_input", "text": "Look."}
        )
        assert status == 202
        newest = await _chat_of_new(api, path)
        [refused] = await agent_calls(
            url, dict(jp_auth_header), ("create_cell", {"notebook_path": path, "source": "y = 2"})
        )
        await panel.until(is_type("session.completed"), 30)
    assert refused.is_error and text_of(refused).startswith(
        f"The notebook's own agent is working on {path} right now"
    )
    while extension.runner.get(older).running:  # its task ends just after its last event
        await asyncio.sleep(0.05)
    # the outside agent works in the chat the panel shows (the last active one); the person
    # writes in the other chat of the same notebook
    shown = await _chat_of(api, path)
    other = older if shown == newest else newest
    hold = threading.Event()
    async with sse(shown) as panel:
        call = agent_calls(
            url, dict(jp_auth_header), ("get_notebook_state", {"notebook_path": path}), hold=hold
        )
        await panel.until(is_type("tool.completed"), 30)
        status, body, _ = await api(
            "chats", other, "messages", method="POST", body={"kind": "user_input", "text": "Go."}
        )
        hold.set()
        [read] = await asyncio.wait_for(call, 30)
        await panel.until(is_type("session.completed"), 30)
    assert not read.is_error
    assert status == 409 and body["message"] == (
        f"Claude Code is working on {path} right now, in another chat of this notebook. "
        "Stop it there, or wait until it finishes, then send your request."
    )
    cells = json.loads((jp_root_dir / path).read_text())["cells"]
    assert ["".join(c["source"]) for c in cells] == ["x = 1"]  # the refused edit never happened
    assert len(fake_model.requests) == 1  # the refused request never reached the model
