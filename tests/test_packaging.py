"""`pip install` alone gives the server extension and the prebuilt JupyterLab extension."""

from __future__ import annotations

import re
import subprocess
import sys


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120, check=True)
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_labextension_is_installed_enabled_and_ok() -> None:
    listing = _run("jupyter", "labextension", "list")
    assert re.search(r"jupyter-aaep v[\d.]+ enabled OK", listing), listing


def test_server_extension_is_enabled() -> None:
    listing = _run("jupyter", "server", "extension", "list")
    assert re.search(r"jupyter_aaep enabled", listing), listing
    assert re.search(r"jupyter_aaep .*OK", listing), listing
