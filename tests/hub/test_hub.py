"""The extension on a real JupyterHub, as a team uses it: two real Unix users, their own servers
behind configurable-http-proxy, the model through the gateway service, an admin policy.

One hub for the whole module (``conftest.hub``); the tests run in file order and the last one
stops a server. About a minute and a half here, most of it starting the hub and two servers.
"""

from __future__ import annotations

import asyncio
import json
import stat
import time
from pathlib import Path

import httpx
import pytest
from hub_client import (
    SSEReader,
    api,
    close,
    confirmation_reply,
    frames_until,
    is_type,
    run_in_kernel,
    websocket,
)
from hub_harness import Hub, User, pids_of, run_as

pytestmark = [
    pytest.mark.hub,
    pytest.mark.slow,
    # Under load (the layers side by side) a connect of this test's own HTTP or WebSocket client
    # to a user's server that was still in progress when its request gave up is left to the
    # garbage collector, which then warns in whichever test runs; it is the client's socket, not
    # the product's, and every answer the tests wait for is still checked.
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

NOTEBOOK = {
    "type": "notebook",
    "content": {
        "cells": [
            {
                "cell_type": "code",
                "source": "rooms = ['F1', 'F2']",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "id": "c1",
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    },
}


async def new_chat(user: User, notebook: str | None = None) -> str:
    if notebook is not None:
        answer = await api(user, "PUT", f"api/contents/{notebook}", NOTEBOOK)
        assert answer.status_code in (200, 201), answer.text
    answer = await api(
        user, "POST", "aaep/v1/chats", {"notebook_path": notebook} if notebook else {}
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["chat_id"])


async def test_each_user_runs_a_session_with_an_approval_over_sse(alice: User) -> None:
    chat_id = await new_chat(alice, "rooms.ipynb")
    async with SSEReader(
        f"{alice.server_url}aaep/v1/chats/{chat_id}/events", alice.token
    ) as stream:
        assert stream.status == 200
        answer = await api(
            alice,
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "user_input", "text": "book F2"},
        )
        assert answer.status_code == 202, answer.text
        seen = await stream.until(is_type("awaiting.confirmation"))
        assert any(
            is_type("tool.completed")(m) for m in seen
        )  # the notebook was read (its room opened)
        reply = await api(
            alice, "POST", f"aaep/v1/chats/{chat_id}/messages", confirmation_reply(seen[-1])
        )
        assert reply.status_code == 204
        after = await stream.until(is_type("session.completed"))
    assert any(is_type("tool.invoked")(m) for m in after)
    assert "The room is booked." in json.dumps(after)


async def test_each_user_runs_a_session_with_an_approval_over_the_websocket(bob: User) -> None:
    chat_id = await new_chat(bob, "rooms.ipynb")
    connection = await websocket(bob, f"aaep/v1/chats/{chat_id}/ws", subprotocols=["aaep.v1"])
    assert connection.selected_subprotocol == "aaep.v1"
    try:
        await connection.write_message(json.dumps({"kind": "user_input", "text": "book F2"}))
        seen = await frames_until(connection, is_type("awaiting.confirmation"))
        assert seen[0]["kind"] == "user_input.accepted" and seen[0]["status"] == 202
        await connection.write_message(json.dumps(confirmation_reply(seen[-1])))
        after = await frames_until(connection, is_type("session.completed"))
    finally:
        await close(connection)
    assert any(is_type("tool.invoked")(m) for m in after)


async def test_percent_aaep_loads_in_kernels_of_a_shared_environment_nobody_can_write(
    alice: User, hub: Hub
) -> None:
    # The users' environment is root-owned: the server could not add the kernel config there.
    assert (
        "could not be written" in hub.log()
        and "--InteractiveShellApp.extra_extensions=jupyter_aaep" in hub.log()
    )
    answer = await api(
        alice,
        "POST",
        "api/sessions",
        {"path": "rooms.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
    )
    assert answer.status_code == 201, answer.text
    kernel_id = answer.json()["kernel"]["id"]
    text, errors = await run_in_kernel(
        alice,
        kernel_id,
        "print('jupyter_aaep' in get_ipython().extension_manager.loaded)\n%aaep status",
    )
    assert errors == [], errors
    assert text.startswith("True\n"), text
    # The magic reached this user's server and found the chat of this notebook.
    assert (
        "UsageError" not in text and "not attached" not in text and "could not" not in text.lower()
    ), text
    # The kernel reaches its own server directly, not through the proxy.
    text, errors = await run_in_kernel(
        alice, kernel_id, "import os; print(os.environ['AAEP_SERVER_URL'])"
    )
    assert errors == [] and f"/user/{alice.name}/" in text and str(hub.port) not in text


async def test_a_user_reaches_nothing_of_the_other(alice: User, bob: User) -> None:
    chats = (await api(bob, "GET", "aaep/v1/chats")).json()["chats"]
    assert chats, "bob has a chat from the earlier test"
    bob_chat = chats[0]["chat_id"]
    for path in (
        "aaep/v1/chats",
        f"aaep/v1/chats/{bob_chat}",
        "api/contents/rooms.ipynb",
        "api/kernels",
    ):
        through_proxy = await api(bob, "GET", path, token=alice.token)
        assert through_proxy.status_code == 403, (path, through_proxy.status_code)
    sent = await api(
        bob,
        "POST",
        f"aaep/v1/chats/{bob_chat}/messages",
        {"kind": "user_input", "text": "hi"},
        token=alice.token,
    )
    assert sent.status_code == 403
    async with SSEReader(f"{bob.server_url}aaep/v1/chats/{bob_chat}/events", alice.token) as stream:
        assert stream.status == 403
    # Bob's chat does not exist on Alice's server either.
    assert (await api(alice, "GET", f"aaep/v1/chats/{bob_chat}")).status_code == 404


def _store(user: User) -> Path:
    return user.home / ".local" / "share" / "jupyter" / "aaep" / "chats.sqlite3"


def test_each_store_is_private_on_disk(alice: User, bob: User) -> None:
    for user in (alice, bob):
        store = _store(user)
        assert store.exists()
        assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
        for path in store.parent.glob("chats.sqlite3*"):
            assert path.stat().st_uid == user.uid
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, (path, oct(path.stat().st_mode))


def test_another_user_cannot_read_the_chat_store(hub: Hub, alice: User, bob: User) -> None:
    probe = run_as(alice, hub.python, f"open({str(_store(bob))!r}, 'rb').read(16)")
    assert probe.returncode != 0 and "PermissionError" in probe.stderr, probe.stderr


async def test_a_locked_approval_mode_is_reported_and_refused_with_a_sentence(alice: User) -> None:
    chat_id = await new_chat(alice)
    state = (await api(alice, "GET", f"aaep/v1/chats/{chat_id}")).json()
    assert state["policy"]["locked"] == ["approval_mode"]
    assert state["policy"]["approval_modes"] == ["ask", "ask_all"]
    assert "Ask before running code or Ask before every change" in state["policy"]["message"]
    refused = await api(
        alice,
        "POST",
        f"aaep/v1/chats/{chat_id}/messages",
        {"kind": "approval_mode", "mode": "auto"},
    )
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        "The approval mode 'Auto' is turned off by the administrator of this server; "
        "choose 'Ask before running code' or 'Ask before every change'. "
        "The chat keeps its current mode."
    )
    assert (await api(alice, "GET", f"aaep/v1/chats/{chat_id}")).json()["approval_mode"] == "ask"
    assert (await api(alice, "POST", "aaep/v1/chats", {"approval_mode": "auto"})).status_code == 403
    allowed = await api(
        alice,
        "POST",
        f"aaep/v1/chats/{chat_id}/messages",
        {"kind": "approval_mode", "mode": "ask_all"},
    )
    assert allowed.status_code == 200


def test_the_gateway_refuses_strangers_and_shows_usage_to_admins_only(
    hub: Hub, alice: User, bob: User
) -> None:
    messages = f"{hub.gateway_url}/v1/messages"
    body = {
        "model": "claude-test",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "ping"}],
    }
    for key in ("not-a-hub-token", hub.org_key):
        refused = httpx.post(
            messages, json=body, headers={"x-api-key": key, "anthropic-version": "2023-06-01"}
        )
        assert (
            refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
        )
    as_service = httpx.post(messages, json=body, headers={"x-api-key": hub.service_token})
    assert as_service.status_code == 403
    usage = httpx.get(
        f"{hub.gateway_url}/usage", headers={"Authorization": f"token {hub.service_token}"}
    ).json()
    for user in (alice, bob):
        account = usage["users"][user.name]
        assert account["requests"] >= 3 and account["tokens"] > 0 and account["cost_usd"] > 0
    own = httpx.get(f"{hub.gateway_url}/usage/{alice.name}", headers={"x-api-key": alice.token})
    assert own.status_code == 200 and list(own.json()["users"]) == [alice.name]
    other = httpx.get(f"{hub.gateway_url}/usage/{bob.name}", headers={"x-api-key": alice.token})
    assert other.status_code == 403
    assert (
        httpx.put(
            f"{hub.gateway_url}/usage/{bob.name}",
            json={"limit_tokens": 1},
            headers={"x-api-key": alice.token},
        ).status_code
        == 403
    )


def test_gateway_overhead_per_request(hub: Hub, bob: User, model: object) -> None:
    """Plain (non-streaming) requests straight to the model and through the gateway, same run."""
    body = {
        "model": "claude-test",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "ping"}],
    }
    headers = {"anthropic-version": "2023-06-01"}

    def timed(url: str, key: str, count: int = 15) -> float:
        with httpx.Client(timeout=30) as client:
            client.post(
                url, json=body, headers={**headers, "x-api-key": key}
            )  # warm the connection
            start = time.perf_counter()
            for _ in range(count):
                answer = client.post(url, json=body, headers={**headers, "x-api-key": key})
                assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "pong"
            return (time.perf_counter() - start) / count

    direct = timed(f"{model.base_url}/v1/messages", hub.org_key)  # type: ignore[attr-defined]
    gateway = timed(f"{hub.gateway_url}/v1/messages", bob.token)
    print(
        f"\ngateway overhead: direct {direct * 1000:.1f} ms, through the gateway {gateway * 1000:.1f} ms "
        f"per request (x{gateway / direct:.2f})"
    )
    assert gateway < direct + 0.5


async def test_a_user_over_budget_hears_why_from_the_agent(hub: Hub, alice: User) -> None:
    admin = {"Authorization": f"token {hub.service_token}"}
    usage = f"{hub.gateway_url}/usage/{alice.name}"
    async with httpx.AsyncClient(headers=admin, timeout=30) as gateway:
        used = (await gateway.get(usage)).json()["users"][alice.name]["tokens"]
        limit = await gateway.put(usage, json={"limit_tokens": used})
        assert (
            limit.status_code == 200
            and limit.json()["users"][alice.name]["effective_limit_tokens"] == used
        )
        chat_id = await new_chat(alice)
        async with SSEReader(
            f"{alice.server_url}aaep/v1/chats/{chat_id}/events", alice.token
        ) as stream:
            await api(
                alice,
                "POST",
                f"aaep/v1/chats/{chat_id}/messages",
                {"kind": "user_input", "text": "ping"},
            )
            seen = await stream.until(
                lambda m: is_type("session.errored")(m) or is_type("session.completed")(m)
            )
        errored = seen[-1]
        assert errored["type"].endswith("session.errored"), errored
        assert errored["error_code"] == "MODEL_BUDGET_EXCEEDED"
        text = json.dumps(errored)
        assert (
            "You have reached your model budget on this JupyterHub" in text
            and "administrator" in text
        )
        after = (await gateway.get(usage)).json()["users"][alice.name]
        assert after["refused"] >= 1 and after["tokens"] == used
        await gateway.put(usage, json={"limit_tokens": None})


def test_no_user_process_can_read_the_organisation_key(hub: Hub, alice: User, bob: User) -> None:
    key = hub.org_key
    scan = (
        "import os, sys\n"
        "key = sys.stdin.read().strip().encode()  # not on our own command line\n"
        "found, unreadable = [], 0\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    for part in ('environ', 'cmdline'):\n"
        "        try:\n"
        "            data = open(f'/proc/{pid}/{part}', 'rb').read()\n"
        "        except OSError:\n"
        "            unreadable += 1\n"
        "            continue\n"
        "        if key in data:\n"
        "            found.append(f'{pid}/{part}')\n"
        "print(found, unreadable)\n"
    )
    for user in (alice, bob):
        assert pids_of(user.uid), f"{user.name} has processes (server, kernels)"
        probe = run_as(user, hub.python, scan, stdin=key)
        assert probe.returncode == 0, probe.stderr
        found, unreadable = probe.stdout.rsplit(" ", 1)
        assert found == "[]", f"{user.name} can read the key in {found}"
        assert int(unreadable) > 0  # other users' and root's environments are closed to them
        # And their own processes never had it: the hub token is their key.
        for pid in pids_of(user.uid):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            assert key.encode() not in environ
    # The gateway (as the hub's user) does hold it: the test is not vacuous.
    holders = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _holds(p, key)]
    assert holders, "the key is in the gateway's environment"


def _holds(proc: Path, key: str) -> bool:
    try:
        return key.encode() in (proc / "environ").read_bytes()
    except OSError:
        return False


async def test_stop_my_server_is_quick_and_runs_our_shutdown(hub: Hub, bob: User) -> None:
    # A session waiting for an approval, a kernel running and a notebook open collaboratively.
    chat_id = await new_chat(bob, "stop.ipynb")
    assert (await api(bob, "POST", "api/kernels", {"name": "python3"})).status_code == 201
    async with SSEReader(f"{bob.server_url}aaep/v1/chats/{chat_id}/events", bob.token) as stream:
        await api(
            bob,
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "user_input", "text": "book F1"},
        )
        await stream.until(is_type("awaiting.confirmation"))
    assert len(pids_of(bob.uid)) >= 2  # the server and at least one kernel
    start = time.monotonic()
    answer = await asyncio.to_thread(hub.api, "DELETE", f"users/{bob.name}/server")
    assert answer.status_code in (202, 204), answer.text
    while hub.server_model(bob) is not None or pids_of(bob.uid):
        assert time.monotonic() - start < 30, f"still running: {pids_of(bob.uid)}"
        await asyncio.sleep(0.1)
    elapsed = time.monotonic() - start
    print(f"\nStop My Server: {elapsed:.1f} s")
    assert elapsed < 15
    log = hub.log()
    assert (
        f"AAEP agent: shutting down the server at /user/{bob.name}/; 1 running session(s) closed"
        in log
    )
    # Started again, the chat is there and the interrupted request can be continued.
    assert (await asyncio.to_thread(hub.api, "POST", f"users/{bob.name}/server")).status_code in (
        201,
        202,
    )
    await asyncio.to_thread(hub.wait_ready, bob)
    chats = (await api(bob, "GET", "aaep/v1/chats")).json()["chats"]
    again = next(chat for chat in chats if chat["chat_id"] == chat_id)
    assert again["can_continue"] is True, again
