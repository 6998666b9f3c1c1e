"""What a test on a shared server still gets fresh (``shared_server.py``): the first test leaves
a file, a request, a Jupyter session and a kernel behind; the second finds none of them, on the
same server."""

from __future__ import annotations

import json

import pytest
from server_helpers import of_type

from jupyter_aaep.testing.fake_anthropic import Turn

pytestmark = pytest.mark.shared_server


async def test_one_leaves_things_behind(api, new_chat, fake_model, sse, jp_fetch, jp_root_dir):
    (jp_root_dir / "left.ipynb").write_text("{}")
    fake_model.add(Turn(text="Hello."))
    chat_id = await new_chat()
    async with sse(chat_id) as stream:
        await api(
            "chats", chat_id, "messages", method="POST", body={"kind": "user_input", "text": "hi"}
        )
        await stream.until(of_type("session.completed"))
    assert len(fake_model.requests) == 1
    body = json.dumps(
        {"path": "left.ipynb", "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    )
    await jp_fetch("api", "sessions", method="POST", body=body)


async def test_two_finds_none_of_them(jp_serverapp, jp_root_dir, fake_model, api) -> None:
    assert list(jp_root_dir.iterdir()) == []
    assert fake_model.requests == [] and fake_model.problems == []
    assert await jp_serverapp.session_manager.list_sessions() == []
    assert jp_serverapp.kernel_manager.list_kernel_ids() == []
    status, chats, _ = await api("chats")
    assert status == 200 and len(chats["chats"]) >= 1  # the first test's chat: the server is shared
