"""Every option of the server extension, and what the agent's parts are built from.

:class:`ServerOptions` joins the agent's options (:mod:`.agent_options`) and the service's
(:mod:`.service_options`); ``AAEPExtension`` inherits it. :func:`~.agent_parts.build_parts`
takes a ``ServerOptions``, so it reads the options where they are declared and the few things
the running extension supplies (declared below, set at start-up) without importing the
extension itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agent_options import AgentOptions
from .service_options import ServiceOptions

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from ..mcp.credentials import OutsideCredentials
    from ..store.chat_store import ChatStore
    from .model_client import ClientFactory


class ServerOptions(AgentOptions, ServiceOptions):
    """The extension's options, plus what its start-up sets for the parts to use."""

    clients: ClientFactory
    """The model clients (set at start-up, once the credentials are kept from kernels)."""
    outside_credentials: OutsideCredentials
    """Outside agents' MCP credentials (set at start-up)."""

    @property
    def server(self) -> ServerApp:
        """The linked Jupyter server."""
        raise NotImplementedError

    def chat_store(self) -> ChatStore | None:
        """The chat database, telling the open chats when its health changes."""
        raise NotImplementedError

    def edits_missing_on_disk(self, path: str, record: dict[str, Any]) -> list[str] | None:
        """At recovery: the interrupted session's edits that the notebook file lacks."""
        from ..notebook.edit_record import missing_from_file  # only at a recovery

        return missing_from_file(self.server.root_dir, record)
