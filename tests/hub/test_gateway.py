"""The model gateway in this process: the real SDK through it to the scripted model, with a
stand-in for the hub's ``GET /hub/api/user`` (the real hub is in ``test_hub.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from jupyter_aaep.agent.errors import describe_model_error
from jupyter_aaep.hub.gateway import Gateway, UsageCounter, make_app
from jupyter_aaep.hub.ledger import Ledger
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

USERS = {
    "tok-ada": {"kind": "user", "name": "ada", "admin": False, "scopes": []},
    "tok-root": {"kind": "user", "name": "root", "admin": True, "scopes": []},
    "tok-svc": {"kind": "service", "name": "svc", "scopes": []},
}


class HubUser(web.RequestHandler):
    def get(self) -> None:
        scheme, _, token = self.request.headers.get("Authorization", "").partition(" ")
        model = USERS.get(token) if scheme == "token" else None
        if model is None:
            raise web.HTTPError(403)
        self.finish(model)


def serve(app: web.Application) -> tuple[HTTPServer, int]:
    sock, port = bind_unused_port()
    server = HTTPServer(app)
    server.add_sockets([sock])
    return server, port


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    fake = FakeAnthropic(
        [Turn(text="Hello there, Ada.", input_tokens=100, output_tokens=20)] * 3, api_key="sk-org"
    ).start()
    hub, hub_port = serve(web.Application([(r"/hub/api/user", HubUser)]))
    ledger = Ledger(tmp_path / "usage.json", limit_tokens=250)
    gateway = Gateway(
        hub_api_url=f"http://127.0.0.1:{hub_port}/hub/api",
        upstream=fake.base_url,
        key="sk-org",
        ledger=ledger,
    )
    server, port = serve(make_app(gateway, "/services/gw/"))
    yield {
        "fake": fake,
        "ledger": ledger,
        "url": f"http://127.0.0.1:{port}/services/gw",
        "path": tmp_path / "usage.json",
    }
    server.stop()
    hub.stop()
    await gateway.client.aclose()
    fake.stop()


def client(url: str, key: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0)


async def test_a_user_streams_through_the_gateway_and_is_counted_then_refused_over_budget(
    setup: dict[str, Any],
) -> None:
    async with client(setup["url"], "tok-ada") as sdk:
        await _spend_and_get_refused(sdk, setup)


async def _spend_and_get_refused(sdk: anthropic.AsyncAnthropic, setup: dict[str, Any]) -> None:
    for _ in range(2):
        async with sdk.messages.stream(
            model="claude-sonnet-5-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            text = "".join([chunk async for chunk in stream.text_stream])
        assert text == "Hello there, Ada."
    # The upstream saw the organisation's key, never the user's hub token.
    assert [r.headers.get("x-api-key") for r in setup["fake"].requests] == ["sk-org", "sk-org"]
    account = setup["ledger"].accounts["ada"]
    assert (account.tokens, account.requests) == (240, 2) and account.cost_usd == pytest.approx(
        2 * (100 * 3 + 20 * 15) / 1e6
    )
    assert json.loads(setup["path"].read_text())["users"]["ada"]["tokens"] == 240
    assert setup["path"].stat().st_mode & 0o777 == 0o600
    # 240 < 250: one more goes through (and past the limit), then the sentence.
    await sdk.messages.create(
        model="claude-sonnet-5-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        await sdk.messages.create(
            model="claude-sonnet-5-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
    failure = describe_model_error(caught.value, model="claude-sonnet-5-5")
    assert failure.code == "MODEL_BUDGET_EXCEEDED" and not failure.recoverable
    assert failure.message == (
        "You have reached your model budget on this JupyterHub: you used 360 of your 250 tokens. "
        "Ask your JupyterHub administrator to raise it; your notebooks and chats are kept."
    )
    assert len(setup["fake"].requests) == 3  # the refused request never reached the model


async def test_strangers_and_services_are_refused_in_the_apis_own_shape(
    setup: dict[str, Any],
) -> None:
    async with (
        client(setup["url"], "sk-org") as stranger,
        client(setup["url"], "tok-svc") as service,
    ):
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await stranger.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert "JupyterHub API token" in str(caught.value)
        with pytest.raises(anthropic.PermissionDeniedError):
            await service.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
    assert setup["fake"].requests == []


async def test_admins_read_usage_and_set_limits(setup: dict[str, Any]) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        assert (
            await http.get(f"{setup['url']}/usage", headers={"x-api-key": "tok-ada"})
        ).status_code == 403
        own = await http.get(f"{setup['url']}/usage/ada", headers={"x-api-key": "tok-ada"})
        assert (
            own.status_code == 200 and own.json()["users"]["ada"]["effective_limit_tokens"] == 250
        )
        bad = await http.put(
            f"{setup['url']}/usage/ada",
            json={"limit_tokens": "lots"},
            headers={"Authorization": "Bearer tok-root"},
        )
        assert (
            bad.status_code == 400
            and "limit_tokens must be a whole number" in bad.json()["error"]["message"]
        )
        set_ = await http.put(
            f"{setup['url']}/usage/ada",
            json={"limit_usd": 1.5},
            headers={"Authorization": "Bearer tok-root"},
        )
        assert set_.json()["users"]["ada"]["effective_limit_usd"] == 1.5
        everyone = await http.get(
            f"{setup['url']}/usage", headers={"Authorization": "Bearer tok-root"}
        )
        assert everyone.json()["default_limit_tokens"] == 250 and "ada" in everyone.json()["users"]
        assert (await http.get(f"{setup['url']}/")).status_code == 200  # what the hub polls


def test_usage_is_read_from_a_stream_split_anywhere() -> None:
    stream = (
        b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-haiku-4-5",'
        b'"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":42}}\n\n'
    )
    for cut in range(1, len(stream)):
        counter = UsageCounter(streaming=True)
        counter.feed(stream[:cut])
        counter.feed(stream[cut:])
        counter.finish()
        assert counter.model == "claude-haiku-4-5"
        assert counter.usage == {
            "input_tokens": 7,
            "cache_read_input_tokens": 3,
            "output_tokens": 42,
        }
