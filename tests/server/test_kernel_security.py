"""Only the person approves (issue 16): kernel code cannot approve, kernels cannot pose as each
other, signed requests cannot be replayed, and a kernel's reply reaches the chat that asked.

A real Jupyter server, real kernels started through its sessions API, the real agent loop
against the scripted fake model; the attacks run as code in the kernels, as an attacker's
cell (or a prompt-injected one) would.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle
from server_helpers import SSE

from jupyter_aaep.server.kernel_handlers import kernel_signature
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

ANSWERER = """
import threading, time, datetime
from jupyter_aaep.kernel.client import KernelClient, KernelAPIError
_client = KernelClient.from_environment()
attempts = []

def _stamp():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"

def _answer():
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            for event in _client.status().get("pending", []):
                if str(event.get("type", "")).endswith("awaiting.confirmation"):
                    try:
                        _client.send({"type": "confirmation.reply", "reply_token": event["reply_token"],
                                      "decision": "accept", "subscription_id": "sub_0123456789abcdef",
                                      "timestamp": _stamp()})
                        attempts.append("sent")
                    except KernelAPIError as error:
                        attempts.append(str(error))
        except Exception as error:
            attempts.append(repr(error))
        time.sleep(0.3)

threading.Thread(target=_answer, daemon=True).start()
print("answerer started")
"""
FLAGGED = "import os\nos.system('touch pwned.txt')\n"


def _signed(
    extension: Any, kernel_id: str, method: str, url_path: str, body: bytes = b""
) -> dict[str, str]:
    stamp, nonce = f"{time.time():.3f}", uuid.uuid4().hex
    key = extension.kernel_credentials.for_kernel(kernel_id).encode()
    return {
        "X-AAEP-Kernel-Id": kernel_id,
        "X-AAEP-Kernel-Time": stamp,
        "X-AAEP-Kernel-Nonce": nonce,
        "X-AAEP-Kernel-Signature": kernel_signature(
            key, method, url_path, body, stamp=stamp, nonce=nonce
        ),
    }


async def _chat(api: Any, path: str, mode: str | None = None) -> str:
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201
    if mode is not None:
        await api(
            "chats",
            body["chat_id"],
            "messages",
            method="POST",
            body={"kind": "approval_mode", "mode": mode},
        )
    return str(body["chat_id"])


def _all_refused(attempts: list[str], reason: str) -> bool:
    """Every try was refused for *reason*, except a try that raced the request's own time-out:
    a token no longer pending is ignored with 204 ("sent") and never answers (AAEP §6.3.4)."""
    return any(reason in a for a in attempts) and all(reason in a or a == "sent" for a in attempts)


def _heard(events: list[dict[str, Any]]) -> str:
    return " ".join(
        str(e.get(k, ""))
        for e in events
        for k in ("summary_terse", "summary_normal", "summary_detailed")
    )


@pytest.mark.parametrize("mode", ["auto", "ask"])
async def test_a_background_thread_in_the_kernel_cannot_approve_a_flagged_cell(
    mode, kernels, api, extension, fake_model, sse, jp_root_dir: Path
) -> None:
    extension.confirmation_timeouts = {"low": 4, "medium": 4, "high": 4}
    path = new_name()
    kernel = await kernels.notebook(path, ["print('setup')", FLAGGED])
    assert "answerer started" in await kernel.run(ANSWERER)
    chat_id = await _chat(api, path, mode)
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]), Turn(text="It did not run.")
    )
    async with sse(chat_id):  # the person's panel is open, and the person does not answer
        status, _, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Run the second cell."},
        )
        assert status == 202
        events = await wait_idle(extension, chat_id)
    # The thread tried, and every try was refused with a sentence.
    attempts = json.loads(await kernel.run("import json; print(json.dumps(attempts))"))
    assert attempts and "sent" not in attempts, attempts
    assert all("side panel" in a for a in attempts), attempts
    # The cell did not run, and nobody heard it approved.
    assert not (jp_root_dir / "pwned.txt").exists()
    assert of(events, "awaiting.confirmation"), "the flagged cell must ask, in every mode"
    assert "Approved" not in _heard(events)
    assert not [e for e in of(events, "tool.invoked") if e["tool"] == "run_cell"]


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("auto", "approves automatically"),  # what the setting does not approve, only a person can
        (None, "not shown"),  # ask mode: a thread that never opened the kernel's event stream
    ],
)
async def test_with_kernel_answers_enabled_a_thread_still_cannot_approve(
    mode, reason, kernels, api, extension, fake_model, sse, jp_root_dir: Path
) -> None:
    extension.confirmation_timeouts = {"low": 4, "medium": 4, "high": 4}
    extension.kernel_replies = True
    try:
        path = new_name()
        kernel = await kernels.notebook(path, ["print('setup')", FLAGGED])
        await kernel.run(ANSWERER)
        chat_id = await _chat(api, path, mode)
        fake_model.add(
            Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]), Turn(text="It did not run.")
        )
        async with sse(chat_id):
            await api(
                "chats",
                chat_id,
                "messages",
                method="POST",
                body={"kind": "user_input", "text": "Run cell 2."},
            )
            events = await wait_idle(extension, chat_id)
        attempts = json.loads(await kernel.run("import json; print(json.dumps(attempts))"))
        assert _all_refused(attempts, reason), attempts
        assert not (jp_root_dir / "pwned.txt").exists() and "Approved" not in _heard(events)
    finally:
        extension.kernel_replies = False


ENDPOINTS = [
    ("GET", "status", None),
    ("GET", "tools", None),
    ("PUT", "tools/stolen", {"description": "x"}),
    ("DELETE", "tools/add_numbers", None),
    ("POST", "requests", {"text": "hello"}),
    (
        "POST",
        "subscriptions",
        {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "x",
            "capabilities": {},
        },
    ),
    ("POST", "messages", {"kind": "control", "action": "stop"}),
    ("GET", "events", None),
]


async def test_kernel_a_cannot_act_as_kernel_b_with_anything_it_can_read(
    kernels, kernel_api, extension, jp_serverapp, fake_model
) -> None:
    victim = await kernels.notebook(new_name())
    thief = await kernels.notebook(new_name())
    pid = int((await victim.run("import os; print(os.getpid())")).strip())
    # The thief reads every file of the user's runtime folder (the victim's connection file
    # included), the server's environment and command line, and the victim's environment.
    runtime = jp_serverapp.runtime_dir
    victim_connection = jp_serverapp.kernel_manager.get_kernel(victim.kernel_id).connection_file
    code = f"""
import glob, json, os, re
candidates = set()
for name in glob.glob({str(runtime)!r} + "/**/*", recursive=True):
    try:
        text = open(name, errors="replace").read()
    except OSError:
        continue
    candidates.update(re.findall(r"[A-Za-z0-9_-]{{16,}}", text))
# The server's own environment and command line (the kernel's parent), and its connection file.
for name in (f"/proc/{{os.getppid()}}/environ", f"/proc/{{os.getppid()}}/cmdline", {str(victim_connection)!r}):
    text = open(name, "rb").read().decode(errors="replace")
    candidates.update(re.findall(r"[A-Za-z0-9_-]{{16,}}", text))
environ = open("/proc/{pid}/environ", "rb").read().decode(errors="replace")
pairs = dict(item.split("=", 1) for item in environ.split("\\0") if "=" in item)
print(json.dumps({{"secret_in_environ": pairs.get("AAEP_KERNEL_SECRET"), "candidates": sorted(candidates)}}))
"""
    found = json.loads(await thief.run(code))
    # The victim's credential is no longer readable from /proc/<pid>/environ (scrubbed at load).
    real = extension.kernel_credentials.for_kernel(victim.kernel_id)
    assert found["secret_in_environ"] is not None and real not in found["secret_in_environ"]
    assert real not in found["candidates"]
    keys = [c.encode() for c in found["candidates"]] + [
        found["secret_in_environ"].encode(),
        victim.key,
        extension.kernel_credentials.for_kernel(thief.kernel_id).encode(),
    ]
    for method, endpoint, body in ENDPOINTS:
        for key in keys:
            status, answer = await kernel_api(
                thief, endpoint, method=method, body=body, kernel_id=victim.kernel_id, key=key
            )
            assert status == 403, (method, endpoint, status, answer)
    # And with its own credential, the thief cannot name the victim's chat.
    fake_model.add(Turn(text="Hello."))
    status, created = await kernel_api(victim, "requests", method="POST", body={"text": "x"})
    assert status == 202
    await wait_idle(extension, created["chat_id"])
    victims_chat = created["chat_id"]
    for method, endpoint, body in ENDPOINTS:
        if endpoint.startswith("tools"):
            continue  # tools belong to the kernel, not a chat
        status, answer = await kernel_api(
            thief, endpoint, method=method, body=body, query=f"chat_id={victims_chat}"
        )
        assert status == 403 and "not one of this notebook's chats" in answer["message"], (
            endpoint,
            answer,
        )


async def test_a_signed_request_is_accepted_once_and_only_when_fresh(
    kernels, kernel_api, jp_fetch
) -> None:
    kernel = await kernels.notebook(new_name(), load=False)
    assert (await kernel_api(kernel, "status", nonce="a" * 32))[0] == 200
    status, body = await kernel_api(kernel, "status", replay=kernel_api.last)
    assert status == 403 and "already used" in body["message"]
    # A signature made 2 minutes ago (or ahead) is refused even with a fresh nonce.
    for stamp in (time.time() - 120, time.time() + 120):
        status, body = await kernel_api(kernel, "status", stamp=f"{stamp:.3f}")
        assert status == 403 and "away from the server's clock" in body["message"]
    # After a kernel restart the used signature is still used up; the kernel still works.
    await jp_fetch("api", "kernels", kernel.kernel_id, "restart", method="POST", body=b"")
    await kernel.client.wait_for_ready(timeout=60)
    status, body = await kernel_api(kernel, "status", replay=kernel_api.last)
    assert status == 403
    assert (await kernel_api(kernel, "status"))[0] == 200
    printed = await kernel.run("%load_ext jupyter_aaep\n%aaep status")
    assert "refused" not in printed and "cannot reach" not in printed, printed


async def test_a_kernel_reply_reaches_the_chat_that_asked_and_says_where_it_came_from(
    kernels, kernel_api, api, extension, fake_model, jp_http_port, jp_base_url
) -> None:
    extension.kernel_replies = True
    try:
        path = new_name()
        kernel = await kernels.notebook(path, ["print('from the cell')"])
        asking = await _chat(api, path)
        newest = await _chat(api, path)  # a newer chat of the same notebook, idle
        assert newest != asking
        handshake = {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "kernel-view",
            "capabilities": {"supports_confirmation_reply": True},
        }
        status, accepted = await kernel_api(
            kernel, "subscriptions", method="POST", body=handshake, query=f"chat_id={asking}"
        )
        assert status == 201, accepted
        subscription = accepted["subscription_id"]
        url_path = (
            f"{jp_base_url}aaep/v1/kernel/events?subscription_id={subscription}&chat_id={asking}"
        )
        headers = _signed(extension, kernel.kernel_id, "GET", url_path)
        async with SSE(f"http://127.0.0.1:{jp_http_port}{url_path}", headers=headers) as view:
            assert view.status == 200
            fake_model.add(
                Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="It ran.")
            )
            await api(
                "chats",
                asking,
                "messages",
                method="POST",
                body={"kind": "user_input", "text": "Run it."},
            )
            shown = (
                await view.until(
                    lambda m: str(m.get("type", "")).endswith("awaiting.confirmation"), 30
                )
            )[-1]
            reply = {
                "type": "confirmation.reply",
                "reply_token": shown["reply_token"],
                "decision": "accept",
                "subscription_id": subscription,
                "timestamp": shown["timestamp"],
            }
            status, _ = await kernel_api(
                kernel, "messages", method="POST", body=reply, query=f"chat_id={asking}"
            )
            assert status == 204
            events = await wait_idle(extension, asking)
        approved = [
            e for e in of(events, "state.changed") if e.get("from_state") == "awaiting_input"
        ]
        assert approved[-1]["summary_normal"] == "Approved from the notebook."
        assert [e["tool"] for e in of(events, "tool.invoked")] == ["run_cell"]
        assert (
            not extension.runner.get(newest).running
            and extension.runner.get(newest).session is None
        )
    finally:
        extension.kernel_replies = False


async def test_a_reply_for_another_notebooks_request_is_refused(
    kernels, kernel_api, api, extension, fake_model, sse
) -> None:
    extension.kernel_replies = True
    try:
        path = new_name()
        await kernels.notebook(path, ["print(1)"])
        other = await kernels.notebook(new_name())
        chat_id = await _chat(api, path)
        fake_model.add(
            Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="Stopped.")
        )
        panel = sse(chat_id)
        await panel.__aenter__()
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Run it."},
        )
        chat = extension.runner.get(chat_id)
        from server_helpers import wait_until

        await wait_until(lambda: bool(extension.runner.broker.pending()), what="the confirmation")
        token = extension.runner.broker.pending()[0].token
        reply = {
            "type": "confirmation.reply",
            "reply_token": token,
            "decision": "accept",
            "subscription_id": "sub_0123456789abcdef",
            "timestamp": "2030-01-01T00:00:00.000Z",
        }
        status, body = await kernel_api(other, "messages", method="POST", body=reply)
        assert status == 403 and "another notebook" in body["message"]
        assert chat.running and extension.runner.broker.pending()
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "control", "action": "stop"}
        )
        await wait_idle(extension, chat_id)
        await panel.__aexit__(None, None, None)
    finally:
        extension.kernel_replies = False


async def test_malformed_kernel_tool_schemas_are_refused_at_registration(
    kernels, kernel_api
) -> None:
    kernel = await kernels.notebook(new_name(), load=False)
    for schema in (
        {"type": "object", "properties": {"a": "notadict"}},
        {"type": "object", "properties": {"a": {"anyOf": "xy"}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": "x"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5},
    ):
        status, body = await kernel_api(
            kernel,
            "tools/broken",
            method="PUT",
            body={"description": "Broken.", "input_schema": schema},
        )
        assert (
            status == 400
            and "was not registered" in body["message"]
            and "run the cell again" in body["message"]
        )
    assert (await kernel_api(kernel, "tools"))[1] == {"tools": []}
    status, _ = await kernel_api(
        kernel,
        "tools/fine",
        method="PUT",
        body={
            "description": "Fine.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
    )
    assert status == 200
