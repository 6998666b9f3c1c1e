"""Standing permissions at work (issue 27), with a real server, real kernels and the fake model.

A notebook grant ``run_cell:unflagged`` lets an unflagged run go unasked and says which grant
allowed it; flagged code still asks; the grant does not reach another notebook; after DELETE the
next run asks again; and the card's "don't ask again" choice, sent with the panel's key, makes
the same grant (sent without it, the step is approved but nothing is granted).
"""

from __future__ import annotations

from typing import Any

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, of, wait_idle
from server_helpers import panel_key

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

FLAGGED = "import os\nos.system('ls')"


def _reply(card: dict[str, Any], decision: str, **ours: Any) -> dict[str, Any]:
    return {
        "type": "confirmation.reply",
        "reply_token": card["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decision": decision,
        **ours,
    }


def _asking(message: dict[str, Any]) -> bool:
    return str(message.get("type", "")).endswith("awaiting.confirmation") and not message[
        "extra_context"
    ].get("auto_approved")


async def _chat(api: Any, path: str) -> str:
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    return str(body["chat_id"])


async def _ask(api: Any, chat_id: str, text: str) -> None:
    status, body, _ = await api(
        "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": text}
    )
    assert status == 202, body


async def _granted(
    api: Any, extension: Any, chat_id: str, card: dict[str, Any], wish: dict[str, str], key: str
) -> list[dict[str, Any]]:
    """Approve *card* as the panel does, choosing the grant *wish*; the chat's events once idle."""
    body = _reply(card, "accept", grant=wish, stream_key=key)
    status, _, _ = await api("chats", chat_id, "messages", method="POST", body=body)
    assert status == 204
    return list(await wait_idle(extension, chat_id))


async def test_a_notebook_grant_runs_unflagged_code_unasked_and_only_there(
    kernels, api, sse, extension, fake_model
) -> None:
    path, other = new_name(), new_name()
    await kernels.notebook(path, ["print(6 * 7)", FLAGGED])
    await kernels.notebook(other, ["print(6 * 7)"])
    chat_id = await _chat(api, path)
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        status, grant, _ = await api(
            "permissions",
            method="POST",
            body={
                "rule": "run_cell:unflagged",
                "scope": "notebook",
                "notebook_path": path,
                "stream_key": key,
            },
        )
        assert status == 201, grant
        fake_model.add(
            Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
            Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]),
            Turn(text="One ran, one you refused."),
        )
        await _ask(api, chat_id, "Run both cells.")
        seen = await panel.until(_asking, 60)  # the flagged cell still asks
        flagged = seen[-1]
        assert (
            flagged["extra_context"]["cell_number"] == 2 and flagged["extra_context"]["risk_flags"]
        )
        assert "permission_offers" not in flagged["extra_context"], "no grant covers flagged code"
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body=_reply(flagged, "reject")
        )
        assert status == 204
        events = await wait_idle(extension, chat_id)
    allowed = of(events, "awaiting.confirmation")[0]
    assert allowed["extra_context"]["granted_by"]["id"] == grant["id"]
    assert allowed["summary_normal"] == (
        "Running cell 1: allowed by your permission for unflagged code in this notebook."
    )
    record = next(
        e for e in of(events, "state.changed") if "jaaep_permission" in e.get("extensions", {})
    )
    reply = record["extensions"]["jaaep_permission"]["confirmation_reply"]
    assert reply["decided_by"] == f"grant:{grant['id']}" and reply["decision"] == "accept"
    assert reply["reply_token"] == allowed["reply_token"]
    assert (
        record["summary_normal"]
        == "Allowed by your permission for unflagged code in this notebook."
    )
    assert any(c.endswith("#standing-permissions") for c in record["@context"][1:])
    ran = [e for e in of(events, "tool.completed") if e["status"] == "success"]
    assert len(ran) == 1 and "42" in str(ran[0])

    # Another notebook: the grant does not reach it.
    other_chat = await _chat(api, other)
    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="ok"))
    async with sse(other_chat) as panel:
        await _ask(api, other_chat, "Run it.")
        card = (await panel.until(_asking, 60))[-1]
        assert "granted_by" not in card["extra_context"]
        await api("chats", other_chat, "messages", method="POST", body=_reply(card, "reject"))
        await wait_idle(extension, other_chat)

    # Taken back: the next run asks again.
    status, _, _ = await api("permissions", grant["id"], method="DELETE")
    assert status == 204
    _, listed, _ = await api("permissions")
    assert listed["permissions"] == []
    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="ok"))
    async with sse(chat_id) as panel:
        await _ask(api, chat_id, "Run the first cell again.")
        card = (await panel.until(_asking, 60))[-1]
        assert card["extra_context"]["cell_number"] == 1
        offers = card["extra_context"]["permission_offers"]
        assert offers == [
            {
                "rule": "run_cell:unflagged",
                "scope": scope,
                "label": f"Approve, and don't ask again for unflagged code in this {scope}",
            }
            for scope in ("chat", "notebook")
        ], "the narrower first"
        await api("chats", chat_id, "messages", method="POST", body=_reply(card, "reject"))
        await wait_idle(extension, chat_id)


async def test_the_cards_choice_grants_only_with_the_panels_key(
    kernels, api, sse, extension, fake_model
) -> None:
    path = new_name()
    await kernels.notebook(path, ["print(1)"])
    chat_id = await _chat(api, path)
    wish = {"rule": "run_cell:unflagged", "scope": "notebook"}
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="Ran it three times."),
    )
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        await _ask(api, chat_id, "Run it three times.")
        # An unkeyed program (or an outside agent) answers with a grant: the step is approved
        # as before, the grant is refused and said.
        card = (await panel.until(_asking, 60))[-1]
        await api(
            "chats", chat_id, "messages", method="POST", body=_reply(card, "accept", grant=wish)
        )
        said = await panel.until(
            lambda m: "it was not given" in str(m.get("summary_normal", "")), 30
        )
        assert said
        _, listed, _ = await api("permissions")
        assert listed["permissions"] == []
        # The panel's own answer with the grant: approved and granted.
        card = (await panel.until(_asking, 60))[-1]
        events = await _granted(api, extension, chat_id, card, wish, key)
    (grant,) = (await api("permissions"))[1]["permissions"]
    assert (grant["rule"], grant["scope"], grant["notebook_path"]) == (
        "run_cell:unflagged",
        "notebook",
        path,
    )
    assert grant["sentence"].startswith(f"Without asking: unflagged code in {path}, given ")
    # the third run went through on the grant, unasked
    third = of(events, "awaiting.confirmation")[-1]
    assert third["extra_context"]["granted_by"]["id"] == grant["id"]
    assert any("Permission given" in str(e.get("summary_normal")) for e in events)


async def test_the_cards_chat_choice_holds_in_that_chat_only(
    kernels, api, sse, extension, fake_model
) -> None:
    """The narrower choice: "in this chat" lets the chat's next unflagged run go unasked, while
    a second chat on the same notebook still asks (and offers both again)."""
    path = new_name()
    await kernels.notebook(path, ["print(1)"])
    chat_id, other_chat = await _chat(api, path), await _chat(api, path)
    wish = {"rule": "run_cell:unflagged", "scope": "chat"}
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(text="Ran it twice."),
    )
    async with sse(chat_id) as panel:
        key = await panel_key(api, panel, chat_id)
        await _ask(api, chat_id, "Run it twice.")
        card = (await panel.until(_asking, 60))[-1]
        assert [o["scope"] for o in card["extra_context"]["permission_offers"]] == [
            "chat",
            "notebook",
        ]
        events = await _granted(api, extension, chat_id, card, wish, key)
    (grant,) = (await api("permissions"))[1]["permissions"]
    assert (grant["rule"], grant["scope"], grant["chat_id"]) == (
        "run_cell:unflagged",
        "chat",
        chat_id,
    )
    named = "Without asking: unflagged code in the chat “Run it twice.”, given "
    assert grant["sentence"].startswith(named), grant["sentence"]
    assert f"1. {named}" in (await api("permissions"))[1]["sentence"], "the list, spoken"
    second = of(events, "awaiting.confirmation")[-1]
    assert second["extra_context"]["granted_by"]["id"] == grant["id"], "unasked in this chat"
    assert second["summary_normal"].endswith(
        "allowed by your permission for unflagged code in this chat."
    ), second["summary_normal"]

    fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="ok"))
    async with sse(other_chat) as panel:
        await _ask(api, other_chat, "Run it.")
        card = (await panel.until(_asking, 60))[-1]
        assert "granted_by" not in card["extra_context"], "another chat still asks"
        assert len(card["extra_context"]["permission_offers"]) == 2
        await api("chats", other_chat, "messages", method="POST", body=_reply(card, "reject"))
        await wait_idle(extension, other_chat)


GRANTER = """
import json, urllib.request, urllib.error
from jupyter_aaep.kernel.client import KernelClient
_client = KernelClient.from_environment()
_url = _client.server_url + "aaep/v1/permissions"
_body = json.dumps({"rule": "run_cell:unflagged", "scope": "always"}).encode()
_request = urllib.request.Request(
    _url, data=_body, method="POST",
    headers={**_client.headers("POST", _url, _body), "Content-Type": "application/json"})
try:
    urllib.request.urlopen(_request, timeout=10)
    print("GRANTED")
except urllib.error.HTTPError as error:
    print("refused", error.code)
"""


async def test_kernel_code_cannot_give_itself_a_permission(
    kernels, kernel_api, api, sse, extension, fake_model, jp_http_port, jp_base_url
) -> None:
    """As an attacker's (or a prompt-injected) cell: the kernel's own credential does not open
    the permissions route, and a reply sent through the kernel's route with a grant riding
    along approves nothing and grants nothing, even with kernel answers turned on."""
    from server_helpers import SSE
    from test_kernel_security import _signed

    path = new_name()
    kernel = await kernels.notebook(path, ["print(1)"])
    printed = await kernel.run(GRANTER)
    assert "refused 403" in printed and "GRANTED" not in printed, printed
    extension.kernel_replies = True
    try:
        chat_id = await _chat(api, path)
        handshake = {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "kernel-view",
            "capabilities": {"supports_confirmation_reply": True},
        }
        status, accepted = await kernel_api(
            kernel, "subscriptions", method="POST", body=handshake, query=f"chat_id={chat_id}"
        )
        assert status == 201, accepted
        subscription = accepted["subscription_id"]
        url_path = (
            f"{jp_base_url}aaep/v1/kernel/events?subscription_id={subscription}&chat_id={chat_id}"
        )
        headers = _signed(extension, kernel.kernel_id, "GET", url_path)
        fake_model.add(Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]), Turn(text="ok"))
        async with SSE(f"http://127.0.0.1:{jp_http_port}{url_path}", headers=headers) as view:
            await _ask(api, chat_id, "Run it.")
            shown = (await view.until(_asking, 30))[-1]
            assert shown["extra_context"]["permission_offers"][-1]["rule"] == "run_cell:unflagged"
            reply = {
                "type": "confirmation.reply",
                "reply_token": shown["reply_token"],
                "decision": "accept",
                "subscription_id": subscription,
                "timestamp": shown["timestamp"],
                "grant": {"rule": "run_cell:unflagged", "scope": "notebook"},
            }
            await kernel_api(
                kernel, "messages", method="POST", body=reply, query=f"chat_id={chat_id}"
            )
            _, listed, _ = await api("permissions")
            assert listed["permissions"] == []
            chat = extension.runner.get(chat_id)
            assert chat.session is not None and any(
                r.token == shown["reply_token"] for r in extension.runner.broker.pending()
            ), "the reply with a grant riding along was not taken as an approval"
            refuse = {k: v for k, v in reply.items() if k != "grant"} | {"decision": "reject"}
            await kernel_api(
                kernel, "messages", method="POST", body=refuse, query=f"chat_id={chat_id}"
            )
            await wait_idle(extension, chat_id)
    finally:
        extension.kernel_replies = False
    assert (await api("permissions"))[1]["permissions"] == []
