"""The live view's items as HTML and words: pure functions, so tests read what people see.

Every value from an event is escaped (``_markdown.escape``); only tags written here reach the
page. Nothing here carries ``aria-live`` or a ``role`` that announces: the side panel is the one
narrator of agent events (DESIGN §8), and the widget is read when the user goes to it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ._markdown import escape
from ._view_citations import cited_html
from ._view_items import (
    AnswerItem,
    NoticeItem,
    ProgressBar,
    RequestItem,
    StepItem,
    action_phrase,
)
from ._view_state import ViewState

__all__ = [
    "answer_html",
    "approve_name",
    "countdown_text",
    "header_html",
    "notice_html",
    "pressed_name",
    "reject_name",
    "request_html",
    "request_outcome_html",
    "step_html",
]

_RISK = {"low": "Low", "medium": "Medium", "high": "High"}
_STEP = {"running": "Working", "success": "Done", "error": "Failed", "timeout": "Timed out"}
_END = {
    "completed": "Finished",
    "errored": "Failed",
    "cancelled": "Stopped",
    "error": "Problem",
    "handoff": "Your turn",
    "info": "Note",
}


PLAN_RUN = "Run it, asking only for code the risk scan flags"
PLAN_ELSEWHERE = (
    "The other choices (run it asking before each step, keep planning with a comment, edit the "
    "plan) are in the side panel."
)


def plan_of(event: dict[str, Any]) -> tuple[str, list[str]] | None:
    """A plan's summary and steps (plan mode's confirmation), or ``None`` for any other."""
    extra = event.get("extra_context")
    plan = extra.get("plan") if isinstance(extra, dict) else None
    if not isinstance(plan, dict) or not isinstance(plan.get("summary"), str):
        return None
    steps = plan.get("steps")
    listed = (
        [s for s in steps if isinstance(s, str) and s.strip()] if isinstance(steps, list) else []
    )
    return plan["summary"], listed


def approve_name(item: RequestItem) -> str:
    """The Approve button's text, which is also its accessible name: "Approve running cell 3";
    for a plan its first choice (what a plain approval means)."""
    if plan_of(item.event) is not None:
        return PLAN_RUN
    return f"Approve {action_phrase(item.event)}"


def reject_name(item: RequestItem) -> str:
    if plan_of(item.event) is not None:
        return "Reject the plan"
    return f"Reject {action_phrase(item.event)}"


def pressed_name(item: RequestItem) -> str:
    """The text of the button the user pressed, once pressed: what became of the answer."""
    if item.state == "sending":
        return "Sending your answer…"
    return item.outcome or "Answered."


STYLE = (
    "<style>"
    ".jp-AAEPView p{margin:0.2em 0;}"
    ".jp-AAEPView .widget-html,.jp-AAEPView .widget-html-content{margin-top:0;margin-bottom:0;line-height:1.5;}"
    ".jp-AAEPView-requestCard{border-left:3px solid var(--jp-warn-color1);padding-left:8px;margin:4px 0;}"
    ".jp-AAEPView pre.jp-AAEPView-code{background:var(--jp-layout-color2);color:var(--jp-content-font-color1);"
    "padding:4px 8px;margin:0.2em 0;white-space:pre-wrap;overflow-wrap:normal;word-break:normal;"
    "overflow-x:auto;tab-size:4;counter-reset:jp-aaep-view-line;}"
    # One line: its wrapped rest hangs two columns right of its own indentation; its number is
    # drawn in the margin with empty alternative text (neither read nor copied as code).
    ".jp-AAEPView .jp-AAEPView-codeLine{--jp-private-aaep-hang:calc((var(--jp-private-aaep-indent,0) + 2) * 1ch);"
    "display:inline-block;position:relative;box-sizing:border-box;width:100%;vertical-align:top;"
    "padding-left:calc(var(--jp-private-aaep-gutter,3ch) + var(--jp-private-aaep-hang));"
    "text-indent:calc(-1 * var(--jp-private-aaep-hang));counter-increment:jp-aaep-view-line;}"
    ".jp-AAEPView .jp-AAEPView-codeLine::before{content:counter(jp-aaep-view-line) / '';position:absolute;"
    "left:0;width:calc(var(--jp-private-aaep-gutter,3ch) - 1ch);text-align:right;text-indent:0;"
    "color:var(--jp-ui-font-color2);user-select:none;}"
    ".jp-AAEPView .jupyter-button{width:auto;max-width:100%;}"
    ".jp-AAEPView table{border-collapse:collapse;margin:0.3em 0;}"
    ".jp-AAEPView th,.jp-AAEPView td{border:1px solid var(--jp-border-color1);padding:2px 8px;text-align:left;}"
    ".jp-AAEPView-progress{display:flex;align-items:center;gap:8px;margin:0.2em 0;}"
    ".jp-AAEPView-progressTrack{flex:0 0 12em;height:0.8em;border:1px solid var(--jp-border-color1);"
    "background:var(--jp-layout-color2);}"
    ".jp-AAEPView-progressFill{height:100%;background:var(--jp-brand-color1);}"
    # A cited cell: looks like the link it is (not by colour alone), with a visible focus.
    ".jp-AAEPView a.jp-AAEPView-citation{color:var(--jp-content-link-color);text-decoration:underline;}"
    ".jp-AAEPView a.jp-AAEPView-citation:focus-visible{outline:2px solid var(--jp-brand-color1);"
    "outline-offset:1px;}"
    "</style>"
)
"""Spacing and the card's edge, from JupyterLab's theme variables (light, dark, high contrast)."""


def header_html(state: ViewState) -> str:
    request = (
        state.request_text if len(state.request_text) <= 300 else state.request_text[:299] + "…"
    )
    status = state.status + (f" {state.progress}" if state.progress and state.bar is None else "")
    return (
        STYLE
        + f'<p class="jp-AAEPView-request"><strong>You asked the agent:</strong> {escape(request)}</p>'
        f'<p class="jp-AAEPView-status">{escape(status)}</p>' + progress_html(state.bar)
    )


def progress_html(bar: ProgressBar | None) -> str:
    """A real progress bar: ``role="progressbar"`` with its value and a spoken value text; without
    a percentage it is indeterminate (no ``aria-valuenow``), and the text says how long it ran."""
    if bar is None:
        return ""
    values = 'aria-valuemin="0" aria-valuemax="100"'
    width = 0.0
    if bar.percent is not None:
        values += f' aria-valuenow="{bar.percent:.0f}"'
        width = bar.percent
    return (
        f'<div class="jp-AAEPView-progress"><div class="jp-AAEPView-progressTrack" role="progressbar" '
        f'aria-label="Progress" {values} aria-valuetext="{escape(bar.value_text)}">'
        f'<div class="jp-AAEPView-progressFill" style="width:{width:.1f}%"></div></div>'
        f'<span class="jp-AAEPView-progressText" aria-hidden="true">{escape(bar.value_text)}</span></div>'
    )


def answer_html(item: AnswerItem) -> str:
    body = cited_html(item.text, item.citations) or "<p>…</p>"
    tail = "" if item.complete else '<p class="jp-AAEPView-more"><em>(still writing…)</em></p>'
    return f'<div class="jp-AAEPView-answer">{body}{tail}</div>'


def step_html(item: StepItem) -> str:
    """ "Done: Running cell 3. Cell 3 ran in 0.1 s …" — the status word first, in words."""
    text = item.summary
    if item.outcome:
        text = f"{text} {item.outcome}"
    if item.error_message and item.error_message not in text:
        text = f"{text} Error: {item.error_message}"
    return (
        f'<p class="jp-AAEPView-step jp-mod-{item.status}">'
        f"<strong>{_STEP[item.status]}:</strong> {escape(text)}</p>"
    )


def _code_block(label: str, code: str) -> str:
    """The code as the panel's card shows it: one box per line, numbered in the margin by CSS,
    wrapped at spaces and between tokens with a hanging indent (the text is the code itself)."""
    lines = code.rstrip("\n").split("\n")
    body = "\n".join(
        f'<span class="jp-AAEPView-codeLine" style="--jp-private-aaep-indent:{_indent(line)}">'
        f"{_wrappable(line)}</span>"
        for line in lines
    )
    gutter = f"--jp-private-aaep-gutter:{len(str(len(lines))) + 1}ch"
    return (
        f'<p class="jp-AAEPView-codeLabel">{escape(label)}</p>'
        f'<pre class="jp-AAEPView-code" style="{gutter}"><code>{body}</code></pre>'
    )


_WRAP_AFTER = re.compile(r"\.(?=[A-Za-z_])|[(\[{,=](?=[^\s)\]}=])")
"""Where a line may wrap besides its spaces (a ``<wbr>``): between tokens, never in a name."""


def _wrappable(line: str) -> str:
    return _WRAP_AFTER.sub(lambda found: found.group(0) + "<wbr>", escape(line))


def _indent(line: str) -> int:
    """Columns of *line*'s indentation (a tab to the next multiple of 4)."""
    columns = 0
    for char in line:
        if char == " ":
            columns += 1
        elif char == "\t":
            columns += 4 - columns % 4
        else:
            break
    return columns


def request_html(item: RequestItem) -> str:
    """The card's facts: what, consequence, risk, warnings and the exact code (or the question)."""
    event = item.event
    if item.kind == "clarification":
        parts = [
            f"<p><strong>Question for you:</strong> {escape(str(event.get('question', '')))}</p>"
        ]
        context = event.get("context")
        if isinstance(context, str) and context:
            parts.append(f"<p>Context: {escape(context)}</p>")
        return f'<div class="jp-AAEPView-card jp-AAEPView-clarification">{"".join(parts)}</div>'
    context_value = event.get("extra_context")
    extra: dict[str, Any] = context_value if isinstance(context_value, dict) else {}
    risk = str(event.get("risk_level") or "low")
    irreversible = event.get("irreversible") is True or event.get("reversibility") == "irreversible"
    plan = plan_of(event)
    if plan is not None:
        summary, steps = plan
        count = f"{len(steps)} step{'s' if len(steps) != 1 else ''}"
        head = [
            f"<p><strong>Plan for your approval, {count}:</strong> {escape(summary)}</p>",
            "<ol>" + "".join(f"<li>{escape(step)}</li>" for step in steps) + "</ol>",
            f"<p>{escape(PLAN_ELSEWHERE)}</p>",
        ]
    else:
        head = [
            f"<p><strong>Approval needed:</strong> {escape(str(event.get('action', 'an action')))}</p>"
        ]
    parts = [
        *head,
        f"<p>Consequence: {escape(str(event.get('consequence', 'Not described.')))}</p>",
        f"<p>Risk: {escape(_RISK.get(risk, risk))}{' (cannot be undone)' if irreversible else ''}</p>",
    ]
    flags = (
        [f for f in extra.get("risk_flags", []) if isinstance(f, str) and f]
        if isinstance(extra.get("risk_flags"), list)
        else []
    )
    if flags:
        parts.append(
            "<p>Warnings:</p><ul>" + "".join(f"<li>{escape(f)}</li>" for f in flags) + "</ul>"
        )
    if isinstance(extra.get("code"), str):
        number = extra.get("cell_number")
        parts.append(
            _code_block(
                f"Code of cell {number}:" if isinstance(number, int) else "Code to run:",
                extra["code"],
            )
        )
    cells = extra.get("cells")
    if isinstance(cells, list):
        for index, cell in enumerate(
            c for c in cells if isinstance(c, dict) and isinstance(c.get("code"), str)
        ):
            number = cell.get("cell_number")
            parts.append(
                _code_block(
                    f"Code of cell {number if isinstance(number, int) else index + 1}:",
                    cell["code"],
                )
            )
    arguments = extra.get("arguments") or extra.get("args_summary")
    if isinstance(arguments, str) and arguments:
        parts.append(_code_block("With:", arguments))
    return f'<div class="jp-AAEPView-card jp-AAEPView-confirmation jp-mod-risk-{escape(risk)}">{"".join(parts)}</div>'


def countdown_text(item: RequestItem, now: float) -> str:
    """ "If you do not answer, it will be rejected in 1 min 5 s." (or ``""`` without a deadline)."""
    deadline = item.deadline()
    if deadline is None:
        return ""
    if item.kind == "clarification":
        fallback = "the agent goes on without an answer"
    else:
        fallback = (
            "it will be approved"
            if item.event.get("default_decision") == "accept"
            else "it will be rejected"
        )
    left = max(0, math.ceil(deadline - now))
    if left == 0:
        return f"Time is up: {fallback.replace('it will be', 'it is being')}."
    minutes, seconds = divmod(left, 60)
    span = f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
    return f"If you do not answer, {fallback} in {span}."


def request_outcome_html(item: RequestItem, now: float) -> str:
    """Under the buttons: the countdown while open, the outcome once answered, and a problem."""
    parts = []
    if item.problem:
        parts.append(
            f'<p class="jp-AAEPView-problem"><strong>Problem:</strong> {escape(item.problem)}</p>'
        )
    if item.open:
        text = countdown_text(item, now)
    else:
        text = item.outcome
        if item.state == "sending" and item.sent is not None:
            shown = {"accept": "Approve", "reject": "Reject"}.get(str(item.sent), str(item.sent))
            text = f"Sending your answer ({shown})…"
    if text:
        parts.append(f'<p class="jp-AAEPView-outcome">{escape(text)}</p>')
    return "".join(parts)


def notice_html(item: NoticeItem) -> str:
    hint = f" What to do: {escape(item.hint)}" if item.hint else ""
    return (
        f'<p class="jp-AAEPView-notice jp-mod-{item.variant}">'
        f"<strong>{_END[item.variant]}:</strong> {escape(item.text)}{hint}</p>"
    )
