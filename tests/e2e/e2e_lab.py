"""A real ``jupyter lab`` in a subprocess, for the browser tests.

The server listens on 127.0.0.1 on a free port, with a random token (the browser logs in
with ``?token=``, then uses Jupyter's cookie and XSRF header like a person would; the
panel's WebSocket and EventSource get the token the way JupyterLab hands it to them). Every
Jupyter directory (config, data, runtime, user settings, workspaces, IPython) is a fresh
temporary one, so nothing from the machine's own Jupyter set-up leaks in and nothing leaks
out. The model is the scripted fake in the pytest process (``ANTHROPIC_BASE_URL``).

Configuration goes in ``jupyter_server_config.json`` of that config directory. It enables the
server extension (``jpserver_extensions``) as well as the installed config file does, so the
tests also run from a tree installed before that file existed, and exposes the application
as ``window.jupyterapp`` so tests can run JupyterLab commands (theme switching).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEMO_NOTEBOOK = REPO / "notebooks" / "demo.ipynb"
START_TIMEOUT = 90.0
"""Seconds a cold ``jupyter lab`` may take to answer (first start after an install is slow)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


UNASKED_PLUGINS = [
    "@jupyterlab/notebook-extension:export",
    "@jupyterlab/notebook-extension:update-raw-mimetype",
]
"""JupyterLab plugins off in every test lab: at the first notebook of each page load both ask
the server for nbconvert's export formats (File > Save and Export As, a raw cell's format),
which costs 0.41 s of the server's CPU a load here, for menus these tests never open."""


@dataclass
class LabServer:
    """One ``jupyter lab`` process and the directories it owns.

    Parameters
    ----------
    home
        A fresh directory; the notebook root is ``home/root``.
    model_url
        ``ANTHROPIC_BASE_URL`` for the server (the fake Messages API).
    log_path
        Where the server's output goes (kept for CI artefacts).
    aaep
        Extra ``AAEPExtension`` traitlets.
    user_settings
        JupyterLab user settings to seed, ``{"package/plugin": {...}}`` (``reset_user_state``
        changes them for the next module).
    disabled_plugins
        JupyterLab plugins to disable (``labconfig/page_config.json``), e.g. to see a front end
        without one of ours (``reset_user_state`` changes them too).
    """

    home: Path
    model_url: str
    log_path: Path
    api_key: str = "sk-ant-fake-key"
    aaep: dict[str, Any] = field(default_factory=dict)
    user_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    disabled_plugins: list[str] = field(default_factory=list)
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen[bytes] | None = None

    @property
    def root(self) -> Path:
        return self.home / "root"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def notebook(self, name: str) -> str:
        """Copy the demo notebook to *name* in the root (a fresh chat and kernel per test)."""
        shutil.copyfile(DEMO_NOTEBOOK, self.root / name)
        return name

    def saved(self, name: str) -> dict[str, Any] | None:
        """*name*'s file as JSON, or ``None`` while it is being written: Jupyter writes a
        notebook in place, so a read while JupyterLab saves can find it empty or cut short."""
        try:
            notebook = json.loads((self.root / name).read_text())
        except ValueError:
            return None
        return notebook if isinstance(notebook, dict) else None

    def cells_once_saved(
        self, name: str, wanted: str, timeout: float = 15.0
    ) -> list[tuple[str, str]]:
        """The (id, source) of each cell in *name*'s file once a cell holds *wanted* (or after
        *timeout*); a read while JupyterLab writes it is read again (``saved``)."""
        deadline = time.monotonic() + timeout
        sources: list[tuple[str, str]] = []
        while True:
            cells = (self.saved(name) or {}).get("cells")
            if cells is not None:
                sources = [(str(c.get("id")), "".join(c.get("source", ""))) for c in cells]
                if any(wanted in source for _, source in sources):
                    return sources
            if time.monotonic() > deadline:
                return sources
            time.sleep(0.2)

    def unused_name(self, stem: str) -> str:
        """``<stem>.ipynb``, or ``<stem>-2.ipynb`` and on when a run before (a failed try that CI
        runs again) left that file and its chat: a scenario always starts on an empty chat."""
        name, n = f"{stem}.ipynb", 1
        while (self.root / name).exists():
            n += 1
            name = f"{stem}-{n}.ipynb"
        return name

    def lab_url(self, notebook: str, **query: str) -> str:
        """The page that opens *notebook*; ``reset`` starts from an empty workspace."""
        params = {"token": self.token, "reset": "", **query}
        tail = "&".join(f"{k}={v}" if v else k for k, v in params.items())
        return f"{self.url}lab/tree/{notebook}?{tail}"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LabServer:
        dirs = {
            name: self.home / name
            for name in ("root", "config", "data", "runtime", "settings", "workspaces", "ipython")
        }
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        self._seed_settings(dirs["settings"])
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": self.api_key,
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
            "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
            "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
            "IPYTHONDIR": str(dirs["ipython"]),
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",
        }
        env.pop("ANTHROPIC_AUTH_TOKEN", None)
        self.port = free_port()
        config = {
            "ServerApp": {"jpserver_extensions": {"jupyter_aaep": True}},
            # No update checks and no PyPI extension manager: nothing leaves 127.0.0.1.
            "LabApp": {
                "expose_app_in_browser": True,
                "extension_manager": "readonly",
                "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
            },
            "AAEPExtension": {"model": "claude-e2e", **self.aaep},
        }
        (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config, indent=1))
        self._write_page_config()
        args = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={dirs['root']}",
            f"--IdentityProvider.token={self.token}",
            "--allow-root",  # CI containers run as root
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        try:
            # cwd = the root: jupyter-collaboration writes its .jupyter_ystore.db there.
            self.process = subprocess.Popen(
                args,
                cwd=dirs["root"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        self._wait_ready()
        return self

    def _write_page_config(self) -> None:
        """``labconfig/page_config.json``, which the server reads at every page load.

        No build check: at every page load JupyterLab's own "is a rebuild needed?" request ran
        node, yarn and npm on the server (about 0.6 s of CPU a load), for a question these tests
        never ask; the build-status plugin stays on, with nothing to report. ``UNASKED_PLUGINS``
        and the module's ``disabled_plugins`` are off."""
        page_config = {
            "buildCheck": False,
            "buildAvailable": False,
            "disabledExtensions": dict.fromkeys([*UNASKED_PLUGINS, *self.disabled_plugins], True),
        }
        folder = self.home / "config" / "labconfig"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "page_config.json").write_text(json.dumps(page_config))

    def reset_user_state(
        self, user_settings: dict[str, dict[str, Any]], disabled_plugins: list[str]
    ) -> None:
        """Forget what earlier tests left for the person (for a module taking over a shared
        server): user settings go back to the module's seeded ones and its plugins are the ones
        turned off (the server reads both at each page load), saved workspaces go, and standing
        permissions and outside agents' credentials are taken back (a test that failed half
        way may have left one)."""
        self.user_settings, self.disabled_plugins = user_settings, disabled_plugins
        self._write_page_config()
        for name in ("settings", "workspaces"):
            shutil.rmtree(self.home / name, ignore_errors=True)
            (self.home / name).mkdir()
        self._seed_settings(self.home / "settings")
        for grant in self.api("GET", "aaep/v1/permissions")["permissions"]:
            self.api("DELETE", f"aaep/v1/permissions/{grant['id']}")
        for credential in self.api("GET", "aaep/v1/mcp/tokens")["credentials"]:
            self.api("DELETE", f"aaep/v1/mcp/tokens/{credential['id']}")

    def _seed_settings(self, settings_dir: Path) -> None:
        quiet = {
            # No news or update checks: the tests reach nothing but 127.0.0.1.
            "@jupyterlab/apputils-extension/notification": {
                "fetchNews": "false",
                "checkForUpdates": False,
            },
        }
        for key, values in {**quiet, **self.user_settings}.items():
            package, plugin = key.rsplit("/", 1)
            target = settings_dir / package / f"{plugin}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values, indent=1))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                self.api("GET", "api/status")
                self.api("GET", "aaep/v1/chats")  # the server extension is loaded too
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.25)
        raise RuntimeError(
            f"jupyter lab did not answer within {START_TIMEOUT:.0f} s:\n{self.log_tail()}"
        )

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the server's REST API with the token; returns the parsed JSON (or None)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def chat_of(self, notebook: str) -> dict[str, Any] | None:
        chats = self.api("GET", f"aaep/v1/chats?notebook_path={notebook}")["chats"]
        if not chats:
            return None
        return self.api("GET", f"aaep/v1/chats/{chats[0]['chat_id']}")  # type: ignore[no-any-return]

    def start_kernel(self, notebook: str) -> str | None:
        """Start *notebook*'s kernel the way JupyterLab does when it opens it (a session for
        its path, the kernel its metadata names), unless one runs already; the page then
        connects to that session instead of starting one.

        Why: Chromium lets only one WebSocket to a host be connecting at a time (RFC 6455
        4.1), and Jupyter completes a kernel's socket only once the kernel answers, so the
        panel's chat socket, opened right after the notebook shows, waited behind a starting
        kernel (1-3 s a test here). Started first, the kernel boots while JupyterLab loads.
        A notebook without a kernel this server knows is left to JupyterLab. Returns the id
        of the notebook's kernel (None when left to JupyterLab)."""
        try:
            metadata = json.loads((self.root / notebook).read_text())["metadata"]
            kernel = str(metadata["kernelspec"]["name"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        running = self.kernels_of(notebook)
        if running:
            return running[0]
        body = {"path": notebook, "name": Path(notebook).name, "type": "notebook"}
        try:
            session = self.api("POST", "api/sessions", {**body, "kernel": {"name": kernel}})
        except urllib.error.HTTPError:
            return None  # e.g. no such kernel here: JupyterLab asks, as it would for a person
        return str(session["kernel"]["id"])

    def kernels_of(self, notebook: str) -> list[str]:
        """The ids of the kernels of *notebook*'s sessions."""
        sessions = self.api("GET", "api/sessions") or []
        return [s["kernel"]["id"] for s in sessions if s["path"] == notebook and s.get("kernel")]

    def shutdown_kernels(self) -> None:
        """Shut down every kernel (a test's notebook keeps one running otherwise)."""
        try:
            for session in self.api("GET", "api/sessions") or []:
                self.api("DELETE", f"api/sessions/{session['id']}")
        except (urllib.error.URLError, OSError):
            pass

    def stop(self) -> None:
        """Shut the server down (kernels too); by PID, escalating to SIGKILL if it hangs."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            self.shutdown_kernels()
            try:
                self.api("POST", "api/shutdown")
            except (urllib.error.URLError, OSError):
                pass
            # Usually about a second. Now and then the shutdown hangs after jupyter-collaboration
            # deletes its rooms; then SIGABRT makes faulthandler (PYTHONFAULTHANDLER) write every
            # thread's stack to the server log, for whoever investigates, and ends it.
            try:
                process.wait(timeout=8)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGABRT)
                try:
                    process.wait(timeout=4)
                except subprocess.TimeoutExpired:
                    os.kill(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
