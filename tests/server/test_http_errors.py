"""The package's errors reach clients through one mapping (``server/http_errors.py``).

No handler catches ``AAEPError`` itself: the base classes answer one raised anywhere in a verb
with its status and its sentence, in the body jupyter_server gives any ``HTTPError``
(``{"message": sentence, "reason": null}``), and log it as the client error it is (a warning,
no traceback), never as tornado's "500 Unhandled error".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_aaep.errors import (
    AAEPError,
    ChatBusy,
    InvalidInput,
    RequestError,
    SettingLocked,
    UnknownChat,
    UnknownSession,
)
from jupyter_aaep.server.http_errors import http_status

pytestmark = pytest.mark.shared_server

SERVER = Path(__file__).resolve().parents[2] / "jupyter_aaep" / "server"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (UnknownChat("x."), 404),
        (UnknownSession("x."), 404),
        (ChatBusy("x."), 409),
        (SettingLocked("x."), 403),
        (InvalidInput("x."), 400),
        (RequestError(413, "x."), 413),
        (AAEPError("x."), 400),
    ],
)
def test_each_error_class_has_its_status(error: AAEPError, status: int) -> None:
    assert http_status(error) == status


def test_no_handler_maps_errors_itself() -> None:
    """The mapping is applied in the base classes only: no verb repeats the try/except."""
    for module in SERVER.glob("*.py"):
        if module.name == "http_errors.py":
            continue
        text = module.read_text()
        assert "http_error(" not in text, module.name
        assert not re.search(r"except AAEPError as \w+:\s*\n\s*raise web\.HTTPError", text), (
            module.name
        )


def _uncaught(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.levelno >= logging.ERROR]


async def test_errors_raised_in_handlers_answer_with_status_and_sentence(
    api: Callable[..., Any], new_chat: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    chat_id = await new_chat()
    cases: list[tuple[tuple[str, ...], dict[str, Any], int, str]] = [
        # UnknownChat from the runner, raised in the verb
        (("chats", "no-such-chat"), {}, 404, "There is no chat with id 'no-such-chat'."),
        (("chats", "no-such-chat", "variables"), {}, 404, "There is no chat with id"),
        (("chats", "no-such-chat", "progress"), {}, 404, "There is no chat with id"),
        # UnknownSession
        (("chats", chat_id, "sessions", "nope", "steps"), {}, 404, "session"),
        # RequestError raised while reading the body (the base class's body_json)
        (("chats",), {"method": "POST", "raw": "{not json"}, 400, "JSON"),
        (("chats", chat_id, "messages"), {"method": "POST", "raw": "[]"}, 400, "JSON object"),
        # a RequestError from the service, through the SSE handler before any byte is sent
        (("chats", "no-such-chat", "events"), {}, 404, "There is no chat with id"),
        # the kernel endpoints, through their own base class's caller()
        # (a sentence with a "%" in it arrives as written, not as tornado's "%%" format)
        (("kernel", "status"), {}, 403, "does not name a kernel of this server. Use %aaep or"),
    ]
    for parts, kwargs, status, words in cases:
        got, body, headers = await api(*parts, **kwargs)
        assert got == status, (parts, got, body)
        assert headers["Content-Type"].startswith("application/json"), parts
        assert set(body) == {"message", "reason"} and body["reason"] is None, (parts, body)
        assert words in body["message"] and body["message"].rstrip().endswith("."), (parts, body)
        # logged as a client error: the status and the sentence, no traceback
        assert any(
            r.levelno == logging.WARNING
            and r.getMessage().startswith(f"{status} ")
            and body["message"] in r.getMessage()
            and r.exc_info is None
            for r in caplog.records
        ), (parts, [r.getMessage() for r in caplog.records])
    assert _uncaught(caplog.records) == []


async def test_socket_on_an_unknown_chat_is_refused_before_the_upgrade(
    ws: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with pytest.raises(HTTPClientError) as refused:
        await ws("no-such-chat")
    assert refused.value.code == 404
    assert any(
        r.levelno == logging.WARNING and "There is no chat with id 'no-such-chat'" in r.getMessage()
        for r in caplog.records
    )
    assert _uncaught(caplog.records) == []
