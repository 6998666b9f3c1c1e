"""What every scenario of benchmarks/orca_session.py shares: the page, the keys, the listener.

A ``Stage`` is made once the lab, the desktop and the browser run. Keys are real X key presses
(xdotool) and are logged; the page is only observed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from _orca_desktop import Desktop
from _orca_listen import FOCUSED, Listener, orca_in_focus_mode, poll

ENDS = ("session.completed", "session.errored", "session.cancelled")


@dataclass
class Stage:
    page: Any
    desktop: Desktop
    listener: Listener
    lab: Any
    notebook: str
    session: Any
    args: Any

    def key(self, label: str, *keys: str) -> float:
        at = self.desktop.key(*keys)
        self.session.keys.append((at, label))
        return at

    def live(self) -> list[dict[str, Any]]:
        """Every live-region write so far, in seconds since the epoch."""
        return [
            {**e, "time": e["time"] / 1000}
            for e in self.page.evaluate("() => window.__orcaLive || []")
        ]

    def focused(self) -> dict[str, Any]:
        return self.page.evaluate(FOCUSED) or {}

    def wait_for(self, what: str, check: Any, cap: float) -> Any:
        deadline = time.time() + cap
        while time.time() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.2)
        raise RuntimeError(f"gave up waiting {cap:.0f} s for {what}")

    def finished(self) -> bool:
        """Whether the notebook's chat has ended its turn (completed, errored or cancelled)."""
        chat = self.lab.chat_of(self.notebook) or {}
        return any(str(e.get("type", "")).endswith(ENDS) for e in chat.get("transcript", []))

    def open_panel(self) -> None:
        """Ctrl+Shift+Y, then listen to where you are until Orca is quiet (focus mode if needed)."""
        opened = self.key("Ctrl+Shift+Y (open the agent panel)", "ctrl+shift+y")
        self.wait_for(
            "the focus in the panel's message box",
            lambda: (f := self.focused()) and f.get("inPanel") and f.get("editable"),
            90,  # keys wait for Orca (it may consume them), which a busy machine slows down
        )
        said = next(
            (
                e["time"]
                for e in poll(self.live, lambda es: [e for e in es if e["time"] >= opened], 15)
            ),
            opened,
        )
        self.listener.until_quiet(said, cap=self.args.listen_cap)
        if not orca_in_focus_mode(self.desktop, opened):
            # What a person does on hearing an entry in browse mode: Orca+A, for focus mode.
            self.session.problems.append(
                "Orca stayed in browse mode in the message box: pressed Orca+A (Insert+A)"
            )
            toggled = self.key("Insert+A (Orca: focus mode)", "Insert+a")
            self.listener.until_quiet(toggled, quiet=0.6, cap=10)

    def send(self, request: str) -> float:
        """Type *request* into the focused message box and press Enter."""
        self.session.marks["typing"] = self.desktop.type_text(request)
        sent = self.key("Enter (send the request)", "Return")
        self.session.marks["sent"] = sent
        return sent
