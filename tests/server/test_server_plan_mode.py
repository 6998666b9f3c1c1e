"""Plan mode over HTTP: a chat in plan mode, its one plan card on the SSE stream, the person's
choice as an AAEP reply posted to the chat, the plan's file under the server root."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_helpers import of_type

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.aaep.ids import new_subscription_id
from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.shared_server

PLAN = {"summary": "Tell Ada", "steps": ["Send Ada the report by email"]}
EMAIL = {"to": "ada@example.org", "subject": "Report", "body": "Attached."}


def reply(confirmation: dict, decision: str = "accept", **extra: object) -> dict:
    return {
        "type": "confirmation.reply",
        "reply_token": confirmation["reply_token"],
        "subscription_id": new_subscription_id(),
        "timestamp": SessionClock().now(),
        "decision": decision,
        **extra,
    }


async def test_a_plan_chosen_to_ask_before_each_step_asks_before_the_irreversible_step(
    api, fake_model, sse, jp_root_dir: Path
) -> None:
    status, chat, _ = await api(
        "chats", method="POST", body={"notebook_path": "a.ipynb", "approval_mode": "plan"}
    )
    assert status == 201 and chat["approval_mode"] == "plan"
    chat_id = chat["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("send_email", EMAIL)]),  # careless: refused, nothing asked
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(tool_uses=[ToolUse("send_email", EMAIL)]),
        Turn(tool_uses=[ToolUse("plan_step", {"step": 1, "status": "done"})]),
        Turn(text="Sent."),
    )
    async with sse(chat_id) as stream:
        status, _, _ = await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "go"}
        )
        assert status == 202
        card = (await stream.until(of_type("awaiting.confirmation"), timeout=20))[-1]
        plan = card["extra_context"]["plan"]
        assert plan["steps"] == PLAN["steps"] and (jp_root_dir / plan["file"]).is_file()
        offered = [t["name"] for t in fake_model.requests[0].body["tools"]]
        assert "send_email" not in offered and "fetch_data" in offered and "propose_plan" in offered
        choice = reply(card, modified_action={"plan_choice": "ask_each_step"})
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=choice)
        assert status == 204
        email = (await stream.until(of_type("awaiting.confirmation"), timeout=20))[-1]
        assert email["extra_context"]["tool"] == "send_email"  # asked, as chosen
        status, _, _ = await api("chats", chat_id, "messages", method="POST", body=reply(email))
        events = await stream.until(of_type("session.completed"), timeout=20)
    step = next(e for e in events if of_type("progress.updated")(e) and e["progress"].get("step"))
    assert step["summary_normal"] == "Step 1 of 1 done: Send Ada the report by email."
    assert "All 1 step of the plan ran." in events[-1]["summary_normal"]


async def test_a_modified_action_on_an_ordinary_confirmation_is_still_ignored(
    api, new_chat, fake_model, sse
) -> None:
    """Only the plan card takes a modified action; on any other card it counts for nothing."""
    chat_id = await new_chat()
    fake_model.add(Turn(tool_uses=[ToolUse("send_email", EMAIL)]), Turn(text="Not sent."))
    async with sse(chat_id) as stream:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "go"}
        )
        card = (await stream.until(of_type("awaiting.confirmation"), timeout=20))[-1]
        sneaky = reply(card, modified_action={"plan_choice": "ask_each_step"})
        await api("chats", chat_id, "messages", method="POST", body=sneaky)
        await api("chats", chat_id, "messages", method="POST", body=reply(card, "reject"))
        events = await stream.until(of_type("session.completed"), timeout=20)
    assert not [e for e in events if of_type("tool.invoked")(e)]


async def test_the_panels_editor_reads_and_saves_the_plan_and_the_agent_follows_the_save(
    api, fake_model, sse, jp_root_dir: Path
) -> None:
    """The hidden plan folder is not served by the contents API; the panel's drive reads and
    saves it through aaep/v1/plans/{name}, and the saved text is what the model is told."""
    _, chat, _ = await api(
        "chats", method="POST", body={"notebook_path": "a.ipynb", "approval_mode": "plan"}
    )
    chat_id = chat["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("propose_plan", PLAN)]),
        Turn(text="I will send it to Grace instead."),
    )
    async with sse(chat_id) as stream:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "go"}
        )
        card = (await stream.until(of_type("awaiting.confirmation"), timeout=20))[-1]
        name = card["extra_context"]["plan"]["file"].rsplit("/", 1)[-1]
        status, body, _ = await api("plans", name)
        assert status == 200 and "1. Send Ada the report by email" in body["content"]
        edited = body["content"].replace("Send Ada", "Send Grace")
        status, _, _ = await api("plans", name, method="PUT", body={"content": edited})
        assert status == 200
        assert "Send Grace" in (jp_root_dir / ".aaep" / "plans" / name).read_text()
        status, body, _ = await api("plans", name, method="PUT", body={"text": edited})
        assert status == 400 and "content" in body["message"]
        status, _, _ = await api("plans", "plan-000000000000.md")
        assert status == 404
        await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body=reply(card, "reject", decision_rationale="Grace, not Ada."),
        )
        await stream.until(of_type("session.completed"), timeout=20)
    told = str(fake_model.requests[1].body["messages"][-1]["content"])
    assert "Their comment: Grace, not Ada." in told
    assert "Step 1 now reads: 'Send Grace the report by email'" in told
