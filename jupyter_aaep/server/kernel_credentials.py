"""One credential per kernel, and the once-only check of the requests signed with it.

Why this shape: the kernel endpoints must tell kernels apart, and a kernel must not be able to
pose as another one. Connection files (and their keys) sit in the shared runtime folder, which
every kernel of the user can read, and a secret shared by all kernels names none of them. So
the server derives a credential per kernel id from a secret that never leaves its memory,
``HMAC(server secret, kernel id)``, and puts it into *that* kernel's environment when it starts
it (the kernel manager's ``start_kernel`` gets it in ``env``; a restart reuses the launch
environment, so the credential survives restarts). Nothing is written to disk, and kernels
started before the extension loaded have none.

Each request is signed over ``METHOD \\n PATH?QUERY \\n TIME \\n NONCE \\n BODY``. A signature
is accepted once: its time must be within :data:`WINDOW_SECONDS` of the server's clock and its
nonce unseen for that kernel within the window (so a captured request cannot be sent again,
before or after a kernel restart). Used nonces are remembered per kernel and never forgotten
early: a kernel that signs more than :data:`MAX_NONCES` requests in a window is refused until
they expire, so no kernel can flood the memory to make another kernel's request replayable.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ENV_ID", "ENV_SECRET", "WINDOW_SECONDS", "KernelCredentials", "signature"]

ENV_SECRET = "AAEP_KERNEL_SECRET"
ENV_ID = "AAEP_KERNEL_ID"
WINDOW_SECONDS = 30.0
"""How far a request's time may be from the server's clock, either way."""
MAX_NONCES = 10_000
"""Unexpired nonces remembered per kernel at most (a flood cannot grow memory without bound)."""


def signature(key: bytes, method: str, path: str, body: bytes, *, stamp: str, nonce: str) -> str:
    """The hex HMAC-SHA256 a kernel sends: *path* is the request path with its query, as sent."""
    message = f"{method.upper()}\n{path}\n{stamp}\n{nonce}\n".encode() + body
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class KernelCredentials:
    """Issues per-kernel credentials and checks signed requests (each accepted once)."""

    def __init__(self, secret: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._clock = clock
        self._seen: dict[str, dict[str, float]] = {}  # kernel id -> nonce -> when it was used
        self._pruned_at = 0.0

    def for_kernel(self, kernel_id: str) -> str:
        return hmac.new(
            self._secret, b"aaep-kernel:" + kernel_id.encode(), hashlib.sha256
        ).hexdigest()

    def check(
        self,
        kernel_id: str,
        method: str,
        path: str,
        body: bytes,
        *,
        stamp: str,
        nonce: str,
        given: str,
    ) -> str | None:
        """``None`` when the request is genuine and fresh (its nonce is then used up); else why not."""
        try:
            sent_at = float(stamp)
        except ValueError:
            return "the request time is missing or not a number"
        now = self._clock()
        if abs(now - sent_at) > WINDOW_SECONDS:
            return f"the request was signed {abs(now - sent_at):.0f} s away from the server's clock"
        if not (16 <= len(nonce) <= 128) or not nonce.isalnum():
            return "the nonce is missing or malformed"
        expected = signature(
            self.for_kernel(kernel_id).encode(), method, path, body, stamp=stamp, nonce=nonce
        )
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return "the signature is wrong"
        self._forget_old(now)
        used = self._seen.setdefault(kernel_id, {})
        if nonce in used:
            return "this signed request was already used"
        if len(used) >= MAX_NONCES:
            return (
                f"this kernel sent more than {MAX_NONCES} requests in {2 * WINDOW_SECONDS:.0f} "
                "seconds; wait a minute and try again"
            )
        used[nonce] = now
        return None

    def _forget_old(self, now: float) -> None:
        """Drop nonces whose requests are refused by their time anyway (never an unexpired one)."""
        if now - self._pruned_at < WINDOW_SECONDS:
            return
        self._pruned_at = now
        cutoff = now - 2 * WINDOW_SECONDS
        for kernel_id in list(self._seen):
            used = self._seen[kernel_id]
            for nonce in [n for n, at in used.items() if at < cutoff]:
                del used[nonce]
            if not used:
                del self._seen[kernel_id]

    def install(self, kernel_manager: Any) -> None:
        """Make *kernel_manager* give each kernel it starts its own credential and id."""
        if getattr(kernel_manager, "_aaep_credentials", None) is self:
            return
        original = kernel_manager.start_kernel

        async def start_kernel(*args: Any, kernel_id: str | None = None, **kwargs: Any) -> Any:
            if kernel_id is None or kernel_id not in kernel_manager:
                kernel_id = kernel_id or kernel_manager.new_kernel_id(**kwargs)
                env = dict(kwargs.get("env") or os.environ)
                env[ENV_SECRET] = self.for_kernel(kernel_id)
                env[ENV_ID] = kernel_id
                kwargs["env"] = env
            return await original(*args, kernel_id=kernel_id, **kwargs)

        kernel_manager.start_kernel = start_kernel
        kernel_manager._aaep_credentials = self
        self._uninstall = lambda: setattr(kernel_manager, "start_kernel", original)

    def uninstall(self, kernel_manager: Any) -> None:
        if getattr(kernel_manager, "_aaep_credentials", None) is self:
            self._uninstall()
            kernel_manager._aaep_credentials = None
