"""The pytest-jupyter fixtures that give a test its module's shared server when it may have
one (:mod:`jupyter_aaep.testing.shared_server`), and a server of its own otherwise.

A test folder's ``conftest.py`` imports pytest-jupyter's fixtures first, then these, which
override them by name::

    from pytest_jupyter.jupyter_server import *
    from jupyter_aaep.testing.shared_fixtures import *

``fake_model`` is the module's fake Messages API on a shared server (reset for each test) and
a new one otherwise; a test module that defines its own ``fake_model`` keeps it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_jupyter.jupyter_server as _pytest_jupyter
import pytest_jupyter.pytest_tornasync as _tornasync

from . import shared_server
from .fake_anthropic import FakeAnthropic

__all__ = [
    "_shared_pool",
    "fake_model",
    "http_server",
    "jp_asyncio_loop",
    "jp_http_port",
    "jp_root_dir",
    "jp_server_cleanup",
    "jp_serverapp",
]


@pytest.fixture(scope="module")
def _shared_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[shared_server.Pool]:
    """The servers of a module marked ``shared_server``."""
    yield from shared_server.pool(tmp_path_factory)


@pytest.fixture(autouse=True)
def jp_asyncio_loop(request: pytest.FixtureRequest) -> Iterator[asyncio.AbstractEventLoop]:
    """The module's loop on a shared server; otherwise a new loop per test, as pytest-jupyter."""
    if shared_server.is_shared(request):
        loop = request.getfixturevalue("_shared_pool").loop
        asyncio.set_event_loop(loop)
        yield loop
        return
    loop = asyncio.new_event_loop()  # never the module's loop, which this test would close
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()


@pytest.fixture
def fake_model(request: pytest.FixtureRequest) -> Iterator[FakeAnthropic]:
    if shared_server.is_shared(request):
        fake = request.getfixturevalue("_shared_pool").fake
        fake.reset()
        yield fake
    else:
        fake = FakeAnthropic().start()
        yield fake
        fake.stop()
    assert fake.problems == [], fake.problems


@pytest.fixture
def jp_serverapp(request: pytest.FixtureRequest, jp_server_config: Any, jp_argv: Any) -> Any:
    """The module's server for this configuration when shared; otherwise a new one."""
    if shared_server.is_shared(request):
        return request.getfixturevalue("_shared_pool").server(jp_server_config).app
    start = request.getfixturevalue("jp_configurable_serverapp")
    return start(config=jp_server_config, argv=jp_argv)


def _served(request: pytest.FixtureRequest) -> shared_server.Served:
    app = request.getfixturevalue("jp_serverapp")
    pool = request.getfixturevalue("_shared_pool")
    served: shared_server.Served = next(s for s in pool.servers.values() if s.app is app)
    return served


@pytest.fixture
def jp_root_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if shared_server.is_shared(request):
        root: Path = request.getfixturevalue("_shared_pool").root
        return root
    root = tmp_path / "root_dir"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def jp_http_port(request: pytest.FixtureRequest) -> Iterator[int]:
    if shared_server.is_shared(request):
        yield _served(request).port
        return
    port = request.getfixturevalue("http_server_port")
    yield port[-1]
    port[0].close()


@pytest.fixture
def http_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    if shared_server.is_shared(request):
        yield _served(request).http
        return
    yield from _tornasync.http_server.__wrapped__(  # type: ignore[attr-defined]
        request.getfixturevalue("jp_asyncio_loop"),
        request.getfixturevalue("http_server_port"),
        request.getfixturevalue("jp_web_app"),
    )


@pytest.fixture(autouse=True)
def jp_server_cleanup(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on a shared server: its kernels, sessions, rooms and files go (the server
    stays)."""
    loop = request.getfixturevalue("jp_asyncio_loop")
    if not shared_server.is_shared(request):
        yield from _pytest_jupyter.jp_server_cleanup.__wrapped__(loop)  # type: ignore[attr-defined]
        return
    yield
    pool = request.getfixturevalue("_shared_pool")
    for served in pool.servers.values():
        loop.run_until_complete(shared_server.after_test(served))
