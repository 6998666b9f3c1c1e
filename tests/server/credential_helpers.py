"""Outside agents' credentials in the server tests: a live server whose outside sessions last 30 s
of silence (as by default), the person's minting, and the requests an agent sends with one.

Imported by the credential test modules (fixtures by name).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import live_server_config, mcp_url


@pytest.fixture
def jp_server_config(
    fake_model: Any, jp_root_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Outside agents' sessions last 30 s of silence, as by default: a second run of the same
    agent must not wait for that."""
    return live_server_config(fake_model, jp_root_dir, monkeypatch, mcp_idle_seconds=30.0)


@pytest.fixture
def base(jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str) -> str:
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


@pytest.fixture
def url(base: str, jp_http_port: int, jp_base_url: str) -> str:
    return mcp_url(jp_http_port, jp_base_url)


@pytest.fixture
def mint(api: Any) -> Any:
    async def make(name: str) -> dict[str, Any]:
        status, body, headers = await api("mcp", "tokens", method="POST", body={"name": name})
        assert status == 201, body
        assert headers["Location"].endswith(f"aaep/v1/mcp/tokens/{body['id']}")
        return dict(body)

    return make


def bearer(credential: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential['token']}"}


async def chat_of_new(api: Any, path: str) -> str:
    status, body, _ = await api("chats", method="POST", body={"notebook_path": path})
    assert status == 201, body
    return str(body["chat_id"])


async def sources(file: Path) -> list[str]:
    """The cells' sources on disk (read again while the room's autosave is rewriting the file)."""
    for _ in range(50):
        try:
            return ["".join(c["source"]) for c in json.loads(file.read_text())["cells"]]
        except ValueError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{file} never held a whole notebook")
