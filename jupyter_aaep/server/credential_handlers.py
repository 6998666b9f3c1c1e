"""``aaep/v1/mcp/tokens``: the person mints, lists and revokes outside agents' credentials.

Only the person's own Jupyter login opens these (token or cookie, with the XSRF check every
POST and DELETE of the API gets); a request that carries an outside agent's credential is
refused (:class:`~.base.AAEPHandler` refuses it everywhere but the MCP endpoint), so an agent
cannot mint itself another credential or revoke someone else's. Minting and revoking are
authorised like running code (``kernels:execute``): a credential lets an agent ask to run code.

``POST {"name": "Claude Code (laptop)"}`` answers 201 with the record and its secret, shown this
once; ``GET`` lists the records (id, name, created, last used; never a secret);
``DELETE …/{id}`` answers 204, and the credential opens nothing from its next request on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado import web

from ..errors import RequestError
from ..mcp.credentials import OutsideCredentials
from .base import AAEPHandler

__all__ = ["credential_routes"]

MCP_OFF = (
    "This server does not let outside agents in: c.AAEPExtension.mcp_server is False. Ask whoever "
    "runs it to turn it on, then make a credential again."
)


class _CredentialsHandler(AAEPHandler):
    def initialize(  # type: ignore[override]
        self,
        name: str,
        service: Any,
        credentials: OutsideCredentials,
        endpoint_on: bool = False,
        built_endpoint: Callable[[], Any] = lambda: None,
        **kwargs: Any,
    ) -> None:
        super().initialize(name, service, **kwargs)
        self.credentials = credentials
        self.endpoint_on = endpoint_on
        """Whether outside agents may come in at all (``c.AAEPExtension.mcp_server``)."""
        self.built_endpoint = built_endpoint
        """The MCP endpoint if its first request built it, else ``None`` (never builds it)."""


class TokensHandler(_CredentialsHandler):
    """``GET`` lists the credentials; ``POST {"name"}`` mints one."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish(json.dumps({"credentials": self.credentials.listed()}))

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def post(self) -> None:
        if not self.endpoint_on:
            raise RequestError(409, MCP_OFF)
        body = self.body_json()
        record, token = self.credentials.mint(body.get("name"))
        base = self.settings.get("base_url", "/")
        url = f"{self.request.protocol}://{self.request.host}{url_path_join(base, 'aaep/v1/mcp')}"
        self.set_status(201)
        self.set_header("Location", url_path_join(base, "aaep/v1/mcp/tokens", record.id))
        self.finish(json.dumps({**record.public(), "token": token, "mcp_url": url}))


class TokenHandler(_CredentialsHandler):
    """``DELETE …/{credential_id}`` revokes one; its agent's session ends once idle."""

    @web.authenticated
    @authorized("execute")  # type: ignore[untyped-decorator]
    async def delete(self, credential_id: str) -> None:
        record = self.credentials.revoke(credential_id)
        if record is None:
            raise RequestError(
                404, "There is no such credential; it may have been revoked already."
            )
        endpoint = self.built_endpoint()
        if endpoint is not None:  # not built yet: no agent of that credential can be in
            endpoint.agents.revoked(record.id)
        self.set_status(204)
        self.finish()


def credential_routes(
    service: Any,
    credentials: OutsideCredentials,
    *,
    endpoint_on: bool,
    built_endpoint: Callable[[], Any],
) -> list[tuple[str, type, dict[str, Any]]]:
    """The token routes (relative to ``base_url``); they never build the agent's MCP parts."""
    common = {
        "service": service,
        "credentials": credentials,
        "endpoint_on": endpoint_on,
        "built_endpoint": built_endpoint,
    }
    return [
        (r"aaep/v1/mcp/tokens", TokensHandler, common),
        (r"aaep/v1/mcp/tokens/(?P<credential_id>[^/]+)", TokenHandler, common),
    ]
