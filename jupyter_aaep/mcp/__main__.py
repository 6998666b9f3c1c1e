"""``python -m jupyter_aaep.mcp``: the stdio bridge to a running server's MCP endpoint."""

from __future__ import annotations

from .bridge import main

if __name__ == "__main__":
    main()
