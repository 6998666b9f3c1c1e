"""One Jupyter server per test module and configuration, for modules marked ``shared_server``.

pytest-jupyter starts a ``ServerApp`` (and an event loop, a port, a home directory) for every
test: 0.3–0.5 s each on a quiet machine, seconds under load, more with collaboration (its
stop waits for the rooms' tasks). Most tests only need a fresh notebook or chat, so a module
marked ``pytestmark = pytest.mark.shared_server`` gets one server per distinct configuration
instead, started at its first test and stopped after its last. The fixtures that choose
between a shared and a new server are in :mod:`jupyter_aaep.testing.shared_fixtures`.

What each test still gets fresh: the fake model's script, requests and problems
(``FakeAnthropic.reset``), no kernel and no Jupyter session left by the test before (all shut
down after each test), an empty root directory, a new HTTP client; with collaboration, no
room, no file loader and no file id (so the same path names another room, whose history
starts empty). What it shares: the extension's chats and store, the event loop, the port, the
home and data directories. A test that restarts, stops or reconfigures the server, checks its
start-up, kills or restarts a kernel, or leaves sessions open (``open_sessions``) gets its own
server as before: the marker ``fresh_server`` on the test, or no ``shared_server`` mark on the
module.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jupyter_core.paths
import pytest
import tornado.httpserver
import tornado.testing
from jupyter_server.serverapp import ServerApp
from traitlets.config import Config

from .fake_anthropic import FakeAnthropic

__all__ = ["BASE_URL", "Pool", "Served", "after_test", "is_shared", "pool"]

BASE_URL = "/a%40b/"
"""pytest-jupyter's ``jp_base_url``: the same URL shape as the per-test servers."""

COLLABORATION = "jupyter_server_ydoc"
"""The settings key of jupyter-collaboration's extension (its rooms and file loaders)."""


def is_shared(request: pytest.FixtureRequest) -> bool:
    """Whether this test runs on its module's shared server."""
    node = request.node
    return (
        node.get_closest_marker("shared_server") is not None
        and node.get_closest_marker("fresh_server") is None
        and node.get_closest_marker("open_sessions") is None
    )


@dataclass
class Served:
    """One started server: the app, its HTTP server and port."""

    app: ServerApp
    http: tornado.httpserver.HTTPServer
    port: int
    root: Path


@dataclass
class Pool:
    """The module's servers by configuration, with the loop, fake and directories they share."""

    loop: asyncio.AbstractEventLoop
    fake: FakeAnthropic
    base: Path
    monkeypatch: pytest.MonkeyPatch
    servers: dict[str, Served] = field(default_factory=dict)
    starts: int = 0

    def server(self, config: dict[str, Any]) -> Served:
        key = json.dumps(config, sort_keys=True, default=repr)
        if key not in self.servers:
            self.servers[key] = self._start(config)
        return self.servers[key]

    @property
    def root(self) -> Path:
        """The root directory of every server of the module (emptied after each test)."""
        root = self.base / "root"
        root.mkdir(exist_ok=True)
        return root

    def _start(self, config: dict[str, Any]) -> Served:
        root = self.root
        socket, port = tornado.testing.bind_unused_port()
        ServerApp.clear_instance()
        c = Config(json.loads(json.dumps(config)))
        c.NotebookNotary.db_file = ":memory:"
        c.IdentityProvider.token = "shared-server-token"
        app = ServerApp.instance(
            log_level="DEBUG",
            port=port,
            port_retries=0,
            open_browser=False,
            base_url=BASE_URL,
            config=c,
            allow_root=True,
            root_dir=str(root),
        )
        app.init_signal = lambda: None  # type: ignore[method-assign]
        app.log.propagate = True
        app.log.handlers = []

        async def initialize() -> tornado.httpserver.HTTPServer:
            app.initialize(argv=[], new_httpserver=False)
            app.log.handlers = []
            app.start_app()
            http = tornado.httpserver.HTTPServer(app.web_app)
            http.add_socket(socket)
            return http

        http = self.loop.run_until_complete(initialize())
        self.starts += 1
        return Served(app, http, port, root)

    def close(self) -> None:
        for served in self.servers.values():
            served.http.stop()
            try:
                self.loop.run_until_complete(served.http.close_all_connections())
                self.loop.run_until_complete(served.app._cleanup())
            except (RuntimeError, SystemExit) as error:
                print("ignoring cleanup error", error)
            if hasattr(served.app, "kernel_manager"):
                served.app.kernel_manager.context.destroy()
        self.servers.clear()
        ServerApp.clear_instance()


def environ(monkeypatch: pytest.MonkeyPatch, base: Path, fake: FakeAnthropic) -> None:
    """What ``jp_environ`` and ``jp_server_config`` set per test, set once for the module."""
    dirs = {}
    for name in (
        "home",
        "data",
        "config",
        "runtime",
        "sys-path",
        "env-path",
        "sys-conf",
        "env-conf",
    ):
        dirs[name] = base / name
        dirs[name].mkdir()
    monkeypatch.setenv("HOME", str(dirs["home"]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(dirs["config"]))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(dirs["data"]))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(dirs["runtime"]))
    monkeypatch.setattr(jupyter_core.paths, "SYSTEM_JUPYTER_PATH", [str(dirs["sys-path"])])
    monkeypatch.setattr(jupyter_core.paths, "ENV_JUPYTER_PATH", [str(dirs["env-path"])])
    monkeypatch.setattr(jupyter_core.paths, "SYSTEM_CONFIG_PATH", [str(dirs["sys-conf"])])
    monkeypatch.setattr(jupyter_core.paths, "ENV_CONFIG_PATH", [str(dirs["env-conf"])])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """The body of the module-scoped fixture (``shared_fixtures._shared_pool``)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    fake = FakeAnthropic().start()
    monkeypatch = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("shared-server")
    environ(monkeypatch, base, fake)
    servers = Pool(loop, fake, base, monkeypatch)
    try:
        yield servers
    finally:
        servers.close()
        monkeypatch.undo()
        fake.stop()
        loop.close()


async def after_test(served: Served) -> None:
    """Leave the shared server as a new one would be: no kernels, no sessions, no rooms, no
    file ids, an empty root."""
    app = served.app
    sessions = await app.session_manager.list_sessions()
    for session in sessions:
        await app.session_manager.delete_session(session["id"])
    kernels: Any = app.kernel_manager  # typed as the blocking manager; the server's is async
    await settle_restarts(kernels)
    await kernels.shutdown_all(now=True)  # the test is over: no need to wait for a polite exit
    await _close_rooms(app)
    # The test's monkeypatch has just put the model credentials back in os.environ; the
    # extension takes them out at start, so take them out again before the next test.
    extension = app.web_app.settings.get("jupyter_aaep")
    if extension is not None:
        extension.clients.credentials.collect()
    for entry in served.root.iterdir():
        if entry.name.startswith(".") and ".db" in entry.name:
            continue  # a database the configuration names (file ids, rooms): the server's own
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


async def settle_restarts(kernels: Any, wait: float = 60) -> None:
    """Wait for kernels that Jupyter's restarter is starting again: shutting one down while its
    start is pending asks a pending future for its exception (jupyter_client raises
    InvalidStateError), so the clean-up would fail the test that happened to see the restart."""
    pending = [
        asyncio.wrap_future(kernels.get_kernel(kernel_id).ready)
        for kernel_id in kernels.list_kernel_ids()
        if not kernels.get_kernel(kernel_id).ready.done()
    ]
    if pending:
        await asyncio.wait(pending, timeout=wait)


async def _close_rooms(app: ServerApp) -> None:
    """Delete every collaboration room (its document, its pending clean-up, its file watcher)
    and forget every file id, so that the next test's notebook at the same path gets a new
    room with no history: it can never see the document of a test before."""
    collaboration: Any = app.web_app.settings.get(COLLABORATION)
    server = getattr(collaboration, "ywebsocket_server", None)
    if server is not None:
        for room in list(server.rooms.values()):
            cleaner = getattr(room, "cleaner", None)
            if cleaner is not None and not cleaner.done():
                cleaner.cancel()
            await server.delete_room(room=room)
            for name in ("_update_send_stream", "_update_receive_stream"):
                close = getattr(getattr(room, name, None), "close", None)
                if callable(close):
                    close()  # left open by the room's stop (pycrdt 0.14): warns when collected
        await collaboration.file_loaders.clear()
    ids = app.web_app.settings.get("file_id_manager")
    connection = getattr(ids, "con", None)
    if connection is not None:
        connection.execute("DELETE FROM Files")
        connection.commit()
