"""Listening and watching for benchmarks/orca_session.py: what the page writes and what Orca says.

The page is only observed (JavaScript evaluated through playwright); speech is followed in
speech-dispatcher's log as it grows and in Orca's debug log, read live.
"""

from __future__ import annotations

import re
import time
from typing import Any

from _orca_desktop import Desktop
from _orca_speech import SpeechLog, Utterance, hearing, idle_since, words

# Every string written into a live region, stamped in page time (Date.now(), the same clock).
LIVE_RECORDER = """
(() => {
  if (window.__orcaLive) { return; }
  window.__orcaLive = [];
  const LIVE = '[aria-live]:not([aria-live="off"]), [role="alert"], [role="status"]';
  const implicit = { alert: 'assertive', status: 'polite' };
  const note = (region, text) => {
    text = (text || '').replace(/\\s+/g, ' ').trim();
    if (!text) { return; }
    const role = region.getAttribute('role') || '';
    window.__orcaLive.push({
      time: Date.now(),
      politeness: region.getAttribute('aria-live') || implicit[role] || 'polite',
      role,
      region: (region.className && region.className.toString ? region.className.toString() : '').slice(0, 80),
      text,
    });
  };
  const observer = new MutationObserver(records => {
    for (const record of records) {
      const target = record.target.nodeType === 1 ? record.target : record.target.parentElement;
      const region = target && target.closest ? target.closest(LIVE) : null;
      if (!region) { continue; }
      if (record.type === 'characterData') { note(region, record.target.data); continue; }
      for (const node of record.addedNodes) { note(region, node.textContent); }
    }
  });
  const start = () => observer.observe(document.documentElement,
    { childList: true, subtree: true, characterData: true });
  if (document.documentElement) { start(); } else { document.addEventListener('readystatechange', start, { once: true }); }
})();
"""

FOCUSED = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) { return null; }
  return {
    tag: el.tagName.toLowerCase(),
    role: el.getAttribute('role') || '',
    name: (el.getAttribute('aria-label') || el.innerText || el.value || '').trim().slice(0, 2000),
    inPanel: !!el.closest('.jp-AAEPPanel'),
    isButton: el.tagName === 'BUTTON' || el.getAttribute('role') === 'button',
    editable: el.tagName === 'TEXTAREA' || el.tagName === 'INPUT' || el.isContentEditable,
  };
}
"""


# The card the jump focused, known again after a re-render by its request id.
REMEMBER_CARD = """
() => {
  const el = document.activeElement;
  const holder = el && el.closest('[data-request-id]');
  window.__orcaCard = { el, id: holder ? holder.dataset.requestId : '' };
}
"""
CARD_FOCUSED = """
() => {
  const card = window.__orcaCard || {};
  const el = document.activeElement;
  if (!el || el === document.body) { return ''; }
  const holder = el.closest('[data-request-id]');
  const same = el === card.el || (!!card.id && !!holder && holder.dataset.requestId === card.id
    && !(el.tagName === 'BUTTON'));
  return same ? (el.innerText || el.getAttribute('aria-label') || ' ') : '';
}
"""


def poll(read: Any, pick: Any, cap: float) -> list[Any]:
    """Call *read* until *pick* finds something in it (or *cap* seconds pass)."""
    deadline = time.time() + cap
    while time.time() < deadline:
        found = pick(read())
        if found:
            return list(found)
        time.sleep(0.2)
    return []


_SPEAKING = "SPEECH DISPATCHER: Speaking"
_MODE = re.compile(r"WEB: (Using focus mode|Staying in focus mode|Not using focus mode)")
_IN_FOCUS_MODE = re.compile(r"EVENT MANAGER: _inFocusMode: (True|False)")


def orca_in_focus_mode(desktop: Desktop, since: float) -> bool:
    """Whether Orca was in focus mode after the last event it handled since *since* (the state
    its debug log gives after each event; else its last decision, for a log without it)."""
    states = [
        m.group(1)
        for at, line in desktop.orca_log.snapshot()
        if at >= since and (m := _IN_FOCUS_MODE.search(line))
    ]
    if states:
        return states[-1] == "True"
    decisions = [
        m.group(1)
        for at, line in desktop.orca_log.snapshot()
        if at >= since and (m := _MODE.search(line))
    ]
    return bool(decisions) and not decisions[-1].startswith("Not")


class Listener:
    """Waits the way a listener does: until Orca is quiet."""

    def __init__(self, desktop: Desktop) -> None:
        self.desktop = desktop
        self._log = SpeechLog()
        self._read = 0

    def utterances(self) -> list[Utterance]:
        lines = self.desktop.speech_log.snapshot()
        self._log.feed(line for _, line in lines[self._read :])
        self._read = len(lines)
        return self._log.utterances()

    def until_quiet(
        self, since: float, quiet: float = 1.2, cap: float = 60.0, need_speech: bool = True
    ) -> float:
        """Wait until nothing queued after *since* is still to be said, for *quiet* seconds."""
        deadline = time.time() + cap
        while time.time() < deadline:
            recent = [u for u in self.utterances() if u.queued >= since - 0.05]
            idle = idle_since(recent) if recent or not need_speech else None
            # speech-dispatcher's log may lag (it is written in blocks); Orca's is live: while
            # Orca has sent more than the log shows, something is still to be said.
            sent = sum(
                1
                for at, line in self.desktop.orca_log.snapshot()
                if at >= since and _SPEAKING in line
            )
            if sent > len(recent):
                idle = None
            if idle is not None and time.time() - max(idle, since) >= quiet:
                return max(idle, since)
            time.sleep(0.2)
        return time.time()

    def until_reading(self, since: float, text: str, cap: float) -> float:
        """Wait until Orca queued an utterance that reads from *text*; returns when (or *since*)."""
        wanted = words(text)
        grams = {tuple(wanted[i : i + 3]) for i in range(len(wanted) - 2)}
        deadline = time.time() + cap
        while time.time() < deadline:
            for u in self.utterances():
                said = words(u.text)
                if u.queued >= since and any(
                    tuple(said[i : i + 3]) in grams for i in range(len(said) - 2)
                ):
                    return u.queued
            time.sleep(0.2)
        return since

    def until_said(self, written: float, text: str, cap: float) -> float:
        """Wait until the utterance carrying *text* (written at *written*) is over."""
        deadline = time.time() + cap
        while time.time() < deadline:
            found = hearing(written, text, "assertive", self.utterances())
            if found.utterance is not None and found.utterance.finished is not None:
                time.sleep(0.5)
                return found.utterance.finished
            time.sleep(0.2)
        return time.time()
