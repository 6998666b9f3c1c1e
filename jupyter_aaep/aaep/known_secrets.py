"""The exact values the redaction masks wherever they appear: the server's own credentials.

Apart from :mod:`.redaction` so that the server can remember its credentials at start-up
without compiling the redaction's patterns, which only the first masked text needs (issue 31).
"""

from __future__ import annotations

known_secrets: set[str] = set()
"""The remembered values; :mod:`.redaction` reads this very set."""


def remember_secret(value: str) -> None:
    """Mask every exact occurrence of *value* from now on (the server's own credentials)."""
    if len(value) >= 8:
        known_secrets.add(value)


def forget_secrets() -> None:
    """Drop the remembered values (for tests and server shutdown)."""
    known_secrets.clear()
