"""The risk scan that makes dangerous cells always ask (jupyter_aaep/tools/code_risk.py)."""

from __future__ import annotations

import pytest
from nb_helpers import on_server_loop

from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.tools.code_risk import risk_level_for, scan, scan_code
from jupyter_aaep.tools.notebook import notebook_tools

pytestmark = pytest.mark.shared_server


@pytest.mark.parametrize(
    "source",
    [
        "print(1)",
        "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.describe()",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])",
        "import os\npath = os.path.join('a', 'b')\nos.listdir(path)",
        "import re\nre.compile('x')",
        "%matplotlib inline\nx = 1",
        "%env PYTHONHASHSEED=0",
        "import requests\nrequests.get('https://example.org')",
        "while True:\n    pass",
    ],
)
def test_ordinary_data_science_is_not_flagged(source: str) -> None:
    assert scan_code(source) == ()


@pytest.mark.parametrize(
    ("source", "category", "level"),
    [
        ("!ls -la", "runs shell commands (ls)", "medium"),
        ("files = !ls\nout = %sx whoami", "runs shell commands (ls, whoami)", "medium"),
        ("%%bash\necho hi\n", "runs shell commands (echo)", "medium"),
        ("import subprocess\nsubprocess.run(['git', 'status'])", "runs shell commands", "medium"),
        ("import os\nos.system('make')", "runs shell commands", "medium"),
        ("!rm -rf data/", "deletes files or folders (rm -rf)", "high"),
        ("import shutil\nshutil.rmtree('out')", "deletes files or folders (shutil.rmtree)", "high"),
        ("from os import remove as rm\nrm('x')", "deletes files or folders (os.remove)", "high"),
        ("from pathlib import Path\nPath('a.csv').unlink()", "deletes files or folders", "high"),
        ("%pip install scikit-learn", "installs packages (%pip install scikit-learn)", "medium"),
        ("!pip install torch", "installs packages (pip install torch)", "medium"),
        ("!conda install -y numpy", "installs packages (conda install numpy)", "medium"),
        (
            "import requests\nrequests.post('https://x.test', json={'a': 1})",
            "sends data over the network (requests.post)",
            "medium",
        ),
        (
            "import httpx\nwith httpx.Client() as c:\n    httpx.Client().put('u')",
            "sends data over the network",
            "medium",
        ),
        (
            "import urllib.request\nurllib.request.urlopen('https://x', data=b'1')",
            "sends data over the network",
            "medium",
        ),
        (
            "import socket\ns = socket.socket()",
            "sends data over the network (socket.socket)",
            "medium",
        ),
        (
            "import smtplib\nsmtplib.SMTP('mail')",
            "sends data over the network (smtplib.SMTP)",
            "medium",
        ),
        (
            "!curl -X POST -d @data.json https://x.test",
            "sends data over the network (curl)",
            "medium",
        ),
        ("open('/home/me/.ssh/id_rsa').read()", "reads credentials or secrets (.ssh)", "high"),
        (
            "import os\nkey = os.environ['OPENAI_API_KEY']",
            "reads credentials or secrets (environment variable OPENAI_API_KEY)",
            "high",
        ),
        (
            "import os\ntoken = os.getenv('GITHUB_TOKEN')",
            "reads credentials or secrets (environment variable GITHUB_TOKEN)",
            "high",
        ),
        (
            "import os\nprint(dict(os.environ))",
            "reads credentials or secrets (all environment variables)",
            "high",
        ),
        (
            "import keyring\nkeyring.get_password('svc', 'me')",
            "reads credentials or secrets (keyring.get_password)",
            "high",
        ),
        ("%env", "reads credentials or secrets (%env)", "high"),
        ("!cat ~/.aws/credentials", "reads credentials or secrets", "high"),
        ("eval(user_text)", "runs code built from strings (eval)", "medium"),
        ("exec(open('script.py').read())", "runs code built from strings (exec)", "medium"),
        ("!sudo apt-get install -y graphviz", "uses administrator rights (sudo)", "high"),
        ("import os\nos._exit(0)", "stops or resets the kernel (os._exit)", "medium"),
        ("%reset -f", "stops or resets the kernel (%reset)", "medium"),
        (
            "%%writefile helper.py\nprint(1)",
            "writes, moves or copies files (%%writefile helper.py)",
            "medium",
        ),
        (
            "import os\nhome = os.environ.get('HOME')",
            "reads environment variables, which can hold keys (HOME)",
            "medium",
        ),
        ("%%javascript\nalert(1)", "runs JavaScript in your browser", "medium"),
        (
            "%%time\nimport shutil\nshutil.rmtree('x')",
            "deletes files or folders (shutil.rmtree)",
            "high",
        ),
        ("__import__('os').system('id')", "runs shell commands (os.system, id)", "medium"),
        ("def broken(:\n    os.remove('x')", "deletes files or folders (os.remove)", "high"),
    ],
)
def test_risky_code_is_flagged_with_a_spoken_reason(source: str, category: str, level: str) -> None:
    reasons = scan_code(source)
    assert any(reason.startswith(category) for reason in reasons), reasons
    assert risk_level_for(scan(source)) == level


def test_most_dangerous_reasons_come_first_and_secrets_are_not_repeated() -> None:
    reasons = scan_code(
        "!pip install x\n!rm -rf /tmp/y\n!curl -H 'Authorization: Bearer sk-abcdef123456' -d 1 https://x"
    )
    assert reasons[0].startswith("deletes files")
    assert not any("sk-abcdef" in reason for reason in reasons)
    assert all(len(reason) < 160 for reason in reasons)


def test_one_reason_per_category() -> None:
    reasons = scan_code("import os\nos.remove('a')\nos.remove('b')\nos.unlink('c')\n!rm x\n!rm y")
    assert len([r for r in reasons if r.startswith("deletes")]) == 1


@on_server_loop
async def test_run_cell_reads_a_cell_with_the_imports_of_the_others(
    notebook_file, make_ctx
) -> None:
    """An alias imported in one cell (run earlier, or approved on its own) is seen in the next."""
    path = notebook_file(
        "alias.ipynb",
        [
            {"id": "imp", "source": "import subprocess as sp"},
            {"id": "use", "source": "sp.run(['make'])"},
        ],
    )
    run_cell = {tool.name: tool for tool in notebook_tools()}["run_cell"]
    imports = await run_cell.describe(make_ctx(path), {"cell_id": "imp"})
    assert imports.risk_flags == ()
    uses = await run_cell.describe(make_ctx(path), {"cell_id": "use"})
    assert uses.risk_flags == ("runs shell commands (subprocess.run, make)",)
    assert not ApprovalPolicy(mode="auto").auto_approves(uses)
