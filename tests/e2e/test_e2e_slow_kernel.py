"""The chat works while the notebook's kernel is still starting.

Chromium opens one WebSocket to a host at a time while another is connecting, and Jupyter
holds a kernel's socket until the kernel answers: the panel's chat socket waits behind a
starting kernel. The panel then carries the chat over SSE after a short head start
(``SOCKET_HEAD_START_MS`` in ``labextension/src/eventStream.ts``) and moves to the socket
once it opens. Here the kernel sleeps before it starts (a kernelspec of the test's own), the
page starts it as it does for a person (no kernel started by the harness): a message is
answered, and the agent asks a question, while the kernel still sleeps; once the kernel is up
the stream is on the WebSocket, the question is answered there, and nothing was shown or said
twice.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_lab import LabServer
from e2e_model import CHAT_ANSWER, CHOOSE_QUESTION, choose_answer
from e2e_page import PanelPage
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

SLEEP_SECONDS = 10
"""How long the kernel sleeps before ipykernel starts: the chat must be usable well within it
(without the SSE head start the panel connected only after the kernel answered)."""
KERNEL_NAME = "aaep-e2e-slow-python"


@pytest.fixture
def slow_kernel(lab: LabServer) -> Iterator[Path]:
    """A kernelspec in the lab's data directory whose kernel sleeps, then leaves a mark (the
    returned path) and becomes ipykernel. Removed afterwards (the lab may be shared)."""
    spec = lab.home / "data" / "kernels" / KERNEL_NAME
    ready = lab.home / f"{KERNEL_NAME}.ready"
    ready.unlink(missing_ok=True)
    spec.mkdir(parents=True, exist_ok=True)
    script = f'sleep {SLEEP_SECONDS}; touch "{ready}"; exec "{sys.executable}" -m ipykernel_launcher -f "$0"'
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/bin/sh", "-c", script, "{connection_file}"],
                "display_name": "Python 3 (slow to start)",
                "language": "python",
            }
        )
    )
    yield ready
    shutil.rmtree(spec, ignore_errors=True)
    ready.unlink(missing_ok=True)


def _woke(ready: Path, began: float) -> float | None:
    """Seconds from *began* (``time.time()``) to the kernel's waking, or None while it sleeps."""
    try:
        return ready.stat().st_mtime - began
    except FileNotFoundError:
        return None


def test_the_chat_answers_while_the_kernel_is_still_starting(
    ui: PanelPage, slow_kernel: Path
) -> None:
    path = ui.lab.root / ui.notebook
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = {
        "name": KERNEL_NAME,
        "display_name": "Python 3 (slow to start)",
        "language": "python",
    }
    path.write_text(json.dumps(notebook))

    kernel_sockets: list[str] = []
    ui.page.on(
        "websocket",
        lambda socket: kernel_sockets.append(socket.url) if "/api/kernels/" in socket.url else None,
    )
    began = time.time()
    ui.open_notebook(start_kernel=False)
    # The person opens the panel once the notebook shows, its kernel starting (its socket
    # connecting): then the chat's socket waits behind the kernel's.
    while not kernel_sockets:
        assert time.time() - began < 60, "the page never connected to the notebook's kernel"
        ui.page.wait_for_timeout(50)
    loaded = time.time() - began
    panel = ui.open_panel(on_socket=False)
    connected = time.time() - began
    woke = _woke(slow_kernel, began)
    assert woke is None, (
        f"the chat connected {connected:.1f} s after the page load began, "
        f"{connected - woke:.1f} s after the kernel woke ({woke:.1f} s): it waited for the kernel"
    )
    ui.record_live_regions()
    ui.ask("Say hello.")
    expect(panel.locator(".jp-AAEPMessage-agent")).to_contain_text(CHAT_ANSWER.split("!")[0])
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_have_count(1)
    answered = time.time() - began
    # A question of the agent waits for the person while the chat is still on SSE.
    ui.ask("Let me choose the unit.")
    card = panel.locator(".jp-AAEPCard-clarification").last
    expect(card).to_contain_text(CHOOSE_QUESTION)
    expect(card).to_have_class(re.compile("jp-mod-pending"))
    woke = _woke(slow_kernel, began)
    assert woke is None, (
        f"the answer and the question came only after the kernel woke ({woke:.1f} s)"
    )
    assert ui.received == [], "the chat's WebSocket could not open before the kernel's"
    assert len(ui.sse_streams) == 1, ui.sse_streams  # the chat went over SSE meanwhile

    # The kernel comes up; the chat's socket opens behind it and the stream moves to it.
    ui.wait_kernel_idle(timeout=SLEEP_SECONDS + 60)
    deadline = time.monotonic() + 30
    while not any(m.get("type") == "subscription.accepted" for m in ui.received):
        assert time.monotonic() < deadline, "the chat's WebSocket never took over"
        ui.page.wait_for_timeout(100)
    moved = time.time() - began
    print(
        f"\nslow kernel: page loaded {loaded:.2f} s, panel connected {connected:.2f} s, answered "
        f"{answered:.2f} s, kernel woke {_woke(slow_kernel, began):.2f} s, chat on its WebSocket "
        f"{moved:.2f} s after the page load began"
    )
    expect(panel.locator(".jp-AAEPPanel-connection.jp-mod-open")).to_be_visible()
    # The question asked over SSE is answered over the socket (its subscription may answer it).
    ui.page.keyboard.press("Control+Shift+A")
    ui.wait_focus("[data-request-id]")
    ui.tab_until(lambda f: f.get("name") == "Fahrenheit")
    ui.page.keyboard.press("Enter")
    expect(card.locator(".jp-AAEPCard-outcome")).to_have_text("You answered: Fahrenheit")
    expect(panel.locator(".jp-AAEPMessage-agent").last).to_contain_text(choose_answer("Fahrenheit"))
    expect(panel.locator(".jp-AAEPNotice.jp-mod-completed")).to_have_count(2)
    assert any(m.get("type") == "clarification.reply" for m in ui.sent), "sent on the WebSocket"
    assert len(ui.sse_streams) == 1, "SSE was not opened again"
    # Each answer shown once and said once; the connection never seemed lost.
    expect(panel.locator(".jp-AAEPMessage-agent")).to_have_count(2)
    expect(panel.locator(".jp-AAEPCard-clarification")).to_have_count(1)
    ui.page.wait_for_timeout(1000)  # anything repeated would have been said by now
    said = [entry["text"] for entry in ui.live_log()]
    for words in (CHAT_ANSWER.split("!")[0], CHOOSE_QUESTION, choose_answer("Fahrenheit")):
        assert sum(words in text for text in said) == 1, (words, said)
    assert not any("connection" in text.lower() for text in said), said
    assert len(ui.lab.kernels_of(ui.notebook)) == 1, "the page started the notebook's kernel"
    assert not [e for e in ui.console_errors if "aaep" in e.lower()], ui.console_errors
