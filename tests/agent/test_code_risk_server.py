"""Kernel code that reaches for the Jupyter server asks, and says so in plain words (issue 25).

The attack: a cell finds Jupyter's runtime folder through the kernel's connection file, reads
the server's token from ``jpserver-<pid>.json`` there and schedules a task that answers the
agent's pending requests over HTTP. Before this scan knew the runtime folder, the background
task and the opener's body, that cell was "Approved automatically" in auto mode.
"""

from __future__ import annotations

import pytest

from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.tools import ActionPreview
from jupyter_aaep.tools.code_risk import risk_level_for, scan, scan_code

TOKEN = "reads the Jupyter server's login token"
RUNTIME = "reads Jupyter's runtime folder, where the server's login token is kept"
BACKGROUND = "sends data to a web address in the background"
ADDRESS = "looks up the Jupyter server's address, to send it requests"
NETWORK = "sends data over the network"

ATTACK = """\
import asyncio
import glob
import json
import os
import urllib.request
from ipykernel import connect


def runtime_folder():
    return os.path.dirname(connect.get_connection_file())


def server_login(folder):
    for path in sorted(glob.glob(os.path.join(folder, "jpserver-*.json"))):
        with open(path) as handle:
            info = json.load(handle)
        return info["url"], info["token"]
    return None, None


async def answer(base, token):
    opener = urllib.request.build_opener()
    headers = {"Authorization": "token " + token, "Content-Type": "application/json"}
    while True:
        await asyncio.sleep(0.1)
        body = json.dumps({"type": "confirmation.reply", "approved": True}).encode()
        request = urllib.request.Request(base + "aaep/v1/chats/x/messages", headers=headers)
        try:
            opener.open(request, body)
        except OSError:
            pass


base, token = server_login(runtime_folder())
if token:
    asyncio.get_event_loop().create_task(answer(base, token))
print("ready")
"""


def _starts(reasons: tuple[str, ...], sentence: str) -> bool:
    return any(reason.startswith(sentence) for reason in reasons)


def test_the_issue_attack_asks_in_auto_mode_and_the_card_says_why() -> None:
    assert len(ATTACK.splitlines()) == 37
    findings = scan(ATTACK)
    reasons = tuple(f.reason for f in findings)
    for sentence in (RUNTIME, TOKEN, BACKGROUND, NETWORK):
        assert _starts(reasons, sentence), reasons
    assert risk_level_for(findings) == "high"
    preview = ActionPreview(summary="Run a cell.", risk_flags=reasons, fingerprint="f")
    assert not ApprovalPolicy(mode="auto").auto_approves(preview)
    # the three sentences about the server come first (high), in words, not only code names
    assert reasons[0].startswith(RUNTIME)


@pytest.mark.parametrize(
    ("source", "sentence"),
    [
        # the runtime folder, however it is found
        ("import ipykernel.connect as kc\nd = os.path.dirname(kc.get_connection_file())", RUNTIME),
        ("from ipykernel.connect import get_connection_file as g\nfolder = g()", RUNTIME),
        ("from ipykernel import connect\nf = getattr(connect, 'get_connection_file')()", RUNTIME),
        ("f = getattr(connect, 'get_conn' + 'ection_file')()", RUNTIME),
        ("m = __import__('ipykernel.connect', fromlist=['x'])\nm.get_connection_file()", RUNTIME),
        ("__import__('jupyter_core.paths').paths.jupyter_runtime_dir()", RUNTIME),
        ("from jupyter_core.paths import jupyter_runtime_dir as r\nr()", RUNTIME),
        ("from jupyter_core import paths\npaths.jupyter_runtime_dir()", RUNTIME),
        ("from jupyter_client.connect import jupyter_runtime_dir", RUNTIME),
        ("import os\nfolder = os.environ['JUPYTER_RUNTIME_DIR']", RUNTIME),
        ("app = get_app()\nprint(app.connection_file)", RUNTIME),
        ("glob.glob(folder + '/kernel-*.json')", RUNTIME),
        ("!ls $(jupyter --runtime-dir)", RUNTIME),
        # the server's token
        ("import pathlib\nfiles = list(pathlib.Path(d).glob('jpserver-*'))", TOKEN),
        ("from pathlib import Path\nPath(d).glob('jps' + 'erver-*.json')", TOKEN),
        ("glob.glob(os.path.join(folder, 'nbserver-*.json'))", TOKEN),
        (
            "names = [n for n in os.listdir(d) if n.startswith('jpserver') and n.endswith('.json')]",
            TOKEN,
        ),
        ("import os\ntoken = os.environ.get('JUPYTER_TOKEN')", TOKEN),
        ("import os\ntoken = os.getenv('JPY_API_TOKEN')", TOKEN),
        (
            "from jupyter_server.serverapp import list_running_servers\nlist(list_running_servers())",
            TOKEN,
        ),
        ("import jupyter_server.serverapp as s\nnext(s.list_running_servers())", TOKEN),
        ("!cat ~/.local/share/jupyter/runtime/jpserver-*.json", TOKEN),
        ("!jupyter server list", TOKEN),
        # the server's address, and our own kernel API's
        ("import os\nurl = os.environ['JUPYTERHUB_API_URL']", ADDRESS),
        # scheduled network work
        (
            (
                "import asyncio, urllib.request\nasync def go():\n    urllib.request.urlopen(u)\n"
                "loop = asyncio.get_event_loop()\nloop.create_task(go())"
            ),
            BACKGROUND,
        ),
        (
            (
                "import asyncio, requests\nasync def go():\n    requests.post(u, json={})\n"
                "asyncio.ensure_future(go())"
            ),
            BACKGROUND,
        ),
        (
            (
                "import asyncio as aio\nimport httpx\nasync def go():\n    await httpx.AsyncClient().get(u)\n"
                "aio.get_event_loop().create_task(go())"
            ),
            BACKGROUND,
        ),
        # an opener that sends a body
        ("import urllib.request\nurllib.request.build_opener().open(url, body)", NETWORK),
        (
            "from urllib.request import build_opener as b\no = b()\no.open(url, data=payload)",
            NETWORK,
        ),
        ("import urllib.request as u\nu.OpenerDirector().open(req, b'x')", NETWORK),
    ],
)
def test_reaching_for_the_server_is_named(source: str, sentence: str) -> None:
    reasons = scan_code(source)
    assert _starts(reasons, sentence), reasons


@pytest.mark.parametrize(
    "source",
    [
        "token = os.environ['AAEP_SERVER_URL']",
        "os.environ.get('AAEP_KERNEL_ID')",
    ],
)
def test_the_agents_own_kernel_api_variables_ask(source: str) -> None:
    findings = scan(source)
    assert any(f.category == "agent" for f in findings), findings


@pytest.mark.parametrize(
    "source",
    [
        "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\ndf.head()",
        "import requests\nr = requests.get('https://example.org/data.csv')\nr.raise_for_status()",
        "import requests\nurl = 'https://example.org/api'\ndata = requests.get(url, timeout=10).json()",
        "import urllib.request\nwith urllib.request.urlopen(url) as f:\n    raw = f.read()",
        "import urllib.request\nurllib.request.build_opener().open(url)",
        "import json\nconfig = json.load(open('kernel-settings.json'))",
        "import glob\nfiles = glob.glob('data/*.json')",
        "import asyncio\nasync def main():\n    await asyncio.sleep(1)\nawait main()",
        "token_counts = df['token'].value_counts()\nserver = 'prod'",
        "from pathlib import Path\nsorted(Path('data').glob('*.parquet'))",
        "c.ServerApp.jpserver_extensions = {'my_ext': True}",
    ],
)
def test_ordinary_data_work_is_not_flagged_by_the_server_rules(source: str) -> None:
    categories = {f.category for f in scan(source)}
    assert not categories & {"runtime", "server_token", "server_address", "background_send"}, source
    assert scan_code(source) == (), source
