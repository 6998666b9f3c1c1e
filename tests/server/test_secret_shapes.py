"""Secret shapes a data scientist has are masked on every path, for the model and for
listeners (issue 25): Hugging Face tokens, Stripe secret keys, bare AWS secret access keys
next to their id or name, and a printed ``{'AWS_SECRET_ACCESS_KEY': '…'}``.

A real Jupyter server and kernel, the real loop and SDK against the scripted fake model; the
paths: a cell run by the agent (its output), the notebook's state (saved outputs), a file, a
variable's inspection, a kernel tool's result and a tool's error. What listeners hear is the
chat's AAEP event history.
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
HF = "hf_" + "QwErTyUiOp" * 3 + "AsDf"
STRIPE = "sk_live_" + "51Hx" * 6
RESTRICTED = "rk_test_" + "9zYx" * 5
AWS_ID = "AKIA" + "Z7Q2" * 4
AWS_KEY = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY" + "Ab12Cd34Ef"
SECRETS = (HF, STRIPE, RESTRICTED, AWS_KEY, AWS_ID)
PRINTED = (
    f"print({HF!r}, {STRIPE!r}, {RESTRICTED!r})\n"
    f"print({AWS_ID!r} + ',' + {AWS_KEY!r})\n"
    f"print({{'AWS_SECRET_ACCESS_KEY': {AWS_KEY!r}}})"
)
TOOL = f'''
from jupyter_aaep import aaep_tool, ToolError

@aaep_tool
def cloud_login() -> dict:
    """The cloud accounts in use."""
    return {{"hub": {HF!r}, "stripe": {STRIPE!r}, "aws": {{"SecretAccessKey": {AWS_KEY!r}}}}}

@aaep_tool
def broken_login() -> str:
    """Fails, naming the key."""
    raise ToolError("refused: " + {AWS_ID!r} + " " + {AWS_KEY!r} + " " + {HF!r})
'''


async def test_new_secret_shapes_reach_neither_the_model_nor_listeners(
    kernels, api, sse, extension, fake_model, jp_root_dir: Path
) -> None:
    path = new_name()
    kernel = await kernels.notebook(path, [PRINTED])
    assert "cloud_login is ready" in await kernel.run(TOOL)
    await kernel.run(f"creds = {{'AWS_SECRET_ACCESS_KEY': {AWS_KEY!r}, 'hf': {HF!r}}}")
    (jp_root_dir / "credentials.csv").write_text(
        f"Access key ID,Secret access key\n{AWS_ID},{AWS_KEY}\nhub,{HF}\nstripe,{STRIPE}\n"
    )
    status, created, _ = await api(
        "chats", method="POST", body={"notebook_path": path, "approval_mode": "auto"}
    )
    assert status == 201 and created["approval_mode"] == "auto", created
    chat_id = created["chat_id"]
    fake_model.add(
        Turn(tool_uses=[ToolUse("run_cell", {"cell_id": "c1"})]),
        Turn(
            tool_uses=[
                ToolUse("get_notebook_state", {}),
                ToolUse("read_file", {"path": "credentials.csv"}),
                ToolUse("inspect_variable", {"name": "creds"}),
                ToolUse("cloud_login", {}),
                ToolUse("broken_login", {}),
            ]
        ),
        Turn(text="Your cloud accounts are set up; I did not read their keys."),
    )
    async with sse(chat_id) as listener:  # a listener is there, and hears what follows
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Which cloud accounts do I use?"},
        )
        assert status == 202, body
        events = await wait_idle(extension, chat_id)
        await listener.until(lambda m: str(m.get("type", "")).endswith("session.completed"), 10)
        streamed = [frame.data for frame in listener.frames]

    sent = json.dumps([request.body for request in fake_model.requests])
    # The approval card shows the person's own cell as it is (they approve that exact source);
    # everything said about it, and everything after it, is what listeners hear.
    heard = json.dumps(
        [
            {**e, "extra_context": {**e.get("extra_context", {}), "code": None}}
            for e in [*events, *streamed]
        ]
    )
    assert len(fake_model.requests) == 3
    for secret in SECRETS:
        assert secret not in sent, secret
        assert secret not in heard, [json.dumps(e) for e in events if secret in json.dumps(e)]
    # The paths were taken: the masks stand where the secrets were, on each of them.
    ran, state, read, inspected, tool, failed = (
        json.dumps(r)
        for r in [fake_model.requests[1].body["messages"][-1]]
        + [
            b
            for b in fake_model.requests[2].body["messages"][-1]["content"]
            if b.get("type") == "tool_result"
        ]
    )
    for shown in (ran, state, read, inspected, tool, failed):
        assert "[hidden]" in shown, shown
    assert "AWS_SECRET_ACCESS_KEY" in ran  # the name stays readable for the model
