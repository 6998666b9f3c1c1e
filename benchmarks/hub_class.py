"""A class logs in at once: N users' servers on a real JupyterHub, with the extension and without.

The test hub's recipe (``tests/hub/hub_harness.py``: real Unix users, LocalProcessSpawner,
configurable-http-proxy, everything on 127.0.0.1, the scripted model behind the hub's model
gateway). One hub; each phase spawns all N servers at once, with the extension enabled or
disabled (``ServerApp.jpserver_extensions``, chosen per phase by a ``pre_spawn_hook``), and
measures, in the same run:

- spawn: seconds from the spawn request to the hub reporting the server ready (p50, max), and
  how many failed;
- RSS of each idle server process (median, max) and its CPU seconds spent starting;
- with the extension: the first agent request per user (what opening the panel pays: the
  agent's parts are built then), the first one-turn session of all N at once (it may wait for
  the Anthropic SDK's import, started in the background by that first request), then N
  concurrent one-turn sessions (p50, p95);
- stop all: seconds from N concurrent stop requests until the hub reports every server gone.

Users' servers run this checkout's code (``PYTHONPATH``). Run as root, after ``scripts/hub-deps``:
``python benchmarks/hub_class.py -n 10 [--proxy PATH] [--rounds 1]``. The machine's load
average is printed with the figures: on a shared machine, note it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hub"))

import hub_harness
from hub_harness import Hub, User, create_user, make_workdir, remove_user

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, Turn

sys.path.insert(0, str(ROOT / "benchmarks"))
from server_start import compile_package

DISABLED = "--ServerApp.jpserver_extensions={'jupyter_aaep': False}"


class ClassHub(Hub):
    """The test hub, with this checkout on users' PYTHONPATH, long start timeouts (so the
    figures are the spawns' own times, not the hub giving up) and the extension switched per
    phase through the file ``mode`` in the hub's folder."""

    def write_config(self, policy: dict[str, Any]) -> Path:
        path = super().write_config(policy)
        mode = self.workdir / "mode"
        mode.write_text("enabled")
        path.write_text(
            path.read_text()
            + f"""
c.Spawner.environment["PYTHONPATH"] = "{ROOT}"
c.Spawner.start_timeout = 600
c.Spawner.http_timeout = 600
c.JupyterHub.concurrent_spawn_limit = 0


def _extension_for_this_phase(spawner):
    with open("{mode}") as f:
        if f.read().strip() == "disabled":
            spawner.args = [*spawner.args, "{DISABLED}"]


c.Spawner.pre_spawn_hook = _extension_for_this_phase
"""
        )
        return path


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def servers(hub: Hub) -> dict[str, dict[str, Any]]:
    users = hub.api("GET", "users").json()
    return {u["name"]: (u.get("servers") or {}).get("", {}) for u in users}


def spawn_all(hub: Hub, users: list[User], timeout: float) -> dict[str, float]:
    """Spawn every user's server at once; seconds until each is ready (missing: failed)."""
    began = time.monotonic()
    with ThreadPoolExecutor(len(users)) as pool:
        answers = list(pool.map(lambda u: hub.api("POST", f"users/{u.name}/server"), users))
    for user, answer in zip(users, answers, strict=True):
        if answer.status_code not in (201, 202):
            print(f"spawn of {user.name} refused: {answer.status_code} {answer.text[:200]}")
    ready: dict[str, float] = {}
    names = {u.name for u in users}
    while time.monotonic() - began < timeout and len(ready) < len(names):
        for name, model in servers(hub).items():
            if name in names and name not in ready and model.get("ready"):
                ready[name] = time.monotonic() - began
        pending = [n for n, m in servers(hub).items() if n in names and n not in ready and m]
        if not pending and len(ready) < len(names):
            break  # the rest failed: the hub dropped them
        time.sleep(0.25)
    return ready


def stop_all(hub: Hub, users: list[User], timeout: float = 300) -> float:
    began = time.monotonic()
    with ThreadPoolExecutor(len(users)) as pool:
        list(pool.map(lambda u: hub.api("DELETE", f"users/{u.name}/server"), users))
    names = {u.name for u in users}
    while time.monotonic() - began < timeout:
        if not any(m for n, m in servers(hub).items() if n in names):
            return time.monotonic() - began
        time.sleep(0.1)
    return float("inf")


def user_api(user: User, method: str, path: str, body: Any = None) -> httpx.Response:
    return httpx.request(
        method,
        f"{user.server_url}aaep/v1/{path}",
        json=body,
        headers={"Authorization": f"token {user.token}"},
        timeout=120,
    )


def first_use(user: User) -> tuple[float, str]:
    """Seconds the user's first agent request took (a new chat), and the chat."""
    began = time.monotonic()
    answer = user_api(user, "POST", "chats", {"notebook_path": "class.ipynb"})
    first = time.monotonic() - began
    assert answer.status_code == 201, answer.text
    return first, str(answer.json()["chat_id"])


def one_session(user: User, chat: str) -> float:
    """Seconds from the user's message to the end of the agent's one-turn answer."""
    began = time.monotonic()
    answer = user_api(
        user, "POST", f"chats/{chat}/messages", {"kind": "user_input", "text": "ping"}
    )
    assert answer.status_code == 202, answer.text
    session = answer.json()["session_id"]
    while True:
        view = user_api(user, "GET", f"chats/{chat}").json()
        if view.get("status") == "idle" and view.get("session_id") == session:
            took = time.monotonic() - began
            last = (view.get("transcript") or [{}])[-1].get("type", "")
            if not last.endswith("session.completed"):  # a figure for a failed session is no figure
                raise RuntimeError(f"{user.name}'s session ended with {last}")
            return took
        time.sleep(0.05)


def phase(hub: ClassHub, users: list[User], mode: str, timeout: float) -> dict[str, Any]:
    (hub.workdir / "mode").write_text(mode)
    ready = spawn_all(hub, users, timeout)
    result: dict[str, Any] = {
        "mode": mode,
        "spawn": list(ready.values()),
        "failed": len(users) - len(ready),
    }
    time.sleep(5)  # idle: whatever start-up work was left ran by now
    pids = [hub.server_pid(u) for u in users if u.name in ready]
    result["rss"] = [proc_rss_mb(p) for p in pids if p]
    result["cpu"] = [proc_cpu_s(p) for p in pids if p]
    if mode == "enabled":
        live = [u for u in users if u.name in ready]
        for user in live:
            user.server_url = f"{hub.url}/user/{user.name}/"
            answer = hub.api(
                "POST", f"users/{user.name}/tokens", json={"note": "class", "expires_in": 3600}
            )
            user.token = answer.json()["token"]
        with ThreadPoolExecutor(max(1, len(live))) as pool:
            firsts = list(pool.map(first_use, live))
        result["first_use"] = [f for f, _ in firsts]
        result["rss_after_first_use"] = [
            proc_rss_mb(p) for p in (hub.server_pid(u) for u in live) if p
        ]
        chats = [c for _, c in firsts]
        for key in ("first_session", "session"):  # the first one waits for the SDK's import
            with ThreadPoolExecutor(max(1, len(live))) as pool:
                result[key] = list(
                    pool.map(lambda pair: one_session(*pair), zip(live, chats, strict=True))
                )
    result["stop"] = stop_all(hub, users)
    return result


def show(result: dict[str, Any]) -> None:
    spawn, rss, cpu = result["spawn"], result["rss"], result["cpu"]
    print(
        f"  {result['mode']:8}: spawn p50 {statistics.median(spawn):6.1f} s, max {max(spawn):6.1f} s, "
        f"failed {result['failed']}; RSS median {statistics.median(rss):6.1f} MB (max "
        f"{max(rss):.1f}); start CPU median {statistics.median(cpu):.2f} s; stop all "
        f"{result['stop']:.1f} s"
    )
    if "session" in result:
        first, session, cold = result["first_use"], result["session"], result["first_session"]
        print(
            f"            first agent request p50 {statistics.median(first):.2f} s, max "
            f"{max(first):.2f} s (RSS after it median "
            f"{statistics.median(result['rss_after_first_use']):.1f} MB); first sessions p50 "
            f"{statistics.median(cold):.2f} s, max {max(cold):.2f} s; then {len(session)} "
            f"concurrent sessions p50 {statistics.median(session):.2f} s, p95 "
            f"{percentile(session, 0.95):.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="users starting at once")
    parser.add_argument(
        "--rounds", type=int, default=1, help="enabled/disabled pairs (alternating)"
    )
    parser.add_argument(
        "--proxy", help="configurable-http-proxy (default: .hub-deps of this checkout)"
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the spawns")
    args = parser.parse_args()
    if args.proxy:
        hub_harness.PROXY = Path(args.proxy)
    reason = hub_harness.missing()
    if reason is not None:
        raise SystemExit(f"cannot run the hub: {reason}")
    # The users cannot write this checkout's bytecode: without it each server would compile every
    # module changed since its last bytecode at every start (server_start.compile_package).
    compile_package(ROOT / "jupyter_aaep")  # what the users' PYTHONPATH imports
    org_key = f"sk-ant-org-{secrets.token_hex(20)}"
    model = FakeAnthropic(responder=pong, api_key=org_key).start()
    workdirs = make_workdir()
    workdir = next(workdirs)
    users: list[User] = []
    hub = None
    print(f"{os.cpu_count()} cores; load average before: {os.getloadavg()}")
    try:
        users = [create_user() for _ in range(args.n)]
        hub = ClassHub(workdir=workdir, model_url=model.base_url, org_key=org_key, users=users)
        hub.start({})
        for user in users:
            assert hub.api("POST", f"users/{user.name}").status_code in (201, 409)
        results = []
        for round_ in range(args.rounds):
            for mode in ("enabled", "disabled") if round_ % 2 == 0 else ("disabled", "enabled"):
                results.append(phase(hub, users, mode, args.timeout))
                print(f"round {round_ + 1}, load average now {os.getloadavg()}")
                show(results[-1])
        print(f"N = {args.n}, {os.cpu_count()} cores; load average after: {os.getloadavg()}")
        for mode in ("enabled", "disabled"):
            merged: dict[str, Any] = {"mode": mode, "failed": 0, "stop": 0.0}
            mine = [r for r in results if r["mode"] == mode]
            for key in (
                "spawn",
                "rss",
                "cpu",
                "first_use",
                "first_session",
                "session",
                "rss_after_first_use",
            ):
                if key in mine[0]:
                    merged[key] = [v for r in mine for v in r[key]]
            merged["failed"] = sum(r["failed"] for r in mine)
            merged["stop"] = statistics.median(r["stop"] for r in mine)
            show(merged)
        if model.problems:
            print("model problems:", model.problems)
    finally:
        if hub is not None:
            hub.stop()
        for user in users:
            remove_user(user)
        for _ in workdirs:
            pass
        model.stop()


def pong(request: RecordedRequest) -> Turn:
    return Turn(text="pong")


if __name__ == "__main__":
    main()
