"""``scripts/start --offline`` starts JupyterLab (also as root) on the demo notebook, never writes
into the repository, and stops on a SIGINT sent to it alone."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _setup_is_current() -> bool:
    """``scripts/start`` reinstalls when the project or the panel changed; a test must not do that."""
    return (
        subprocess.run(
            [str(REPO / "scripts" / "setup"), "--check", "--product"], check=False, cwd=REPO
        ).returncode
        == 0
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str, *, seconds: float = 60) -> int:
    """The status of *url* once the server accepts connections (it may print before it listens)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return int(answer.status)
        except urllib.error.URLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b""
        for p in folder.rglob("*")
    }


@pytest.mark.skipif(
    not _setup_is_current(),
    reason="the install is older than pyproject.toml or the panel sources: run scripts/setup",
)
def test_offline_start_serves_lab_from_a_copy(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    notebooks_before = _snapshot(REPO / "notebooks")
    env = {
        **os.environ,
        "AAEP_WORKDIR": str(workdir),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    env.pop("ANTHROPIC_API_KEY", None)
    log = (tmp_path / "start.log").open("w+")
    port = _free_port()
    process = subprocess.Popen(
        [
            str(REPO / "scripts" / "start"),
            "--offline",
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url = None
        for _ in range(600):
            text = (tmp_path / "start.log").read_text()
            found = re.search(rf"http://127\.0\.0\.1:{port}/lab/tree/demo\.ipynb\?token=\w+", text)
            if found:
                url = found.group(0)
                break
            assert process.poll() is None, (
                f"scripts/start exited with {process.returncode}:\n{text}"
            )
            time.sleep(0.1)
        assert url, f"JupyterLab did not start:\n{text}"
        assert _answers(url) == 200, (tmp_path / "start.log").read_text()
        assert f"Working in {workdir}" in text and "Offline demo model at http://127.0.0.1:" in text
        assert (workdir / "demo.ipynb").read_bytes() == (
            REPO / "notebooks" / "demo.ipynb"
        ).read_bytes()
        # `kill -INT` to the demo alone (not its process group) stops JupyterLab with it.
        (server_info,) = (tmp_path / "runtime").glob("jpserver-*.json")
        lab_pid = json.loads(server_info.read_text())["pid"]
        process.send_signal(signal.SIGINT)
        process.wait(60)  # TimeoutExpired if the demo swallowed the signal (it used to)
        assert "Stopping JupyterLab" in (tmp_path / "start.log").read_text()
        deadline = time.monotonic() + 30
        while _alive(lab_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(lab_pid), "JupyterLab kept running after the demo got SIGINT"
    finally:
        if process.poll() is None:
            os.killpg(
                process.pid, signal.SIGTERM
            )  # the script and the demo model (which stops JupyterLab)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        log.close()
    assert _snapshot(REPO / "notebooks") == notebooks_before  # no edits, no .jupyter/ folder
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--", "notebooks"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.stdout == ""


def test_a_work_folder_inside_the_repository_is_refused(tmp_path: Path) -> None:
    if not _setup_is_current():
        pytest.skip(
            "the install is older than pyproject.toml or the panel sources: run scripts/setup"
        )
    done = subprocess.run(
        [str(REPO / "scripts" / "start"), "--offline"],
        env={**os.environ, "AAEP_WORKDIR": str(REPO / "notebooks")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "is inside the repository; choose a folder outside it" in done.stderr
