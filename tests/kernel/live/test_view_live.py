"""The ``%aaep`` live view in real kernels of a real Jupyter server (issue 12's acceptance).

The user's side is a ``jupyter_client`` client of the notebook's kernel (as JupyterLab's): it
runs ``%aaep``, and presses the widget's Approve button by sending the comm message a browser
sends (``{"method": "custom", "content": {"event": "click"}}``, DESIGN §12). The agent's cell
runs through the server's own kernel client meanwhile, which only works because the magic
returned and the view's task leaves the kernel free.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import new_name, result_text, tool_results, wait_idle

from jupyter_aaep.aaep.clock import SessionClock
from jupyter_aaep.testing.demo_model import demo_model
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

pytestmark = [pytest.mark.slow, pytest.mark.shared_server]

CELLS = ["print('first')", "print(6 * 7)"]
INTRO = "I will run cell 2."
FINAL = "Cell 2 printed **42**, the answer."
DESCRIBE = "import json; from jupyter_aaep.kernel.view import RECENT; print(json.dumps(RECENT[-1].describe()))"


async def view_of(kernel: Any) -> dict[str, Any]:
    """What the newest live view in *kernel* shows (text and buttons)."""
    return json.loads(await kernel.run(DESCRIBE))


async def until_view(kernel: Any, check: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    shown: dict[str, Any] = {}
    while loop.time() < deadline:
        shown = await view_of(kernel)
        if check(shown):
            return shown
        await asyncio.sleep(0.2)
    raise AssertionError(f"the view never showed {what}; it shows {shown}")


def button(shown: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in shown["buttons"] if b["description"] == name)


async def ask_to_run_cell_2(
    kernels: Any, kernel_api: Any, fake_model: Any
) -> tuple[Any, str, dict[str, Any]]:
    """``%aaep`` in a notebook whose agent wants to run cell 2; the view once it asks."""
    kernel = await kernels.notebook(new_name(), CELLS, load=False)
    fake_model.add(
        Turn(text=INTRO, tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]), Turn(text=FINAL)
    )
    printed = await kernel.run("%aaep Please run the second cell")
    assert "Traceback" not in printed and printed.startswith("VBox("), (
        printed
    )  # displayed, returned at once
    shown = await until_view(
        kernel,
        lambda s: any(b["description"] == "Approve running cell 2" for b in s["buttons"]),
        "the Approve button",
    )
    chat_id = (await kernel_api(kernel, "status"))[1]["chat_id"]
    assert chat_id and shown["subscription_id"].startswith("sub_")
    return kernel, chat_id, shown


async def test_approve_clicked_in_the_widget_runs_the_cell(
    kernels, kernel_api, extension, fake_model, monkeypatch
) -> None:
    # opt-in: approvals from the notebook (off by default, issue 16)
    monkeypatch.setattr(extension, "kernel_replies", True)
    kernel, chat_id, shown = await ask_to_run_cell_2(kernels, kernel_api, fake_model)
    assert "Approval needed: Run cell 2" in shown["text"] and "print(6 * 7)" in shown["text"], (
        shown["text"]
    )
    assert "If you do not answer, it will be" in shown["text"]
    approve = button(shown, "Approve running cell 2")
    assert not approve["disabled"] and not button(shown, "Reject running cell 2")["disabled"]

    # The browser's click: a comm message on the button's comm.
    client = kernel.client
    client.shell_channel.send(
        client.session.msg(
            "comm_msg",
            {
                "comm_id": approve["model_id"],
                "data": {"method": "custom", "content": {"event": "click"}},
            },
        )
    )
    events = await wait_idle(extension, chat_id)

    types = [e["type"].removeprefix("aaep:agent.") for e in events]
    assert types[-1] == "session.completed"
    [invoked] = [
        e for e in events if e["type"].endswith("tool.invoked") and e["tool"] == "run_cell"
    ]
    [completed] = [
        e
        for e in events
        if e["type"].endswith("tool.completed") and e["tool_call_id"] == invoked["tool_call_id"]
    ]
    assert completed["status"] == "success"
    assert "42" in result_text(tool_results(fake_model)[0])  # the agent's cell ran in this kernel
    final = await until_view(kernel, lambda s: s["ended"] == "completed", "the end of the session")
    assert "Cell 2 printed 42, the answer." in final["text"]
    assert (
        "Approved from the notebook." in final["text"] and "Answered elsewhere" not in final["text"]
    )
    # The pressed button keeps the focus and tells the outcome; the other one is disabled.
    assert [(b["description"], b["disabled"]) for b in final["buttons"]] == [
        ("Approved from the notebook.", False),
        ("Reject running cell 2", True),
    ]
    assert final["status"] == "Done."


async def test_by_default_the_kernel_only_names_the_request_for_the_browser(
    kernels, kernel_api, extension, fake_model
) -> None:
    """Approvals from the kernel are off: the card names the request for the labextension's
    view (which draws Approve and answers from the browser), keeps the way to the panel for
    front ends without it, and has no button that kernel code could press."""
    kernel = await kernels.notebook(new_name(), CELLS, load=False)
    fake_model.add(
        Turn(text=INTRO, tool_uses=[ToolUse("run_cell", {"cell_id": "c2"})]), Turn(text=FINAL)
    )
    await kernel.run("%aaep Please run the second cell")
    shown = await until_view(
        kernel,
        lambda s: "Approve or reject this in the side panel" in s["text"],
        "the way to the panel",
    )
    assert "Approval needed: Run cell 2" in shown["text"] and "print(6 * 7)" in shown["text"]
    assert not [b for b in shown["buttons"] if b["description"].startswith(("Approve", "Reject"))]
    chat_id = (await kernel_api(kernel, "status"))[1]["chat_id"]
    [asked] = [
        e
        for e in extension.runner.get(chat_id).emitter.history
        if e.get("type") == "aaep:agent.awaiting.confirmation"
    ]
    assert shown["approvals"] == [{"chat_id": chat_id, "request_id": asked["event_id"]}]
    await extension.runner.stop(chat_id)
    await wait_idle(extension, chat_id)


async def test_answered_from_the_panel_the_widget_shows_the_outcome(
    kernels, kernel_api, extension, fake_model, jp_ws_fetch, monkeypatch
) -> None:
    monkeypatch.setattr(extension, "kernel_replies", True)
    kernel, chat_id, shown = await ask_to_run_cell_2(kernels, kernel_api, fake_model)
    # The side panel: a WebSocket subscriber of the same chat, which answers first.
    socket = await jp_ws_fetch("aaep", "v1", "chats", chat_id, "ws")
    try:
        socket.write_message(
            json.dumps(
                {
                    "type": "subscription.request",
                    "aaep_version": "1.0.0",
                    "subscriber_id": "test-panel",
                    "capabilities": {
                        "supports_confirmation_reply": True,
                        "supports_clarification_reply": True,
                    },
                }
            )
        )
        subscription = None
        request = None
        while request is None:
            frame = json.loads(await asyncio.wait_for(socket.read_message(), 20))
            if frame.get("type") == "subscription.accepted":
                subscription = frame["subscription_id"]
            elif str(frame.get("type", "")).endswith("awaiting.confirmation"):
                request = frame
        assert subscription and subscription != shown["subscription_id"]
        socket.write_message(
            json.dumps(
                {
                    "type": "confirmation.reply",
                    "reply_token": request["reply_token"],
                    "decision": "reject",
                    "subscription_id": subscription,
                    "timestamp": SessionClock().now(),
                }
            )
        )
        await wait_idle(extension, chat_id)
    finally:
        socket.close()
    final = await until_view(kernel, lambda s: s["ended"] == "completed", "the end of the session")
    # The answer came from a subscriber that named itself (not the panel's key): named by it.
    assert (
        "Answered elsewhere (for example in the side panel): test-panel rejected it"
        in final["text"]
    )
    assert [b["disabled"] for b in final["buttons"]] == [True, True]
    assert not [
        e
        for e in extension.runner.get(chat_id).emitter.history
        if str(e.get("type", "")).endswith("tool.invoked") and e.get("tool") == "run_cell"
    ]


NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "kernel-tools.ipynb"


@pytest.mark.fresh_server  # its server talks to a fake model of its own, the demo model
class TestTheKernelToolsNotebook:
    """``notebooks/kernel-tools.ipynb`` cell by cell, offline, with the demo model."""

    @pytest.fixture
    def fake_model(self) -> Iterator[FakeAnthropic]:
        fake = FakeAnthropic(responder=demo_model).start()
        yield fake
        fake.stop()
        assert fake.problems == [], fake.problems

    async def test_it_runs_with_the_demo_model(
        self, kernels, kernel_api, extension, jp_root_dir
    ) -> None:
        cells = {
            c["id"]: "".join(c["source"])
            for c in json.loads(NOTEBOOK.read_text())["cells"]
            if c["cell_type"] == "code"
        }
        extension.kernel_replies = True  # "Try next" approves in the view (its own server)
        kernel = await kernels.notebook(new_name(), list(cells.values()), load=False)
        assert "Kernel tool quarterly_sales is ready" in await kernel.run(cells["kt-tool"])
        assert "'Q3': 610" in await kernel.run(cells["kt-call"])
        await kernel.run(cells["kt-2024"])
        await kernel.run(cells["kt-magic"])
        chat_id = None
        for _ in range(300):
            chat_id = (await kernel_api(kernel, "status"))[1]["chat_id"]
            if chat_id:
                break
            await asyncio.sleep(0.1)
        assert chat_id, "the view never sent the request"
        events = await wait_idle(extension, chat_id)
        assert [e["tool"] for e in events if e["type"].endswith("tool.invoked")] == [
            "quarterly_sales"
        ]
        shown = await until_view(
            kernel, lambda s: s["ended"] == "completed", "the end of the session"
        )
        assert (
            "Compared with sales_2024, Q3 grew the most: from 520 to 610 (+90)." in shown["text"]
        ), shown["text"]
        assert "Done: Calling the notebook function quarterly_sales." in shown["text"]
        assert "quarterly_sales (low risk)" in await kernel.run(cells["kt-tools"])
        assert "The agent is idle." in await kernel.run(cells["kt-status"])

        # "Try next": a tool that asks first, approved in the view.
        assert "Kernel tool save_report is ready" in await kernel.run(cells["kt-save"])
        await kernel.run('%aaep Please save_report("growth.txt", "Q3 grew the most") for me')
        asking = await until_view(
            kernel,
            lambda s: any(b["description"] == "Approve calling save report" for b in s["buttons"]),
            "the Approve button",
        )
        assert "save_report(filename='growth.txt', text='Q3 grew the most')" in asking["text"]
        approve = button(asking, "Approve calling save report")
        kernel.client.shell_channel.send(
            kernel.client.session.msg(
                "comm_msg",
                {
                    "comm_id": approve["model_id"],
                    "data": {"method": "custom", "content": {"event": "click"}},
                },
            )
        )
        await wait_idle(extension, chat_id)
        done = await until_view(
            kernel, lambda s: s["ended"] == "completed", "the end of the second session"
        )
        assert "Saved 16 characters to growth.txt." in done["text"], done["text"]
        assert (jp_root_dir / "growth.txt").read_text() == "Q3 grew the most\n"
