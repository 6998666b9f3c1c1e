"""A keyboard-only session with the agent panel under a real screen reader (GNOME Orca), timed.

One command starts everything on 127.0.0.1 and stops all of it at the end, even on failure:
the scripted fake model, a ``jupyter lab`` with this checkout's extension
(``tests/e2e/e2e_lab.LabServer``), and a private desktop in which Orca listens to Chromium
(``_orca_desktop.Desktop``: Xvfb, session D-Bus, the accessibility bus, PulseAudio into a null
sink, speech-dispatcher + espeak-ng, Orca, Chromium). Playwright only *observes* the page
(over the DevTools port); every key is a real X key press (xdotool), as a person's would be.

The scenario, as a person does it: JupyterLab opens on a notebook; the panel's shortcut
(Ctrl+Shift+Y) opens the panel; the request is typed and sent with Enter; the model adds an
18-line code cell and asks to run it; once the approval alert has been heard, *Go to the pending
request* (Ctrl+Shift+A) focuses the card, which is listened to until Orca is quiet; Tab moves
to the Approve button (found by its role and name) and Enter presses it (``--approve-with
shortcut``: Ctrl+Shift+Enter instead); then the turn is listened to until it is over and Orca
is quiet again.

Recorded, with wall-clock times: every string the page writes into a live region (a
MutationObserver on elements with ``aria-live``, ``role=alert`` or ``role=status``), every message
Orca hands to speech-dispatcher with what became of it (played, cut, dropped; word by word from
Orca's index marks, which speech-dispatcher reports at audio time), Orca's debug log, the keys.

Printed: the figures the acceptance of issue 17 names (approval alert heard after it was
written; from reaching the card until it can be answered; "Approved" heard after the key; a card
read twice; written announcements never heard; speech lag behind the agent) and the whole
transcript of what Orca said. Files (logs, JSON, transcript) are kept in ``--out``.

Run from the checkout to measure (its ``.venv`` serves its own panel build):
``scripts/orca-deps && .venv/bin/python benchmarks/orca_session.py`` (a few minutes, real time).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _orca_desktop import Desktop, missing_programs
from _orca_listen import (
    CARD_FOCUSED,
    LIVE_RECORDER,
    REMEMBER_CARD,
    Listener,
    poll,
)
from _orca_report import report
from _orca_scenarios import SCENARIOS, drive, findings, prepare, responder, user_settings
from _orca_speech import parse
from _orca_stage import Stage
from e2e_lab import LabServer
from e2e_model import ScriptedModel, _turn

from jupyter_aaep.testing.demo_model import result_text
from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, ToolUse, Turn

REQUEST = "Please summarise the temperatures in a new cell and run it."
INTRO = (
    "I will add a cell that summarises the temperatures. Then I will run it, with your approval."
)
RUN_TEXT = "The cell is in place. Now I will run it."
FINAL = "The summary ran. The coolest reading is 21.5 degrees and the warmest is 24.0."
CELL_CODE = "\n".join(
    [
        "# Summarise the temperatures, one statistic per line",
        "celsius = [21.5, 22.1, 23.4, 22.8, 24.0]",
    ]
    + [
        f"stat_{i:02d} = sorted(celsius)[{i} % len(celsius)]  # the {i}. value in ascending order"
        for i in range(1, 16)
    ]
    + ["print(min(celsius), max(celsius))"]
)
"""18 lines, runs on its own (the size issue 17 measures)."""


def checkout_mismatch() -> str | None:
    """A sentence when this interpreter would serve another checkout's code or panel build."""
    from jupyter_core.paths import jupyter_path

    import jupyter_aaep

    package = Path(jupyter_aaep.__file__).resolve().parent
    if package != REPO / "jupyter_aaep":
        return f"this Python imports jupyter_aaep from {package}, not from {REPO}"
    for folder in jupyter_path("labextensions"):
        panel = Path(folder, "jupyter-aaep")
        if panel.exists():
            if panel.resolve() != (REPO / "jupyter_aaep" / "labextension").resolve():
                return f"JupyterLab would load the panel from {panel.resolve()}, not from {REPO}"
            return None
    return "the panel is not installed (scripts/setup)"


def _confirmation_timeout(chat: dict[str, Any]) -> float:
    """Seconds the pending approval waits (its ``timeout_seconds``; 180 if not found)."""
    for event in reversed(chat.get("transcript", [])):
        if str(event.get("type", "")).endswith("awaiting.confirmation"):
            payload = event.get("payload") or event
            return float(payload.get("timeout_seconds") or event.get("timeout_seconds") or 180)
    return 180.0


def summarise_and_run(results: list[dict[str, Any]]) -> Turn:
    """Say what it will do, add the 18-line cell, ask to run it, then answer in one sentence."""
    if not results:
        return _turn(INTRO, ToolUse("create_cell", {"source": CELL_CODE, "cell_type": "code"}))
    created = re.search(r"Created code cell \d+ \(id ([^)]+)\)", result_text(results[-1]))
    if created:
        return _turn(RUN_TEXT, ToolUse("run_cell", {"cell_id": created.group(1)}))
    return _turn(FINAL)


@dataclass
class Session:
    """What happened, for the report."""

    keys: list[tuple[float, str]] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)
    live: list[dict[str, Any]] = field(default_factory=list)
    card_text: str = ""
    tab_stops: list[str] = field(default_factory=list)
    card_after: str = ""
    """The card's text when the focus went back to it after the answer ("" if it did not)."""
    problems: list[str] = field(default_factory=list)
    started: float = 0.0
    load: list[float] = field(default_factory=list)
    """The machine's one-minute load average at the start and at the end."""
    scenario: str = "card"


def run(args: argparse.Namespace, out: Path) -> tuple[Session, Desktop, FakeAnthropic]:
    from playwright.sync_api import sync_playwright

    session = Session(scenario=args.scenario)
    with ExitStack() as stack:
        scripted = ScriptedModel({"summarise the temperatures": summarise_and_run})
        fake = FakeAnthropic(responder=responder(args.scenario) or scripted).start()
        stack.callback(fake.stop)
        lab = LabServer(
            home=out / "lab",
            model_url=fake.base_url,
            api_key=fake.api_key,
            log_path=out / "jupyter.log",
            user_settings=user_settings(args.scenario),
        )
        stack.callback(lab.stop)
        lab.start()
        notebook = prepare(args.scenario, lab, fake, out)
        desktop = stack.enter_context(Desktop(out / "desktop"))
        endpoint = desktop.start_chromium()
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.connect_over_cdp(endpoint)
        stack.callback(browser.close)
        context = browser.contexts[0]
        context.add_init_script(LIVE_RECORDER)
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(90_000)
        listener = Listener(desktop)
        stage = Stage(page, desktop, listener, lab, notebook, session, args)
        key, live, focused, wait_for = stage.key, stage.live, stage.focused, stage.wait_for

        page.goto(lab.lab_url(notebook))
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
        page.wait_for_function("() => !!window.jupyterapp")
        page.bring_to_front()
        desktop.focus_browser()
        session.marks["lab loaded"] = time.time()
        # A person waits until the page has been announced as loaded.
        listener.until_quiet(session.marks["lab loaded"], quiet=2.0, cap=30, need_speech=False)

        if args.scenario != "card":
            drive(args.scenario, stage)
            session.live = live()
            page.screenshot(path=str(out / "end.png"))
            lab.shutdown_kernels()
            return session, desktop, fake
        stage.open_panel()
        sent = stage.send(REQUEST)

        alert = wait_for(
            "an assertive announcement (the approval alert)",
            lambda: next(
                (e for e in live() if e["time"] >= sent and e["politeness"] == "assertive"), None
            ),
            120,
        )
        session.marks["alert written"] = alert["time"]
        timeout = _confirmation_timeout(lab.chat_of(notebook) or {})
        session.marks["request expires"] = alert["time"] + timeout
        # Listen to the alert to its end (heard, cut or thrown away), as a person waits for it.
        listener.until_said(alert["time"], alert["text"], cap=min(args.listen_cap, 60))

        jump = key("Ctrl+Shift+A (go to the pending request)", "ctrl+shift+a")
        session.marks["jump"] = jump
        card = wait_for(
            "the focus on the card", lambda: (f := focused()) and f.get("inPanel") and f, 60
        )
        session.card_text = str(card.get("name", ""))
        page.evaluate(REMEMBER_CARD)
        # Listen until Orca is quiet, but answer in time: a person keeps some seconds to reach
        # the button before the request expires.
        patience = min(
            args.listen_cap, session.marks["request expires"] - time.time() - args.answer_margin
        )
        # Orca may take seconds to get to the focus change: wait for the card's reading to be
        # queued (an utterance with three words in a row from the card) before listening for quiet.
        reading = listener.until_reading(jump, session.card_text, cap=min(30.0, max(patience, 1.0)))
        session.marks["card quiet"] = listener.until_quiet(
            reading, quiet=1.5, cap=max(patience - (time.time() - jump), 1.0)
        )
        if time.time() >= jump + patience - 0.5:
            session.problems.append(
                f"stopped listening to the card {args.answer_margin:.0f} s before the request expired, Orca still speaking"
            )
            session.marks["card cut short"] = time.time()

        if args.approve_with == "shortcut":
            approve = key("Ctrl+Shift+Enter (approve)", "ctrl+shift+Return")
        else:
            approve = 0.0
            for _ in range(12):
                now = focused()
                if now.get("isButton") and str(now.get("name", "")).lower().startswith("approve"):
                    approve = key("Enter on Approve", "Return")
                    break
                at = key("Tab", "Tab")
                time.sleep(0.3)
                session.tab_stops.append(str(focused().get("name", "")).split("\n")[0][:60])
                listener.until_quiet(at, quiet=0.6, cap=6)
            if not approve:
                session.problems.append(
                    f"no Approve button within 12 Tab presses (expired?): {session.tab_stops}"
                )
                approve = time.time()
        session.marks["approve"] = approve
        back = poll(
            lambda: page.evaluate(CARD_FOCUSED),
            lambda text: [text] if text else [],
            15,
        )
        session.card_after = back[0] if back else ""
        if back:
            # The card changes as the answer is sent and accepted: what Orca may read again is
            # any of its texts in the next seconds.
            for _ in range(10):
                time.sleep(0.3)
                text = page.evaluate(CARD_FOCUSED)
                if text and text not in session.card_after:
                    session.card_after += "\n" + text

        wait_for("the end of the turn", stage.finished, 180)
        session.marks["turn over"] = time.time()
        session.marks["quiet at the end"] = listener.until_quiet(
            approve, quiet=2.0, cap=args.tail_cap
        )
        session.live = live()
        try:
            page.screenshot(path=str(out / "end.png"))
        except Exception as error:  # noqa: BLE001 - a screenshot is a courtesy
            session.problems.append(f"no screenshot: {error}")
        lab.shutdown_kernels()
    return session, desktop, fake


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where logs and results go (default test-output/orca/<time>)",
    )
    parser.add_argument(
        "--scenario",
        choices=tuple(SCENARIOS),
        default="card",
        help="; ".join(f"{name}: {what}" for name, what in SCENARIOS.items()),
    )
    parser.add_argument(
        "--figure-focus-mode",
        action="store_true",
        help="figure: press Orca+A (focus mode) on the chart when Orca stayed in browse mode",
    )
    parser.add_argument(
        "--approve-with",
        choices=("button", "shortcut"),
        default="button",
        help="Tab to the Approve button and press Enter (default), or press Ctrl+Shift+Enter on the card",
    )
    parser.add_argument(
        "--listen-cap",
        type=float,
        default=150.0,
        help="longest wait (s) for Orca to go quiet before the next key",
    )
    parser.add_argument(
        "--answer-margin",
        type=float,
        default=20.0,
        help="seconds before the request expires at which the listener stops listening to the card and answers",
    )
    parser.add_argument(
        "--tail-cap",
        type=float,
        default=180.0,
        help="longest wait (s) for the speech after the turn",
    )
    parser.add_argument(
        "--again",
        type=Path,
        metavar="DIR",
        help="print the report of an earlier run from its files (no new session)",
    )
    args = parser.parse_args()
    if args.again:
        print(reprint(args.again))
        return 0
    mismatch = checkout_mismatch()
    if mismatch:
        print(
            f"{mismatch}: run it with the checkout's own {REPO / '.venv/bin/python'}.",
            file=sys.stderr,
        )
        return 2
    missing = missing_programs()
    if missing:
        print(
            f"Missing Debian packages: {', '.join(missing)}. Run scripts/orca-deps (and scripts/e2e-deps).",
            file=sys.stderr,
        )
        return 2
    # Absolute: the lab's root and the desktop's folders are passed to processes in other folders.
    out = (args.out or REPO / "test-output" / "orca" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    load_at_start = os.getloadavg()[0]
    try:
        session, _desktop, fake = run(args, out)
    except Exception:  # noqa: BLE001 - whatever failed, say where the logs are (everything is stopped)
        traceback.print_exc()
        print(f"\nThe session failed; logs are in {out}", file=sys.stderr)
        return 1
    session.started = started
    session.load = [round(load_at_start, 1), round(os.getloadavg()[0], 1)]
    (out / "session.json").write_text(json.dumps(asdict(session), indent=1, ensure_ascii=False))
    print(reprint(out))
    if fake.problems:
        print(f"The fake model saw problems: {fake.problems}")
    return 0


def reprint(out: Path) -> str:
    """The report of the run whose files are in *out* (also written to report.txt)."""
    session = Session(**json.loads((out / "session.json").read_text()))
    session.keys = [(at, label) for at, label in session.keys]
    # The whole logs, complete now that everything stopped (speech-dispatcher writes in blocks).
    desktop = out / "desktop"
    speech = (desktop / "speechd" / "speech-dispatcher.log").read_text(errors="replace")
    orca = (desktop / "orca-debug.log").read_text(errors="replace").splitlines()
    utterances = parse(speech.splitlines())
    text = report(session, utterances, session.started, out, orca)
    extra = findings(session, utterances, session.started)
    if extra:
        text += "\n" + f"Scenario {session.scenario}:\n  " + "\n  ".join(extra) + "\n"
        with (out / "report.txt").open("a") as handle:
            handle.write("\n".join(extra) + "\n")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
