"""Coding agents over the Agent Client Protocol (ACP v1): Claude Code, Codex, Gemini CLI in a chat.

The person picks the agent; this package is the ACP client that runs it (one process per chat),
hears its updates as AAEP events and puts each of its permission requests to the person on the
chat's card. See ``docs/architecture.md`` (Agents over ACP).
"""

from .agents import BUILT_IN, AgentCatalog, AgentSpec
from .client import AcpChatAgent, McpAccess
from .host import AcpHost, McpHooks
from .narration import Narrator

__all__ = [
    "BUILT_IN",
    "AcpChatAgent",
    "AcpHost",
    "AgentCatalog",
    "AgentSpec",
    "McpAccess",
    "McpHooks",
    "Narrator",
]
