"""What a new ACP session is told first: how notebooks are worked on here, and the chat so far."""

from __future__ import annotations

import asyncio
from typing import Any

from .permissions import NOTEBOOK_REFUSAL

__all__ = ["TRANSCRIPT_CHARS", "first_prompt", "start_problem", "transcript"]

TRANSCRIPT_CHARS = 20_000
"""Most of an earlier transcript handed to a new ACP session as context (the newest part)."""
START_TIMEOUT = 60.0
"""Seconds for ``initialize`` and ``session/new`` (Claude Code takes a few seconds here)."""


def transcript(history: list[dict[str, Any]]) -> str:
    """The chat so far as plain text (for a new ACP session's first prompt)."""
    lines = []
    for message in history:
        content = message.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = " ".join(
                str(b.get("text") or "")
                for b in content or []
                if isinstance(b, dict) and b.get("type") == "text"
            )
        if text.strip():
            who = "Person" if message.get("role") == "user" else "Assistant"
            lines.append(f"{who}: {text.strip()}")
    return "\n\n".join(lines)[-TRANSCRIPT_CHARS:]


def first_prompt(text: str, earlier: str) -> str:
    """The first prompt of an ACP session: how notebooks are worked on here, the earlier
    conversation if any, then the request."""
    parts = [
        "You work inside JupyterLab for a person who may use a screen reader. " + NOTEBOOK_REFUSAL
    ]
    if earlier:
        parts.append(
            "This chat continues an earlier conversation (a new session; here is its transcript):\n"
            + earlier
        )
    parts.append(text)
    return "\n\n".join(parts)


def start_problem(name: str, error: BaseException, log_path: str) -> str:
    if isinstance(error, FileNotFoundError):
        return f"{name} could not start: its command was not found. Install its ACP adapter, or fix agents.json."
    if isinstance(error, asyncio.TimeoutError):
        return f"{name} did not answer within {int(START_TIMEOUT)} seconds of starting; its log is {log_path}."
    return f"{name} could not start ({error}); its log is {log_path}."
