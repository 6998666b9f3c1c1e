"""Real kernels of a real Jupyter server with jupyter-aaep (the extension loads by itself).

The server-side fixtures of ``tests/server`` are reused: its helpers (``server_helpers``,
``kernel_helpers``) are imported from there, and pytest-jupyter's fixtures are imported here
so they apply to this folder only (the unit tests one level up stay free of them).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

# pytest-jupyter first: kernel_helpers then overrides its jp_server_config.
from pytest_jupyter.jupyter_server import *

# isort: split
from kernel_helpers import *  # fixtures: kernels, kernel_api, jp_server_config
from server_helpers import on_server_loop

# isort: split
# A shared server per module when marked, and fake_model (the module's fake when shared).
from jupyter_aaep.testing.shared_fixtures import *


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> Any:
    """Every ``async def`` test here runs on the server's loop (see ``on_server_loop``)."""
    if collector.funcnamefilter(name) and inspect.iscoroutinefunction(obj):
        wrapped = on_server_loop(obj)
        setattr(collector.obj, name, wrapped)
        return list(collector._genfunctions(name, wrapped))
    return None


@pytest.fixture
def extension(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["jupyter_aaep"]
