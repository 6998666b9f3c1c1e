"""The Jupyter server extension: the agent's HTTP, SSE and WebSocket endpoints."""

from __future__ import annotations

from .app import AAEPExtension

__all__ = ["AAEPExtension"]
