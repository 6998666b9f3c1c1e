"""``AAEPExtension``: the Jupyter server extension that runs the agent and serves its AAEP events.

Enabled by ``pip install`` (``jupyter-config/server-config/jupyter_aaep.json``). Every option
is a traitlet (``c.AAEPExtension.model = ...``); the API key is left to the Anthropic SDK,
which reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``) from the environment — the
server's, not the kernels': they are moved out of ``os.environ`` at start-up
(:class:`~.model_client.ModelCredentials`) unless ``kernels_inherit_model_credentials`` is set.

Lifecycle (issue 31: nothing heavy until it is needed): linking routes SIGINT to the server's
own stop; ``initialize_settings`` keeps the model credentials from kernels and gives each kernel
the server starts its own credential (``kernel_credentials.py``); ``initialize_handlers`` mounts
the HTTP contract under ``base_url``; the start hook exports ``AAEP_SERVER_URL`` for kernels
started later. The chat store, tools, runner, streams and MCP parts (and the Anthropic and MCP
SDKs) come with the first request that needs them (``agent_parts.py``). ``stop_extension``
stops whatever was started, each step on its own, at whatever point the server is stopped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import url_path_join

from ..mcp.credentials import OutsideCredentials
from .allocator import tune_allocator
from .credential_handlers import credential_routes
from .handlers import handler_routes
from .kernel_credentials import KernelCredentials
from .kernel_launch import ARGUMENT as KERNEL_ARGUMENT
from .kernel_launch import add_extension_to_ipython_kernels
from .model_client import ClientFactory, ModelCredentials
from .server_options import ServerOptions
from .signals import end_without_collecting, stop_on_sigint_without_tty

if TYPE_CHECKING:  # the parts and the store come with the first request (agent_parts.py)
    from ..store.chat_store import ChatStore
    from ..store.health import StoreHealth
    from .agent_parts import AgentParts

EXPORTED = ("AAEP_SERVER_URL", "AAEP_KERNEL_SECRET", "AAEP_EXPLORABLE_FIGURES")


class AAEPExtension(ExtensionApp, ServerOptions):
    """An AI agent for the user's notebooks that announces every step as AAEP events.

    Its options are declared by concept in :mod:`.agent_options` and :mod:`.service_options`."""

    name = "jupyter_aaep"
    description = __doc__

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def server(self) -> ServerApp:
        """The linked ServerApp (always set once the extension is loaded)."""
        assert self.serverapp is not None
        return self.serverapp

    def initialize_settings(self) -> None:
        """Only what must hold from the server's first second: the model credentials kept from
        kernels, each kernel's own credential, the environment kernels read. The agent's parts
        are built on first use (:mod:`.agent_parts`)."""
        self._parts: AgentParts | None = None
        self.admin_policy = self.read_admin_policy()
        # Outside agents' credentials: a small private file, read now (the token routes need it).
        self.outside_credentials = OutsideCredentials.beside(self.db_path)
        self.clients = ClientFactory(
            credentials=ModelCredentials(withhold=not self.kernels_inherit_model_credentials)
        )
        self._secret = secrets.token_urlsafe(32)
        self.kernel_credentials = KernelCredentials(self._secret.encode())
        self.kernel_credentials.install(self.server.kernel_manager)
        self._previous_env = {name: os.environ.get(name) for name in EXPORTED}
        self._export_environment()
        self._configure_kernel_autoload()
        self._log_configuration()
        self._route_module_logs()
        if self.tune_memory_allocator:
            tuned = tune_allocator()
            if tuned:
                self.log.info("AAEP agent: %s (tune_memory_allocator).", tuned)

    @property
    def parts(self) -> AgentParts:
        """The store, tools, runner, streams and MCP parts, built by the first call that needs
        them (and started, once the server's loop runs)."""
        if self._parts is None:
            from .agent_parts import build_parts

            self._parts = build_parts(self)
        if self._loop_started and not self._parts.started:
            self._parts.start()
        return self._parts

    @property
    def built(self) -> AgentParts | None:
        """The parts if something has used them, without building them."""
        return getattr(self, "_parts", None)

    # The parts under the names the rest of the code (and the tests) know them by.
    runner = property(lambda self: self.parts.runner)
    hub = property(lambda self: self.parts.hub)
    store = property(lambda self: self.parts.store)
    toolbox = property(lambda self: self.parts.toolbox)
    service = property(lambda self: self.parts.service)
    long_runs = property(lambda self: self.parts.long_runs)
    mcp_endpoint = property(lambda self: self.parts.endpoint() if self.mcp_server else None)
    mcp_servers = property(lambda self: self.parts.mcp_servers)

    def initialize_handlers(self) -> None:
        self.handlers.extend(
            handler_routes(lambda: self.parts.service, keepalive=self.sse_keepalive_seconds)
        )
        self.handlers.extend(
            credential_routes(
                lambda: self.parts.service,
                self.outside_credentials,
                endpoint_on=self.mcp_server,
                built_endpoint=lambda: self.built.mcp_endpoint if self.built else None,
            )
        )
        if self.mcp_server:
            from ..mcp.http_endpoint import MCPHandler

            self.handlers.append((r"aaep/v1/mcp", MCPHandler, {"endpoint": self._endpoint}))

    def _endpoint(self) -> Any:
        return self.parts.endpoint()  # the route exists only when mcp_server is on

    _loop_started = False

    def _link_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        super()._link_jupyter_server_extension(serverapp)
        # JupyterHub stops with SIGINT, also a server it gave up on while it was starting: from
        # here on that runs the server's own stop (after the rest of its start) and ours.
        self._restore_sigint = stop_on_sigint_without_tty(serverapp)
        end_without_collecting()  # a class's servers stopped at once end sooner (signals.py)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_started = True
        self._export_environment()  # the port is final once the server listens
        if self._parts is not None:  # something used the agent before the loop ran
            self._parts.start()

    async def stop_extension(self) -> None:
        """Stop whatever was started, each step on its own: a server stopped while starting,
        before the extension finished loading, or during a session, shuts down without a
        traceback, and one failing step (logged in a sentence) never skips the others."""
        await self._step("put the interrupt signal back", getattr(self, "_restore_sigint", None))
        parts = self.built
        running = sum(1 for chat in parts.runner.chats() if chat.running) if parts else 0
        self.log.info(
            "AAEP agent: shutting down the server at %s; %d running session(s) closed, to be "
            "continued after a restart.",
            self.serverapp.base_url if self.serverapp is not None else "/",
            running,
        )
        if parts is not None:
            await parts.close(self._step)
        clients = getattr(self, "clients", None)
        if clients is not None:
            await self._step("close the model clients", clients.close)
            await self._step("restore the model credentials", clients.credentials.restore)
        credentials = getattr(self, "kernel_credentials", None)
        if credentials is not None and self.serverapp is not None:
            manager = self.serverapp.kernel_manager
            await self._step(
                "stop giving kernels credentials", lambda: credentials.uninstall(manager)
            )
        await self._step("restore the environment", self._restore_environment)
        await self._step("stop routing the agent's log messages", self._unroute_module_logs)

    async def _step(self, what: str, step: Callable[[], Any] | None) -> None:
        """Run one shutdown step; a failure is logged in one sentence and the shutdown goes on."""
        if step is None:
            return
        try:
            result = step()
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # noqa: BLE001 - each step on its own: the others still run
            self.log.warning(
                "AAEP agent: could not %s while shutting down (%s: %s); the rest of the shutdown "
                "went on.",
                what,
                type(error).__name__,
                error,
            )

    def _restore_environment(self) -> None:
        for name, value in getattr(self, "_previous_env", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    # -- what the parts are built from (ServerOptions) ---------------------------------------------
    def chat_store(self) -> ChatStore | None:
        return self.open_store(self._store_health_changed)

    def _store_health_changed(self, health: StoreHealth) -> None:
        """From the store's writer thread: tell the open chats, on the server's loop."""
        loop = getattr(self, "_loop", None) or getattr(
            getattr(self.server, "io_loop", None), "asyncio_loop", None
        )
        parts = self.built  # never built from the writer thread
        if parts is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(parts.runner.storage_changed, health)

    def _export_environment(self) -> None:
        """For the kernel magic: where this server is. Each kernel's own credential goes into
        that kernel's environment only (``kernel_credentials.py``), never into the server's."""
        url = self.server.connection_url
        os.environ["AAEP_SERVER_URL"] = url
        os.environ.pop("AAEP_KERNEL_SECRET", None)
        os.environ["AAEP_EXPLORABLE_FIGURES"] = "1" if self.explorable_figures else "0"
        parts = self.built
        if parts is not None:
            parts.hub.manifest_uri = url_path_join(url, "aaep/v1/manifest")

    def _configure_kernel_autoload(self) -> None:
        """Kernels of this environment load %aaep by themselves (or no longer do); never fatal."""
        from ..kernel import autoload

        try:
            changed = autoload.enable() if self.kernel_autoload else autoload.disable()
        except autoload.AutoloadError as error:
            if self.kernel_autoload:  # e.g. a shared environment this user cannot write to
                add_extension_to_ipython_kernels(self.server.kernel_manager)
                self.log.warning(
                    "AAEP agent: %s IPython kernels this server starts load %%aaep through their "
                    "command line instead (%s).",
                    error,
                    KERNEL_ARGUMENT,
                )
            else:
                self.log.warning("AAEP agent: %s", error)
            return
        if changed:
            self.log.info(
                "AAEP agent: new kernels of this environment %s %%aaep by themselves (%s).",
                "load" if self.kernel_autoload else "no longer load",
                autoload.config_path(),
            )

    def _route_module_logs(self) -> None:
        """Messages of the ``jupyter_aaep.*`` loggers (why a reply was ignored, a stream that fell
        behind) go to Jupyter's console with its format and level; without this, Python shows
        only their warnings, unformatted, and their info lines nowhere."""
        package = logging.getLogger("jupyter_aaep")
        self._routed = [h for h in self.log.handlers if h not in package.handlers]
        for handler in self._routed:
            package.addHandler(handler)
        self._package_level = package.level
        if package.level == logging.NOTSET:
            package.setLevel(logging.INFO)

    def _unroute_module_logs(self) -> None:
        package = logging.getLogger("jupyter_aaep")
        for handler in getattr(self, "_routed", []):
            package.removeHandler(handler)
        package.setLevel(getattr(self, "_package_level", logging.NOTSET))

    def _log_configuration(self) -> None:
        log = self.log
        log.info(
            "AAEP agent: model %s, at most %d tokens per turn and %d turns per request.",
            self.model,
            self.max_tokens,
            self.max_turns,
        )
        credentials = self.clients.credentials
        if credentials.configured():
            log.info("AAEP agent: an Anthropic API key is set in the environment.")
        else:
            log.warning(
                "AAEP agent: no ANTHROPIC_API_KEY is set; requests will end with an error until "
                "it is exported before starting Jupyter (or run scripts/start --offline from a clone of "
                "jupyter-aaep to try the offline demo model)."
            )
        if credentials.withhold:
            log.info(
                "AAEP agent: kernels and other processes this server starts do not inherit the "
                "model credentials (kernels_inherit_model_credentials is false)."
            )
            if "ANTHROPIC_IDENTITY_TOKEN" in credentials.values() and not credentials.configured():
                # The SDK reads this one again at every token exchange, after it left os.environ.
                log.warning(
                    "AAEP agent: ANTHROPIC_IDENTITY_TOKEN is kept from kernels, and the Anthropic SDK "
                    "reads it at each token exchange, so workload identity will fail. Point "
                    "ANTHROPIC_IDENTITY_TOKEN_FILE at a file holding the token instead."
                )
        base = urlsplit(credentials.values().get("ANTHROPIC_BASE_URL") or "")
        if base.hostname:
            port = f":{base.port}" if base.port else ""
            log.info(
                "AAEP agent: model requests go to %s://%s%s (ANTHROPIC_BASE_URL).",
                base.scheme,
                base.hostname,
                port,
            )
        log.info(
            "AAEP agent: the chat store, tools and tool servers start when the agent is first used."
        )
