"""A tiny MCP server over stdio, for the tests of the user's MCP servers as the agent's tools.

Its notes live in the folder ``NOTES_DIR`` names, so a test sees whether a write happened.
"""

from __future__ import annotations

import asyncio
import os
import struct
import zlib
from pathlib import Path

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
NOTES = Path(os.environ["NOTES_DIR"])


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@server.tool(
    title="Read Note", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False)
)
def read_note(name: str) -> str:
    """Read one note."""
    path = NOTES / name
    return path.read_text() if path.exists() else f"There is no note {name}."


@server.tool(
    title="Write Note", annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False)
)
def write_note(name: str, text: str) -> str:
    """Write (or overwrite) one note."""
    (NOTES / name).write_text(text)
    return f"Wrote {len(text)} characters to {name}. pid {os.getpid()}"


@server.tool(title="Red Square", annotations=ToolAnnotations(read_only_hint=True))
def red_square() -> Image:
    """A small red square."""
    return Image(data=_png(8, 8), format="png")


@server.tool(
    title="Count Slowly", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False)
)
async def count_slowly(to: int, ctx: Context) -> str:
    """Count, reporting progress."""
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"Counted {i} of {to}")
        await asyncio.sleep(0.05)
    return f"Counted to {to}."


@server.tool(title="Crash", annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def crash() -> str:
    """End this server's process at once."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
