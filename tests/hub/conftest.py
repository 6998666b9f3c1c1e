"""One real JupyterHub per test module (see ``hub_harness``), with two real Unix users."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from hub_harness import Hub, create_user, make_workdir, missing, remove_user

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn

POLICY = {"allowed_approval_modes": ["ask", "ask_all"]}
"""What the hub's administrator locks for everyone in these tests: no 'auto'."""


def scripted_model(request: RecordedRequest) -> Turn:
    """'book …': read the notebook, book a room (asks for approval), then say so; 'ping': 'pong'."""
    text = request.last_user_text.lower()
    results = sum(
        1
        for message in request.body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    if "ping" in text:
        return Turn(text="pong")
    if results == 0 and "book" in text:
        return Turn(tool_uses=[ToolUse("get_notebook_state", {})])
    if results == 1:
        return Turn(
            text="Booking it.",
            tool_uses=[ToolUse("book_meeting_room", {"room": "F2", "when": "today"})],
        )
    return Turn(text="The room is booked.")


@pytest.fixture(scope="module")
def org_key() -> str:
    return f"sk-ant-org-{secrets.token_hex(20)}"


@pytest.fixture(scope="module")
def model(org_key: str) -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic(responder=scripted_model, api_key=org_key).start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


@pytest.fixture(scope="module")
def hub(model: FakeAnthropic, org_key: str) -> Iterator[Hub]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    users = []
    workdirs = make_workdir()
    workdir = next(workdirs)
    hub = None
    try:
        users = [create_user(), create_user()]
        hub = Hub(workdir=workdir, model_url=model.base_url, org_key=org_key, users=users)
        hub.start(POLICY)
        hub.spawn_all()
        yield hub
    finally:
        if hub is not None:
            hub.stop()
        for user in users:
            remove_user(user)
        for _ in workdirs:
            pass


@pytest.fixture
def alice(hub: Hub) -> Any:
    return hub.users[0]


@pytest.fixture
def bob(hub: Hub) -> Any:
    return hub.users[1]
