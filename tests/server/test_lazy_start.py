"""Loading the extension the way Jupyter Server does loads neither SDK and starts nothing heavy
(issue 31): a class on JupyterHub starts its servers at once, and most users never open the agent.

Run in a fresh interpreter (``sys.modules`` of this test process already has everything): a
``ServerApp`` is initialized with the extension enabled, which finds it through
``_jupyter_server_extension_points``, imports ``jupyter_aaep.server.app``, links it and loads it
(``_load_jupyter_server_extension``: ``initialize_settings``, ``initialize_handlers``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("anthropic", "mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "uvicorn")
"""The Anthropic and MCP SDKs and what they bring; the first session or MCP call loads them."""

LATER = (
    "jupyter_aaep.agent.loop",
    "jupyter_aaep.agent.tools",
    "jupyter_aaep.aaep.events",
    "jupyter_aaep.aaep.redaction",
    "jupyter_aaep.acp",
    "jupyter_aaep.chats",
    "jupyter_aaep.notebook",
    "jupyter_aaep.tools",
    "jupyter_aaep.store.chat_store",
    "jupyter_aaep.mcp.outside_agents",
    "jupyter_aaep.server.service",
    "jupyter_aaep.server.message_kinds",
    "jupyter_aaep.server.streams",
)
"""Our own modules that come with the agent's first request, not with the server's start: the
agent, the protocol's events, chats, notebooks, tools, the store, the service and the streams.
Importing them cost a server nobody opened the agent in 0.3 CPU seconds, for each user of a
class that starts at once (issue 31)."""

PROBE = """
import json, sys, threading
from pathlib import Path
from jupyter_server.serverapp import ServerApp

folder = Path(sys.argv[1])
app = ServerApp()
app.initialize([
    "--ServerApp.port=0", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={folder}",
    "--allow-root", "--no-browser", "--ServerApp.jpserver_extensions={'jupyter_aaep': True}",
    f"--AAEPExtension.db_path={folder / 'chats.sqlite3'}",
])
ext = app.web_app.settings["jupyter_aaep"]
heavy = sys.argv[2].split(",")
later = sys.argv[3].split(",")
seen = {
    "loaded": [m for m in heavy if m in sys.modules],
    "ours_loaded": [m for m in later if m in sys.modules],
    "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
    "store_file": (folder / "chats.sqlite3").exists(),
    "routes": [str(r.matcher.regex.pattern) for rule in app.web_app.default_router.rules
               for r in getattr(rule.target, "rules", []) if "aaep/v1/mcp" in str(r.matcher.regex.pattern)],
}
print(json.dumps(seen), flush=True)
parts = ext.parts  # what the first request does
print(json.dumps({
    "loaded": [m for m in heavy if m in sys.modules],
    "ours_loaded": [m for m in later if m in sys.modules],
    "store_file": (folder / "chats.sqlite3").exists(),
    "tools": len(parts.toolbox.tools),
    "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
}))
"""


def test_loading_the_extension_loads_neither_sdk_and_opens_nothing(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "AAEP_"))},
        "HOME": str(tmp_path),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), ",".join(HEAVY), ",".join(LATER)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines and lines[0].startswith("{"), done.stderr[-4000:]
    seen = json.loads(lines[0])
    assert seen["loaded"] == [], f"loading the extension imported {seen['loaded']}"
    assert seen["ours_loaded"] == [], f"loading the extension imported {seen['ours_loaded']}"
    assert "aaep-chat-store" not in seen["threads"]  # no store writer before first use
    assert seen["store_file"] is False
    assert seen["routes"], "the MCP endpoint's route is there (it builds on its first request)"
    assert done.returncode == 0, done.stderr[-4000:]
    first = json.loads(lines[1])
    assert first["store_file"] is True and "aaep-chat-store" in first["threads"]
    assert first["tools"] > 5
    # The names are real modules, used by the first request (outside agents' MCP part by the
    # first MCP request only).
    assert set(first["ours_loaded"]) == set(LATER) - {"jupyter_aaep.mcp.outside_agents"}
    # Opening the panel builds the agent's parts; the MCP SDK waits for an MCP request.
    assert not {"mcp", "mcp_types", "starlette", "uvicorn"} & set(first["loaded"]), first["loaded"]
