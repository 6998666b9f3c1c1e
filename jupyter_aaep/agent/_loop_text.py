"""Small pieces of the agent loop's text and request shaping, kept apart so loop.py reads as the loop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..words import plural
from .control import ERRORED_NOTE, STOPPED_NOTE, RunControl

if TYPE_CHECKING:
    import anthropic


def stopped_note(control: RunControl) -> str:
    """What the model reads at the end of a stopped request, so it does not pick it up again."""
    if control.reason == "superseded_by_new_request":
        return "[Stopped: the user sent a new request instead. Do not continue the stopped one.]"
    if control.cancelled_by == "user":
        return STOPPED_NOTE
    if control.cancelled_by == "system":
        return "[Stopped by the server before finishing.]"
    return "[Stopped before finishing.]"


def errored_note(message: str) -> str:
    """What the model reads at the end of a request that ended with an error (one short reason)."""
    reason = clip(" ".join(message.split()), 200) or "unknown error."
    if not reason.endswith((".", "!", "?", "…")):
        reason += "."
    return ERRORED_NOTE.format(reason=reason)


def with_moving_breakpoint(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a cache breakpoint on the last block (a copy; the history is untouched).

    With the system prompt's and the tool list's breakpoints that makes three of the four
    allowed. The service finds the previous request's breakpoint within its look-back, so each
    request reads everything up to the previous one from the cache and writes only what is new.
    """
    if not history:
        return history
    last = history[-1]
    content = last["content"]
    blocks: list[dict[str, Any]]
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}] if content else []
    else:
        blocks = list(content)
    if not blocks or blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return history
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return [*history[:-1], {**last, "content": blocks}]


def error_text(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(error)


def _counted(labels: list[str], noun: str) -> str:
    """``"2 tools: read the notebook, run a cell"``: the count and up to five distinct labels."""
    unique = list(dict.fromkeys(labels))
    shown = ", ".join(unique[:5]) + (" and more" if len(unique) > 5 else "")
    return f"{plural(len(labels), noun)}: {shown}"


def tool_phrase(labels: list[str]) -> str:
    return f"Used {_counted(labels, 'tool')}." if labels else ""


def done_phrase(failed: list[str], recovered: list[str] | None = None) -> str:
    """The opening of a completed session's summary: how many steps failed, if any, and which
    failures the agent recovered from (a step of the same kind worked later), so a request that
    ended well is not closed with "1 step failed"."""
    parts = []
    if recovered:
        steps, _, shown = _counted(recovered, "step").partition(": ")
        parts.append(f"after recovering from {steps} that failed first: {shown}")
    if failed:
        steps, _, shown = _counted(failed, "step").partition(": ")
        parts.append(f"but {steps} failed: {shown}")
    if not parts:
        return "Done."
    return "Done, " + "; ".join(parts) + "."


def done_terse(failed: list[str]) -> str:
    """The terse summary when steps failed (empty when none did)."""
    count = len(failed)
    return f"Done, {plural(count, 'step')} failed." if count else ""


def was_declined(content: Any, tool_name: str) -> bool:
    """A result of the dispatcher for a call that never ran because of its approval (declined,
    unanswered, withdrawn, or its code kept changing): the user's choice, not a failed step.
    These phrases mirror ``confirmation.declined_text``; tests/agent/test_loop.py checks both."""
    if not isinstance(content, str):
        return False
    declined = (
        "The user declined:",
        "Not run: ",
        f"The user did not answer in time, so {tool_name} was not run",
        f"{tool_name} was not run:",
    )
    return content.startswith(declined)


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
