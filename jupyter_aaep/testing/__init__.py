"""Test support for jupyter-aaep, such as a scripted fake Anthropic Messages API.

Lives in the package (not under ``tests/``) so the offline demo and the benchmarks can
use it too.
"""

from __future__ import annotations

from .fake_anthropic import ErrorReply, FakeAnthropic, RecordedRequest, ToolUse, Turn

__all__ = ["ErrorReply", "FakeAnthropic", "RecordedRequest", "ToolUse", "Turn"]
