"""The panel's unit tests (``labextension/test/*.test.mjs``), run with Node's test runner.

They test the chat model without a browser or server: usage figures, guidance placed from
history, Continue, per-item versions (one streamed chunk re-renders one entry) and the
collapsing of old turns; and the announcer against docs/NARRATION.md (order of speech, one
sentence per step, nothing twice, cut-off text, each verbosity) with a minimal fake DOM and
mock timers. They run on the compiled ``labextension/lib``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[2] / "labextension"


def test_panel_model_units() -> None:
    node = shutil.which("node")
    if node is None or not (LABEXTENSION / "lib" / "model.js").exists():
        message = "Node.js and the built panel (cd labextension && jlpm build) are needed."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [node, "--import", "./test/loader.mjs", "--test", "--test-reporter=spec", "test/"],
        cwd=LABEXTENSION,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fail 0" in done.stdout and "pass 0" not in done.stdout, done.stdout
