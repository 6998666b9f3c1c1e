"""The extension itself, chats, and what the REST endpoints answer to bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from server_helpers import of_type, types, wait_until
from traitlets import TraitError

from jupyter_aaep import _jupyter_server_extension_points
from jupyter_aaep.server.app import AAEPExtension
from jupyter_aaep.server.server_options import ServerOptions
from jupyter_aaep.testing.fake_anthropic import Turn

pytestmark = pytest.mark.shared_server

REPO = Path(__file__).resolve().parents[2]


def test_extension_point_and_config_file() -> None:
    assert _jupyter_server_extension_points() == [{"module": "jupyter_aaep", "app": AAEPExtension}]
    config = json.loads(
        (REPO / "jupyter-config" / "server-config" / "jupyter_aaep.json").read_text()
    )
    assert config == {"ServerApp": {"jpserver_extensions": {"jupyter_aaep": True}}}
    pyproject = (REPO / "pyproject.toml").read_text()
    assert (
        '"jupyter-config/server-config/jupyter_aaep.json" = "etc/jupyter/jupyter_server_config.d/jupyter_aaep.json"'
        in pyproject
    )


def test_traitlets_validate() -> None:
    app = AAEPExtension()
    assert (
        app.approval_mode == "ask"
        and app.sse_keepalive_seconds == 10
        and app.require_reply_sender is False
    )
    assert app.db_path.endswith(os.path.join("aaep", "chats.sqlite3"))
    app.confirmation_timeouts = {"high": 600}
    assert app.confirmation_timeouts == {"low": 90, "medium": 180, "high": 600}
    for name, value in [
        ("confirmation_timeouts", {"extreme": 1}),
        ("confirmation_timeouts", {"low": 0}),
        ("max_turns", 0),
        ("sse_keepalive_seconds", 0),
        ("approval_mode", "never"),
    ]:
        with pytest.raises(TraitError):
            setattr(app, name, value)
    for trait in ServerOptions.class_traits(config=True).values():
        assert len(trait.help) > 40, trait.name


async def test_server_loads_with_tools_and_exports_its_url(extension, jp_serverapp, caplog) -> None:
    names = [tool.name for tool in extension.toolbox.tools]
    assert names[:2] == ["ask_user", "request_handoff"]
    assert {"fetch_data", "book_meeting_room", "send_email", "delete_record"} <= set(names)
    assert os.environ["AAEP_SERVER_URL"] == jp_serverapp.connection_url
    assert (
        "AAEP_KERNEL_SECRET" not in os.environ
    )  # each kernel gets its own, in its own environment


@pytest.mark.parametrize(
    "aaep_config", [{"extra_tools": ["no.such.module:tool", "json:dumps", "broken"]}]
)
async def test_bad_extra_tools_are_logged_and_skipped(capfd, extension) -> None:
    names = [tool.name for tool in extension.toolbox.tools]
    assert "fetch_data" not in names and "ask_user" in names
    log = capfd.readouterr().err
    assert "cannot import 'no.such.module'" in log
    assert "json:dumps is not a tool: decorate the function with @aaep_tool" in log
    assert "'broken' is not of the form 'package.module:function'" in log


@pytest.mark.fresh_server  # reads the start-up log
async def test_start_up_log_names_model_key_and_storage(capfd, jp_serverapp, api) -> None:
    log = capfd.readouterr().err
    assert "AAEP agent: model claude-test" in log
    assert "an Anthropic API key is set" in log
    assert "sk-ant-fake-key" not in log
    # The store opens with the agent's first use, not at start (issue 31); its path is logged then.
    assert "chats.sqlite3" not in log
    assert "start when the agent is first used" in log
    status, _, _ = await api("chats")
    assert status == 200
    assert "chats.sqlite3" in capfd.readouterr().err


async def test_manifest(api) -> None:
    status, manifest, _ = await api("manifest")
    assert status == 200
    assert manifest["type"] == "aaep:producer.manifest" and manifest[
        "conformance_levels_supported"
    ] == [1, 2, 3]
    assert manifest["endpoints"]["chat_events"].endswith("/aaep/v1/chats/{chat_id}/events")


async def test_create_list_and_show_chats(api, jp_base_url) -> None:
    status, chat, headers = await api("chats", method="POST", body={"notebook_path": "a.ipynb"})
    assert status == 201 and chat["chat_id"].startswith("chat_")
    assert headers["Location"] == f"{jp_base_url}aaep/v1/chats/{chat['chat_id']}"
    assert chat["urls"]["events"] == f"{jp_base_url}aaep/v1/chats/{chat['chat_id']}/events"
    await api("chats", method="POST", body={"notebook_path": "b.ipynb"})
    status, body, _ = await api("chats", method="POST")
    assert status == 201 and body["notebook_path"] is None
    _, listing, _ = await api("chats")
    assert len(listing["chats"]) == 3
    _, only_a, _ = await api("chats", params={"notebook_path": "a.ipynb"})
    assert [c["chat_id"] for c in only_a["chats"]] == [chat["chat_id"]]
    status, view, _ = await api("chats", chat["chat_id"])
    assert status == 200
    assert view["status"] == "idle" and view["transcript"] == [] and view["pending_requests"] == []
    assert view["approval_mode"] == "ask"


async def test_chat_view_has_transcript_and_pending_requests(
    api, new_chat, fake_model, sse
) -> None:
    from jupyter_aaep.testing.fake_anthropic import ToolUse

    chat_id = await new_chat()
    fake_model.add(Turn(tool_uses=[ToolUse("delete_record", {"record_id": "67890"})]))
    async with sse(chat_id) as stream:
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "delete it"},
        )
        await stream.until(of_type("awaiting.confirmation"))
        _, view, _ = await api("chats", chat_id)
        assert view["status"] == "running" and view["state"] == "awaiting_input"
        assert types(view["transcript"])[0] == "session.started"
        assert all("@context" in e for e in view["transcript"])
        assert [e["type"] for e in view["pending_requests"]] == ["aaep:agent.awaiting.confirmation"]
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "control", "action": "stop"}
        )
        assert status == 202
        await stream.until(of_type("session.cancelled"))
    _, view, _ = await api("chats", chat_id)
    assert view["pending_requests"] == [] and view["status"] == "idle"


async def test_a_loaded_chat_and_the_same_chat_after_a_restart_read_the_same(
    api, new_chat, fake_model, extension
) -> None:
    """One serializer (``chats/chat_json.py``): a chat described loaded, listed from the store
    after a restart, and loaded again reads the same, field for field and in the same order.
    The stored one used to miss ``model_label`` and the default model, and the reloaded one
    its last session and its rest state."""
    chat_id = await new_chat()
    fake_model.add(Turn(text="Done."))
    status, _, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "hello"}
    )
    assert status == 202
    chat = extension.runner.get(chat_id)
    await wait_until(lambda: not chat.running, timeout=10, what="the session to end")
    per_session = {"transcript", "pending_requests", "usage", "guidance"}
    _, view, _ = await api("chats", chat_id)
    loaded = {k: v for k, v in view.items() if k not in per_session}
    assert loaded["session_id"] and loaded["title"] == "hello" and loaded["model"] == "claude-test"

    assert extension.store.flush()
    extension.runner._chats.pop(chat_id)  # as after a restart: in the store only
    _, page, _ = await api("chats", params={"notebook_path": "analysis.ipynb"})
    # (This module shares one server: earlier tests' chats on the notebook are listed too.)
    (stored,) = [entry for entry in page["chats"] if entry["chat_id"] == chat_id]
    assert list(stored.items()) == list(loaded.items())
    _, view, _ = await api("chats", chat_id)  # loaded from the store
    assert [(k, v) for k, v in view.items() if k not in per_session] == list(loaded.items())


async def test_a_stored_chat_lists_as_undoable_only_the_sessions_loading_keeps(
    api, new_chat, extension
) -> None:
    """``undoable_sessions`` of a chat listed from the store names what loading it keeps: a
    whole-notebook snapshot an earlier version stored, or an empty record, is neither (the list
    used to name every stored row, and the chat then had nothing to undo for them)."""
    chat_id = await new_chat()
    operation = {"kind": "create", "cell_id": "kept", "index": 0, "before": None, "after": {}}
    records = {
        "session_old": {"path": "analysis.ipynb", "cells": [{"id": "a", "source": "1"}]},
        "session_kept": {"kind": "operations", "path": "analysis.ipynb", "operations": [operation]},
        "session_empty": {"kind": "operations", "path": "analysis.ipynb", "operations": []},
    }
    for session_id, body in records.items():
        extension.store.save_snapshot(chat_id, session_id, body)
    assert extension.store.flush()
    extension.runner._chats.pop(chat_id)  # as after a restart: in the store only
    _, page, _ = await api("chats", params={"notebook_path": "analysis.ipynb"})
    (stored,) = [entry for entry in page["chats"] if entry["chat_id"] == chat_id]
    _, loaded, _ = await api("chats", chat_id)
    assert list(extension.runner.get(chat_id).snapshots) == ["session_kept"]
    assert stored["undoable_sessions"] == loaded["undoable_sessions"] == ["session_kept"]


@pytest.mark.parametrize(
    ("raw", "status", "fragment"),
    [
        ("{not json", 400, "not valid JSON"),
        ("[1, 2]", 400, "must be a JSON object"),
        ("", 400, "empty"),
        ('{"notebook_path": 5}', 400, "notebook_path"),
        ('{"notebook_path": "a.ipynb", "colour": "red"}', 400, "Unexpected field"),
        ("\xff", 400, None),
    ],
)
async def test_bad_chat_bodies(api, raw, status, fragment) -> None:
    code, body, _ = await api(
        "chats",
        method="POST",
        raw=raw.encode("latin-1") if raw == "\xff" else raw,
        headers={"Content-Type": "application/json"},
    )
    if raw == "":
        assert code == 201  # an empty body creates a chat without a notebook
        return
    assert code == status and isinstance(body["message"], str)
    if fragment:
        assert fragment in body["message"]


async def test_unknown_chats_are_404_with_a_message(api, sse) -> None:
    for parts, method, body in [
        (("chats", "chat_nope"), "GET", None),
        (("chats", "chat_nope", "messages"), "POST", {"kind": "user_input", "text": "hi"}),
        (("chats", "chat_nope", "messages"), "POST", {"type": "confirmation.reply"}),
        (("chats", "chat_nope", "events"), "GET", None),
    ]:
        status, answer, _ = await api(*parts, method=method, body=body)
        assert status == 404, parts
        assert "There is no chat with id 'chat_nope'" in answer["message"]


async def test_oversized_bodies_are_refused(api, new_chat) -> None:
    chat_id = await new_chat()
    big = json.dumps({"kind": "user_input", "text": "x" * (1 << 20)})
    status, body, _ = await api("chats", chat_id, "messages", method="POST", raw=big)
    assert status == 413 and "1 MiB" in body["message"]


@pytest.mark.parametrize(
    "aaep_config",
    [{"approval_mode": "auto", "clarification_timeout": 45, "confirmation_timeouts": {"low": 30}}],
)
async def test_new_chats_take_the_configured_approval_policy(api, extension) -> None:
    _, chat, _ = await api("chats", method="POST", body={"notebook_path": "x.ipynb"})
    assert chat["approval_mode"] == "auto"
    policy = extension.runner.get(chat["chat_id"]).approval
    assert policy.clarification_timeout == 45
    assert policy.timeouts == {"low": 30, "medium": 180, "high": 300}
