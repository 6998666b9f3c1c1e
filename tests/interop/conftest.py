"""A real Jupyter server for the MCP interop tests (pytest-jupyter), with the server tests' helpers.

The fixtures of ``tests/server/conftest.py`` (``api``, ``sse``, ``extension``, ``fake_model``,
``jp_server_config`` with ``aaep_config``)
and its rule that every ``async def`` test runs on the server's loop are reused here, not copied:
that file is loaded under its own module name, and ``tests/server`` is put on the path for
``kernel_helpers`` and ``mcp_helpers``. The other tests here are plain functions; the only
fixtures pytest-jupyter applies to every test (an event loop, and the server's clean-up) are
harmless to them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from pytest_jupyter.jupyter_server import *

_REPO = Path(__file__).resolve().parents[2]
_SERVER_TESTS = _REPO / "tests" / "server"
sys.path.insert(0, str(_SERVER_TESTS))
_spec = importlib.util.spec_from_file_location(
    "server_tests_conftest", _SERVER_TESTS / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_server)
aaep_config = _server.aaep_config
api = _server.api
extension = _server.extension
fake_model = _server.fake_model
jp_server_config = _server.jp_server_config
sse = _server.sse
pytest_pycollect_makeitem = _server.pytest_pycollect_makeitem
