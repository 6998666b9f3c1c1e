"""The once-only check of signed kernel requests, on a clock the test moves (issue 16).

The server-level tests (test_kernel_security.py) show a replay refused through real kernels;
these pin the memory behind it: a used nonce is never forgotten while its request could still
pass the time check, and one kernel's flood of requests cannot push another kernel's used
nonces out to make them replayable.
"""

from __future__ import annotations

import uuid

import pytest

from jupyter_aaep.server import kernel_credentials
from jupyter_aaep.server.kernel_credentials import WINDOW_SECONDS, KernelCredentials, signature

VICTIM = "0b1c2d3e-aaaa-bbbb-cccc-000000000001"
FLOODER = "0b1c2d3e-aaaa-bbbb-cccc-000000000002"
PATH = "/aaep/v1/kernel/messages"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _signed(credentials: KernelCredentials, kernel_id: str, at: float, nonce: str = "") -> dict:
    nonce = nonce or uuid.uuid4().hex
    stamp = f"{at:.3f}"
    key = credentials.for_kernel(kernel_id).encode()
    return {
        "kernel_id": kernel_id,
        "method": "POST",
        "path": PATH,
        "body": b'{"decision": "accept"}',
        "stamp": stamp,
        "nonce": nonce,
        "given": signature(key, "POST", PATH, b'{"decision": "accept"}', stamp=stamp, nonce=nonce),
    }


def _check(credentials: KernelCredentials, request: dict) -> str | None:
    return credentials.check(
        request["kernel_id"],
        request["method"],
        request["path"],
        request["body"],
        stamp=request["stamp"],
        nonce=request["nonce"],
        given=request["given"],
    )


def test_a_used_nonce_stays_used_as_long_as_its_time_would_pass() -> None:
    clock = Clock()
    credentials = KernelCredentials(b"server secret", clock=clock)
    # Signed at the far edge of the window ahead of the server's clock: it stays fresh longest.
    request = _signed(credentials, VICTIM, clock.now + WINDOW_SECONDS - 1)
    assert _check(credentials, request) is None
    for step in range(1, 8):  # prunes run on the way; the replay stays refused as used
        clock.now += WINDOW_SECONDS / 4
        why = _check(credentials, request)
        assert why is not None, step
        assert "already used" in why, (step, why)
    clock.now += WINDOW_SECONDS / 4  # now more than the window past the request's own time
    assert "away from the server's clock" in (_check(credentials, request) or "")


def test_a_flood_from_one_kernel_does_not_make_anothers_request_replayable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kernel_credentials, "MAX_NONCES", 50)
    clock = Clock()
    credentials = KernelCredentials(b"server secret", clock=clock)
    captured = _signed(credentials, VICTIM, clock.now)
    assert _check(credentials, captured) is None
    refused = [_check(credentials, _signed(credentials, FLOODER, clock.now)) for _ in range(80)]
    assert refused[:50] == [None] * 50
    assert all(
        why is not None and "sent more than 50 requests" in why and "try again" in why
        for why in refused[50:]
    ), refused[50:]
    assert "already used" in (_check(credentials, captured) or "")
    # The victim still works; once the flood's requests are too old to pass, the flooder does too.
    assert _check(credentials, _signed(credentials, VICTIM, clock.now)) is None
    clock.now += 2 * WINDOW_SECONDS + 1
    assert _check(credentials, _signed(credentials, FLOODER, clock.now)) is None


def test_a_wrong_signature_uses_up_nothing() -> None:
    clock = Clock()
    credentials = KernelCredentials(b"server secret", clock=clock)
    genuine = _signed(credentials, VICTIM, clock.now, nonce="a" * 32)
    forged = {**genuine, "given": "0" * 64}
    assert _check(credentials, forged) == "the signature is wrong"
    assert _check(credentials, genuine) is None
