"""Outside agents' credentials on a live server: minted, listed and revoked by the person; they
open the MCP endpoint (the SDK's own client over HTTP, and the stdio bridge) and no other door;
sessions are named by them. Takeovers by the same agent: ``test_mcp_takeover.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from credential_helpers import (  # noqa: F401 - fixtures by name
    base,
    bearer,
    chat_of_new,
    jp_server_config,
    mint,
    sources,
    url,
)
from kernel_helpers import _private_cwd, kernels, new_name, write_notebook  # noqa: F401
from mcp.client.stdio import StdioServerParameters
from mcp_helpers import agent_calls, is_type, mcp_client, off_loop, text_of
from test_mcp_bridge import bridge_env, through_bridge
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_aaep.mcp.bridge import REFUSED_CREDENTIAL
from jupyter_aaep.mcp.credentials import MCP_ONLY, PREFIX
from jupyter_aaep.mcp.http_endpoint import UNKNOWN_CREDENTIAL

pytestmark = pytest.mark.slow


# -- minting, listing, revoking --------------------------------------------------------------------
async def test_the_person_mints_lists_and_revokes_and_the_secret_is_shown_once(
    api, mint, url
) -> None:
    made = await mint("  Claude Code (laptop)\n")
    assert made["name"] == "Claude Code (laptop)"
    assert made["token"].startswith(PREFIX) and len(made["token"]) > len(PREFIX) + 40
    assert made["mcp_url"] == url and made["last_used"] is None
    status, listed, _ = await api("mcp", "tokens")
    assert status == 200
    [record] = listed["credentials"]
    assert record == {k: made[k] for k in ("id", "name", "created", "last_used")}
    assert made["token"] not in json.dumps(listed) and "digest" not in record

    async def agent() -> Any:
        async with mcp_client(url, bearer(made)) as client:
            return (await client.list_tools()).tools

    assert "run_cell" in {tool.name for tool in await off_loop(agent)}
    _, listed, _ = await api("mcp", "tokens")
    assert listed["credentials"][0]["last_used"] is not None  # the person sees it was used

    status, body, _ = await api("mcp", "tokens", made["id"], method="DELETE")
    assert status == 204 and body is None
    assert (await api("mcp", "tokens"))[1] == {"credentials": []}
    status, body, _ = await api("mcp", "tokens", made["id"], method="DELETE")
    assert status == 404 and body["message"].startswith("There is no such credential")


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "Give the outside agent a name"),
        ("   ", "Give the outside agent a name"),
        (42, "Give the outside agent a name"),
        ("\x07\x1b", "no printable characters"),
        ("x" * 61, "The name is 61 characters long; use at most 60."),
    ],
)
async def test_a_bad_name_is_a_sentence_and_mints_nothing(api, name, says) -> None:
    status, body, _ = await api("mcp", "tokens", method="POST", body={"name": name})
    assert status == 400 and says in body["message"]
    assert (await api("mcp", "tokens"))[1] == {"credentials": []}


async def test_minting_needs_the_persons_login_and_the_xsrf_check(base, extension) -> None:
    async with httpx.AsyncClient() as client:
        anonymous = await client.post(f"{base}aaep/v1/mcp/tokens", json={"name": "Codex"})
        cookie_only = await client.post(  # a foreign page's form: no token, no XSRF cookie
            f"{base}aaep/v1/mcp/tokens", json={"name": "Codex"}, headers={"Cookie": "x=1"}
        )
    assert anonymous.status_code == 403 and cookie_only.status_code == 403
    assert extension.outside_credentials.listed() == []


# -- every other door ------------------------------------------------------------------------------
async def test_a_credential_opens_the_mcp_endpoint_and_no_other_door(
    base, url, api, mint, jp_root_dir, jp_auth_header, kernels
) -> None:
    """The table in the report: each endpoint tried with an MCP-only credential, its answer."""
    path = new_name()
    await kernels.notebook(path, ["x = 1"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Claude Code")
    other = await mint("Codex")
    reply_body = {
        "type": "confirmation.reply",
        "reply_token": "rt_x",
        "subscription_id": "sub_x",
        "decision": "accept",
    }
    ours: list[tuple[str, str, Any]] = [
        ("GET", "aaep/v1/chats", None),
        ("POST", "aaep/v1/chats", {"notebook_path": path}),
        ("GET", f"aaep/v1/chats/{chat_id}", None),
        ("POST", f"aaep/v1/chats/{chat_id}/messages", reply_body),
        (
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "settings", "approval_mode": "auto"},
        ),
        ("POST", f"aaep/v1/chats/{chat_id}/messages", {"kind": "user_input", "text": "Hi"}),
        ("POST", "aaep/v1/replies", reply_body),
        ("POST", "aaep/v1/messages", reply_body),
        ("GET", f"aaep/v1/chats/{chat_id}/events", None),
        ("GET", "aaep/v1/events", None),
        ("POST", "aaep/v1/subscriptions", {"type": "subscription.request"}),
        ("GET", f"aaep/v1/chats/{chat_id}/variables", None),
        ("GET", f"aaep/v1/chats/{chat_id}/progress", None),
        ("GET", f"aaep/v1/chats/{chat_id}/usage", None),
        ("GET", f"aaep/v1/chats/{chat_id}/accessibility", None),
        ("GET", f"aaep/v1/chats/{chat_id}/sessions/sess_x/steps", None),
        ("GET", "aaep/v1/manifest", None),
        ("GET", "aaep/v1/models", None),
        ("GET", "aaep/v1/mcp/servers", None),
        ("GET", "aaep/v1/mcp/tokens", None),
        ("POST", "aaep/v1/mcp/tokens", {"name": "Another me"}),
        ("DELETE", f"aaep/v1/mcp/tokens/{other['id']}", None),
        ("GET", "aaep/v1/permissions", None),
        ("POST", "aaep/v1/permissions", {"rule": "run_cell:unflagged", "scope": "always"}),
        ("DELETE", "aaep/v1/permissions/grt_0000000000000000", None),
        ("GET", "aaep/v1/kernel/status", None),
        ("POST", "aaep/v1/kernel/messages", reply_body),
    ]
    jupyters: list[tuple[str, str, Any]] = [
        ("GET", "api", None),
        ("GET", "api/status", None),
        ("GET", "api/me", None),
        ("GET", f"api/contents/{path}", None),
        ("PUT", "api/contents/new.py", {"type": "file", "format": "text", "content": "x"}),
        ("GET", "api/kernels", None),
        ("POST", "api/kernels", {}),
        ("GET", "api/sessions", None),
        ("POST", "api/sessions", {"path": "n.ipynb", "type": "notebook", "kernel": {}}),
        ("GET", "api/terminals", None),
        ("POST", "api/terminals", {}),
        ("GET", "api/kernelspecs", None),
        ("PUT", f"api/collaboration/session/{path}", {"format": "json", "type": "notebook"}),
    ]
    table: list[tuple[str, int, str]] = []
    login = jp_auth_header["Authorization"].split()[-1]
    async with httpx.AsyncClient(timeout=10) as client:
        for method, where, body in [*ours, *jupyters]:
            mine = where.startswith("aaep")
            tries = {
                "header": (bearer(made), None),
                "query": ({}, {"token": made["token"]}),
                # beside the person's login (their token in the address): still refused by ours;
                # Jupyter's own endpoints then serve the person, as without the credential
                **({"beside the login": (bearer(made), {"token": login})} if mine else {}),
            }
            anonymous = await client.request(method, base + where, json=body)
            for how, (headers, params) in tries.items():
                response = await client.request(
                    method, base + where, json=body, headers=headers, params=params
                )
                try:
                    said = str(response.json().get("message", ""))
                except ValueError:
                    said = response.text[:80]
                table.append((f"{method} {where} ({how})", response.status_code, said))
                if mine:
                    assert response.status_code == 403, (method, where, how, response.text)
                    assert said == MCP_ONLY, (method, where, how, said)
                else:  # not recognised: answered exactly as with no login at all
                    assert response.status_code == anonymous.status_code, (method, where, how)
                    assert response.status_code == (200 if where == "api" else 403), where
    print("\nENDPOINT TABLE (an MCP-only credential):")
    for row, status, said in table:
        print(f"| {row} | {status} | {said} |")
    # the chat's WebSocket, with the credential alone and beside the person's token
    ws_url = f"{base.replace('http', 'ws', 1)}aaep/v1/chats/{chat_id}/ws"
    for address in (ws_url, f"{ws_url}?token={login}"):
        with pytest.raises(HTTPClientError) as refused:
            await websocket_connect(HTTPRequest(address, headers=bearer(made)))
        answer = refused.value.response.body.decode() if refused.value.response else ""
        print(f"| WS aaep/v1/chats/{{id}}/ws | {refused.value.code} | {answer[:300]} |")
        assert refused.value.code == 403 and json.loads(answer)["message"] == MCP_ONLY
    # nothing happened: no second chat, no mode change, no reply, the other credential lives
    _, chats, _ = await api("chats", params={"notebook_path": path})
    assert len(chats["chats"]) == 1
    _, listed, _ = await api("mcp", "tokens")
    assert {c["name"] for c in listed["credentials"]} == {"Claude Code", "Codex"}
    assert not (Path(jp_root_dir) / "new.py").exists()
    # and the MCP endpoint lets it in
    [state] = await agent_calls(url, bearer(made), ("get_notebook_state", {"notebook_path": path}))
    assert not state.is_error and "x = 1" in text_of(state)


def _our_routes(router: Any) -> list[tuple[Any, type]]:
    """Every (matcher, handler class) of this package the server's web app routes to, found by
    walking its routers (so a route added tomorrow is in the list without anyone adding it)."""
    found: list[tuple[Any, type]] = []
    for rule in getattr(router, "rules", []):
        target = rule.target
        if isinstance(target, type):
            if target.__module__.startswith("jupyter_aaep."):
                found.append((rule.matcher, target))
        else:
            found.extend(_our_routes(target))
    return found


def _path_of(pattern: str, samples: dict[str, str]) -> str:
    """A path the route's pattern matches: each named group filled from *samples* (else ``x_1``).
    (tornado's ``reverse`` cannot: it formats with ``%``, and the test's base URL holds ``%40``.)"""
    filled = _GROUP.sub(lambda m: samples.get(m.group(1), "x_1"), pattern.rstrip("$"))
    return re.sub(r"\\(.)", r"\1", filled)


_GROUP = re.compile(r"\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)")
MEANT_FOR_CREDENTIALS = {"MCPHandler"}
"""The only doors an MCP-only credential opens: the MCP endpoint (the stdio bridge goes there too)."""


async def test_every_route_of_the_extension_refuses_a_credential_but_the_mcp_endpoint(
    base, api, mint, jp_serverapp, jp_auth_header, kernels
) -> None:
    """Each route our package registers, each HTTP verb, the credential in the header, in the
    address and beside the person's login: 403 with the sentence, or the route is named."""
    path = new_name()
    await kernels.notebook(path, ["x = 1"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Claude Code")
    other = await mint("Codex")
    samples = {
        "chat_id": chat_id,
        "credential_id": other["id"],
        "server": "cache",
        "name": "plan-0123456789ab.md",  # plan mode's plan files have names of this shape
    }
    routes = _our_routes(jp_serverapp.web_app.default_router) + _our_routes(
        jp_serverapp.web_app.wildcard_router
    )
    names = {cls.__name__ for _, cls in routes}
    # The walk finds what it must: if these are missing, the walk (not the server) is broken.
    assert {
        "ChatsHandler",
        "MCPTrustHandler",
        "RulesHandler",
        "TokenHandler",
        "MCPHandler",
    } <= names
    assert {"ChatSocketHandler", "KernelMessagesHandler", "RequestHandler"} <= names
    login = jp_auth_header["Authorization"].split()[-1]
    leaks: list[str] = []
    table: list[str] = []
    async with httpx.AsyncClient(timeout=10) as client:
        for matcher, handler in routes:
            where = _path_of(matcher.regex.pattern, samples)
            assert matcher.regex.fullmatch(where), (matcher.regex.pattern, where)
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                body = None if method in ("GET", "DELETE") else {"decision": "accept"}
                for how, headers, params in (
                    ("header", bearer(made), None),
                    ("address", {}, {"token": made["token"]}),
                    ("beside the login", bearer(made), {"token": login}),
                ):
                    response = await client.request(
                        method,
                        f"{base.split('/', 3)[0]}//{base.split('/', 3)[2]}{where}",
                        json=body,
                        headers=headers,
                        params=params,
                    )
                    try:
                        said = str(response.json().get("message", ""))
                    except ValueError:
                        said = response.text[:80]
                    row = f"| {method} {where} ({how}) | {handler.__name__} | {response.status_code} |"
                    table.append(row)
                    refused = response.status_code == 403 and said == MCP_ONLY
                    if handler.__name__ in MEANT_FOR_CREDENTIALS:
                        continue  # its own tests: it lets the credential in, in the header only
                    if not refused:
                        leaks.append(f"{row} {said[:120]}")
    print("\nEVERY ROUTE (an MCP-only credential):")
    print("\n".join(table))
    assert not leaks, "\n".join(leaks)
    # nothing happened: no second chat, the other credential lives
    _, chats, _ = await api("chats", params={"notebook_path": path})
    assert len(chats["chats"]) == 1
    _, listed, _ = await api("mcp", "tokens")
    assert {c["name"] for c in listed["credentials"]} == {"Claude Code", "Codex"}


async def test_a_credential_in_the_address_or_unknown_is_refused_with_a_sentence(url, mint) -> None:
    made = await mint("Claude Code")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as client:
        in_query = await client.post(
            url, json=initialize, params={"token": made["token"]}, headers=accept
        )
        unknown = await client.post(
            url, json=initialize, headers={**accept, "Authorization": f"Bearer {PREFIX}nope"}
        )
    assert in_query.status_code == 403 and "Authorization header" in in_query.json()["message"]
    assert unknown.status_code == 403 and unknown.json()["message"] == UNKNOWN_CREDENTIAL


# -- revoked mid-session ----------------------------------------------------------------------------
async def test_a_revoked_credential_is_refused_at_the_next_call_of_an_open_session(
    url, api, mint, sse, jp_root_dir
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["x = 1"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Claude Code (laptop)")
    first_done = threading.Event()
    revoked = threading.Event()
    outcome: dict[str, Any] = {}

    async def agent() -> None:
        async with mcp_client(url, bearer(made)) as client:
            outcome["first"] = await client.call_tool("get_notebook_state", {"notebook_path": path})
            first_done.set()
            while not revoked.is_set():
                await asyncio.sleep(0.05)
            try:
                outcome["second"] = await asyncio.wait_for(
                    client.call_tool("create_cell", {"notebook_path": path, "source": "y = 2"}), 20
                )
            except Exception as error:  # noqa: BLE001 - the refusal is what is tested
                outcome["second"] = error

    async with sse(chat_id) as panel:
        task = asyncio.ensure_future(off_loop(agent))
        started = (await panel.until(is_type("session.started"), 30))[-1]
        while not first_done.is_set():
            await asyncio.sleep(0.05)
        status, _, _ = await api("mcp", "tokens", made["id"], method="DELETE")
        assert status == 204
        revoked.set()
        ended = (await panel.until(is_type("session.completed"), 15))[-1]
        await asyncio.wait_for(asyncio.shield(task), 40)
    assert started["summary_normal"] == f"Claude Code (laptop) is working on {path}."
    assert started["producer"]["agent_name"] == "Claude Code (laptop)"
    assert not outcome["first"].is_error
    second = outcome["second"]
    print("AFTER REVOKING:", repr(second))
    refused = isinstance(second, Exception) or second.is_error
    assert refused, second
    assert ended["summary_normal"] == "Claude Code (laptop) finished: 1 step."
    assert await sources(Path(jp_root_dir) / path) == ["x = 1"]  # the refused edit never happened


# -- the stdio bridge ---------------------------------------------------------------------------------
async def test_the_bridge_signs_in_with_a_credential_and_is_refused_once_revoked(
    base, api, mint, jp_root_dir, tmp_path, sse
) -> None:
    path = write_notebook(Path(jp_root_dir), new_name(), ["z = 3"])
    chat_id = await chat_of_new(api, path)
    made = await mint("Codex (desktop)")
    env = bridge_env(
        AAEP_MCP_CREDENTIAL=made["token"],
        JUPYTER_TOKEN="not-the-token",  # the credential signs in, not this
        JUPYTER_RUNTIME_DIR=str(tmp_path / "empty-runtime"),
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jupyter_aaep.mcp", "--url", base],
        env=env,
        cwd=str(tmp_path),
    )
    async with sse(chat_id) as panel:
        names, (state,) = await asyncio.to_thread(
            through_bridge, params, ("get_notebook_state", {"notebook_path": path})
        )
        events = await panel.until(is_type("session.completed"), 15)
    assert "get_notebook_state" in names
    assert not state.is_error and "z = 3" in text_of(state)
    said = [e.get("summary_normal", "") for e in events]
    assert said[0] == f"Codex (desktop) is working on {path}." and said[-1].startswith(
        "Codex (desktop) finished"
    )
    assert (await api("mcp", "tokens", made["id"], method="DELETE"))[0] == 204
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jupyter_aaep.mcp",
        "--url",
        base,
        env=env,
        cwd=str(tmp_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 1 and out == b""
    assert err.decode().strip().splitlines()[-1] == f"jupyter_aaep.mcp: {REFUSED_CREDENTIAL}"
