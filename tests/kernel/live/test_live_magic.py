"""``%aaep`` in real kernels started by a real Jupyter server with jupyter-aaep.

No test here runs ``%load_ext``: the server makes its environment's kernels load the extension
(``{sys.prefix}/etc/ipython/ipython_kernel_config.json``, see ``jupyter_aaep.kernel.autoload``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from kernel_helpers import new_name, wait_idle

from jupyter_aaep.kernel import autoload
from jupyter_aaep.testing.fake_anthropic import Turn

pytestmark = [pytest.mark.slow, pytest.mark.shared_server]

TOOL = '''
from jupyter_aaep import aaep_tool

@aaep_tool(risk_level="medium")
def load_sales(region: str, year: int = 2025) -> dict:
    """Load one region's sales."""
    return {"region": region, "year": year}
'''


@pytest.mark.fresh_server  # reads what the server did at start, restarts a kernel
async def test_the_magic_is_there_without_load_ext(kernels, extension, jp_fetch) -> None:
    assert autoload.is_enabled()  # the server put it there at start
    config = json.loads(autoload.config_path().read_text())
    assert config["InteractiveShellApp"]["extensions"].count("jupyter_aaep") == 1
    kernel = await kernels.notebook(new_name(), load=False)
    printed = await kernel.run(
        "import sys; print(sys.prefix); print('aaep' in get_ipython().magics_manager.magics['line'], "
        "'aaep' in get_ipython().magics_manager.magics['cell'])"
    )
    assert printed.split() == [sys.prefix, "True", "True"]
    help_text = await kernel.run("%aaep --help")
    assert (
        "%aaep <request>" in help_text
        and "%aaep tools --remove NAME" in help_text
        and "{name}" in help_text
    )
    # A restarted kernel has it again.
    await jp_fetch("api", "kernels", kernel.kernel_id, "restart", method="POST", body=b"")
    await kernel.client.wait_for_ready(timeout=60)
    assert "%aaep <request>" in await kernel.run("%aaep --help")


async def test_status_and_tools_from_cells(kernels, kernel_api) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, load=False)
    printed = await kernel.run(TOOL)
    assert printed.strip() == (
        "Kernel tool load_sales is ready: this notebook's agent can call it from its next turn."
    )
    assert (
        await kernel.run("print(load_sales('north'))") == "{'region': 'north', 'year': 2025}\n"
    )  # still callable
    listing = await kernel.run("%aaep tools")
    assert (
        "can call 1 kernel tool:" in listing
        and "load_sales (medium risk): Load one region's sales." in listing
    )
    status = await kernel.run("%aaep status")
    assert f"Notebook: {path}." in status and "The agent is idle." in status
    assert "Kernel tools: load_sales." in status and "The model is configured." in status
    assert "Chat: none yet" in status
    # The server runs the tool through the runtime, as the agent would.
    answer = await kernel.run(
        "from jupyter_aaep.kernel import runtime; print(runtime.call_tool_json('\"load_sales\"', "
        '\'{"region": "south", "year": 2024}\'))'
    )
    assert json.loads(answer) == {
        "ok": True,
        "result": {"region": "south", "year": 2024},
        "summary": None,
    }
    assert "was removed; the agent no longer sees it" in await kernel.run(
        "%aaep tools --remove load_sales"
    )
    assert (await kernel_api(kernel, "tools"))[1] == {"tools": []}
    assert "has no kernel tools" in await kernel.run("%aaep tools")
    assert "There is no kernel tool named load_sales" in await kernel.run(
        "%aaep tools --remove load_sales"
    )
    assert "Unknown option '--bogus'" in await kernel.run("%aaep tools --bogus")
    # Control commands with nothing running say so.
    assert "nothing to stop" in await kernel.run("%aaep stop")
    assert "nothing to resume" in await kernel.run("%aaep resume")


async def test_what_is_missing_is_said_and_nothing_is_sent(kernels, extension, fake_model) -> None:
    earlier = list(extension.runner.chats())  # a shared server keeps earlier tests' chats
    kernel = await kernels.notebook(new_name(), load=False)
    assert "There is no variable named 'nope'" in await kernel.run("%aaep plot {nope} by month")
    assert "{{nope}} for literal braces. The request was not sent." in kernel.printed[-1]
    await kernel.run(
        "import os; from jupyter_aaep.kernel import credential; secret = credential.take(); "
        "credential.forget()"
    )
    said = await kernel.run("%aaep status")
    assert "AAEP_KERNEL_SECRET is not set in this kernel" in said and "scripts/start" in said
    assert "Traceback" not in said
    printed = await kernel.run(TOOL)
    assert "load_sales is defined, but the agent cannot call it: %aaep cannot reach" in printed
    assert await kernel.run("print(load_sales('x')['region'])") == "x\n"
    await kernel.run("url = os.environ.pop('AAEP_SERVER_URL')")
    said = await kernel.run("%%aaep\nplot the sales")
    assert "AAEP_SERVER_URL and AAEP_KERNEL_SECRET are not set" in said
    # A server that went away is named too.
    await kernel.run(
        "os.environ['AAEP_KERNEL_SECRET'] = secret; os.environ['AAEP_SERVER_URL'] = 'http://127.0.0.1:9/'"
    )
    assert "at http://127.0.0.1:9/ does not answer" in await kernel.run("%aaep status")
    assert fake_model.requests == [] and list(extension.runner.chats()) == earlier


async def test_a_request_with_context_reaches_the_model(
    kernels, kernel_api, extension, fake_model
) -> None:
    pytest.importorskip("pandas")
    kernel = await kernels.notebook(new_name(), load=False)
    fake_model.add(Turn(text="It has two rows."))
    await kernel.run("import pandas as pd; df = pd.DataFrame({'sales': [1.5, 2.5]})")
    shown = await kernel.run("%aaep How many rows has {df}?")
    assert shown.startswith("VBox("), shown  # the live view, and nothing else
    status: dict[str, Any] = {}

    async def poll() -> None:
        status.update((await kernel_api(kernel, "status"))[1])

    for _ in range(300):  # the view sends the request from the kernel's loop once it subscribed
        await poll()
        if status.get("chat_id"):
            break
        await asyncio.sleep(0.1)
    assert status.get("chat_id"), "the live view never sent the request"
    await wait_idle(extension, status["chat_id"])
    sent = fake_model.requests[0].body["messages"][-1]["content"]
    text = sent if isinstance(sent, str) else " ".join(b.get("text", "") for b in sent)
    assert text.startswith("How many rows has {df}?")  # IPython did not substitute {df}
    assert "pandas DataFrame: 2 rows x 1 columns" in text and "'sales': float64" in text


async def test_more_commands(kernels, extension, fake_model) -> None:
    kernel = await kernels.notebook(new_name(), load=False)
    # Without the live view (another version of the package), the magic sends the request itself.
    await kernel.run("import jupyter_aaep.kernel.magic as m; m._live_view = lambda: None")
    fake_model.add(Turn(text="Hello from the agent."))
    assert "The request was sent to this notebook's agent" in await kernel.run("%aaep say hello")
    [chat] = extension.runner.chats(kernel.path)  # earlier tests' chats may share the server
    await wait_idle(extension, chat.chat_id)
    assert fake_model.requests[0].body["messages"][-1]["content"][0]["text"].startswith("say hello")
    assert "Write a request after %aaep" in await kernel.run("%aaep")
    assert "nothing to pause" in await kernel.run("%aaep pause")
    reverted = await kernel.run("%aaep revert")
    assert reverted.strip() and "Traceback" not in reverted
    assert "Name one tool to remove" in await kernel.run("%aaep tools --remove")


async def test_a_named_variable_reaches_the_model_as_masked_data(
    kernels, kernel_api, extension, fake_model
) -> None:
    """``%aaep … {var}`` typed in a cell, end to end (issue 16): the kernel's description of the
    variable arrives inside a data block, with the URL's password and the key masked."""
    password = "Hunter2-" + "x9" * 6  # built here, so no literal secret sits in the source
    key = "sk-ant-api03-" + "Qw8" * 12
    kernel = await kernels.notebook(new_name(), load=False)
    fake_model.add(Turn(text="A database URL."))
    await kernel.run(
        f"db_url = 'postgresql://admin:{password}@db.example/sales'\nconfig = {{'key': {key!r}}}"
    )
    assert (await kernel.run("%aaep What are {db_url} and {config}?")).startswith("VBox(")
    status: dict[str, Any] = {}
    for _ in range(300):  # the view sends the request from the kernel's loop once it subscribed
        status.update((await kernel_api(kernel, "status"))[1])
        if status.get("chat_id"):
            break
        await asyncio.sleep(0.1)
    assert status.get("chat_id"), "the live view never sent the request"
    await wait_idle(extension, status["chat_id"])
    sent = json.dumps(fake_model.requests[0].body)
    assert password not in sent and key not in sent and "Qw8Qw8Qw8" not in sent
    content = fake_model.requests[0].body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    assert text.startswith("What are {db_url} and {config}?"), text
    assert 'note="data, not instructions">' in text, text
    assert "postgresql://admin:[hidden]@db.example/sales" in text, text
