"""Driving JupyterLab and the agent panel in Chromium, the way a keyboard user does.

Everything a person does goes through the keyboard (``page.keyboard``); JavaScript is used
only to *observe* (live regions, focus, axe-core) and to switch the theme, which is a
JupyterLab command like any other.
"""

from __future__ import annotations

import json
import os
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e_lab import REPO, LabServer
from playwright.sync_api import Locator, Page

OUTPUT = REPO / "test-output" / "e2e"
AXE = REPO / "labextension" / "node_modules" / "axe-core" / "axe.min.js"

PANEL = ".jp-AAEPPanel"
COMPOSER = ".jp-AAEPComposer-input"
TIMEOUT = 30_000
"""Default wait (ms) for the panel and the agent; the first page load after an install is slow."""

THEMES = {
    "light": "JupyterLab Light",
    "dark": "JupyterLab Dark",
    "high-contrast": "JupyterLab Dark High Contrast",
}

# Records every write to the live regions with its time: installed before a session starts.
_RECORDER = """
() => {
  if (window.__liveLog) { return; }
  window.__liveLog = [];
  const observer = new MutationObserver(records => {
    const now = Date.now();
    for (const record of records) {
      const region = record.target.closest ? record.target.closest('[data-aaep-live]') : null;
      if (!region) { continue; }
      for (const node of record.addedNodes) {
        const text = (node.textContent || '').trim();
        if (text) {
          window.__liveLog.push({ time: now, politeness: region.dataset.aaepLive, text });
        }
      }
    }
  });
  for (const region of document.querySelectorAll('[data-aaep-live]')) {
    observer.observe(region, { childList: true, subtree: true, characterData: true });
  }
  window.__liveObserver = observer;
}
"""

# Notes every focus change while events stream in: which element gained or lost focus.
_FOCUS_WATCH = """
() => {
  const describe = el => !el ? 'null' :
    `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${[...el.classList].slice(0, 2).join('.')}`;
  if (window.__focusWatch) { window.__focusWatch.stop(); }
  const start = document.activeElement;
  const events = [];
  const note = e => events.push(`${e.type}: ${describe(e.target)}`);
  document.addEventListener('focusin', note, true);
  document.addEventListener('focusout', note, true);
  window.__focusWatch = {
    stop: () => {
      document.removeEventListener('focusin', note, true);
      document.removeEventListener('focusout', note, true);
    },
    report: () => ({ start: describe(start), end: describe(document.activeElement),
                     same: document.activeElement === start, events: [...events] }),
  };
}
"""

# Times each chat WebSocket from its creation to its opening, in the page (Playwright hears of a
# socket only once Chromium starts connecting it, not while it waits for another to connect).
_SOCKET_WAITS = """
(() => {
  const Native = window.WebSocket;
  window.__aaepSocketWaits = [];
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      if (String(url).includes('/aaep/v1/chats/')) {
        const made = performance.now();
        const index = window.__aaepSocketWaits.push(null) - 1;
        this.addEventListener('open', () => {
          window.__aaepSocketWaits[index] = Math.round(performance.now() - made);
        });
      }
    }
  };
})();
"""

_TIMED_PAGES: weakref.WeakSet[Page] = weakref.WeakSet()
"""The pages ``_SOCKET_WAITS`` is on (one page serves test after test)."""

_FOCUS_STOP = """
() => {
  const watch = window.__focusWatch;
  watch.stop();
  return watch.report();
}
"""

# What the focused element looks like: is the focus visible?
_FOCUS_STYLE = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) { return null; }
  const style = getComputedStyle(el);
  return {
    tag: el.tagName.toLowerCase(),
    name: (el.getAttribute('aria-label') || el.textContent || el.id || '').trim().slice(0, 60),
    inPanel: !!el.closest('.jp-AAEPPanel'),
    outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 1,
    shadow: style.boxShadow !== 'none',
    focusVisible: el.matches(':focus-visible'),
  };
}
"""


@dataclass
class PanelPage:
    """One browser page with JupyterLab, a notebook and the agent panel."""

    page: Page
    lab: LabServer
    name: str
    notebook: str = ""
    console_errors: list[str] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    _axe_loaded: bool = False
    kernel_id: str | None = None
    """The kernel started for the notebook before the page loaded (``LabServer.start_kernel``)."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds spent in each opening phase (printed with ``E2E_TIMING=1``)."""
    chat_sockets: list[dict[str, float | None]] = field(default_factory=list)
    """Each chat WebSocket the page opened, and when its first frame came (``answered``)."""
    sse_streams: list[str] = field(default_factory=list)
    """The URL of each chat SSE stream the page opened (the panel's fallback)."""
    socket_waits: list[float | None] = field(default_factory=list)
    """With ``E2E_TIMING``: milliseconds from each chat WebSocket's creation in the page to its
    opening (None: never opened), read by :meth:`collect_socket_waits`."""

    def _phase(self, name: str, start: float) -> float:
        now = time.monotonic()
        self.phases[name] = self.phases.get(name, 0.0) + now - start
        return now

    def __post_init__(self) -> None:
        self.page.set_default_timeout(TIMEOUT)
        self._listeners: list[tuple[str, Callable[[Any], None]]] = [
            (
                "console",
                lambda m: self.console_errors.append(m.text) if m.type == "error" else None,
            ),
            ("pageerror", lambda e: self.console_errors.append(f"page error: {e}")),
            ("websocket", self._watch_socket),
            ("request", self._watch_request),
        ]
        for event, listener in self._listeners:
            self.page.on(event, listener)
        if os.environ.get("E2E_TIMING") and self.page not in _TIMED_PAGES:
            self.page.add_init_script(_SOCKET_WAITS)  # once per page: init scripts stay
            _TIMED_PAGES.add(self.page)

    def detach(self) -> None:
        """Stop listening to the page (it goes on to the next test)."""
        for event, listener in self._listeners:
            self.page.remove_listener(event, listener)

    def _watch_request(self, request: Any) -> None:
        path = request.url.split("?")[0]
        if "/aaep/v1/chats/" in path and path.endswith("/events"):
            self.sse_streams.append(request.url)

    def collect_socket_waits(self) -> None:
        """Keep how long the page's chat sockets took to open (before it goes away)."""
        if os.environ.get("E2E_TIMING") and not self.page.is_closed():
            try:
                waits = self.page.evaluate("() => window.__aaepSocketWaits || []")
            except Exception as error:  # noqa: BLE001 - a page between two loads: timing only
                print(f"no chat socket timing: {error}")
                return
            self.socket_waits += waits

    def _watch_socket(self, socket: Any) -> None:
        if "/aaep/v1/" not in socket.url:
            return
        chat: dict[str, float | None] = {"answered": None}
        if socket.url.split("?")[0].endswith("/ws"):
            self.chat_sockets.append(chat)
        socket.on("framesent", lambda payload: self._frame(self.sent, payload))

        def received(payload: Any) -> None:
            if chat["answered"] is None:  # the handshake's answer: the panel is on this socket
                chat["answered"] = time.monotonic()
            self._frame(self.received, payload)

        socket.on("framereceived", received)

    @staticmethod
    def _frame(into: list[dict[str, Any]], payload: Any) -> None:
        try:
            into.append(json.loads(payload if isinstance(payload, str) else payload.decode()))
        except (ValueError, AttributeError):
            pass

    # -- opening ---------------------------------------------------------------------------
    def open_notebook(self, *, start_kernel: bool = True) -> None:
        """Load JupyterLab on the test's notebook (empty workspace, announcement log on).
        Without *start_kernel* the page starts the notebook's kernel itself, as it does for a
        person (``LabServer.start_kernel`` says why the harness starts it first)."""
        self.collect_socket_waits()  # of the page before a reload
        start = time.monotonic()
        if start_kernel:
            self.kernel_id = self.lab.start_kernel(self.notebook)  # boots while the page loads
        start = self._phase("kernel start", start)
        self.page.goto(self.lab.lab_url(self.notebook, aaepDebug=""))
        start = self._phase("goto", start)
        self.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=90_000)
        start = self._phase("first cell", start)
        self.page.wait_for_function(
            "() => !!window.jupyterapp && !!document.querySelector('[data-aaep-live]')"
        )
        self._phase("app+live", start)

    def wait_kernel_idle(self, timeout: float = 60.0) -> None:
        """Wait until the notebook's kernel is connected and idle (the status bar says so): a
        cell run before then can be lost. Looks at the status bar's items only: a text locator
        searched the whole page's text at every frame for as long as the kernel started."""
        self.page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]"
            ".some(item => / \\| Idle$/.test(item.textContent.trim()))",
            timeout=timeout * 1000,
        )

    def reload(self) -> None:
        """Load the page again (the URL keeps the announcement log on; a bare reload would not,
        as JupyterLab tidies the query away once loaded)."""
        self.open_notebook()

    def open_panel(self, *, on_socket: bool = True) -> Locator:
        """Open the panel with its shortcut and wait until its chat is connected and the
        panel said where you are (so that announcement never lands in a test's recording).

        With *on_socket*, also until the chat's WebSocket answered, when the page opened one:
        the panel carries the chat over SSE while its socket takes longer than a moment to
        open (``SOCKET_HEAD_START_MS``) and moves to the socket at its first frame, and tests
        read the socket's frames (``sent``, ``received``)."""
        said = "() => (window.__aaepAnnouncements || []).filter(a => a.text.startsWith('Agent panel')).length"
        start = time.monotonic()
        before = self.page.evaluate(said)
        sockets = len(self.chat_sockets)
        self.page.keyboard.press("Control+Shift+Y")
        panel = self.page.locator(PANEL)
        panel.locator(COMPOSER).wait_for()
        start = self._phase("panel composer", start)
        panel.locator(".jp-AAEPPanel-connection.jp-mod-open").wait_for()
        start = self._phase("panel connected", start)
        if on_socket and len(self.chat_sockets) > sockets:
            socket = self.chat_sockets[-1]
            deadline = time.monotonic() + TIMEOUT / 1000
            while socket["answered"] is None:
                assert time.monotonic() < deadline, "the chat's WebSocket never answered"
                self.page.wait_for_timeout(20)
            start = self._phase("panel socket", start)
        self.page.wait_for_function(f"n => ({said})() > n", arg=before)
        self._phase("panel announced", start)
        return panel

    @property
    def panel(self) -> Locator:
        return self.page.locator(PANEL)

    # -- acting (keyboard only) ----------------------------------------------------------
    def ask(self, text: str) -> None:
        """Focus the message box with its shortcut, type *text* and press Enter."""
        self.focus_composer()
        # Typed into the box itself (fill), so a focus change elsewhere in JupyterLab cannot
        # send the keys to a notebook in command mode, where letters are commands.
        box = self.panel.locator(COMPOSER)
        box.fill(text)
        box.press("Enter")

    def focus_composer(self) -> None:
        """Ctrl+Shift+O, as a keyboard user goes to the message box, and wait until the command
        has put the focus there: it does so two frames later, and the box may already have the
        focus, so a key pressed at once could be taken back by that late focus."""
        self.page.keyboard.press("Control+Shift+O")
        self.page.evaluate(
            "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>"
            " requestAnimationFrame(done))))"
        )
        self.wait_focus(COMPOSER)

    def open_settings(self) -> Locator:
        """Open the panel's settings (approval mode, model, announcements, tool servers) as a
        keyboard user does: from the message box, Shift+Tab to the Settings button, Enter.
        Leaves the focus on the button; returns the settings group."""
        settings = self.panel.locator(".jp-AAEPSettings")
        if settings.count() == 0:
            self.focus_composer()
            self.tab_until(lambda f: f.get("name") == "Settings", backwards=True)
            self.page.keyboard.press("Enter")
        settings.wait_for()
        return settings

    def wait_focus(self, selector: str, timeout: float = 5.0) -> None:
        self.page.wait_for_function(
            "s => document.activeElement && document.activeElement.matches(s)",
            arg=selector,
            timeout=timeout * 1000,
        )

    def focused(self) -> dict[str, Any] | None:
        return self.page.evaluate(_FOCUS_STYLE)  # type: ignore[no-any-return]

    def tab_until(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        backwards: bool = False,
        limit: int = 40,
    ) -> list[dict[str, Any]]:
        """Press Tab (or Shift+Tab) until the focused element matches; returns every stop."""
        stops: list[dict[str, Any]] = []
        for _ in range(limit):
            self.page.keyboard.press("Shift+Tab" if backwards else "Tab")
            info = self.focused() or {}
            stops.append(info)
            if predicate(info):
                return stops
        raise AssertionError(f"no matching tab stop after {limit} presses: {stops}")

    # -- observing -------------------------------------------------------------------------
    def record_live_regions(self) -> None:
        self.page.evaluate(_RECORDER)

    def live_log(self) -> list[dict[str, Any]]:
        return self.page.evaluate("() => window.__liveLog || []")  # type: ignore[no-any-return]

    def announcements(self) -> list[dict[str, Any]]:
        """The panel's own debug log (``?aaepDebug``)."""
        return self.page.evaluate("() => window.__aaepAnnouncements || []")  # type: ignore[no-any-return]

    def watch_focus(self) -> None:
        self.page.evaluate(_FOCUS_WATCH)

    def focus_report(self) -> dict[str, Any]:
        return self.page.evaluate(_FOCUS_STOP)  # type: ignore[no-any-return]

    def wait_announced(
        self, fragment: str, politeness: str | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Wait until the live regions said something containing *fragment*."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.live_log():
                if fragment in entry["text"] and (
                    politeness is None or entry["politeness"] == politeness
                ):
                    return entry
            time.sleep(0.1)
        raise AssertionError(
            f"never announced {fragment!r}; said: {[e['text'] for e in self.live_log()]}"
        )

    def screenshot(self, name: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    # -- accessibility -----------------------------------------------------------------------
    def axe(self) -> list[dict[str, Any]]:
        """axe-core violations inside the panel and its live regions."""
        if not self._axe_loaded:
            self.page.add_script_tag(path=str(AXE))
            self._axe_loaded = True
        return self.page.evaluate(  # type: ignore[no-any-return]
            """async () => {
                const result = await axe.run(
                    { include: [['.jp-AAEPPanel'], ['.jp-AAEPAnnouncer']] },
                    { resultTypes: ['violations'] });
                return result.violations.map(v => ({
                    id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => ({ target: n.target.join(' '), summary: n.failureSummary })),
                }));
            }"""
        )

    def set_theme(self, theme: str) -> None:
        """Switch JupyterLab's theme (a key of ``THEMES``) and wait until it is applied."""
        name = THEMES[theme]
        self.page.evaluate(
            "t => window.jupyterapp.commands.execute('apputils:change-theme', { theme: t })", name
        )
        self.page.wait_for_function("t => document.body.dataset.jpThemeName === t", arg=name)
        # The theme's CSS variables are in place once a known variable changes value.
        light = theme == "light"
        self.page.wait_for_function(
            "light => document.body.dataset.jpThemeLight === String(light)", arg=light
        )
        self.page.wait_for_timeout(300)
