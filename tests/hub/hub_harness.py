"""A real JupyterHub for the tests: real Unix users, LocalProcessSpawner, configurable-http-proxy.

Everything binds to 127.0.0.1. The hub runs as root (the tests do), so it can start each user's
server as that user; the users are created here with ``useradd`` under unique names and removed
with ``userdel`` afterwards. Users' servers run this checkout's ``.venv`` (its
packages, through a root-owned environment they can read but not write: the shared-environment
case (see :func:`shared_environment`).

The model is the scripted fake (``FakeAnthropic``) in the test process, reachable only with the
organisation's key; users' servers reach it through the model gateway (``jupyter_aaep.hub.gateway``),
a hub-managed service that holds that key, with their own hub token as their API key.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
PROXY = ROOT / ".hub-deps" / "node_modules" / ".bin" / "configurable-http-proxy"
SITE_PACKAGES = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    / "site-packages"
)
GATEWAY = "aaep-gateway"
TOOLS = "jupyter_aaep.testing.conformance_tools:CONFORMANCE_TOOLS"


def missing() -> str | None:
    """Why a hub cannot run here, or ``None``."""
    if os.geteuid() != 0:
        return "the hub tests create Unix users and start servers as them: run them as root"
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        return "useradd and runuser are needed to create and act as test users"
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "jupyterhub is not installed in this environment (pip install -e '.[test]')"
    if base_interpreter() is None:
        return (
            "no Python interpreter of this version is reachable by other users (this venv's base is "
            "inside a private folder and there is no /usr/bin/python3.X of the same version)"
        )
    if not PROXY.exists():
        return "configurable-http-proxy is not installed: run scripts/hub-deps"
    return None


def _reachable_by_everyone(path: Path) -> bool:
    """Every folder above *path* can be entered by others, and *path* itself run by them."""
    path = path.resolve()
    if not path.exists() or not path.stat().st_mode & 0o001:
        return False
    return all(parent.stat().st_mode & 0o001 for parent in path.parents)


def base_interpreter() -> Path | None:
    """A Python of this version that the test users can run."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (
        Path(getattr(sys, "_base_executable", sys.executable)),
        Path(f"/usr/bin/python{version}"),
    ):
        if _reachable_by_everyone(candidate):
            return candidate
    return None


def shared_environment(workdir: Path) -> Path:
    """A root-owned virtual environment users can run but not write, with this checkout's packages.

    It is made from an interpreter the users can reach, and sees this venv's site-packages
    through a ``.pth`` file (same Python version, so the compiled packages fit). Its own
    ``etc/ipython`` has no kernel config, so %aaep must reach users' kernels another way
    (``server/kernel_launch.py``), as in a shared conda or venv on a real hub. Returns its python.
    """
    interpreter = base_interpreter()
    assert interpreter is not None
    env = workdir / "shared-env"
    subprocess.run(
        [str(interpreter), "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True
    )
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (env / "lib" / version / "site-packages" / "_aaep_hub_tests.pth").write_text(
        f"import site; site.addsitedir({str(SITE_PACKAGES)!r})\n"
    )
    for path in [env, *env.rglob("*")]:
        os.chmod(
            path,
            0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644,
            follow_symlinks=False,
        ) if not path.is_symlink() else None
    return env / "bin" / "python"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class User:
    name: str
    uid: int
    home: Path
    token: str = ""
    server_url: str = ""
    """The user's server through the proxy: ``http://127.0.0.1:<port>/user/<name>/``."""
    direct_url: str = ""
    """The same server on its own port (how its kernels reach it)."""

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}


def create_user() -> User:
    name = f"aaep{secrets.token_hex(4)}"
    subprocess.run(
        ["useradd", "--create-home", "--shell", "/bin/sh", name], check=True, capture_output=True
    )
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, Path(entry.pw_dir))


def remove_user(user: User) -> None:
    kill_processes_of(user.uid)
    subprocess.run(["userdel", "--remove", user.name], capture_output=True, check=False)


def pids_of(uid: int) -> list[int]:
    """Processes running as *uid* (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except FileNotFoundError:
                continue
    return found


def kill_processes_of(uid: int) -> None:
    """Only the test users' processes, which these tests started, each by its pid."""
    for pid in pids_of(uid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_as(
    user: User, python: Path | None, code: str, timeout: float = 30, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run Python *code* as *user* (their uid and groups), the way any of their processes would,
    with the users' Python (:func:`shared_environment`)."""
    assert python is not None
    return subprocess.run(
        ["runuser", "-u", user.name, "--", str(python), "-I", "-c", code],
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )


@dataclass
class Hub:
    workdir: Path
    model_url: str
    org_key: str
    users: list[User]
    port: int = field(default_factory=free_port)
    hub_port: int = field(default_factory=free_port)
    proxy_api_port: int = field(default_factory=free_port)
    gateway_port: int = field(default_factory=free_port)
    service_token: str = field(default_factory=lambda: secrets.token_hex(32))
    process: subprocess.Popen[bytes] | None = None
    python: Path | None = None
    """The users' Python (:func:`shared_environment`)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/services/{GATEWAY}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "hub.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.service_token}"}
        return httpx.request(
            method, f"{self.url}/hub/api/{path}", headers=headers, timeout=60, **kwargs
        )

    # -- configuration ----------------------------------------------------------------------------
    def write_config(self, policy: dict[str, Any]) -> Path:
        # What an administrator fixes for every user: a system-wide config directory users can
        # read but not write, on JUPYTER_CONFIG_PATH.
        policy_dir = self.workdir / "etc-jupyter"
        policy_dir.mkdir()
        (policy_dir / "jupyter_server_config.json").write_text(
            json.dumps({"AAEPExtension": policy})
        )
        os.chmod(policy_dir, 0o755)
        os.chmod(policy_dir / "jupyter_server_config.json", 0o644)
        gateway_dir = self.workdir / "gateway"
        gateway_dir.mkdir(mode=0o700)
        config = f"""
c = get_config()  # noqa
c.JupyterHub.bind_url = "{self.url}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{self.hub_port}"
c.JupyterHub.db_url = "sqlite:///{self.workdir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{self.workdir}/cookie_secret"
c.JupyterHub.pid_file = "{self.workdir}/hub.pid"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.proxy_api_port}"
c.ConfigurableHTTPProxy.command = ["{PROXY}"]
c.ConfigurableHTTPProxy.pid_file = "{self.workdir}/proxy.pid"
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = "{secrets.token_hex(12)}"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = ["{self.python}", "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
c.Spawner.args = ["--AAEPExtension.extra_tools={TOOLS}", "--AAEPExtension.sse_keepalive_seconds=1"]
# The model through the gateway, with the user's own hub token as the key (docs/JUPYTERHUB.md).
c.Spawner.environment = {{
    "ANTHROPIC_BASE_URL": "{self.gateway_url}",
    "ANTHROPIC_API_KEY": lambda spawner: spawner.api_token,
    # The shared environment's data and config (the extension's enabling file, the panel).
    "JUPYTER_CONFIG_PATH": "{policy_dir}:{sys.prefix}/etc/jupyter",
    "JUPYTER_PATH": "{sys.prefix}/share/jupyter",
}}
c.JupyterHub.services = [
    {{"name": "aaep-tests", "api_token": "{self.service_token}"}},
    {{
        "name": "{GATEWAY}",
        "url": "http://127.0.0.1:{self.gateway_port}",
        "command": ["{sys.executable}", "-m", "jupyter_aaep.hub.gateway", "--upstream", "{self.model_url}",
                    "--usage-file", "{gateway_dir}/usage.json", "--budget-tokens", "10000000"],
        "environment": {{"ANTHROPIC_API_KEY": "{self.org_key}"}},
        "cwd": "{gateway_dir}",
    }},
]
c.JupyterHub.load_roles = [{{
    "name": "aaep-tests",
    "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "access:services", "read:users"],
    "services": ["aaep-tests"],
}}]
"""
        path = self.workdir / "jupyterhub_config.py"
        path.write_text(config)
        os.chmod(path, 0o600)
        return path

    # -- running ----------------------------------------------------------------------------------
    def start(self, policy: dict[str, Any]) -> None:
        self.python = shared_environment(self.workdir)
        config = self.write_config(policy)
        self._log_file = log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "JUPYTER", "AAEP_"))
        }
        self.process = subprocess.Popen(
            [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(config)],
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self._wait(lambda: self.api("GET", "").status_code == 200, 60, "the hub to answer")

    def _wait(self, condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(
                    f"the hub exited while waiting for {what}:\n{self.log()[-4000:]}"
                )
            try:
                if condition():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()[-4000:]}")

    def spawn_all(self) -> None:
        for user in self.users:
            assert self.api("POST", f"users/{user.name}").status_code in (201, 409)

        def spawn(user: User) -> httpx.Response:
            return self.api("POST", f"users/{user.name}/server")

        with ThreadPoolExecutor(len(self.users)) as pool:  # the hub answers each after up to 10 s
            for answer in pool.map(spawn, self.users):
                assert answer.status_code in (201, 202), f"{answer.text}\n{self.log()[-6000:]}"
        for user in self.users:
            self.wait_ready(user)
            model = self.server_model(user)
            assert model is not None
            user.server_url = f"{self.url}/user/{user.name}/"
            user.direct_url = model["url"] if model["url"].startswith("http") else ""
            answer = self.api(
                "POST", f"users/{user.name}/tokens", json={"note": "hub tests", "expires_in": 3600}
            )
            assert answer.status_code == 201, answer.text
            user.token = answer.json()["token"]

    def wait_ready(self, user: User) -> None:
        self._wait(
            lambda: (self.server_model(user) or {}).get("ready"), 90, f"{user.name}'s server"
        )

    def server_model(self, user: User) -> dict[str, Any] | None:
        answer = self.api("GET", f"users/{user.name}")
        servers = answer.json().get("servers") or {}
        return servers.get("")

    def server_pid(self, user: User) -> int | None:
        model = self.server_model(user)
        state = (model or {}).get("state") or {}
        pid = state.get("pid")
        return int(pid) if pid else None

    def stop(self) -> None:
        if self.process is None:
            return

        def stop_server(user: User) -> None:
            try:
                self.api("DELETE", f"users/{user.name}/server")
            except httpx.HTTPError:
                pass

        with ThreadPoolExecutor(len(self.users)) as pool:
            list(pool.map(stop_server, self.users))
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(
                self.process.pid, signal.SIGKILL
            )  # the hub's own process group (start_new_session)
            self.process.wait(5)
        self.process = None
        self._log_file.close()


def make_workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="aaep-hub-"))
    os.chmod(path, 0o711)  # users may reach the policy folder inside, but not list or read the rest
    try:
        yield path
    finally:
        if os.environ.get("AAEP_KEEP_HUB_DIR"):  # for debugging: the hub's log and config stay
            print(f"hub folder kept: {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)
