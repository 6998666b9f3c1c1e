"""The outside-agent credential store: hashed, private, survives a restart, fails closed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jupyter_aaep.errors import RequestError
from jupyter_aaep.mcp.credentials import (
    MAX_CREDENTIALS,
    PREFIX,
    OutsideCredentials,
    presented,
    scrubbed,
)
from jupyter_aaep.store import files as store_files


def test_only_the_hash_is_kept_in_a_private_file_that_a_restart_reads(tmp_path: Path) -> None:
    previous = os.umask(0o000)  # a loose umask must not loosen the file or its folder
    try:
        store = OutsideCredentials.beside(str(tmp_path / "aaep" / "chats.sqlite3"))
        record, token = store.mint("Claude Code (laptop)")
    finally:
        os.umask(previous)
    file = tmp_path / "aaep" / store_files.CREDENTIALS_FILE
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert token.startswith(PREFIX) and token not in file.read_text()
    assert record.digest in file.read_text()
    again = OutsideCredentials(str(file))  # a restart
    assert again.check(token) is not None and again.check(token).name == "Claude Code (laptop)"  # type: ignore[union-attr]
    assert again.check(token + "x") is None and again.check("not-a-credential") is None
    assert again.revoke(record.id) is not None
    assert OutsideCredentials(str(file)).check(token) is None  # revoked for good
    assert again.revoke(record.id) is None


def test_the_chat_folder_stays_private_with_the_credentials_beside_the_database(
    tmp_path: Path,
) -> None:
    """store_files closes only a folder that holds nothing but its own files: the credentials
    file is one of them, so the database's folder is still tightened at start."""
    folder = tmp_path / "aaep"
    OutsideCredentials.beside(str(folder / "chats.sqlite3")).mint("Codex")
    os.chmod(folder, 0o755)
    tightened = store_files.prepare(str(folder / "chats.sqlite3"))
    assert str(folder) in tightened and stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_an_unreadable_file_accepts_no_credential(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "creds.json"
    file.write_text("{not json")
    store = OutsideCredentials(str(file))
    assert store.listed() == [] and store.check(PREFIX + "anything") is None
    assert "cannot be read" in caplog.text


def test_memory_only_when_the_chats_are() -> None:
    store = OutsideCredentials.beside(":memory:")
    record, token = store.mint("Codex")
    assert store.path is None and store.check(token) == store._records[record.id]


def test_names_and_the_limit_are_sentences() -> None:
    store = OutsideCredentials(None)
    with pytest.raises(RequestError, match="Give the outside agent a name"):
        store.mint(None)
    assert store.mint("  Gemini\tCLI \u200b")[0].name == "Gemini CLI"
    for i in range(MAX_CREDENTIALS - 1):
        store.mint(f"Agent {i}")
    with pytest.raises(RequestError, match="revoke the ones no longer used") as full:
        store.mint("One too many")
    assert full.value.status == 409


@pytest.mark.parametrize(
    ("headers", "query", "found"),
    [
        ({"Authorization": f"Bearer {PREFIX}abc"}, None, f"{PREFIX}abc"),
        ({"Authorization": f"token {PREFIX}abc"}, None, f"{PREFIX}abc"),
        ({"Authorization": f"bearer   {PREFIX}abc  "}, None, f"{PREFIX}abc"),
        ({}, f"{PREFIX}abc", f"{PREFIX}abc"),
        ({"Authorization": "token the-jupyter-token"}, f"{PREFIX}abc", f"{PREFIX}abc"),
        ({"Authorization": f"Basic {PREFIX}abc"}, None, None),
        ({"Authorization": "token the-jupyter-token"}, None, None),
        ({}, None, None),
    ],
)
def test_a_credential_is_found_wherever_jupyter_would_read_a_token(
    headers: dict[str, str], query: str | None, found: str | None
) -> None:
    assert presented(headers, query) == found


def test_a_token_in_the_address_is_scrubbed_from_log_lines() -> None:
    line = f"GET /aaep/v1/chats?a=1&token={PREFIX}secret&b=2 (127.0.0.1)"
    assert scrubbed(line) == "GET /aaep/v1/chats?a=1&token=[secret]&b=2 (127.0.0.1)"
