"""A chat belongs to one notebook: two real servers of one user (one Jupyter data directory, so
one chat database) rooted in two folders that both hold ``leak.ipynb`` never see, continue or
send to the model each other's chats. A rename inside the root keeps the chat (across a restart),
and a database written by the previous version (schema 3, no roots) keeps working: its chat is
adopted only by the folder whose notebook holds a cell that chat's agent created.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_interop_tools import START_TIMEOUT, free_port, stop

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn

pytestmark = pytest.mark.slow


class _Server:
    """``jupyter server`` with jupyter-aaep rooted in *root*, its Jupyter dirs under *home*."""

    def __init__(self, home: Path, root: Path, fake: FakeAnthropic) -> None:
        self.home, self.root, self.fake = home, root, fake
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> _Server:
        for name in ("config", "data", "runtime", "ipython"):
            (self.home / name).mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": self.fake.api_key,
            "JUPYTER_CONFIG_DIR": str(self.home / "config"),
            "JUPYTER_DATA_DIR": str(self.home / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
            "IPYTHONDIR": str(self.home / "ipython"),
        }
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        args = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            "--IdentityProvider.token=",
            "--ServerApp.disable_check_xsrf=True",
            "--ServerApp.jpserver_extensions=jupyter_aaep=True",
            "--AAEPExtension.model=claude-roots",
        ]
        self.log = self.home / f"server-{self.root.name}.log"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                args, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text(errors="replace")
            try:
                self.call("GET", "aaep/v1/chats")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.25)
        raise AssertionError(f"the server did not start:\n{self.log.read_text(errors='replace')}")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, (json.loads(raw) if raw else None)

    def chats(self, notebook_path: str | None = None) -> list[str]:
        query = f"?notebook_path={urllib.parse.quote(notebook_path)}" if notebook_path else ""
        status, body = self.call("GET", f"aaep/v1/chats{query}")
        assert status == 200, body
        return [c["chat_id"] for c in body["chats"]]

    def new_chat(self, notebook_path: str) -> str:
        status, body = self.call("POST", "aaep/v1/chats", {"notebook_path": notebook_path})
        assert status == 201, body
        return str(body["chat_id"])

    def ask(self, chat_id: str, text: str) -> int:
        """Send a request and wait until it is answered; the model requests made so far."""
        status, body = self.call(
            "POST", f"aaep/v1/chats/{chat_id}/messages", {"kind": "user_input", "text": text}
        )
        assert status == 202, body
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, body = self.call("GET", f"aaep/v1/chats/{chat_id}")
            if status == 200 and body["status"] == "idle" and body["title"]:
                return len(self.fake.requests)
            time.sleep(0.2)
        raise AssertionError("the request was not answered")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process, grace=20.0)
            self.process = None


def _notebook(folder: Path, extra: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    ids = ["c1", "c2", "c3", *extra]
    cells = [
        {"cell_type": "code", "id": i, "source": f"x = {n}", "metadata": {}, "outputs": []}
        for n, i in enumerate(ids)
    ]
    for cell in cells:
        cell["execution_count"] = None
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "leak.ipynb").write_text(json.dumps(notebook))


def _legacy_store(data: Path) -> None:
    """A chat database as the previous version (schema 3) left it: two chats of leak.ipynb, no root."""
    path = data / "aaep" / "chats.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE chats (chat_id TEXT PRIMARY KEY, notebook_path TEXT, file_id TEXT, "
            "title TEXT NOT NULL DEFAULT '', created TEXT NOT NULL, updated TEXT NOT NULL, "
            "approval_mode TEXT NOT NULL DEFAULT 'ask', history TEXT NOT NULL DEFAULT '[]', "
            "can_continue INTEGER NOT NULL DEFAULT 0, model TEXT, model_label TEXT)"
        )
        conn.execute(
            "CREATE TABLE snapshots (chat_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "body TEXT NOT NULL, PRIMARY KEY (chat_id, session_id))"
        )
        for chat_id, words in (
            ("chat_legacy_made", "LEGACY-MADE budget"),
            ("chat_legacy_read", "LEGACY-READ budget"),
        ):
            history = [
                {"role": "user", "content": [{"type": "text", "text": words}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            ]
            conn.execute(
                "INSERT INTO chats (chat_id, notebook_path, file_id, title, created, updated, history) "
                "VALUES (?, 'leak.ipynb', '1', ?, '2026-01-01', '2026-01-01', ?)",
                (chat_id, words, json.dumps(history)),
            )
        made = {
            "kind": "operations",
            "path": "leak.ipynb",
            "session_id": "sess_old",
            "started": 1.0,
            "operations": [
                {
                    "kind": "create",
                    "cell_id": "agentmade",
                    "before": {},
                    "after": {"source": "x = 3", "cell_type": "code"},
                    "index": 3,
                    "prev": "c3",
                }
            ],
        }
        conn.execute(
            "INSERT INTO snapshots VALUES ('chat_legacy_made', 'sess_old', ?)", (json.dumps(made),)
        )


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    model = FakeAnthropic().start()
    yield model
    model.release()
    model.stop()


def _said_to_model(fake: FakeAnthropic, since: int) -> str:
    return json.dumps([r.body for r in fake.requests[since:]])


def test_two_roots_never_share_a_chat_and_a_rename_keeps_it(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    home = tmp_path / "home"  # one user: one data directory, one chat database
    x, y = tmp_path / "X", tmp_path / "Y"
    _notebook(x, ["agentmade"])  # worked on: holds the cell the old chat's agent created
    _notebook(y, [])  # an untouched copy
    _legacy_store(home / "data")
    servers: list[_Server] = []
    try:
        in_y = _Server(home, y, fake).start()
        servers.append(in_y)
        assert in_y.chats("leak.ipynb") == [] and in_y.chats() == [], (
            "no chat of the previous version is offered in the untouched copy's folder"
        )
        in_x = _Server(home, x, fake).start()
        servers.append(in_x)
        assert in_x.chats("leak.ipynb") == ["chat_legacy_made"], (
            "the old chat whose agent's cell is in this folder's notebook is adopted; "
            "the one with no such evidence stays unlisted"
        )
        mine = in_x.new_chat("leak.ipynb")
        fake.add(Turn(text="X-ANSWER about salaries."))
        in_x.ask(mine, "X-SECRET: summarise the salaries")

        # Y, running at the same time on the same database, sees none of it.
        assert in_y.chats("leak.ipynb") == [] and in_y.chats() == []
        for chat_id in (mine, "chat_legacy_made", "chat_legacy_read"):
            assert in_y.call("GET", f"aaep/v1/chats/{chat_id}")[0] == 404
            status, _ = in_y.call(
                "POST",
                f"aaep/v1/chats/{chat_id}/messages",
                {"kind": "user_input", "text": "go on"},
            )
            assert status == 404, "another root's chat cannot be continued"
        theirs = in_y.new_chat("leak.ipynb")
        before = len(fake.requests)
        fake.add(Turn(text="Y answer."))
        after = in_y.ask(theirs, "What does this notebook do?")
        assert after == before + 1
        said = _said_to_model(fake, before)
        for leaked in ("X-SECRET", "X-ANSWER", "LEGACY-MADE", "LEGACY-READ"):
            assert leaked not in said, f"{leaked} reached the model from another folder"
        assert in_y.chats("leak.ipynb") == [theirs]
        assert mine not in in_y.chats() and theirs not in in_x.chats()

        # A rename inside X's root: its chats follow, in memory and in the store (restart).
        status, body = in_x.call("PATCH", "api/contents/leak.ipynb", {"path": "renamed.ipynb"})
        assert status == 200, body
        # The server tells listeners of the rename after it answers, and the stored chat's path
        # is written by the store's writer thread: the list follows within moments.
        deadline = time.monotonic() + 30
        while set(in_x.chats("renamed.ipynb")) != {mine, "chat_legacy_made"}:
            assert time.monotonic() < deadline, in_x.chats("renamed.ipynb")
            time.sleep(0.1)
        assert in_x.chats("leak.ipynb") == []
        in_x.stop()
        in_x.start()
        assert set(in_x.chats("renamed.ipynb")) == {mine, "chat_legacy_made"}
        assert in_y.chats("leak.ipynb") == [theirs], "Y's own notebook kept its name and chat"
        status, body = in_x.call("GET", f"aaep/v1/chats/{mine}")
        assert status == 200 and body["notebook_path"] == "renamed.ipynb"
    finally:
        for server in servers:
            server.stop()
