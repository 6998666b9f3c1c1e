"""A model gateway for JupyterHub: every user gets the agent, nobody gets the organisation's key.

Run as a JupyterHub service (``python -m jupyter_aaep.hub.gateway``; see docs/JUPYTERHUB.md).
Users' servers set ``ANTHROPIC_BASE_URL`` to the gateway and ``ANTHROPIC_API_KEY`` to their own
JupyterHub API token (the one the hub gives each server, ``JUPYTERHUB_API_TOKEN``). The SDK sends
that key as ``x-api-key`` (or ``authorization: Bearer``); the gateway asks the hub whose token it
is (``GET /hub/api/user``), refuses anyone else with the Messages API's own 401 body, refuses a
user over their spending limit with a 403 ``permission_error`` whose message says so (the agent
narrates it), and forwards everything else under ``/v1/`` to the real API with the key only this
process holds, streaming the answer back byte for byte while it counts the ``usage`` it reports.

The key is read from ``ANTHROPIC_API_KEY`` (or ``--key-file``) at start and taken out of this
process's environment; the service runs as the hub's user, so users' processes cannot read its
``/proc/<pid>/environ``. Admins read usage at ``GET <prefix>/usage`` and set a user's limits
with ``PUT <prefix>/usage/<user>`` (``{"limit_tokens": N, "limit_usd": X}``; null: the default).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.iostream import StreamClosedError

from .ledger import Ledger

log = logging.getLogger("jupyter_aaep.hub.gateway")

__all__ = ["Gateway", "main"]

_TO_UPSTREAM = ("anthropic-version", "anthropic-beta", "content-type", "accept")
_FROM_UPSTREAM = (
    "content-type",
    "request-id",
    "retry-after",
    "x-should-retry",
    "anthropic-organization-id",
)
_TOKEN_CACHE_SECONDS = 60.0
BUDGET_HEADER = "x-aaep-budget"
"""Set to ``exceeded`` on a refusal for budget, so clients can tell it from other 403s."""


def error_body(kind: str, message: str) -> bytes:
    """An error in the Messages API's shape, which the SDK parses into its exceptions."""
    return json.dumps(
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": None}
    ).encode()


class UsageCounter:
    """Reads ``usage`` out of an answer as its bytes pass (SSE events or one JSON Message)."""

    def __init__(self, streaming: bool) -> None:
        self.streaming = streaming
        self.model = ""
        self.usage: dict[str, Any] = {}
        self._buffer = b""

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        if not self.streaming:
            return
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                self._event(line[5:])

    def finish(self) -> None:
        if self.streaming:
            if self._buffer.startswith(b"data:"):
                self._event(self._buffer[5:])
        else:
            try:
                message = json.loads(self._buffer or b"{}")
            except ValueError:
                return
            if isinstance(message, dict):
                self.model = str(message.get("model") or "")
                self.usage.update(message.get("usage") or {})

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("type") == "message_start":
            message = event.get("message") or {}
            self.model = str(message.get("model") or "")
            self.usage.update(message.get("usage") or {})
        elif event.get("type") == "message_delta":
            # The counts in message_delta are cumulative for the whole answer.
            self.usage.update(
                {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
            )


class Gateway:
    """Who is who (through the hub), the ledger, and the upstream client."""

    def __init__(self, *, hub_api_url: str, upstream: str, key: str, ledger: Ledger) -> None:
        self.hub_api_url = hub_api_url.rstrip("/")
        self.upstream = upstream.rstrip("/")
        self._key = key
        self.ledger = ledger
        self._tokens: dict[str, tuple[float, dict[str, Any]]] = {}
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0))

    async def identify(self, token: str) -> dict[str, Any] | None:
        """The hub's model of the token's owner, or ``None`` when the hub does not know it."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        cached = self._tokens.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        try:
            answer = await self.client.get(
                f"{self.hub_api_url}/user", headers={"Authorization": f"token {token}"}
            )
        except httpx.HTTPError as error:
            log.warning("The hub could not be asked who a token belongs to: %s", error)
            return None
        if answer.status_code != 200:
            return None
        model = answer.json()
        self._tokens[digest] = (time.monotonic() + _TOKEN_CACHE_SECONDS, model)
        return model  # type: ignore[no-any-return]

    def upstream_headers(self, request_headers: Any) -> dict[str, str]:
        headers = {name: request_headers[name] for name in _TO_UPSTREAM if name in request_headers}
        headers["x-api-key"] = self._key
        headers["accept-encoding"] = "identity"  # the usage is read from the bytes as they pass
        return headers


def _presented_token(handler: web.RequestHandler) -> str | None:
    key = handler.request.headers.get("x-api-key")
    if key:
        return key
    scheme, _, token = handler.request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") and token.strip() else None


class _Base(web.RequestHandler):
    def initialize(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def check_xsrf_cookie(self) -> None:
        """Token-authenticated API, no cookies: nothing to check."""

    def fail(self, status: int, kind: str, message: str, **headers: str) -> None:
        self.set_status(status)
        self.set_header("content-type", "application/json")
        for name, value in headers.items():
            self.set_header(name, value)
        self.finish(error_body(kind, message))

    async def who(self) -> dict[str, Any] | None:
        token = _presented_token(self)
        model = await self.gateway.identify(token) if token else None
        if model is None:
            self.fail(
                401,
                "authentication_error",
                "This model gateway accepts only a JupyterHub API token of a "
                "user (as the API key); this one is not valid.",
            )
        return model


class ForwardHandler(_Base):
    """``/v1/...``: the Messages API (and the rest of the API) for hub users."""

    async def get(self, path: str) -> None:
        await self._forward(path)

    async def post(self, path: str) -> None:
        await self._forward(path)

    async def _forward(self, path: str) -> None:
        user = await self.who()
        if user is None:
            return
        name = str(user.get("name"))
        if user.get("kind", "user") != "user":
            self.fail(403, "permission_error", "Only JupyterHub users can use the model gateway.")
            return
        counted = (
            self.request.method == "POST"
            and path.startswith("messages")
            and not path.startswith("messages/count")
        )
        if counted:
            refusal = self.gateway.ledger.refusal(name)
            if refusal is not None:
                log.info("Refused a model request of %s: over budget.", name)
                self.fail(403, "permission_error", refusal, **{BUDGET_HEADER: "exceeded"})
                return
        streaming = False
        if counted:
            try:
                streaming = bool(json.loads(self.request.body or b"{}").get("stream"))
            except (ValueError, AttributeError):
                streaming = False
        counter = UsageCounter(streaming)
        query = f"?{self.request.query}" if self.request.query else ""
        request = self.gateway.client.build_request(
            self.request.method or "GET",
            f"{self.gateway.upstream}/v1/{path}{query}",
            headers=self.gateway.upstream_headers(self.request.headers),
            content=self.request.body if self.request.method == "POST" else None,
        )
        try:
            answer = await self.gateway.client.send(request, stream=True)
        except httpx.HTTPError as error:
            log.warning("The model service could not be reached: %s", error)
            self.fail(
                502,
                "api_error",
                "The model gateway could not reach the model service; try again later.",
            )
            return
        try:
            self.set_status(answer.status_code)
            for header in _FROM_UPSTREAM:
                if header in answer.headers:
                    self.set_header(header, answer.headers[header])
            async for chunk in answer.aiter_raw():
                if counted and answer.status_code == 200:
                    counter.feed(chunk)
                self.write(chunk)
                await self.flush()
        except (StreamClosedError, httpx.HTTPError):
            pass  # the user's server hung up (a stopped session) or the upstream broke the stream
        finally:
            await answer.aclose()
            if counted and answer.status_code == 200:
                counter.finish()
                self.gateway.ledger.record(name, counter.model, counter.usage)
        if not self._finished:
            try:
                self.finish()
            except StreamClosedError:
                pass


class HealthHandler(web.RequestHandler):
    """The service's root: the hub checks it answers."""

    def get(self) -> None:
        self.finish(
            {
                "service": "jupyter-aaep model gateway",
                "messages": "POST v1/messages with your hub token",
            }
        )


class UsageHandler(_Base):
    """``usage`` (all users, admins only) and ``usage/<user>`` (that user or an admin)."""

    async def get(self, user: str | None = None) -> None:
        model = await self.who()
        if model is None:
            return
        if not (_is_admin(model) or (user is not None and user == model.get("name"))):
            self.fail(
                403,
                "permission_error",
                "Only a JupyterHub administrator can read other users' usage.",
            )
            return
        self.finish(self.gateway.ledger.report(user))

    async def put(self, user: str | None = None) -> None:
        model = await self.who()
        if model is None:
            return
        if user is None or not _is_admin(model):
            self.fail(
                403, "permission_error", "Only a JupyterHub administrator can set a user's budget."
            )
            return
        try:
            body = json.loads(self.request.body or b"{}")
            tokens = body.get("limit_tokens")
            usd = body.get("limit_usd")
            if tokens is not None and (
                not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0
            ):
                raise ValueError(
                    "limit_tokens must be a whole number of tokens (0 or more) or null"
                )
            if usd is not None and (
                not isinstance(usd, (int, float)) or isinstance(usd, bool) or usd < 0
            ):
                raise ValueError("limit_usd must be an amount in USD (0 or more) or null")
        except (ValueError, AttributeError) as error:
            self.fail(400, "invalid_request_error", f'{error}, e.g. {{"limit_tokens": 200000}}.')
            return
        self.gateway.ledger.set_limits(user, tokens=tokens, usd=None if usd is None else float(usd))
        self.finish(self.gateway.ledger.report(user))


def _is_admin(model: dict[str, Any]) -> bool:
    return bool(model.get("admin")) or "admin:users" in (model.get("scopes") or [])


def make_app(gateway: Gateway, prefix: str = "/") -> web.Application:
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    args = {"gateway": gateway}
    return web.Application(
        [
            (prefix, HealthHandler),
            (prefix + r"v1/(.*)", ForwardHandler, args),
            (prefix + r"usage/?", UsageHandler, args),
            (prefix + r"usage/([^/]+)", UsageHandler, args),
        ]
    )


def _read_key(key_file: str | None) -> str:
    if key_file:
        return Path(key_file).read_text(encoding="utf-8").strip()
    key = os.environ.pop("ANTHROPIC_API_KEY", "")
    if not key:
        raise SystemExit(
            "The model gateway needs the organisation's key: set ANTHROPIC_API_KEY in the service's "
            "environment (the 'environment' of its entry in c.JupyterHub.services) or pass --key-file."
        )
    return key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_aaep.hub.gateway", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--upstream", default="https://api.anthropic.com", help="the real Messages API"
    )
    parser.add_argument(
        "--key-file", help="read the key from this file instead of ANTHROPIC_API_KEY"
    )
    parser.add_argument(
        "--budget-tokens", type=int, default=None, help="default limit per user, in tokens"
    )
    parser.add_argument(
        "--budget-usd", type=float, default=None, help="default limit per user, estimated USD"
    )
    parser.add_argument(
        "--usage-file", default="aaep-gateway-usage.json", help="where usage and limits are kept"
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:8090"),
        help="where to listen (JupyterHub sets JUPYTERHUB_SERVICE_URL)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="[%(levelname)1.1s %(asctime)s aaep-gateway] %(message)s"
    )
    hub_api = os.environ.get("JUPYTERHUB_API_URL")
    if not hub_api:
        parser.error("run it as a JupyterHub service: JUPYTERHUB_API_URL is not set")
    key = _read_key(args.key_file)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    ledger = Ledger(
        Path(args.usage_file), limit_tokens=args.budget_tokens, limit_usd=args.budget_usd
    )
    gateway = Gateway(hub_api_url=hub_api, upstream=args.upstream, key=key, ledger=ledger)
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
    where = urlsplit(args.url)
    asyncio.run(
        _serve(
            make_app(gateway, prefix), where.hostname or "127.0.0.1", where.port or 8090, gateway
        )
    )
    return 0


async def _serve(app: web.Application, host: str, port: int, gateway: Gateway) -> None:
    server = HTTPServer(app)
    server.listen(port, host)
    log.info("Model gateway on http://%s:%d, forwarding to %s.", host, port, gateway.upstream)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    server.stop()
    await gateway.client.aclose()


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
