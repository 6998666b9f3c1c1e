"""The Anthropic client each session uses, configured by the SDK from the environment.

The SDK reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (and ``ANTHROPIC_AUTH_TOKEN``)
itself; we never read, log or pass the key. A session asks :class:`ClientFactory` for a
client when it starts, so a key exported after the server started is picked up; sessions
share a client (and its connection pool) while that configuration stays the same.

Without any credentials the client is still created (``api_key=None``): the first model call
then fails inside the loop, which ends the session with a ``session.errored`` event
(``MODEL_API_KEY_MISSING``) telling the user how to fix it, instead of an HTTP 500.
"""

from __future__ import annotations

import os

import anthropic

_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


def credentials_configured() -> bool:
    """Whether the SDK will find credentials (for the start-up log line; never the value)."""
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


class ClientFactory:
    """Callable handed to ``ChatRunner(client_factory=...)``."""

    def __init__(self, *, max_retries: int = 2) -> None:
        self.max_retries = max_retries
        self._client: anthropic.AsyncAnthropic | None = None
        self._fingerprint: tuple[str | None, ...] | None = None
        self._retired: list[anthropic.AsyncAnthropic] = []

    def __call__(self) -> anthropic.AsyncAnthropic:
        fingerprint = tuple(os.environ.get(name) for name in _ENV)
        if self._client is None or fingerprint != self._fingerprint:
            if self._client is not None:
                self._retired.append(self._client)  # a running session may still use it
            self._fingerprint = fingerprint
            # With no key in the environment the SDK still builds the client (api_key None).
            self._client = anthropic.AsyncAnthropic(max_retries=self.max_retries)
        return self._client

    async def close(self) -> None:
        """Close every client this factory made (server shutdown)."""
        clients = [*self._retired, *([self._client] if self._client is not None else [])]
        self._client, self._retired = None, []
        for client in clients:
            await client.close()
