"""``AAEPExtension``: the Jupyter server extension that runs the agent and serves its AAEP events.

Enabled by ``pip install`` (``jupyter-config/server-config/jupyter_aaep.json``). Every option
is a traitlet (``c.AAEPExtension.model = ...``); the API key is left to the Anthropic SDK,
which reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``) from the environment.

Lifecycle: ``initialize_settings`` builds the chat runner, the stream hub and the tools;
``initialize_handlers`` mounts the HTTP contract under ``base_url``; the start hook exports
``AAEP_SERVER_URL`` and a per-server secret ``AAEP_KERNEL_SECRET`` for kernels started later;
``stop_extension`` stops running sessions and closes every stream.
"""

from __future__ import annotations

import os
import secrets
from typing import Any
from urllib.parse import urlsplit

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Dict, Enum, Float, Integer, List, TraitError, Unicode, default, validate

from .. import __version__
from ..aaep.broker import ReplyBroker
from ..aaep.session import Producer
from ..agent.approval import ApprovalPolicy
from ..agent.loop import DEFAULT_MODEL, AgentConfig
from ..agent.runner import ChatRunner
from .handlers import handler_routes
from .model_client import ClientFactory, credentials_configured
from .service import AAEPService
from .streams import StreamHub
from .toolbox import Toolbox

RISK_LEVELS = ("low", "medium", "high")
DEFAULT_TIMEOUTS = {"low": 90, "medium": 180, "high": 300}
EXPORTED = ("AAEP_SERVER_URL", "AAEP_KERNEL_SECRET")


class AAEPExtension(ExtensionApp):
    """An AI agent for the user's notebooks that announces every step as AAEP events."""

    name = "jupyter_aaep"
    description = __doc__

    model = Unicode(
        DEFAULT_MODEL,
        config=True,
        help="Anthropic model the agent uses, e.g. 'claude-sonnet-4-5'. Any model served by "
        "ANTHROPIC_BASE_URL works when that points at an Anthropic-compatible server.",
    )
    max_tokens = Integer(
        8192,
        config=True,
        help="Most tokens the model may write in one turn. When an answer reaches it, the user is "
        "told the answer was cut off and can ask to continue.",
    )
    max_turns = Integer(
        25,
        config=True,
        help="Most model turns (a turn ends at each round of tool calls) for one user request. "
        "Reaching it ends the session with an error that says so; the user can then say 'continue'.",
    )
    approval_mode = Enum(
        ["ask", "auto"],
        default_value="ask",
        config=True,
        help="Approval mode of new chats: 'ask' asks the user before every action that needs approval; "
        "'auto' approves them on the user's behalf (never code a risk scan flags). Users can switch a "
        "chat's mode at any time; 'auto' is never remembered across restarts.",
    )
    confirmation_timeouts = Dict(
        default_value=dict(DEFAULT_TIMEOUTS),
        config=True,
        help="Seconds a confirmation waits for the user, by risk level ('low', 'medium', 'high'), "
        "before its default decision applies (for risky or irreversible actions the default is to "
        "reject). Missing levels keep their defaults (90, 180 and 300 s). AAEP suggests 180-600 s for "
        "high risk, 60-180 s for medium and 30-90 s for low.",
    )
    clarification_timeout = Integer(
        300,
        config=True,
        help="Seconds a question from the agent waits for the user's answer before the agent goes on "
        "without it.",
    )
    db_path = Unicode(
        config=True,
        help="Where chats, message history and the event log will be stored (SQLite). Chats are kept "
        "in memory for now; this location is announced at start-up and used once persistence lands. "
        "Defaults to aaep/chats.sqlite3 in the Jupyter data directory.",
    )
    agent_name = Unicode(
        "Jupyter notebook agent",
        config=True,
        help="The agent's name in every AAEP event (producer.agent_name), as screen readers say it.",
    )
    extra_tools = List(
        Unicode(),
        config=True,
        help="Extra tools offered in every chat, as 'package.module:function' references to importable "
        "functions decorated with @jupyter_aaep.aaep_tool (a list or tuple of tools also works). A "
        "reference that fails to import is logged with the reason and skipped; the server keeps running.",
    )
    sse_keepalive_seconds = Float(
        10.0,
        config=True,
        help="Seconds of silence after which an SSE stream gets a ': keepalive' comment, so clients "
        "and proxies do not drop it as idle. Must be more than 0.",
    )
    reconnect_grace_seconds = Float(
        30.0,
        config=True,
        help="Seconds a pending confirmation or question waits for a subscriber to come back when "
        "the last one able to answer disconnects without closing (a reloaded page, a dropped "
        "network). After that its default applies (AAEP §5.8.2). An explicit subscription.close "
        "applies the default at once. 0 applies it at once on every disconnect.",
    )
    require_reply_sender = Bool(
        False,
        config=True,
        help="When true, a confirmation or clarification reply counts only if its subscription_id "
        "names a subscription that received the request and can answer it (AAEP §10.2). When false "
        "(the default) any reply authenticated by Jupyter counts, whatever subscription_id it carries; "
        "the AAEP conformance suite needs that, as it sends a random id with every reply. When true, "
        "subscribers must start with subscription.request to learn the id they reply with.",
    )

    @default("db_path")
    def _default_db_path(self) -> str:
        return os.path.join(jupyter_data_dir(), "aaep", "chats.sqlite3")

    @validate("max_tokens", "max_turns", "clarification_timeout")
    def _positive(self, proposal: Any) -> int:
        value = proposal["value"]
        if value < 1:
            raise TraitError(f"{proposal['trait'].name} must be at least 1, not {value}.")
        return int(value)

    @validate("sse_keepalive_seconds")
    def _keepalive(self, proposal: Any) -> float:
        if proposal["value"] <= 0:
            raise TraitError("sse_keepalive_seconds must be more than 0.")
        return float(proposal["value"])

    @validate("confirmation_timeouts")
    def _timeouts(self, proposal: Any) -> dict[str, int]:
        value = proposal["value"]
        unknown = set(value) - set(RISK_LEVELS)
        if unknown:
            raise TraitError(f"confirmation_timeouts keys must be low, medium or high; got {sorted(unknown)}.")
        for level, seconds in value.items():
            if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 86400:
                raise TraitError(f"confirmation_timeouts[{level!r}] must be whole seconds from 1 to 86400.")
        return {**DEFAULT_TIMEOUTS, **value}

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def server(self) -> ServerApp:
        """The linked ServerApp (always set once the extension is loaded)."""
        assert self.serverapp is not None
        return self.serverapp

    def initialize_settings(self) -> None:
        producer = Producer(agent_version=__version__, agent_name=self.agent_name, model=self.model)
        config = AgentConfig(model=self.model, max_tokens=self.max_tokens, max_turns=self.max_turns)
        self.clients = ClientFactory()
        self.toolbox = Toolbox(log=self.log)
        self.toolbox.load(self.server, self.extra_tools)
        self.hub = StreamHub(
            producer=producer,
            chat_lookup=lambda chat_id: self.runner.get(chat_id),
            reconnect_grace=self.reconnect_grace_seconds,
        )
        broker = ReplyBroker(entitled=self.hub.entitled, check_sender=self.require_reply_sender)
        self.runner = ChatRunner(
            client_factory=self.clients,
            registry_factory=self.toolbox.registry_for,
            config=config,
            producer=producer,
            services=self.toolbox.services,
            policy_factory=self._policy,
            broker=broker,
        )
        self.hub.broker = broker
        base_url = self.server.base_url
        self.service = AAEPService(self.runner, self.hub, url_for=lambda path: url_path_join(base_url, "aaep/v1", path))
        self._secret = secrets.token_urlsafe(32)
        self._previous_env = {name: os.environ.get(name) for name in EXPORTED}
        self._export_environment()
        self._log_configuration()

    def initialize_handlers(self) -> None:
        self.handlers.extend(handler_routes(self.service, keepalive=self.sse_keepalive_seconds))

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        self._export_environment()  # the port is final once the server listens

    async def stop_extension(self) -> None:
        await self.runner.shutdown()
        self.hub.shutdown()
        await self.clients.close()
        await self.toolbox.close()
        for name, value in self._previous_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    # -- helpers ---------------------------------------------------------------------------------------
    def _policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(
            mode="auto" if self.approval_mode == "auto" else "ask",
            timeouts=dict(self.confirmation_timeouts),
            clarification_timeout=self.clarification_timeout,
        )

    def _export_environment(self) -> None:
        """For the kernel magic: where this server is, and a secret only its kernels learn."""
        url = self.server.connection_url
        os.environ["AAEP_SERVER_URL"] = url
        os.environ["AAEP_KERNEL_SECRET"] = self._secret
        self.hub.manifest_uri = url_path_join(url, "aaep/v1/manifest")

    def _log_configuration(self) -> None:
        log = self.log
        log.info("AAEP agent: model %s, at most %d tokens per turn and %d turns per request.",
                 self.model, self.max_tokens, self.max_turns)
        if credentials_configured():
            log.info("AAEP agent: an Anthropic API key is set in the environment.")
        else:
            log.warning("AAEP agent: no ANTHROPIC_API_KEY is set; requests will end with an error until "
                        "it is exported before starting Jupyter.")
        base = urlsplit(os.environ.get("ANTHROPIC_BASE_URL") or "")
        if base.hostname:
            port = f":{base.port}" if base.port else ""
            log.info("AAEP agent: model requests go to %s://%s%s (ANTHROPIC_BASE_URL).", base.scheme, base.hostname, port)
        log.info("AAEP agent: chats are kept in memory for now; they will be stored in %s.", self.db_path)
        log.info("AAEP agent: %d tools available (%s); new chats start in approval mode '%s'.",
                 len(self.toolbox.tools), ", ".join(t.name for t in self.toolbox.tools), self.approval_mode)
