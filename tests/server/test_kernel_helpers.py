"""The test kernels' own helper (``kernel_helpers.Kernels``) under what parallel layers bring: a
kernel that dies at its start is followed through Jupyter's restart, and the clean-up after the
test never meets a kernel whose restart is still pending."""

from __future__ import annotations

import json
import os
import signal

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, write_notebook

pytestmark = pytest.mark.slow


async def test_a_kernel_that_dies_at_its_start_is_followed_through_its_restart(
    kernels, jp_fetch, jp_serverapp, jp_root_dir
) -> None:
    path = write_notebook(jp_root_dir, new_name(), ["x = 1"])
    body = {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
    session = json.loads(
        (await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body
    )
    manager = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    first_pid = manager.provisioner.pid
    os.kill(first_pid, signal.SIGKILL)  # as a kernel that lost the race for its ports
    kernel = await kernels._connect(session["kernel"]["id"], path, session["id"], False)
    assert manager.provisioner.pid != first_pid
    assert (await kernel.run("print(6 * 7)")).strip() == "42"
