"""``/aaep/v1/permissions`` over HTTP: the list, who may give a permission, clear 400s, the
'always' file, and the administrator's lock (issue 27)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.paths import jupyter_config_dir
from server_helpers import PANEL_HANDSHAKE, panel_key

pytestmark = pytest.mark.shared_server

NOTEBOOK = {"rule": "run_cell:unflagged", "scope": "notebook", "notebook_path": "a.ipynb"}


async def _key(api: Any, sse: Any, new_chat: Any) -> tuple[str, Any]:
    chat_id = await new_chat("a.ipynb")
    stream = sse(chat_id)
    panel = await stream.__aenter__()
    return await panel_key(api, panel, chat_id), stream


async def test_the_person_gives_lists_and_takes_back_a_permission(api, sse, new_chat) -> None:
    _, empty, _ = await api("permissions")
    assert empty["permissions"] == [] and "no standing permissions" in empty["sentence"]
    key, stream = await _key(api, sse, new_chat)
    try:
        status, made, _ = await api(
            "permissions", method="POST", body={**NOTEBOOK, "stream_key": key}
        )
        assert status == 201, made
        status, always, _ = await api(
            "permissions",
            method="POST",
            body={"rule": "edit_cell", "scope": "always", "effect": "deny", "stream_key": key},
        )
        assert status == 201, always
    finally:
        await stream.__aexit__(None, None, None)
    _, listed, _ = await api("permissions")
    assert [p["id"] for p in listed["permissions"]] == [made["id"], always["id"]]
    first = listed["permissions"][0]
    assert {k: first[k] for k in ("rule", "scope", "notebook_path", "granted_in")} == {
        "rule": "run_cell:unflagged",
        "scope": "notebook",
        "notebook_path": "a.ipynb",
        "granted_in": "a.ipynb",
    }
    assert first["granted_at"].endswith("Z")
    assert listed["sentence"].startswith(
        "2 standing permissions: 1. Without asking: unflagged code in a.ipynb"
    )
    assert "2. Never without asking: editing cells in every notebook" in listed["sentence"]
    file = Path(jupyter_config_dir()) / "aaep" / "permissions.json"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert [p["id"] for p in json.loads(file.read_text())["permissions"]] == [always["id"]]
    assert (await api("permissions", made["id"], method="DELETE"))[0] == 204
    status, body, _ = await api("permissions", made["id"], method="DELETE")
    assert status == 404 and "GET /aaep/v1/permissions" in body["message"]
    assert (await api("permissions", always["id"], method="DELETE"))[0] == 204
    assert json.loads(file.read_text())["permissions"] == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("[1, 2]", 'must be a JSON object, not list; for example {"rule": "run_cell:unflagged"'),
        (
            {"rule": "run_cell:unflagged", "scope": "notebook", "colour": "red"},
            "Unknown field 'colour'",
        ),
        ({"rule": "rm_rf", "scope": "always"}, "'rm_rf' is not a rule this server knows"),
        ({"rule": "run_cell:abc", "scope": "always"}, "64 lowercase hex digits"),
        ({"rule": "run_cell:unflagged", "scope": "forever"}, "'forever' is not a scope"),
        ({"rule": "run_cell:unflagged", "scope": "notebook"}, "send notebook_path"),
        ({"rule": "run_cell:unflagged", "scope": "chat"}, "send chat_id"),
        ({"rule": "read_file:", "scope": "always"}, "read_file: takes a file pattern"),
        ({**NOTEBOOK, "effect": "maybe"}, "effect is 'allow'"),
        ({**NOTEBOOK, "notebook_path": ""}, "notebook_path is the notebook's path"),
    ],
)
async def test_a_malformed_permission_gets_a_400_saying_what_to_send(
    api, sse, new_chat, body, said
) -> None:
    key, stream = await _key(api, sse, new_chat)
    try:
        sent = body if isinstance(body, str) else json.dumps({**body, "stream_key": key})
        status, answer, _ = await api("permissions", method="POST", raw=sent)
    finally:
        await stream.__aexit__(None, None, None)
    assert status == 400, answer
    assert said in answer["message"], answer["message"]
    assert (await api("permissions"))[1]["permissions"] == [], "nothing was granted"


async def test_only_the_person_may_give_a_permission(api, sse, new_chat) -> None:
    """As an attacker: a program with the login but no key, one that names itself in a
    handshake (an outside agent's listener), a made-up key, or the panel's key of a stream
    that asked for none."""
    chat_id = await new_chat("a.ipynb")
    refused = []
    status, body, _ = await api("permissions", method="POST", body=NOTEBOOK)
    refused.append((status, body))
    status, body, _ = await api(
        "permissions", method="POST", body={**NOTEBOOK, "stream_key": "key_" + "0" * 32}
    )
    refused.append((status, body))
    async with sse(chat_id) as listener:  # a client that names itself gets a key too
        agent = {
            **PANEL_HANDSHAKE,
            "subscriber_id": "claude-code",
            "subscriber_name": "Claude Code",
        }
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=agent)
        assert status == 201
        frames = await listener.until(lambda m: m.get("kind") == "stream.key")
        its_key = frames[-1]["stream_key"]
        status, body, _ = await api(
            "permissions", method="POST", body={**NOTEBOOK, "stream_key": its_key}
        )
        refused.append((status, body))
    for status, body in refused:
        assert (
            status == 403 and "Only you can give the agent a standing permission" in body["message"]
        )
    assert (await api("permissions"))[1]["permissions"] == []


async def test_outside_agents_credentials_open_none_of_the_routes(api, jp_fetch) -> None:
    from tornado.httpclient import HTTPClientError

    from jupyter_aaep.mcp.credentials import MCP_ONLY

    status, made, _ = await api("mcp", "tokens", method="POST", body={"name": "Claude Code"})
    if status == 404:
        pytest.skip("the MCP endpoint is off in this configuration")
    assert status == 201, made
    headers = {"Authorization": f"Bearer {made['token']}"}
    for method, parts, body in (
        ("GET", ("permissions",), None),
        ("POST", ("permissions",), json.dumps(NOTEBOOK)),
        ("DELETE", ("permissions", "grt_0000000000000000"), None),
    ):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("aaep", "v1", *parts, method=method, body=body, headers=headers)
        assert error.value.code == 403, (method, parts)
        assert json.loads(error.value.response.body)["message"] == MCP_ONLY


class TestWhenTheAdministratorLocksThem:
    @pytest.fixture
    def aaep_config(self) -> dict[str, Any]:
        return {
            "allowed_permission_scopes": ["chat", "notebook"],
            "forbidden_permission_rules": ["mcp__*"],
        }

    async def test_the_administrator_may_forbid_scopes_and_rules(self, api, sse, new_chat) -> None:
        key, stream = await _key(api, sse, new_chat)
        try:
            status, body, _ = await api(
                "permissions",
                method="POST",
                body={"rule": "run_cell:unflagged", "scope": "always", "stream_key": key},
            )
            assert (
                status == 403
                and "does not allow standing permissions for every notebook" in body["message"]
            )
            status, body, _ = await api(
                "permissions",
                method="POST",
                body={
                    "rule": "mcp__github__push",
                    "scope": "notebook",
                    "notebook_path": "a.ipynb",
                    "stream_key": key,
                },
            )
            assert status == 403 and "kind of step" in body["message"]
            status, _, _ = await api(
                "permissions", method="POST", body={**NOTEBOOK, "stream_key": key}
            )
            assert status == 201
        finally:
            await stream.__aexit__(None, None, None)
        chat_id = await new_chat("a.ipynb")
        _, state, _ = await api("chats", chat_id)
        assert "permissions" in state["policy"]["locked"]
        assert (
            "standing permissions: for one chat or for one notebook" in state["policy"]["message"]
        )
