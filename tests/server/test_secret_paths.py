"""One masking path for everything sent to the model (issue 16): @-attachments, ``%aaep {var}``
descriptions, the @ picker's variable summaries, cell outputs, files, kernel tools' results and
passwords in connection URLs — none of the secrets reaches the model's request log.

A real Jupyter server, a real kernel, the real loop and SDK against the scripted fake model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_helpers import *
from kernel_helpers import new_name, wait_idle

from jupyter_aaep.testing.fake_anthropic import ToolUse, Turn

pytestmark = pytest.mark.slow

# Built here so no literal secret sits in the source.
PASSWORD = "Hunter2-" + "x9" * 6
KEY = "sk-ant-api03-" + "Qw8" * 12
DB_URL = f"postgresql://admin:{PASSWORD}@db.example:5432/sales"
SECRETS = (PASSWORD, KEY, "Qw8Qw8Qw8")

TOOL = f'''
from jupyter_aaep import aaep_tool

@aaep_tool
def connection_info() -> dict:
    """Where the sales database is."""
    return {{"url": {DB_URL!r}, "api_key_used": {KEY!r}}}
'''


def _notebook(root: Path, path: str) -> None:
    cells = [
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "execution_count": 1,
            "source": f"engine = create_engine({DB_URL!r})\nprint(engine)",
            "outputs": [
                {
                    "output_type": "stream",
                    "name": "stdout",
                    "text": f"Engine({DB_URL})\nkey {KEY}\n",
                }
            ],
        },
        {
            "cell_type": "markdown",
            "id": "m1",
            "metadata": {},
            "source": f"Connect with `{DB_URL}`.",
        },
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / path).write_text(json.dumps(notebook))


async def test_no_secret_reaches_the_model_on_any_path(
    kernels, kernel_api, api, extension, fake_model, jp_root_dir: Path
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path)
    _notebook(jp_root_dir, path)  # the notebook as saved, with an output that printed the secrets
    (jp_root_dir / "settings.ini").write_text(
        f"[db]\nurl = {DB_URL}\npassword = {PASSWORD}\ntoken = {KEY}\n"
    )
    assert "connection_info is ready" in await kernel.run(TOOL)
    await kernel.run(f"db_url = {DB_URL!r}\napi_key = {KEY!r}")
    status, created, _ = await api("chats", method="POST", body={"notebook_path": path})
    chat_id = created["chat_id"]

    # The @ picker's variable summaries (what the panel may attach).
    status, picker, _ = await api("chats", chat_id, "variables")
    assert status == 200 and {v["name"] for v in picker["variables"]} >= {"db_url", "api_key"}, (
        picker
    )
    assert not any(s in json.dumps(picker) for s in SECRETS), picker

    # @-attachments (a cell with its outputs), outputs and markdown (the notebook's state), a file,
    # and a kernel tool's result, in one session.
    fake_model.add(
        Turn(
            tool_uses=[
                ToolUse("get_notebook_state", {}),
                ToolUse("read_file", {"path": "settings.ini"}),
                ToolUse("connection_info", {}),
                ToolUse("inspect_variable", {"name": "db_url"}),
            ]
        ),
        Turn(text="The database is db.example; I did not see its password."),
    )
    status, body, _ = await api(
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={
            "kind": "user_input",
            "text": "Where is the database?",
            "context": [{"type": "cell", "cell_id": "c1"}, {"type": "variable", "name": "db_url"}],
        },
    )
    assert status == 202, body
    await wait_idle(extension, chat_id)

    # %aaep {var}: the kernel's descriptions of the variables the request names.
    fake_model.add(Turn(text="It is a URL."))
    await kernel.run("%load_ext jupyter_aaep")
    status, body = await kernel_api(
        kernel,
        "requests",
        method="POST",
        body={
            "text": "What is {db_url}?",
            "context": [{"name": "db_url", "description": f"str: {DB_URL!r}; key {KEY}"}],
        },
        query=f"chat_id={chat_id}",
    )
    assert status == 202, body
    await wait_idle(extension, chat_id)

    sent = json.dumps([request.body for request in fake_model.requests])
    assert len(fake_model.requests) == 3
    for secret in SECRETS:
        assert secret not in sent, secret
    # What is around the secrets did arrive: the masking hid the values only.
    assert "postgresql://admin:[hidden]@db.example" in sent
    assert (
        sent.count("postgresql://admin:[hidden]@db.example") >= 6
    )  # attachment, output, markdown, file, tool, {var}
