"""What ``scripts/interop-deps`` installs from npm: Claude Code, the reference MCP servers and
Zed's ACP adapter for Claude Code.

Nothing is downloaded here; a test that needs a missing package skips with the reason, and
fails in CI (where ``scripts/test`` runs ``scripts/interop-deps`` first).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

INTEROP_MODULES = Path(__file__).resolve().parents[2] / ".interop" / "node_modules"

CLAUDE = "@anthropic-ai/claude-code/bin/claude.exe"
FILESYSTEM_SERVER = "@modelcontextprotocol/server-filesystem/dist/index.js"
EVERYTHING_SERVER = "@modelcontextprotocol/server-everything/dist/index.js"
CLAUDE_ACP = "@zed-industries/claude-agent-acp/dist/index.js"
"""Zed's ACP adapter for Claude Code (run with ``node``; it bundles its own Claude Code)."""


def npm_tool(relative: str) -> Path:
    """A file of the installed npm packages; skips (fails in CI) when it is missing."""
    found = INTEROP_MODULES / relative
    if not found.exists():
        reason = f"{found} is missing; run scripts/interop-deps (npm) first."
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found
