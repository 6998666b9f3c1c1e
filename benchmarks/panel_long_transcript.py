"""Does the panel stay fast when a chat is long? Per-chunk cost of a streamed answer, short vs long chat.

A real ``jupyter lab`` with the extension (``tests/e2e/e2e_lab.LabServer``, 127.0.0.1 only) and
Debian's ``/usr/bin/chromium`` driven by playwright (nothing is downloaded). The model is the
scripted fake Messages API in this process. Two chats are built through the REST API, one of
``--short`` and one of ``--long`` turns; each turn is a request, one tool step (``list_files``)
and an answer. Then, in the browser, the panel opens each chat and the agent streams a long
answer of ``--chunks`` sentences (one ``output.streaming`` event each, ``--pace`` seconds apart;
the server now and then merges two)
into it, ``--streams`` times per chat, alternating the chats for ``--rounds`` rounds so machine
noise hits both.

Measured in the page, per streamed chunk:

- ``commit``: from the WebSocket frame's arrival on the main thread (a ``message`` listener
  registered before the panel's own) until the chunk's text is in the transcript's DOM (a
  MutationObserver; the Markdown view renders once per animation frame, so this includes up to
  one frame of waiting);
- ``frame``: until the end of the next animation frame after that (``requestAnimationFrame``
  then a zero timeout: an upper bound for the paint);
- ``main``: the renderer's main-thread busy time (Chrome's ``TaskDuration`` from the DevTools
  protocol) from the first chunk (the answer stalls there) until every chunk is in the DOM,
  less what the idle page spends over as long (measured just before), divided by the number of
  chunks: what each chunk costs the page, waiting excluded. ``script`` and ``style+layout`` are
  the gross parts of it (idle not subtracted).

Also printed: DOM nodes in the transcript, long tasks (>50 ms) during the streams, and the
seconds from the panel's shortcut until the chat (its whole history) is shown. The long
chat is measured as the panel shows it (older turns folded) and, for reference, with every turn
shown ("Show earlier turns" pressed). Target: the long chat's per-chunk cost within 2x of the
short chat's.

``--profile`` adds a JS sampling profile of the long chat's streams (time per chunk by script
and by function), for finding what a chunk costs.

Run: ``python benchmarks/panel_long_transcript.py [--short 10] [--long 200] [--rounds 2] [--profile]``
(needs the built panel, ``pip install -e .``, and playwright; ``scripts/e2e-deps``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from e2e_lab import LabServer
from e2e_model import request_and_results
from e2e_page import PanelPage

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse, Turn

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1400, "height": 900}
BUILD_KEY = "build turn"
STREAM_KEY = "stream test"


def sentence(n: int) -> str:
    """One streamed chunk: a sentence with a unique, fixed-width marker the page looks for."""
    return f"Point m{n:04d} of the long answer goes here. "


class Responder:
    """The fake model: a tool step then a short answer for the building requests; a long
    streamed answer, one sentence per text delta, for the measured ones."""

    def __init__(self, chunks: int, pace: float) -> None:
        self.chunks = chunks
        self.pace = pace

    def __call__(self, request: RecordedRequest) -> Turn:
        text, results = request_and_results(request)
        lowered = text.lower()
        if STREAM_KEY in lowered:
            body = "".join(sentence(n) for n in range(1, self.chunks + 1))
            # Stalls after the first chunk until the benchmark lets it go (fake.release()).
            return Turn(
                text=body,
                chunk_delay=self.pace,
                text_chunk_size=len(sentence(1)),
                stall_after_chunks=1,
            )
        if BUILD_KEY in lowered and not results:
            return Turn(
                text="I will look at the files first.", tool_uses=[ToolUse("list_files", {})]
            )
        return Turn(
            text="The folder holds the notebook and nothing else. It is a small project; "
            "**nothing** needs cleaning up.\n\n- one notebook\n- no data files"
        )


# In the page before JupyterLab loads: times every AAEP WebSocket frame from its arrival, and
# the DOM commit and next frame of each streamed chunk.
_HOOK = r"""
(() => {
  const Native = window.WebSocket;
  const bench = { on: false, pending: [], samples: [], frames: 0, ended: 0, longTasks: [] };
  window.__bench = bench;
  class TimedWebSocket extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      if (String(url).includes('/aaep/v1/')) {
        // Registered before the panel's onmessage: runs first, at the frame's arrival.
        this.addEventListener('message', event => bench.arrive(event));
      }
    }
  }
  window.WebSocket = TimedWebSocket;
  bench.arrive = event => {
    if (!bench.on || typeof event.data !== 'string') { return; }
    const now = performance.now();
    bench.frames++;
    if (event.data.includes('session.completed')) { bench.ended++; }
    if (!event.data.includes('output.streaming')) { return; }
    let parsed;
    try { parsed = JSON.parse(event.data); } catch (e) { return; }
    // The server may send a batch of events in one frame.
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      const found = String((message && message.chunk) || '').match(/m\d{4}/g);
      if (found) {
        bench.chunks++;
        bench.pending.push({ marker: found[found.length - 1], arrived: now });
      }
    }
  };
  bench.check = () => {
    if (!bench.pending.length) { return; }
    const answers = bench.log.querySelectorAll('.jp-AAEPMessage-agent');
    const text = answers.length ? answers[answers.length - 1].textContent : '';
    const now = performance.now();
    const still = [];
    for (const p of bench.pending) {
      if (text.includes(p.marker)) {
        const sample = { marker: p.marker, arrived: p.arrived, commit: now - p.arrived, frame: null };
        bench.samples.push(sample);
        requestAnimationFrame(() => setTimeout(() => { sample.frame = performance.now() - p.arrived; }, 0));
      } else {
        still.push(p);
      }
    }
    bench.pending = still;
  };
  bench.start = () => {
    bench.log = document.querySelector('.jp-AAEPPanel-transcript');
    bench.pending = []; bench.samples = []; bench.frames = 0; bench.chunks = 0; bench.ended = 0;
    bench.longTasks = [];
    bench.observer = new MutationObserver(() => bench.check());
    bench.observer.observe(bench.log, { childList: true, subtree: true, characterData: true });
    try {
      bench.longObserver = new PerformanceObserver(list => {
        for (const e of list.getEntries()) { bench.longTasks.push(e.duration); }
      });
      bench.longObserver.observe({ type: 'longtask' });
    } catch (e) { bench.longObserver = null; }
    bench.on = true;
  };
  bench.stop = () => {
    bench.on = false;
    bench.observer.disconnect();
    if (bench.longObserver) { bench.longObserver.disconnect(); }
    return { samples: bench.samples.filter(s => s.frame !== null), missed: bench.pending.length,
             frames: bench.frames, chunks: bench.chunks, longTasks: bench.longTasks };
  };
  bench.nodes = () => {
    const log = document.querySelector('.jp-AAEPPanel-transcript');
    return { transcript: log ? log.getElementsByTagName('*').length : 0,
             document: document.getElementsByTagName('*').length,
             entries: log ? log.querySelectorAll('.jp-AAEPPanel-entry').length : 0 };
  };
})();
"""


@dataclass
class Figures:
    """Everything measured for one configuration, over all its streams."""

    commit: list[float] = field(default_factory=list)
    frame: list[float] = field(default_factory=list)
    main_per_chunk: list[float] = field(default_factory=list)
    script_per_chunk: list[float] = field(default_factory=list)
    layout_per_chunk: list[float] = field(default_factory=list)
    long_tasks: list[float] = field(default_factory=list)
    idle_ms: list[float] = field(default_factory=list)
    open_s: list[float] = field(default_factory=list)
    """Seconds from the panel's shortcut until its chat is connected and shown."""
    missed: int = 0
    nodes: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        result: dict[str, Any],
        before: dict[str, float],
        after: dict[str, float],
        *,
        chunks: int,
        idle: float,
    ) -> None:
        """One stream: *chunks* streamed after the stall; *idle* is what the idle page would have
        spent on its main thread (seconds) over the same time."""
        samples = result["samples"]
        self.commit += [s["commit"] for s in samples]
        self.frame += [s["frame"] for s in samples]
        self.missed += result["missed"]
        self.long_tasks += result["longTasks"]
        busy = after["TaskDuration"] - before["TaskDuration"]
        self.main_per_chunk.append(1000 * max(0.0, busy - idle) / chunks)
        self.idle_ms.append(1000 * idle)
        self.script_per_chunk.append(
            1000 * (after["ScriptDuration"] - before["ScriptDuration"]) / chunks
        )
        layout = ("LayoutDuration", "RecalcStyleDuration")
        self.layout_per_chunk.append(1000 * sum(after[k] - before[k] for k in layout) / chunks)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p95(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def build_chat(lab: LabServer, notebook: str, turns: int) -> str:
    """A chat of *turns* finished requests for *notebook*, made through the REST API."""
    chat = lab.api("POST", "aaep/v1/chats", {"notebook_path": notebook})
    chat_id = chat["chat_id"]
    for n in range(1, turns + 1):
        started = lab.api(
            "POST",
            f"aaep/v1/chats/{chat_id}/messages",
            {"kind": "user_input", "text": f"Build turn {n}: what files are there?"},
        )
        session = started["session_id"]
        deadline = time.monotonic() + 60
        while True:
            view = lab.api("GET", f"aaep/v1/chats?notebook_path={notebook}&limit=5")
            mine = next(c for c in view["chats"] if c["chat_id"] == chat_id)
            if mine["status"] == "idle" and mine["session_id"] == session:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"turn {n} of {notebook} did not finish within 60 s: {mine}")
            time.sleep(0.02)
    return chat_id


def metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def measure(
    ui: PanelPage,
    cdp: Any,
    fake: FakeAnthropic,
    figures: Figures,
    streams: int,
    chunks: int,
    label: str,
    profile: list[dict[str, Any]] | None = None,
) -> None:
    """Stream *streams* long answers into the open panel and add what they cost to *figures*.

    The answer stalls after its first chunk; the main-thread time is read from there until
    every chunk is in the DOM, less what the idle page spends over as long (its rate is read
    just before).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = ui.page
    poll = {"polling": 100, "timeout": 120_000}
    for k in range(streams):
        page.wait_for_timeout(1500)  # let the previous answer's work and the page settle
        idle_from, idle_began = metrics(cdp), time.monotonic()
        page.wait_for_timeout(1500)
        idle_to, idle_took = metrics(cdp), time.monotonic() - idle_began
        idle_rate = (idle_to["TaskDuration"] - idle_from["TaskDuration"]) / idle_took
        page.evaluate("() => window.__bench.start()")
        ui.ask(f"Stream test {label} {k}: tell me everything.")
        page.wait_for_function("() => window.__bench.samples.length >= 1", **poll)
        if profile is not None:
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
        before, began = metrics(cdp), time.monotonic()
        # A release before the fake's thread reached its stall would not free it: again until
        # the second chunk comes.
        while page.evaluate("() => window.__bench.samples.length") < 2:
            if time.monotonic() - began > 60:
                raise RuntimeError("the stalled answer did not go on after fake.release()")
            fake.release()
            page.wait_for_timeout(50)
        try:
            last = f"m{chunks:04d}"  # the final sentence's marker is in the DOM, nothing pending
            page.wait_for_function(
                f"() => window.__bench.samples.some(s => s.marker === '{last}') "
                "&& !window.__bench.pending.length",
                **poll,
            )
        except PlaywrightTimeout:
            state = page.evaluate(
                "() => ({ samples: window.__bench.samples.length, frames: window.__bench.frames, "
                "pending: window.__bench.pending.map(p => p.marker) })"
            )
            raise RuntimeError(f"not every chunk reached the transcript: {state}") from None
        after, took = metrics(cdp), time.monotonic() - began
        if profile is not None:
            profile.append(cdp.send("Profiler.stop")["profile"])
        page.wait_for_function("() => window.__bench.ended >= 1", **poll)
        page.wait_for_timeout(200)  # the last chunk's frame
        result = page.evaluate("() => window.__bench.stop()")
        # Chunk events after the stall (the server may merge two sentences into one event).
        figures.add(
            result, before, after, chunks=max(1, result["chunks"] - 1), idle=idle_rate * took
        )
    figures.nodes = page.evaluate("() => window.__bench.nodes()")


def run_config(
    browser: Any,
    lab: LabServer,
    fake: FakeAnthropic,
    notebook: str,
    figures: Figures,
    args: argparse.Namespace,
    label: str,
    show_all: bool = False,
    profile: list[dict[str, Any]] | None = None,
) -> None:
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    context.add_init_script(_HOOK)
    page = context.new_page()
    try:
        ui = PanelPage(page, lab, label)
        ui.notebook = notebook
        ui.open_notebook()
        began = time.monotonic()
        ui.open_panel()
        page.wait_for_function("() => document.querySelectorAll('.jp-AAEPPanel-entry').length > 0")
        figures.open_s.append(time.monotonic() - began)
        if show_all:
            page.locator(".jp-AAEPPanel-showEarlier").click()
            page.wait_for_timeout(1000)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        measure(ui, cdp, fake, figures, args.streams, args.chunks, label, profile)
        errors = [e for e in ui.console_errors if "aaep" in e.lower()]
        if errors:
            print(f"  page errors in {label}: {errors[:3]}")
    finally:
        context.close()
        lab.shutdown_kernels()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", type=int, default=10, help="turns of the short chat")
    parser.add_argument("--long", type=int, default=200, help="turns of the long chat")
    parser.add_argument("--chunks", type=int, default=60, help="sentences in each streamed answer")
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between streamed chunks")
    parser.add_argument(
        "--streams", type=int, default=2, help="streamed answers per chat and round"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds, alternating the chats")
    parser.add_argument(
        "--no-unfolded", action="store_true", help="skip the every-turn-shown reference"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile the long chat's streams (JS sampling) and print the hottest functions",
    )
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"Chromium is not installed at {CHROMIUM}: apt-get install -y chromium.")
        return 2
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    fake = FakeAnthropic(responder=Responder(args.chunks, args.pace)).start()
    with tempfile.TemporaryDirectory(prefix="aaep-panel-bench-") as home:
        lab = LabServer(
            home=Path(home),
            model_url=fake.base_url,
            api_key=fake.api_key,
            log_path=Path(home) / "lab.log",
        )
        try:
            lab.start()
            configs = {"short": lab.notebook("short.ipynb"), "long": lab.notebook("long.ipynb")}
            for name, turns in (("short", args.short), ("long", args.long)):
                began = time.monotonic()
                build_chat(lab, configs[name], turns)
                print(f"built the {name} chat: {turns} turns in {time.monotonic() - began:.1f} s")
            results = {name: Figures() for name in ("short", "long", "long, unfolded")}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
                )
                try:
                    for r in range(args.rounds):
                        order = ("short", "long") if r % 2 == 0 else ("long", "short")
                        for name in order:
                            run_config(
                                browser,
                                lab,
                                fake,
                                configs[name],
                                results[name],
                                args,
                                f"{name}-r{r}",
                            )
                    if args.profile:
                        profiles: list[dict[str, Any]] = []
                        run_config(
                            browser,
                            lab,
                            fake,
                            configs["long"],
                            Figures(),
                            args,
                            "long-profiled",
                            profile=profiles,
                        )
                        print_profile(profiles, args.chunks - 1)
                    if not args.no_unfolded:
                        run_config(
                            browser,
                            lab,
                            fake,
                            configs["long"],
                            results["long, unfolded"],
                            args,
                            "long-unfolded",
                            show_all=True,
                        )
                finally:
                    browser.close()
        except Exception:
            print(lab.log_tail())
            raise
        finally:
            lab.stop()
            fake.stop()
    report(results, args)
    return 0


def print_profile(profiles: list[dict[str, Any]], chunks: int, top: int = 25) -> None:
    """The functions the streams spent the most time in (self and total), per chunk."""
    own: dict[str, float] = {}
    total: dict[str, float] = {}
    by_script: dict[str, float] = {}
    for profile in profiles:
        nodes = {n["id"]: n for n in profile["nodes"]}
        parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}

        def name(node: dict[str, Any]) -> str:
            frame = node["callFrame"]
            where = frame["url"].rsplit("/", 1)[-1]
            return f"{frame['functionName'] or '(anonymous)'} {where}:{frame['lineNumber'] + 1}"

        for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=False):
            node = nodes[sample]
            own[name(node)] = own.get(name(node), 0.0) + delta / 1000
            script = (
                node["callFrame"]["url"].rsplit("/", 1)[-1].split("?")[0]
                or node["callFrame"]["functionName"]
            )
            by_script[script] = by_script.get(script, 0.0) + delta / 1000
            seen: set[str] = set()
            current: int | None = sample
            while current is not None:
                label = name(nodes[current])
                if label not in seen:
                    total[label] = total.get(label, 0.0) + delta / 1000
                    seen.add(label)
                current = parent.get(current)
    per = max(1, chunks * len(profiles))
    print(f"\nprofile of the long chat ({len(profiles)} streams), ms per chunk:")
    print("  self, by script (lib_index_js is the panel; (program) is the browser's own work):")
    for label, ms in sorted(by_script.items(), key=lambda kv: -kv[1])[:10]:
        print(f"    {ms / per:7.2f}  {label}")
    print("  self:")
    for label, ms in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {ms / per:7.2f}  {label}")
    print("  total:")
    for label, ms in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {ms / per:7.2f}  {label}")


def report(results: dict[str, Figures], args: argparse.Namespace) -> None:
    turns = {"short": args.short, "long": args.long, "long, unfolded": args.long}
    print(
        f"\n{args.chunks} chunks per stream, {args.pace * 1000:.0f} ms apart; "
        f"{args.streams} streams x {args.rounds} rounds per chat (unfolded: {args.streams} streams)"
    )
    header = (
        f"{'chat':<16}{'turns':>6}{'DOM nodes':>10}{'entries':>8}{'commit ms':>16}{'frame ms':>16}"
        f"{'main ms/chunk':>14}{'script':>8}{'style+layout':>13}{'long tasks':>11}{'missed':>7}{'open s':>8}"
    )
    print(header)
    for name, f in results.items():
        if not f.commit:
            continue
        print(
            f"{name:<16}{turns[name]:>6}{f.nodes.get('transcript', 0):>10}{f.nodes.get('entries', 0):>8}"
            f"{median(f.commit):>8.1f} p95 {p95(f.commit):>4.0f}{median(f.frame):>8.1f} p95 {p95(f.frame):>4.0f}"
            f"{median(f.main_per_chunk):>14.2f}{median(f.script_per_chunk):>8.2f}"
            f"{median(f.layout_per_chunk):>13.2f}{len(f.long_tasks):>11}{f.missed:>7}{median(f.open_s):>8.1f}"
        )
    short, long = results["short"], results["long"]
    print("\nlong / short (target <= 2.0):")
    print(
        f"  main-thread time per chunk: {median(long.main_per_chunk) / median(short.main_per_chunk):.2f}"
    )
    print(f"  arrival to DOM commit (median): {median(long.commit) / median(short.commit):.2f}")
    print(f"  arrival to next frame (median): {median(long.frame) / median(short.frame):.2f}")
    print(
        f"  transcript DOM nodes: {long.nodes['transcript'] / max(1, short.nodes['transcript']):.2f}"
    )
    unfolded = results["long, unfolded"]
    if unfolded.commit:
        print(
            f"  (every turn shown: main-thread time per chunk "
            f"{median(unfolded.main_per_chunk) / median(short.main_per_chunk):.2f}, "
            f"DOM nodes {unfolded.nodes['transcript'] / max(1, short.nodes['transcript']):.2f})"
        )
    print(
        json.dumps(
            {
                name: {
                    "turns": turns[name],
                    "nodes": f.nodes,
                    "commit_median_ms": round(median(f.commit), 2),
                    "frame_median_ms": round(median(f.frame), 2),
                    "main_ms_per_chunk": round(median(f.main_per_chunk), 3),
                }
                for name, f in results.items()
                if f.commit
            }
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
