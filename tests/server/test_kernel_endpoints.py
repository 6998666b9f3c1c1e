"""``aaep/v1/kernel/...`` with real kernels of a real Jupyter server (issue 12, security and API).

The kernels are started through the sessions API, as JupyterLab starts them, and load the
extension with ``%load_ext jupyter_aaep``; ``@aaep_tool`` in a cell registers through the
kernel's own signed client (``jupyter_aaep.kernel.client``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle
from server_helpers import SSE, wait_until
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from jupyter_aaep.testing.fake_anthropic import Turn

pytestmark = pytest.mark.slow

ADD = '''
from jupyter_aaep import aaep_tool

@aaep_tool
def add_numbers(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b
'''


async def _get(url: str, headers: dict[str, str]) -> int:
    try:
        response = await AsyncHTTPClient().fetch(url, headers=headers, request_timeout=10)
    except HTTPClientError as error:
        return error.code
    return response.code


async def test_the_kernel_credential_is_required_and_opens_nothing_else(
    kernels, kernel_api, jp_http_port, jp_base_url, jp_auth_header, extension
) -> None:
    kernel = await kernels.notebook(new_name())
    assert (await kernel_api(kernel, "status"))[0] == 200
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}aaep/v1/"
    # Jupyter's login does not stand in for the credential.
    assert await _get(base + "kernel/status", dict(jp_auth_header)) == 403
    status, body = await kernel_api(None, "status", headers=dict(jp_auth_header))
    assert status == 403 and "X-AAEP-Kernel-Id" in body["message"]
    # A wrong key or no signature: 403 with a sentence.
    status, body = await kernel_api(kernel, "status", key=b"wrong")
    assert status == 403 and "signature is wrong" in body["message"]
    status, body = await kernel_api(kernel, "status", sign=False)
    assert status == 403 and "request is refused" in body["message"]
    # The signed headers open nothing else: every other AAEP endpoint still wants the login.
    await kernel_api(kernel, "status")
    signed = kernel_api.last
    for path in ("chats", "manifest", "events"):
        assert await _get(base + path, signed) == 403, path
    assert (
        await _get(base + "chats", dict(jp_auth_header)) == 200
    )  # (and the login does open those)


async def test_a_kernel_cannot_sign_as_another_kernel(kernels, kernel_api, extension) -> None:
    mine = await kernels.notebook(new_name(), load=False)
    other = await kernels.notebook(new_name(), load=False)
    # The other kernel knows its own credential, and my connection key (the runtime folder), not my credential.
    for key in (extension.kernel_credentials.for_kernel(other.kernel_id).encode(), mine.key):
        status, body = await kernel_api(
            other,
            "tools/stolen",
            method="PUT",
            kernel_id=mine.kernel_id,
            key=key,
            body={"description": "x"},
        )
        assert status == 403 and "signature is wrong" in body["message"]
    status, body = await kernel_api(mine, "status", kernel_id="not-a-kernel")
    assert status == 403 and "does not name a kernel" in body["message"]
    # A signature over another path does not fit this request.
    status, _ = await kernel_api(mine, "tools", headers={"X-AAEP-Kernel-Signature": "0" * 64})
    assert status == 403


async def test_a_kernel_without_a_notebook_gets_409(kernels, kernel_api) -> None:
    bare = await kernels.bare()
    status, body = await kernel_api(bare, "status")
    assert status == 409 and "not attached to a notebook" in body["message"]


async def test_tools_are_registered_listed_replaced_and_removed(kernels, kernel_api, api) -> None:
    path = new_name()
    kernel = await kernels.notebook(path)
    printed = await kernel.run(ADD)
    assert "add_numbers is ready" in printed, printed
    status, body = await kernel_api(kernel, "tools")
    assert status == 200 and [t["name"] for t in body["tools"]] == ["add_numbers"]
    tool = body["tools"][0]
    assert tool["input_schema"]["required"] == ["a"] and tool["risk_level"] == "low"
    assert tool["require_confirmation"] is False and tool["description"].startswith(
        "Add two numbers"
    )
    # Re-running the cell with other metadata replaces it.
    await kernel.run(ADD.replace("@aaep_tool", "@aaep_tool(risk_level='high')"))
    _, body = await kernel_api(kernel, "tools")
    assert [(t["name"], t["risk_level"], t["require_confirmation"]) for t in body["tools"]] == [
        ("add_numbers", "high", True)
    ]
    status, body = await kernel_api(kernel, "status")
    assert status == 200 and body["notebook_path"] == path and body["tools"] == ["add_numbers"]
    assert body["chat_id"] is None and body["status"] == "idle" and body["model_configured"] is True
    # A built-in name is refused; bad bodies are 400 with a sentence.
    status, body = await kernel_api(
        kernel, "tools/run_cell", method="PUT", body={"description": "mine"}
    )
    assert status == 409 and "built-in tool" in body["message"]
    status, body = await kernel_api(
        kernel, "tools/x", method="PUT", body={"description": "d", "risk_level": "huge"}
    )
    assert status == 400 and "risk_level" in body["message"]
    status, body = await kernel_api(
        kernel, "tools/x", method="PUT", body={"input_schema": {"type": "object"}}
    )
    assert status == 400 and "description" in body["message"]
    # %aaep tools --remove deletes it; a second delete is 404.
    await kernel.run("%aaep tools --remove add_numbers")
    assert (await kernel_api(kernel, "tools"))[1] == {"tools": []}
    status, body = await kernel_api(kernel, "tools/add_numbers", method="DELETE")
    assert status == 404 and "no tool named" in body["message"]


async def test_a_kernel_restart_drops_its_tools(kernels, kernel_api, jp_fetch) -> None:
    kernel = await kernels.notebook(new_name())
    await kernel.run(ADD)
    assert [t["name"] for t in (await kernel_api(kernel, "tools"))[1]["tools"]] == ["add_numbers"]
    await jp_fetch("api", "kernels", kernel.kernel_id, "restart", method="POST", body=b"")
    await kernel.client.wait_for_ready(timeout=60)
    status, body = await kernel_api(kernel, "tools")
    assert status == 200 and body["tools"] == []


async def test_a_request_starts_a_session_in_the_notebooks_chat_with_the_context_for_the_model(
    kernels, kernel_api, api, extension, fake_model
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path)
    fake_model.add(Turn(text="The frame has three rows."), Turn(text="You asked about df."))
    context = [
        {"name": "df", "description": "DataFrame, 3 rows x 2 columns: a (int64), b (object)"}
    ]
    status, body = await kernel_api(
        kernel, "requests", method="POST", body={"text": "Describe {df} please", "context": context}
    )
    assert status == 202 and body["status"] == "started", body
    chat_id = body["chat_id"]
    events = await wait_idle(extension, chat_id)
    started = of(events, "session.started")[0]
    assert started["request_text"] == "Describe {df} please"  # people see the request only
    sent = fake_model.requests[0].body["messages"][-1]["content"]
    text = sent if isinstance(sent, str) else " ".join(b.get("text", "") for b in sent)
    assert (
        "<kernel_variables>" in text
        and "3 rows x 2 columns" in text
        and text.startswith("Describe {df}")
    )
    # It is the notebook's chat, the one the panel lists; a follow-up from the panel has the same history.
    status, listing, _ = await api("chats", params={"notebook_path": path})
    assert [c["chat_id"] for c in listing["chats"]] == [chat_id]
    await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "user_input", "text": "What did I ask?"},
    )
    await wait_idle(extension, chat_id)
    history = json.dumps(fake_model.requests[1].body["messages"])
    assert "3 rows x 2 columns" in history and "What did I ask?" in history
    status, body = await kernel_api(kernel, "status")
    assert body["chat_id"] == chat_id and body["status"] == "idle"
    # Bad requests say what is wrong.
    status, body = await kernel_api(kernel, "requests", method="POST", body={"text": " "})
    assert status == 400 and "non-empty" in body["message"]
    status, body = await kernel_api(
        kernel, "requests", method="POST", body={"text": "x", "context": [{"name": 1}]}
    )
    assert status == 400 and "context item" in body["message"]


async def test_a_request_while_the_agent_works_is_guidance(
    kernels, kernel_api, extension, fake_model
) -> None:
    kernel = await kernels.notebook(new_name())
    fake_model.add(
        Turn(text="Working on it slowly.", delay=1.5), Turn(text="Done with the guidance.")
    )
    _, first = await kernel_api(kernel, "requests", method="POST", body={"text": "Start"})
    chat = extension.runner.get(first["chat_id"])
    await wait_until(lambda: chat.working, what="the agent to work")
    status, body = await kernel_api(
        kernel, "requests", method="POST", body={"text": "Also plot it"}
    )
    assert status == 202 and body["status"] == "guidance" and body["chat_id"] == first["chat_id"]
    await wait_idle(extension, first["chat_id"])
    assert "Also plot it" in json.dumps(fake_model.requests[-1].body["messages"])


async def test_subscription_events_and_messages_for_the_kernels_chat(
    kernels, kernel_api, extension, fake_model, jp_http_port, jp_base_url
) -> None:
    kernel = await kernels.notebook(new_name())
    handshake = {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "kernel-view",
        "capabilities": {"supports_confirmation_reply": True},
    }
    status, accepted = await kernel_api(kernel, "subscriptions", method="POST", body=handshake)
    assert status == 201 and accepted["type"] == "subscription.accepted", accepted
    subscription = accepted["subscription_id"]
    path = f"events?subscription_id={subscription}"
    url_path = f"{jp_base_url}aaep/v1/kernel/{path}"
    import time as _time
    import uuid as _uuid

    from jupyter_aaep.server.kernel_handlers import kernel_signature

    stamp, nonce = f"{_time.time():.3f}", _uuid.uuid4().hex
    key = extension.kernel_credentials.for_kernel(kernel.kernel_id).encode()
    headers = {
        "X-AAEP-Kernel-Id": kernel.kernel_id,
        "X-AAEP-Kernel-Time": stamp,
        "X-AAEP-Kernel-Nonce": nonce,
        "X-AAEP-Kernel-Signature": kernel_signature(
            key, "GET", url_path, b"", stamp=stamp, nonce=nonce
        ),
    }
    fake_model.add(Turn(text="Hello from the agent."))
    async with SSE(f"http://127.0.0.1:{jp_http_port}{url_path}", headers=headers) as stream:
        assert stream.status == 200
        status, body = await kernel_api(
            kernel, "requests", method="POST", body={"text": "Say hello"}
        )
        assert status == 202
        seen = await stream.until(
            lambda m: str(m.get("type", "")).endswith("session.completed"), timeout=30
        )
    assert any(str(m.get("type", "")).endswith("session.started") for m in seen)
    # Control for the kernel's own chat: pause with nothing running is answered, not refused.
    status, body = await kernel_api(
        kernel, "messages", method="POST", body={"kind": "control", "action": "pause"}
    )
    assert status == 200 and body["kind"] == "control.accepted"
    # The SSE endpoint is refused without the signature like the others.
    bad: dict[str, Any] = headers  # the same signed request again: used up

    try:
        await AsyncHTTPClient().fetch(
            f"http://127.0.0.1:{jp_http_port}{url_path}", headers=bad, request_timeout=10
        )
        raise AssertionError("the stream opened with a bad signature")
    except HTTPClientError as error:
        assert error.code == 403


class TestWhenTheServerRequiresLoginEverywhere:
    """``ServerApp.allow_unauthenticated_access = False``: the kernel endpoints still take the
    kernel's credential (they are marked as authenticating themselves), and only that."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: dict[str, Any]) -> dict[str, Any]:
        return {
            **jp_server_config,
            "ServerApp": {**jp_server_config["ServerApp"], "allow_unauthenticated_access": False},
        }

    async def test_the_kernel_endpoints_work(self, kernels, kernel_api, jp_serverapp) -> None:
        assert jp_serverapp.allow_unauthenticated_access is False
        kernel = await kernels.notebook(new_name())
        await kernel.run(ADD)
        status, body = await kernel_api(kernel, "tools")
        assert status == 200 and [t["name"] for t in body["tools"]] == ["add_numbers"]
        assert (await kernel_api(kernel, "tools", key=b"wrong"))[0] == 403


async def test_approvals_from_the_notebook_are_off_by_default(
    kernels, kernel_api, extension
) -> None:
    kernel = await kernels.notebook(new_name())
    reply = {
        "type": "confirmation.reply",
        "reply_token": "rpl_0123456789abcdef",
        "decision": "accept",
        "subscription_id": "sub_0123456789",
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    assert extension.kernel_replies is False
    status, body = await kernel_api(kernel, "messages", method="POST", body=reply)
    assert status == 403 and "turned off" in body["message"] and "side panel" in body["message"]
    # Everything else the kernel may do still works, and the widget learns to send people to the panel.
    status, body = await kernel_api(kernel, "status")
    assert status == 200 and body["confirm_here"] is False
    extension.kernel_replies = True
    try:
        # On, a reply nobody waits for is accepted and ignored, as on every endpoint (§6.3.4).
        status, _ = await kernel_api(kernel, "messages", method="POST", body=reply)
        assert status == 204
        assert (await kernel_api(kernel, "status"))[1]["confirm_here"] is True
    finally:
        extension.kernel_replies = False
