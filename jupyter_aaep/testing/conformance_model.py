"""A deterministic stand-in for the model, for running the official AAEP conformance suite.

The suite (``aaep-conformance``) drives a producer with fixed English prompts and expects a
model that answers them sensibly: a short greeting, a fact, a tool call, a confirmation before
booking, a clarifying question, a hand-off. A real model would do that only most of the time,
and then the suite's checks pass vacuously. This responder plays that model behind the
scripted Messages API (:class:`~jupyter_aaep.testing.fake_anthropic.FakeAnthropic`): it reads
the conversation the agent loop sends and answers with plain text, tool calls (to the real
tools of :mod:`.conformance_tools` and the built-in ``ask_user`` / ``request_handoff``), an
unknown tool, or an API error. The producer itself knows nothing of the suite.

Run it as its own process (what ``scripts/conformance`` does)::

    python -m jupyter_aaep.testing.serve_model --responder conformance --port 0

prints the base URL to point ``ANTHROPIC_BASE_URL`` at, then serves until interrupted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .fake_anthropic import ErrorReply, RecordedRequest, ToolUse, Turn

Reply = Turn | ErrorReply


@dataclass(frozen=True)
class _Rule:
    """A prompt the model recognises: what it does first, and what it says after the tool."""

    keywords: tuple[str, ...]
    first: Callable[[], Reply]
    after: Callable[[str, bool], str] | None = None
    """(tool result text, is_error) → the closing answer."""


def _text(text: str) -> Callable[[], Reply]:
    return lambda: Turn(text=text)


def _tool(name: str, arguments: dict[str, Any]) -> Callable[[], Reply]:
    return lambda: Turn(tool_uses=[ToolUse(name, dict(arguments))])


def _outcome(done: str, declined: str) -> Callable[[str, bool], str]:
    return lambda result, is_error: declined if is_error else done


RULES: tuple[_Rule, ...] = (
    _Rule(("hello",), _text("Hello, I am your notebook assistant and ready to help.")),
    _Rule(("moon",), _text("The Moon drifts about 3.8 centimetres further from Earth every year.")),
    _Rule(
        ("does not exist",),
        _tool("this_tool_does_not_exist_xyz", {}),
        _outcome("That worked.", "That tool does not exist, so nothing was run."),
    ),
    _Rule(
        ("api_key",),
        _tool("fetch_data", {"url": "https://api.example.com", "api_key": "sk-test-12345"}),
        _outcome(
            "I read the data from the web service; the credential stays hidden.",
            "The web service could not be read.",
        ),
    ),
    _Rule(
        ("fetch some data",),
        _tool("fetch_data", {"source": "sample"}),
        _outcome(
            "I fetched the sample data: three cities with their rainfall.",
            "The data could not be fetched.",
        ),
    ),
    _Rule(
        ("three-sentence",),
        _text(
            "Notebooks keep code, results and explanations together. "
            "That makes an analysis easy to follow and to repeat. "
            "A screen reader can announce each step as it happens."
        ),
    ),
    _Rule(
        ("meeting room",),
        _tool("book_meeting_room", {"room": "Room A", "when": "tomorrow at 2pm"}),
        _outcome(
            "Room A is booked for tomorrow at 2pm.", "I did not book the room, as you declined."
        ),
    ),
    _Rule(
        ("send an email",),
        _tool(
            "send_email",
            {
                "to": "test@example.com",
                "subject": "Hello",
                "body": "Hello from the notebook assistant.",
            },
        ),
        _outcome(
            "The email to test@example.com has been sent.",
            "I did not send the email, as you declined.",
        ),
    ),
    _Rule(
        ("delete record",),
        _tool("delete_record", {"record_id": "12345"}),
        _outcome("Record 12345 has been deleted.", "Record 12345 was not deleted."),
    ),
    _Rule(
        ("confirmation for any action",),
        _tool("book_meeting_room", {"room": "Room B", "when": "Friday at 10am"}),
        _outcome("Room B is booked for Friday at 10am.", "I did not book Room B."),
    ),
    _Rule(
        ("weather",),
        _tool(
            "ask_user",
            {
                "question": "Which city are you in?",
                "context": "The forecast depends on where you are.",
            },
        ),
        lambda result, is_error: (
            (
                f"Thanks. {result.removeprefix('The user answered: ')} is warm today, "
                "with a chance of rain in the afternoon."
            )
            if "answered" in result
            else "Without your city I cannot give a forecast."
        ),
    ),
    _Rule(
        ("handoff", "escalate"),
        _tool(
            "request_handoff",
            {
                "reason": "You asked to speak with a person.",
                "what_you_need": "A colleague to take over.",
            },
        ),
    ),
    _Rule(
        ("deliberate error",),
        lambda: ErrorReply(
            400, "invalid_request_error", "The request asked for a deliberate error."
        ),
    ),
    _Rule(
        ("rainbow",),
        _text(
            "Sunlight enters a raindrop and slows down, so it bends. "
            "Each colour bends by a slightly different amount, which spreads white light into a spectrum. "
            "The light reflects off the back of the drop and bends again on the way out. "
            "Red light leaves at about 42 degrees and violet at about 40 degrees. "
            "Millions of drops at those angles together form the arc you see."
        ),
    ),
)
DEFAULT = "I can explain, edit or run the cells of your notebook; tell me what you need."


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _rule_for(prompt: str) -> _Rule | None:
    lowered = prompt.lower()
    return next((rule for rule in RULES if any(word in lowered for word in rule.keywords)), None)


def respond(request: RecordedRequest) -> Reply:
    """The model's next turn for the conversation in *request* (the ``FakeAnthropic`` responder)."""
    messages = [m for m in request.body.get("messages") or [] if isinstance(m, dict)]
    last = _blocks(messages[-1]) if messages else []
    texts = [b.get("text", "") for b in last if b.get("type") == "text"]
    if texts:  # a new request from the user
        rule = _rule_for(texts[-1])
        return rule.first() if rule else Turn(text=DEFAULT)
    results = [b for b in last if b.get("type") == "tool_result"]
    prompt = next(
        (
            b.get("text", "")
            for m in reversed(messages)
            if m.get("role") == "user"
            for b in _blocks(m)
            if b.get("type") == "text"
        ),
        "",
    )
    rule = _rule_for(prompt)
    if rule is None or rule.after is None or not results:
        return Turn(text="Done.")
    result = results[-1]
    content = result.get("content")
    text = (
        content
        if isinstance(content, str)
        else " ".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
    )
    return Turn(text=rule.after(text, bool(result.get("is_error"))))
