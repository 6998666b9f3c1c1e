"""``GET /aaep/v1/figures/maidr.js``: maidr's script, from the maidr package this server runs.

The panel renders explorable figures (``kernel/figures.py``) with maidr.js. It is served from
the installed wheel (``maidr.bundled_js_path()``), behind Jupyter's login like every AAEP route,
so the page never loads it from a CDN and works offline; tornado's ETag answers a page reload
with 304. Same origin also keeps maidr's optional language packs (looked up beside the script)
on this server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from ..mcp.credentials import MCP_ONLY
from .base import AUTH_RESOURCE, carries_outside_credential

__all__ = ["FigureScriptHandler", "maidr_script"]

_cache: dict[str, bytes] = {}


def maidr_script() -> bytes:
    """The bytes of the maidr.js that ships in the maidr wheel (read once per process)."""
    if "maidr.js" not in _cache:
        import importlib.util

        spec = importlib.util.find_spec("maidr")
        if spec is None or not spec.submodule_search_locations:
            raise web.HTTPError(
                404,
                "The maidr package is not installed on this server, so figures cannot be "
                "explored by keyboard. Install it (pip install maidr) and restart the server.",
            )
        # Read beside the package (as maidr.bundled_js_path() does) without importing maidr,
        # which would switch the server's matplotlib backend.
        path = Path(next(iter(spec.submodule_search_locations))) / "static" / "maidr.js"
        try:
            _cache["maidr.js"] = path.read_bytes()
        except OSError as error:
            raise web.HTTPError(
                404, f"maidr's script is missing from its package ({path}): reinstall maidr."
            ) from error
    return _cache["maidr.js"]


class FigureScriptHandler(ExtensionHandlerMixin, JupyterHandler):
    """The script that makes figures explorable (maidr.js), for the panel. Not an
    ``APIHandler``: that one answers every body as JSON."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, name: str, **kwargs: Any) -> None:
        kwargs.pop("service", None)  # the routes' common arguments; a file needs no service
        super().initialize(name, **kwargs)

    async def prepare(self) -> None:  # type: ignore[override]  # as JupyterHandler.prepare
        if carries_outside_credential(self):  # refused as on every AAEP route, in the same words
            self.set_status(403)
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.finish(json.dumps({"message": MCP_ONLY}))
            return
        await super().prepare()

    @web.authenticated
    @authorized
    async def get(self) -> None:
        body = maidr_script()
        self.set_header("Content-Type", "text/javascript; charset=utf-8")
        # Private: it is behind the login. A day: the version changes only with the package.
        self.set_header("Cache-Control", "private, max-age=86400")
        self.finish(body)
