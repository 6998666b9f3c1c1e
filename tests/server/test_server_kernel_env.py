"""Kernels this server starts do not inherit the model credentials (issue #9, "Secrets").

A real Jupyter server with the extension, and real kernels it starts through the sessions API
(what JupyterLab does) and the kernels API; the kernel reports its own ``os.environ``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from jupyter_aaep.server.model_client import WITHHELD, ClientFactory, ModelCredentials

PROBE = (
    "import json, os\n"
    "from jupyter_aaep.kernel.credential import take\n"
    "print(json.dumps({**{k: os.environ.get(k) for k in "
    + repr(sorted({*WITHHELD, "AAEP_SERVER_URL"}))
    + "}, 'AAEP_KERNEL_SECRET': take()}))"
)


async def _kernel_environment(serverapp: Any, kernel_id: str) -> dict[str, str | None]:
    """Run PROBE in the kernel and return what it printed."""
    client = serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        printed: list[str] = []

        def hook(message: dict[str, Any]) -> None:
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = await client.execute_interactive(PROBE, output_hook=hook, timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
    return json.loads("".join(printed))


async def _start_kernels(jp_fetch: Any) -> list[str]:
    """One kernel through a notebook session (as JupyterLab starts them), one directly."""
    body = {
        "path": "env.ipynb",
        "name": "env.ipynb",
        "type": "notebook",
        "kernel": {"name": "python3"},
    }
    session = json.loads(
        (await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body
    )
    kernel = json.loads(
        (await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))).body
    )
    return [session["kernel"]["id"], kernel["id"]]


async def test_kernels_do_not_see_the_model_key(
    jp_fetch, jp_serverapp, fake_model, extension
) -> None:
    for kernel_id in await _start_kernels(jp_fetch):
        seen = await _kernel_environment(jp_serverapp, kernel_id)
        assert {name: seen[name] for name in WITHHELD} == dict.fromkeys(WITHHELD)
        # The %aaep magic's side is still exported.
        assert seen["AAEP_SERVER_URL"] == jp_serverapp.connection_url
        # Its own credential, not the server's secret (which no kernel gets).
        assert seen["AAEP_KERNEL_SECRET"] == extension.kernel_credentials.for_kernel(kernel_id)
        assert extension._secret not in json.dumps(seen)
        await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    # The model client still has it, and so does the SDK client built from it.
    client = extension.clients()
    assert client.api_key == fake_model.api_key
    assert str(client.base_url).rstrip("/") == fake_model.base_url.rstrip("/")
    assert "ANTHROPIC_API_KEY" not in os.environ


class TestInheriting:
    @pytest.fixture
    def aaep_config(self) -> dict[str, Any]:
        return {"kernels_inherit_model_credentials": True}

    async def test_with_the_setting_on_kernels_inherit_it(
        self, jp_fetch, jp_serverapp, fake_model
    ) -> None:
        for kernel_id in await _start_kernels(jp_fetch):
            seen = await _kernel_environment(jp_serverapp, kernel_id)
            assert seen["ANTHROPIC_API_KEY"] == fake_model.api_key
            assert seen["ANTHROPIC_BASE_URL"] == fake_model.base_url
            await jp_fetch("api", "kernels", kernel_id, method="DELETE")


def test_credentials_leave_the_environment_and_come_back_at_stop() -> None:
    environ = {
        "ANTHROPIC_API_KEY": "sk-ant-start",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "HOME": "/h",
    }
    held = ModelCredentials(withhold=True, environ=environ)
    assert environ == {"HOME": "/h"}
    assert held.configured()
    environ["ANTHROPIC_AUTH_TOKEN"] = "later"  # set by code in this process after start
    assert held.values()["ANTHROPIC_AUTH_TOKEN"] == "later"
    assert "ANTHROPIC_AUTH_TOKEN" not in environ
    with held.visible():
        assert environ["ANTHROPIC_API_KEY"] == "sk-ant-start"
    assert "ANTHROPIC_API_KEY" not in environ
    held.discard("ANTHROPIC_API_KEY")
    held.discard("ANTHROPIC_AUTH_TOKEN")
    assert not held.configured()
    held.restore()  # only what the process started with goes back
    assert environ == {
        "HOME": "/h",
        "ANTHROPIC_API_KEY": "sk-ant-start",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }


def test_inheriting_leaves_the_environment_alone() -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant-start"}
    held = ModelCredentials(withhold=False, environ=environ)
    with held.visible():
        assert environ == {"ANTHROPIC_API_KEY": "sk-ant-start"}
    assert held.values() == {"ANTHROPIC_API_KEY": "sk-ant-start"}
    held.restore()
    assert environ == {"ANTHROPIC_API_KEY": "sk-ant-start"}


async def test_the_client_is_rebuilt_when_the_key_changes() -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant-one"}
    factory = ClientFactory(credentials=ModelCredentials(withhold=True, environ=environ))
    first = factory()
    assert factory() is first
    environ["ANTHROPIC_API_KEY"] = "sk-ant-two"
    second = factory()
    assert second is not first and "ANTHROPIC_API_KEY" not in environ
    await factory.close()
