"""The scenarios of benchmarks/orca_session.py besides the first one (``card``, issue 17).

- ``plan`` (issue 27): one request in plan mode whose plan has three runs, approved with one key
  (Ctrl+Shift+Enter) once its alert has been heard; ``ask3``: the same request in ask mode,
  each of its three runs approved the same way. Compared: from the first alert to the last step.
- ``figure`` (issue 28): the demo's chart ("plot the temperatures"), already run, explored by
  keyboard: Tab to the figure (until it is heard), then the right arrow value by value, maidr's
  Ctrl+Left and Ctrl+Right (first and last value), Home and End; what was heard after each key.
- ``acp`` (issue 29): one request to Claude Code (Zed's ACP adapter from npm, offline against the
  scripted Messages API) that adds a cell and runs it, with one approval.

Each is short: speech is real time.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from _orca_listen import orca_in_focus_mode
from _orca_speech import Utterance, hearing, words
from _orca_stage import Stage
from e2e_model import ScriptedModel, _turn

from jupyter_aaep.testing.demo_model import _chart_code, result_text
from jupyter_aaep.testing.fake_anthropic import RecordedRequest, ToolUse, Turn

SCENARIOS = {
    "card": "issue 17: one approval, the card read, Tab to Approve",
    "plan": "issue 27: plan mode, a three-run plan approved with one key",
    "ask3": "issue 27: the same request in ask mode, three approvals",
    "figure": "issue 28: the demo's chart explored by keyboard",
    "acp": "issue 29: one Claude Code request with one approval",
}

REPO = Path(__file__).resolve().parents[1]
LOAD, MEANS = "fb119298", "246e7258"
"""The demo notebook's two code cells (cell 2 loads the readings, cell 3 prints the means)."""
RUNS_REQUEST = "Please load the readings, print the means, then print them once more."
PLAN = {
    "summary": "Load the readings and print the means twice",
    "steps": [
        f"Run cell {LOAD} (loads the readings)",
        f"Run cell {MEANS} (prints the means)",
        f"Run cell {MEANS} again (prints the means once more)",
    ],
}
RUNS_FINAL = "Done: the readings are loaded and the means were printed twice."
TEMPERATURES = [21.5, 22.1, 23.4, 22.8, 24.0]
"""The demo's temperatures, the values of its chart."""
ACP_REQUEST = "Please add a cell that prints hello and run it."
ACP_CODE = "print('hello from Claude Code')"
ACP_CREATE, ACP_RUN = "mcp__notebook__create_cell", "mcp__notebook__run_cell"
ALERT_MARK = re.compile(r"alert \d+ written")


def _runs(results: list[dict[str, Any]], *, plan: bool) -> Turn:
    """Plan mode: propose the plan, then three runs each followed by its ``plan_step``.
    Ask mode: the three runs (each asks)."""
    script = [ToolUse("run_cell", {"cell_id": c}) for c in (LOAD, MEANS, MEANS)]
    if plan:
        if not results:
            return _turn("", ToolUse("propose_plan", PLAN))
        if "approved the plan" not in result_text(results[0]):
            return _turn("Nothing was done.")
        results = results[1:]
        script = [
            step
            for n, run in enumerate(script, 1)
            for step in (run, ToolUse("plan_step", {"step": n, "status": "done"}))
        ]
    if len(results) < len(script):
        return _turn("", script[len(results)])
    return _turn(RUNS_FINAL)


def _tool_results(messages: list[Any]) -> list[tuple[str, str]]:
    """(tool name, text) of every tool result in Claude Code's conversation, in order."""
    names: dict[str, str] = {}
    found = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result":
                body = block.get("content")
                text = (
                    body
                    if isinstance(body, str)
                    else " ".join(str(b.get("text", "")) for b in body or [] if isinstance(b, dict))
                )
                found.append((names.get(str(block.get("tool_use_id")), ""), text))
    return found


class ClaudeModel:
    """The model behind Claude Code: add a cell through our notebook tools, run it, answer."""

    def __init__(self) -> None:
        self.notebook = ""

    def __call__(self, request: RecordedRequest) -> Turn:
        tools = {str(t.get("name")) for t in request.body.get("tools") or []}
        if "Bash" not in tools:  # Claude Code's side requests (titles, summaries)
            return Turn(text="Notebook work")
        done = _tool_results(request.body.get("messages") or [])
        names = [name for name, _ in done]
        if ACP_CREATE not in tools:
            if "ToolSearch" in tools and "ToolSearch" not in names:
                search = {"query": f"select:{ACP_CREATE},{ACP_RUN}"}
                return Turn(tool_uses=[ToolUse("ToolSearch", search)])
            return Turn(text="I cannot see the notebook tools.")
        if ACP_CREATE not in names:
            source = {"notebook_path": self.notebook, "source": ACP_CODE}
            return Turn(text="I will add the cell.", tool_uses=[ToolUse(ACP_CREATE, source)])
        if ACP_RUN not in names:
            created = next(text for name, text in done if name == ACP_CREATE)
            cell = created.split("(id ", 1)[1].split(")", 1)[0] if "(id " in created else "?"
            run = {"notebook_path": self.notebook, "cell_id": cell}
            return Turn(tool_uses=[ToolUse(ACP_RUN, run)])
        return Turn(text="The cell ran and printed hello.")


def responder(scenario: str) -> Any:
    """The fake model's responder for *scenario* (None: the first scenario's)."""
    if scenario == "plan":
        return ScriptedModel({"readings": lambda r: _runs(r, plan=True)})
    if scenario == "ask3":
        return ScriptedModel({"readings": lambda r: _runs(r, plan=False)})
    if scenario == "acp":
        return ClaudeModel()
    return None


def user_settings(scenario: str) -> dict[str, dict[str, Any]]:
    """The person's panel settings: plan mode is their mode for new chats in ``plan``."""
    if scenario == "plan":
        return {"jupyter-aaep/plugin": {"approvalMode": "plan"}}
    return {}


def prepare(scenario: str, lab: Any, fake: Any, out: Path) -> str:
    """The notebook the person opens (and, for ``acp``, Claude Code chosen for its chat)."""
    notebook = lab.notebook("orca-session.ipynb")
    if scenario == "figure":
        _run_demo_chart(lab.root / notebook)
    if scenario == "acp":
        _choose_claude(lab, fake, notebook, out)
    return notebook


def _run_demo_chart(path: Path) -> None:
    """The demo notebook plus the demo model's chart of the temperatures, run in a kernel of
    this environment (which loads the extension, so the figure carries maidr's data)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            _chart_code("temperatures", "temperatures", "Plot the temperatures")
        )
    )
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    figure = nb.cells[-1].outputs
    if not any("application/vnd.jupyter-aaep.maidr+json" in o.get("data", {}) for o in figure):
        raise RuntimeError(f"the demo's chart carries no maidr data: {figure}")
    nbformat.write(nb, path)


def _choose_claude(lab: Any, fake: Any, notebook: str, out: Path) -> None:
    adapter = REPO / ".interop/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
    if not adapter.exists():
        raise RuntimeError(f"{adapter} is missing: run scripts/interop-deps first")
    home = out / "claude-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": fake.api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    folder = lab.home / "config" / "aaep"
    folder.mkdir(parents=True, exist_ok=True)
    servers = {"Claude Code": {"command": "node", "args": [str(adapter)], "env": env}}
    (folder / "agents.json").write_text(json.dumps({"agent_servers": servers}))
    fake._responder.notebook = notebook  # the ClaudeModel this scenario's fake answers with
    chat = lab.api("POST", "aaep/v1/chats", {"notebook_path": notebook})["chat_id"]
    chosen = lab.api(
        "POST", f"aaep/v1/chats/{chat}/messages", {"kind": "agent", "agent": "Claude Code"}
    )
    if "Claude Code" not in str(chosen.get("message")):
        raise RuntimeError(f"Claude Code could not be chosen: {chosen}")


def drive(scenario: str, stage: Stage) -> None:
    if scenario == "figure":
        explore(stage)
    else:
        approve_each(stage, ACP_REQUEST if scenario == "acp" else RUNS_REQUEST)


def _alert(stage: Stage, since: float) -> dict[str, Any] | None:
    """The first assertive write after *since*, ``{"end": True}`` once the turn is over."""
    for e in stage.live():
        if e["time"] > since and e["politeness"] == "assertive":
            return e
    return {"end": True} if stage.finished() else None


def approve_each(stage: Stage, request: str) -> None:
    """Send *request*; answer every approval alert, once heard, with Ctrl+Shift+Enter; listen
    until the turn is over and Orca is quiet."""
    marks = stage.session.marks
    stage.open_panel()
    after = stage.send(request)
    for n in range(1, 7):
        alert = stage.wait_for(
            "an approval alert or the end of the turn",
            lambda since=after: _alert(stage, since),
            300,
        )
        if alert.get("end"):
            break
        marks[f"alert {n} written"] = alert["time"]
        marks.setdefault("alert written", alert["time"])
        stage.listener.until_said(alert["time"], alert["text"], cap=60)
        after = stage.key(f"Ctrl+Shift+Enter (approve {n})", "ctrl+shift+Return")
        marks.setdefault("approve", after)
        marks[f"approve {n}"] = after
        time.sleep(0.5)
    stage.wait_for("the end of the turn", stage.finished, 180)
    marks["turn over"] = time.time()
    marks["quiet at the end"] = stage.listener.until_quiet(
        after, quiet=2.0, cap=stage.args.tail_cap
    )


IN_FIGURE = """() => {
  const el = document.activeElement;
  return !!el && !!el.closest('.jp-AAEPExplorable') && el.getAttribute('tabindex') === '0'
    ? (el.getAttribute('role') || el.tagName.toLowerCase()) + ': '
      + (el.getAttribute('aria-label') || '').slice(0, 120)
    : '';
}"""
CHART_WORDS = """() => {
  const el = document.activeElement;
  const help = el.closest('figure').querySelector('[id^="maidr-instruction-"]');
  return (el.getAttribute('aria-label') || '') + ' ' + (help ? help.textContent : '');
}"""
UNNAMED = "() => (document.activeElement || document.body).outerHTML.slice(0, 160)"
FIGURE_TEXT = """() => Array.from(document.querySelectorAll(
    '.jp-AAEPExplorable [role=alert], .jp-AAEPExplorable [aria-live], #maidr-text-container'))
  .map(e => e.textContent.trim()).filter(Boolean).join(' | ')"""


CHART_KEYS = [(f"Right ({n})", "Right") for n in range(1, 7)] + [
    ("Ctrl+Left (maidr: the first value)", "ctrl+Left"),
    ("Ctrl+Right (maidr: the last value)", "ctrl+Right"),
    ("Home", "Home"),
    ("End", "End"),
    ("Tab (out of the chart)", "Tab"),
]
"""The keys pressed on the chart: the right arrow value by value (one more than there are
values, to hear the end), then maidr's keys for the first and the last value, then Home and
End (which maidr does not bind), then Tab out of the chart (Orca back in browse mode)."""
CHART_EXPECTS = {
    **{f"Right ({n})": f"{v:g}" for n, v in enumerate(TEMPERATURES, 1)},
    "Right (6)": "No more data",
    "Ctrl+Left (maidr: the first value)": f"{TEMPERATURES[0]:g}",
    "Ctrl+Right (maidr: the last value)": f"{TEMPERATURES[-1]:g}",
}


def explore(stage: Stage) -> None:
    """Tab from the notebook to the chart and listen, then press ``CHART_KEYS`` one by one,
    listening after each and noting whether the focus is still on the chart."""
    marks, listener, page = stage.session.marks, stage.listener, stage.page
    page.locator(".jp-AAEPExplorable").first.wait_for(timeout=60_000)
    at = time.time()
    for _ in range(30):
        at = stage.key("Tab", "Tab")
        time.sleep(0.3)
        where = page.evaluate(IN_FIGURE)
        name = str(stage.focused().get("name", ""))[:60]
        # A stop without a name is told by its markup, so it can be found.
        stage.session.tab_stops.append(where or name or page.evaluate(UNNAMED))
        if where:
            break
        listener.until_quiet(at, quiet=0.6, cap=8)
    else:
        raise RuntimeError(f"Tab never reached the figure: {stage.session.tab_stops}")
    marks["figure focused"] = at
    # A person waits until the chart is heard (its name or maidr's instructions): under load
    # Orca handles the focus event seconds late, and an arrow pressed before that is its own.
    listener.until_reading(at, page.evaluate(CHART_WORDS), cap=30)
    listener.until_quiet(at, quiet=1.5, cap=60)
    marks[
        "focus mode on the chart"
        if orca_in_focus_mode(stage.desktop, at)
        else "browse mode on the chart"
    ] = time.time()
    if stage.args.figure_focus_mode and "browse mode on the chart" in marks:
        # What a person who knows Orca does on a silent chart: Orca+A, focus mode, so that
        # the arrows reach the page instead of moving Orca's own caret.
        toggled = stage.key("Insert+A (Orca: focus mode)", "Insert+a")
        listener.until_quiet(toggled, quiet=0.8, cap=10)
    for label, key in CHART_KEYS:
        at = stage.key(label, key)
        listener.until_quiet(at, quiet=1.0, cap=20)
        if label.startswith("Tab"):
            mode = "focus" if orca_in_focus_mode(stage.desktop, at) else "browse"
            marks[f"{mode} mode after Tab out of the chart"] = time.time()
            continue
        where = page.evaluate(IN_FIGURE)
        stage.session.problems.append(
            f"after {label}: the figure says {page.evaluate(FIGURE_TEXT)[:160]!r}; "
            f"focus {'on the figure' if where else 'LEFT THE FIGURE: ' + str(stage.focused())[:80]}"
        )
    marks["quiet at the end"] = listener.until_quiet(at, quiet=1.5, cap=30)


def heard_after_keys(
    keys: list[tuple[float, str]], utterances: list[Utterance], since: float, end: float
) -> list[tuple[str, list[str]]]:
    """For each key pressed from *since* on: what Orca said (queued) before the next key
    (the last key's: before *end*, so "Screen reader off" is no key's answer)."""
    pressed = [(at, label) for at, label in keys if at >= since - 0.05]
    heard = []
    for i, (at, label) in enumerate(pressed):
        until = pressed[i + 1][0] if i + 1 < len(pressed) else end
        # When it began to play: speech-dispatcher's queueing time of an answer was seen half a
        # second before the key that caused it (the log's timestamps), its start never.
        said = [u.heard_text() for u in utterances if at <= (u.begun or u.queued) < until]
        heard.append((label, [s for s in said if s.strip()]))
    return heard


def _says(value: float, text: str) -> bool:
    """Whether *text* says *value* ("24" or "24.0" for 24.0; "21.5" not inside "121.55")."""
    tail = r"(?:\.0+)?" if value == int(value) else ""
    return bool(re.search(rf"(?<![\d.]){re.escape(f'{value:g}')}{tail}(?!\d|\.\d)", text))


def findings(session: Any, utterances: list[Utterance], origin: float) -> list[str]:
    """What the scenario asks for beyond the common figures."""
    marks = session.marks
    if session.scenario in ("plan", "ask3", "acp") and "alert written" in marks:
        first = marks["alert written"]
        alerts = sum(bool(ALERT_MARK.fullmatch(k)) for k in marks)
        lines = [f"Approval alerts: {alerts}"]
        heard = [
            (e, hearing(e["time"], e["text"], e["politeness"], utterances)) for e in session.live
        ]
        after = [(e, h) for e, h in heard if e["time"] >= first]
        if after:
            last, h = after[-1]
            lines.append(
                f"From the first alert written to the last line written ({last['text'][:70]!r}): "
                f"{last['time'] - first:.1f} s; to its last word heard: "
                + (f"{h.end - first:.1f} s" if h.end else f"not heard ({h.fate})")
            )
        steps = [(e, h) for e, h in after if "of 3 done" in e["text"] or "Ran cell" in e["text"]]
        if steps:
            e, h = steps[-1]
            lines.append(
                f"To the last step ({e['text'][:70]!r}) written: {e['time'] - first:.1f} s; heard: "
                + (f"{h.end - first:.1f} s" if h.end else f"not heard ({h.fate})")
            )
        if "turn over" in marks:
            lines.append(f"To the end of the turn: {marks['turn over'] - first:.1f} s")
        if "quiet at the end" in marks:
            lines.append(f"To Orca quiet at the end: {marks['quiet at the end'] - first:.1f} s")
        return lines
    if session.scenario == "figure" and "figure focused" in marks:
        return figure_findings(session, utterances)
    return []


def figure_findings(session: Any, utterances: list[Utterance]) -> list[str]:
    """What was heard after each key on the chart; each value once in the sweep, in its place."""
    marks = session.marks
    end = marks.get("quiet at the end", float("inf")) + 0.5
    per_key = heard_after_keys(session.keys, utterances, marks["figure focused"], end)
    after = [k for k in marks if k.endswith("mode after Tab out of the chart")]
    lines = [
        "Orca's mode once the chart had the focus: "
        + ("focus mode" if "focus mode on the chart" in marks else "BROWSE MODE")
        + (f"; {after[0]}" if after else ""),
        "Heard after each key (what began to play before the next key):",
    ]
    lines += [f"  {label}: {' / '.join(said) or '(nothing)'}" for label, said in per_key]
    sweep = [s for label, said in per_key if label.startswith("Right") for s in said]
    counts = {v: sum(_says(v, s) for s in sweep) for v in TEMPERATURES}
    wrong = [
        label
        for label, said in per_key
        if label in CHART_EXPECTS
        and not any(
            CHART_EXPECTS[label] in s
            if not CHART_EXPECTS[label][0].isdigit()
            else _says(float(CHART_EXPECTS[label]), s)
            for s in said
        )
    ]
    repeated = [label for label, said in per_key if len(said) != len(set(said))]
    left = [p for p in session.problems if "LEFT THE FIGURE" in p]
    lines += [
        "Values heard in the sweep with the right arrow (utterances that say each): "
        + ", ".join(f"{v:g}: {c}" for v, c in counts.items()),
        (
            f"Every value heard: {'yes' if all(counts.values()) else 'NO'}; a value said in more "
            f"than one utterance: {[f'{v:g}' for v, c in counts.items() if c > 1] or 'none'}"
        ),
        (
            f"Keys whose value was not heard: {wrong or 'none'}; a key's answer said twice: "
            f"{repeated or 'none'}; keys after which the focus had left the chart: {len(left)}"
        ),
        f"Words heard on the chart: {len(words(' '.join(s for _, said in per_key for s in said)))}",
    ]
    return lines
