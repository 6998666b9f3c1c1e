"""The Anthropic SDK's import starts ahead, on a worker thread, when the agent is first used, and
no model client is built before it has ended (issue 31: the first session paid the import, 20 s
with ten users starting at once; an earlier thread import without that wait sent a malformed
request).

Run in a fresh interpreter (this test process has the SDK loaded already): a real Jupyter server
with the extension, its model the scripted fake Messages API through the real SDK. The import is
slowed on purpose (a finder that sleeps on ``anthropic._client`` in the import thread), so the
first message is sent while it is under way, every time. Checked: the server answered meanwhile,
the client was built only after the import had ended, every request the fake received was a
well-formed Messages request, and the session completed with the scripted answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import asyncio, importlib.abc, json, sys, threading, time
from pathlib import Path

assert "anthropic" not in sys.modules

class Slow(importlib.abc.MetaPathFinder):
    # the import thread takes a while (as on a loaded machine); nothing else is slowed
    def find_spec(self, name, path=None, target=None):
        if name == "anthropic._client" and threading.current_thread().name == "aaep-sdk-import":
            time.sleep(1.5)
        return None

sys.meta_path.insert(0, Slow())

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, Turn
from jupyter_aaep.server.model_client import ClientFactory

folder = Path(sys.argv[1])
seen = {"built_while_loading": [], "answered_while_loading": False}
real_call = ClientFactory.__call__

def watched(self):
    seen["built_while_loading"].append(self.loading or "anthropic._client" not in sys.modules)
    return real_call(self)

ClientFactory.__call__ = watched

async def main():
    import os
    from tornado.httpclient import AsyncHTTPClient
    from jupyter_server.serverapp import ServerApp

    fake = FakeAnthropic().start()
    os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"] = fake.base_url, fake.api_key
    fake.add(Turn(text="The answer is 42."))
    app = ServerApp.instance(
        port=0, ip="127.0.0.1", open_browser=False, allow_root=True, root_dir=str(folder),
        log_level="WARN", jpserver_extensions={"jupyter_aaep": True},
    )
    app.init_signal = lambda: None
    app.initialize(argv=[
        f"--AAEPExtension.db_path={folder / 'chats.sqlite3'}",
        "--IdentityProvider.token=t",
    ], new_httpserver=True)
    await asyncio.sleep(0.05)
    await app._post_start()
    url = app.connection_url
    http = AsyncHTTPClient()

    async def call(method, path, body=None):
        response = await http.fetch(
            url + path, method=method, headers={"Authorization": "token t"},
            body=None if method == "GET" else json.dumps(body or {}), request_timeout=120,
        )
        return json.loads(response.body) if response.body else None

    ext = app.web_app.settings["jupyter_aaep"]
    chat = await call("POST", "aaep/v1/chats", {})  # the first use: the import starts
    clients = ext.parts.runner.client_factory
    seen["loading_at_first_message"] = clients.loading
    await call("POST", f"aaep/v1/chats/{chat['chat_id']}/messages",
               {"kind": "user_input", "text": "What is the answer?"})
    await call("GET", "aaep/v1/chats")  # the server answers while the import goes on
    seen["answered_while_loading"] = clients.loading
    deadline = time.monotonic() + 120
    events = []
    while time.monotonic() < deadline:
        events = ext.runner.get(chat["chat_id"]).emitter.history
        if any(e["type"].endswith(("session.completed", "session.errored")) for e in events):
            break
        await asyncio.sleep(0.05)
    seen["ending"] = [e["type"].rsplit(".", 1)[-1] for e in events if e["type"].endswith(
        ("session.completed", "session.errored"))]
    seen["answer"] = "".join(e.get("chunk", "") for e in events if e["type"].endswith("output.streaming"))
    seen["requests"] = [
        {"object": isinstance(r.body, dict), "messages": isinstance(r.body.get("messages"), list),
         "model": r.body.get("model"), "status": r.status}
        for r in fake.requests
    ]
    seen["problems"] = list(fake.problems)
    await app._cleanup()
    app.http_server.stop()
    fake.stop()

asyncio.run(main())
print(json.dumps(seen), flush=True)
"""


def test_the_sdk_loads_ahead_and_the_first_request_waits_for_it(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "AAEP_"))},
        "HOME": str(tmp_path),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    seen = json.loads(lines[-1])
    # The first message came while the import was under way, and the server kept answering.
    assert seen["loading_at_first_message"] is True, seen
    assert seen["answered_while_loading"] is True, seen
    # No client was built before the import had ended.
    assert seen["built_while_loading"] and not any(seen["built_while_loading"]), seen
    # Every request was a well-formed Messages request, and the session ended as scripted.
    assert seen["problems"] == [], seen
    assert seen["requests"] and all(
        r["object"] and r["messages"] and r["status"] == 200 for r in seen["requests"]
    ), seen
    assert seen["ending"] == ["completed"], seen
    assert "42" in seen["answer"], seen
