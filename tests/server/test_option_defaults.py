"""Each server option's default is the default of what it configures.

Every option of ``AAEPExtension`` is listed here either with the dataclass field or
constructor parameter it feeds, or as an option only the server has. A new option must be
placed in one of the two. The options state their defaults as literals, so that loading the
extension imports none of the classes they configure (issue 31); the tests below hold each
equal to the default of what it feeds, so a default changed in one place fails here until the
other says the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from jupyter_aaep.aaep.session import Producer
from jupyter_aaep.agent.approval import ApprovalPolicy
from jupyter_aaep.agent.context import ContextSettings
from jupyter_aaep.agent.loop import AgentConfig
from jupyter_aaep.mcp.outside_agents import OutsideAgents
from jupyter_aaep.notebook.progress_pacing import ProgressPacer
from jupyter_aaep.notebook.running import RunningCells
from jupyter_aaep.notebook.service import NotebookService
from jupyter_aaep.server.app import AAEPExtension
from jupyter_aaep.server.long_runs import LongRunNews
from jupyter_aaep.server.option_defaults import default_of
from jupyter_aaep.server.options import own_options
from jupyter_aaep.server.policy import AdminPolicy
from jupyter_aaep.server.server_options import ServerOptions
from jupyter_aaep.server.sse import EventStreamHandler
from jupyter_aaep.server.streams import SERVER_RECONNECT_GRACE, StreamHub
from jupyter_aaep.store.chat_store import ChatStore
from jupyter_aaep.store.retention import RetentionPolicy

#: option -> the defaults of what it feeds, in the option's own terms (0 where they say None).
FEEDS: dict[str, list[Callable[[], Any]]] = {
    "model": [lambda: AgentConfig().model],
    "max_tokens": [lambda: AgentConfig().max_tokens],
    "max_turns": [lambda: AgentConfig().max_turns],
    "chat_budget_usd": [lambda: AgentConfig().budget_usd or 0.0],
    "agent_name": [lambda: Producer().agent_name],
    "context_window": [lambda: ContextSettings().window or 0],
    "context_management": [lambda: ContextSettings().strategy],
    "model_images_per_request": [lambda: ContextSettings().max_images],
    "approval_mode": [lambda: ApprovalPolicy().mode],
    "confirmation_timeouts": [lambda: ApprovalPolicy().timeouts],
    "clarification_timeout": [lambda: ApprovalPolicy().clarification_timeout],
    "allowed_approval_modes": [lambda: list(ApprovalPolicy().allowed)],
    "allowed_permission_scopes": [lambda: list(AdminPolicy().permission_scopes)],
    "forbidden_permission_rules": [lambda: list(AdminPolicy().forbidden_permission_rules)],
    "store_keep_days": [lambda: RetentionPolicy.for_server().keep_days],
    "store_keep_mb_per_chat": [lambda: RetentionPolicy.for_server().keep_mb_per_chat],
    "store_lock_timeout": [lambda: default_of(ChatStore, "lock_timeout")],
    "store_retry_max_seconds": [lambda: default_of(ChatStore, "retry_max_seconds")],
    "store_queue_limit": [lambda: default_of(ChatStore, "queue_limit")],
    "sse_keepalive_seconds": [lambda: default_of(EventStreamHandler.initialize, "keepalive")],
    "reconnect_grace_seconds": [lambda: SERVER_RECONNECT_GRACE],
    "max_streams_per_client": [lambda: default_of(StreamHub, "max_streams_per_client")],
    "model_image_max_edge": [lambda: default_of(NotebookService, "image_max_edge")],
    "run_cell_wait_seconds": [lambda: default_of(NotebookService, "run_cell_wait_seconds")],
    "progress_announce_seconds": [
        lambda: RunningCells().announce_seconds,
        lambda: default_of(LongRunNews, "announce_seconds"),
        lambda: default_of(ProgressPacer, "announce_seconds"),
    ],
    "announce_person_runs_after_seconds": [lambda: default_of(LongRunNews, "person_runs_after")],
    "mcp_idle_seconds": [lambda: default_of(OutsideAgents, "idle_seconds")],
}

#: Options whose default is stated only on the option (what they feed has no default of its own).
SERVER_ONLY = {
    "db_path",  # computed at start-up: the Jupyter data directory
    "extra_tools",
    "models",
    "model_prices",
    "lock_models",
    "allowed_mcp_stdio_commands",
    "require_reply_sender",
    "conformance_input_ack",
    "kernels_inherit_model_credentials",
    "kernel_replies",
    "kernel_autoload",
    "explorable_figures",  # exported to kernels as AAEP_EXPLORABLE_FIGURES
    "mcp_server",
    "mcp_config_file",
    "mcp_call_timeout_seconds",
    "rules_files",
    "tune_memory_allocator",  # glibc's mallopt at load (server/allocator.py)
}


def test_every_option_is_placed_once() -> None:
    names = {name for name, _trait in own_options()}
    assert not set(FEEDS) & SERVER_ONLY
    assert names == set(FEEDS) | SERVER_ONLY, (
        f"unplaced: {sorted(names - set(FEEDS) - SERVER_ONLY)}; "
        f"not options: {sorted((set(FEEDS) | SERVER_ONLY) - names)}"
    )


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_an_options_default_is_the_default_of_what_it_feeds(name: str) -> None:
    option = AAEPExtension().trait_defaults(name)
    for fed in FEEDS[name]:
        assert option == fed(), name


def test_the_options_help_shows_the_default_it_reads() -> None:
    """What ``python -m jupyter_aaep.server.options`` prints is the default the class has."""
    traits = ServerOptions.class_traits(config=True)
    assert traits["max_turns"].default_value_repr() == repr(AgentConfig().max_turns)
    assert traits["store_keep_days"].default_value_repr() == repr(
        RetentionPolicy.for_server().keep_days
    )


@dataclass
class _Example:
    needed: str
    plain: int = 3
    made: list[int] = field(default_factory=lambda: [1])


def _function(a: int, b: float = 2.5) -> None:
    return None


def test_default_of_reads_fields_factories_and_parameters() -> None:
    assert default_of(_Example, "plain") == 3
    first, second = default_of(_Example, "made"), default_of(_Example, "made")
    assert first == [1] and first is not second  # a fresh value, never a shared one
    assert default_of(_function, "b") == 2.5
    assert default_of(StreamHub, "max_streams") == 1024  # a class: its constructor


def test_default_of_refuses_a_name_without_a_default() -> None:
    with pytest.raises(LookupError, match="has no field 'gone'"):
        default_of(_Example, "gone")
    with pytest.raises(LookupError, match="_Example.needed has no default"):
        default_of(_Example, "needed")
    with pytest.raises(LookupError, match="parameter 'a' has no default"):
        default_of(_function, "a")
    with pytest.raises(LookupError, match="has no parameter 'c'"):
        default_of(_function, "c")
