"""The approval modes over HTTP: the chat-creation body, the ``approval_mode`` message, guidance
settings and the server's default, with their error sentences."""

from __future__ import annotations

import pytest
from server_helpers import wait_until

from jupyter_aaep.server.app import AAEPExtension
from jupyter_aaep.testing.fake_anthropic import Turn


async def test_a_chat_can_start_in_any_mode_and_switch(api, new_chat) -> None:
    for mode in ("ask", "ask_all", "auto", "plan"):
        status, chat, _ = await api(
            "chats", method="POST", body={"notebook_path": "a.ipynb", "approval_mode": mode}
        )
        assert status == 201 and chat["approval_mode"] == mode
    status, body, _ = await api(
        "chats", method="POST", body={"notebook_path": "a.ipynb", "approval_mode": "review"}
    )
    assert status == 400
    assert body["message"].startswith(
        "approval_mode says 'review', but the approval mode must be one of: ask (Ask before running code), "
        "ask_all (Ask before every change), auto (Auto), plan (Plan first)."
    )

    chat_id = await new_chat()
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "approval_mode", "mode": "ask_all"},
    )
    assert status == 200 and body == {
        "kind": "approval_mode.accepted",
        "chat_id": chat_id,
        "approval_mode": "ask_all",
    }
    _, view, _ = await api("chats", chat_id)
    assert view["approval_mode"] == "ask_all"
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "approval_mode", "mode": "always"},
    )
    assert status == 400 and "ask_all (Ask before every change)" in body["message"]


async def test_guidance_settings_take_the_new_mode(api, new_chat, fake_model, extension) -> None:
    chat_id = await new_chat()
    fake_model.add(Turn(text="Understood."))  # with nothing running, guidance starts a session
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={
            "kind": "guidance",
            "text": "check with me before each change",
            "settings": {"approval_mode": "ask_all"},
        },
    )
    assert status == 202, body
    _, view, _ = await api("chats", chat_id)
    assert view["approval_mode"] == "ask_all"
    chat = extension.runner.get(chat_id)
    await wait_until(lambda: not chat.running, timeout=10, what="the guided session to end")
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"kind": "guidance", "text": "x", "settings": {"approval_mode": "sometimes"}},
    )
    assert status == 400 and "it must be one of: ask (Ask before running code)" in body["message"]


@pytest.mark.parametrize("aaep_config", [{"approval_mode": "ask_all"}])
async def test_the_server_default_can_be_ask_before_every_change(api, extension) -> None:
    _, chat, _ = await api("chats", method="POST", body={"notebook_path": "x.ipynb"})
    assert chat["approval_mode"] == "ask_all"
    assert extension.runner.get(chat["chat_id"]).approval.mode == "ask_all"


def test_the_option_names_every_mode_and_says_what_auto_does_not_protect_against() -> None:
    trait = AAEPExtension.class_traits()["approval_mode"]
    assert list(trait.values) == ["ask", "ask_all", "auto", "plan"] and trait.default_value == "ask"
    assert "'plan' (Plan first)" in trait.help
    assert "'ask_all' (Ask before every change)" in trait.help and "not a sandbox" in trait.help
    assert "never 'auto'" in trait.help


async def test_a_stored_chat_is_listed_with_the_mode_it_comes_back_in(api, extension) -> None:
    """A chat only in the store (after a restart) says the mode it will have when loaded:
    its own ask, ask_all or plan, never auto."""
    made = {}
    for mode in ("ask_all", "auto", "plan"):
        _, chat, _ = await api(
            "chats", method="POST", body={"notebook_path": "kept.ipynb", "approval_mode": mode}
        )
        made[mode] = chat["chat_id"]
    assert extension.store.flush()
    for chat_id in made.values():
        extension.runner._chats.pop(chat_id)  # as after a restart: in the store only
    _, page, _ = await api("chats", params={"notebook_path": "kept.ipynb"})
    listed = {c["chat_id"]: c["approval_mode"] for c in page["chats"]}
    assert listed == {made["ask_all"]: "ask_all", made["auto"]: "ask", made["plan"]: "plan"}
    assert extension.runner.get(made["plan"]).approval.mode == "plan"
    assert extension.runner.get(made["auto"]).approval.mode == "ask"
    assert extension.runner.get(made["ask_all"]).approval.mode == "ask_all"
