"""The Anthropic client each session uses, and the model credentials it is built from.

The SDK configures itself from the environment (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``,
``ANTHROPIC_BASE_URL`` …); we never log or pass the key anywhere else. A session asks
:class:`ClientFactory` for a client when it starts, so a key set after the server started is
picked up; sessions share a client (and its connection pool) while that configuration stays
the same.

Kernels must not get those credentials: code the agent runs in a kernel (or any cell) could
print them into a notebook or into what is sent to the model. :class:`ModelCredentials` takes
them out of this process's ``os.environ`` and keeps them in memory, so *no* child process —
kernels started through sessions or the kernels API, restarted kernels, terminals, other
extensions' subprocesses — can inherit them, whatever code path starts it. The client is built
while the values are briefly put back (one synchronous call, so no other coroutine on the
server's loop can start a process meanwhile), which lets the SDK resolve them exactly as it
always does. ``AAEPExtension.kernels_inherit_model_credentials`` turns this off.

The SDK's import (about 1 s of CPU, 20 s with ten users starting at once on two cores) is started
ahead on a worker thread when the agent is first used (:meth:`ClientFactory.preload`: the panel
opening, not the server's start, so a server nobody asks keeps its memory), and every user of a
client awaits :meth:`ClientFactory.ready` first: no client is built, and the SDK is not touched on
the server's thread, until that import has ended. (An earlier attempt imported in a thread without
that wait, and a session's first request went out malformed.)

Without any credentials the client is still created (``api_key=None``): the first model call
then fails inside the loop, which ends the session with a ``session.errored`` event
(``MODEL_API_KEY_MISSING``) telling the user how to fix it, instead of an HTTP 500.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import os
import sys
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..aaep.known_secrets import remember_secret

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

WITHHELD = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_WEBHOOK_SIGNING_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_BASE_URL",
)
"""What kernels do not inherit: the SDK's secrets, custom headers (they can carry an
``Authorization``), and the base URL (it can embed a user and password, and a kernel has no use
for the server's model endpoint). Non-secret pointers such as ``ANTHROPIC_PROFILE`` stay: the
files they name are readable by the kernel's user anyway."""


_REMEMBERED = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class ModelCredentials:
    """The model credential variables, held in memory instead of the process environment.

    Parameters
    ----------
    withhold
        ``True``: move the variables out of *environ* (now, and whenever they reappear there,
        e.g. set by code in this process), so child processes do not inherit them.
        ``False``: leave the environment alone and read it each time.
    environ
        The environment to manage; ``os.environ`` unless a test passes its own.
    """

    def __init__(self, *, withhold: bool, environ: MutableMapping[str, str] | None = None) -> None:
        self.withhold = withhold
        self._environ: MutableMapping[str, str] = os.environ if environ is None else environ
        self._held: dict[str, str] = {}
        self.collect()
        # Put back on close only what the process was started with: anything set later was set
        # by code in this process (a test's monkeypatch) that undoes its own change.
        self._at_start = dict(self._held)

    def collect(self) -> None:
        """Take into memory any credential variable that is in the environment now."""
        if not self.withhold:
            return
        for name in WITHHELD:
            value = self._environ.pop(name, None)
            if value is not None:
                self._held[name] = value

    def values(self) -> dict[str, str]:
        """The current credential variables by name (never log them).

        The key and token are also remembered by the redaction, so a kernel that somehow
        prints them (inheriting on purpose, or reading a file) never sends them to the model.
        """
        if not self.withhold:
            values = {name: self._environ[name] for name in WITHHELD if name in self._environ}
        else:
            self.collect()
            values = dict(self._held)
        for name in _REMEMBERED:
            if values.get(name):
                remember_secret(values[name])
        return values

    def configured(self) -> bool:
        """Whether the SDK will find an API key or token (for the start-up log line)."""
        values = self.values()
        return bool(values.get("ANTHROPIC_API_KEY") or values.get("ANTHROPIC_AUTH_TOKEN"))

    def discard(self, name: str) -> None:
        """Forget *name*, as if it had never been set (withholding) or unset it (inheriting)."""
        self._held.pop(name, None)
        self._environ.pop(name, None)

    @contextmanager
    def visible(self) -> Iterator[None]:
        """The held values in the environment for the duration of a synchronous block."""
        shown = {name: value for name, value in self._held.items() if name not in self._environ}
        if not self.withhold:
            shown = {}
        self._environ.update(shown)
        try:
            yield
        finally:
            for name in shown:
                self._environ.pop(name, None)

    def restore(self) -> None:
        """Put the values the process started with back into the environment (server stop)."""
        for name, value in self._at_start.items():
            self._environ.setdefault(name, value)
        self._held.clear()


class ClientFactory:
    """Callable handed to ``ChatRunner(client_factory=...)``."""

    def __init__(
        self, *, max_retries: int = 2, credentials: ModelCredentials | None = None
    ) -> None:
        self.max_retries = max_retries
        self.credentials = credentials or ModelCredentials(withhold=False)
        self._client: anthropic.AsyncAnthropic | None = None
        self._fingerprint: tuple[str | None, ...] | None = None
        self._retired: list[anthropic.AsyncAnthropic] = []
        self._sdk: concurrent.futures.Future[None] | None = None

    def preload(self) -> None:
        """Start importing the SDK on a worker thread (once), so the first message does not
        wait for it; the server's thread goes on answering meanwhile."""
        if self._sdk is not None or "anthropic" in sys.modules:
            return
        future: concurrent.futures.Future[None] = concurrent.futures.Future()

        def load() -> None:
            try:
                importlib.import_module("anthropic")
            except BaseException as error:  # noqa: BLE001 - the first client raises it again
                log.debug("loading the Anthropic SDK ahead of the first request failed: %s", error)
                future.set_exception(error)
            else:
                future.set_result(None)

        self._sdk = future
        threading.Thread(target=load, name="aaep-sdk-import", daemon=True).start()

    @property
    def loading(self) -> bool:
        """An import :meth:`preload` started is still under way."""
        return self._sdk is not None and not self._sdk.done()

    async def ready(self) -> None:
        """Wait, without holding up the server, until an import :meth:`preload` started has
        ended (at once when none is under way). A failed import is left to the client, which
        imports the SDK again and says what is wrong."""
        future = self._sdk
        if future is None or future.done():
            return
        try:
            await asyncio.wrap_future(future)
        except Exception:  # noqa: BLE001 - reported by the import in __call__
            return

    def __call__(self) -> anthropic.AsyncAnthropic:
        import anthropic  # the SDK loads with the first client, not with the server (issue 31)

        values = self.credentials.values()
        fingerprint = tuple(values.get(name) for name in WITHHELD)
        if self._client is None or fingerprint != self._fingerprint:
            if self._client is not None:
                self._retired.append(self._client)  # a running session may still use it
            self._fingerprint = fingerprint
            # With no key the SDK still builds the client (api_key None). No await in this
            # block: the values are back in os.environ only while the SDK reads them.
            with self.credentials.visible():
                self._client = anthropic.AsyncAnthropic(max_retries=self.max_retries)
        return self._client

    async def close(self) -> None:
        """Close every client this factory made (server shutdown)."""
        clients = [*self._retired, *([self._client] if self._client is not None else [])]
        self._client, self._retired = None, []
        for client in clients:
            await client.close()
