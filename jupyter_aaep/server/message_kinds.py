"""Our own message kinds, one row each: its name, its spec and its handler.

A client message identified by ``kind`` (``user_input``, ``guidance``, ``control``, …) is
looked up in :data:`KINDS`: the row's :class:`~.validation.Spec` says which fields it may hold
(checked at the edge, :func:`~.validation.validate`) and its handler acts on it for one chat.
AAEP's own messages (replies, subscription messages) are identified by ``type`` and answered by
the service (:mod:`.service`); :func:`classify` tells the two apart. A new kind is one new row.

The answers, over HTTP: each kind is answered ``{"kind": "<kind>.accepted", …}``
(:func:`.messages.accepted`);

- ``user_input`` → 202 with the session id; a busy chat → 409;
- ``control`` ``stop`` → 202; ``pause``/``resume`` → 200 ``control.accepted``; ``continue`` →
  202 with the new session (409 when nothing can be continued); ``approval_mode`` → 200;
- ``guidance`` → 202 ``guidance.accepted`` (it steers the running session, or starts one when
  nothing runs); a ``user_input`` while the agent works (not waiting for a reply) is guidance.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..acp.agents import BUILT_IN
from ..agent.approval import APPROVAL_MODES, mode_choices
from ..errors import InvalidInput, RequestError
from .messages import (
    CONTROL_ACTIONS,
    EXAMPLE,
    REPLY_TYPES,
    SUBSCRIPTION_TYPES,
    Response,
    accepted,
    only_fields,
    text_field,
)
from .reply_origin import mode_changed
from .request_context import request_attachment, save_alt_text
from .validation import SPECS, Boolean, Integer, ListOf, Obj, Spec, Tagged, Text

if TYPE_CHECKING:
    from ..aaep.broker import ReplyOrigin
    from ..acp.host import AcpHost
    from ..chats.runner import ChatRunner
    from .models import ModelCatalog

_CELL_ID = Text(max_length=128, pattern=re.compile(r"[A-Za-z0-9_-]{1,128}"), example="a1b2c3d4")
_VARIABLE = Text(max_length=128, pattern=re.compile(r"[^\W\d]\w{0,127}"), example="df")
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}")
_SESSION_ID = re.compile(r"sess_[A-Za-z0-9]{1,64}")


class KindHost(Protocol):
    """What a kind's handler uses of the service."""

    runner: ChatRunner
    models: ModelCatalog
    acp: AcpHost | None


Handler = Callable[[KindHost, dict[str, Any], str, "ReplyOrigin"], Awaitable[Response]]
"""Acts on one message of its kind sent to a chat: (service, message, chat id, sender)."""


@dataclass(frozen=True)
class Kind:
    """One of our own message kinds: its shape and what handles it."""

    spec: Spec
    handle: Handler


def agent_of(host: KindHost, chat_id: str) -> str | None:
    """The ACP agent the chat chose, or ``None`` for our own."""
    if host.acp is None:
        return None
    name = host.acp.chosen(chat_id)
    return None if name == BUILT_IN else name


def classify(message: dict[str, Any]) -> str:
    """The message's ``kind`` or ``type``; ``RequestError`` when it is neither or unknown."""
    kind, message_type = message.get("kind"), message.get("type")
    if kind is not None and message_type is not None:
        raise RequestError(400, "A message has either a kind or a type, not both.")
    if kind is not None:
        if kind not in KINDS:
            raise RequestError(
                400, f"Unknown message kind {kind!r}; use one of: {', '.join(KINDS)}."
            )
        return str(kind)
    if message_type is not None:
        if message_type in REPLY_TYPES or message_type in SUBSCRIPTION_TYPES:
            return str(message_type)
        if "@context" in message:
            raise RequestError(
                400, "This endpoint belongs to the producer; it does not accept AAEP events."
            )
        known = ", ".join((*REPLY_TYPES, *SUBSCRIPTION_TYPES))
        raise RequestError(400, f"Unknown message type {message_type!r}; use one of: {known}.")
    raise RequestError(
        400,
        f"Say what the message is with kind ({', '.join(KINDS)}) or type "
        f"({', '.join((*REPLY_TYPES, *SUBSCRIPTION_TYPES))}), e.g. {EXAMPLE}.",
    )


def spec_of(kind: str) -> Spec:
    """The spec of a classified message: its row's, or the AAEP message's."""
    return KINDS[kind].spec if kind in KINDS else SPECS[kind]


async def handle_kind(
    host: KindHost, kind: str, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """Act on a message of one of our own kinds sent to a chat; the answer has the one shape,
    its ``kind`` saying which message it answers (``control.accepted``)."""
    response = await KINDS[kind].handle(host, message, chat_id, sender)
    body = {key: value for key, value in (response.body or {}).items() if key != "kind"}
    return Response(response.status, {"kind": accepted(kind), **body}, response.headers)


# -- the handlers ----------------------------------------------------------------------------------
async def _user_input(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    only_fields(message, {"kind", "text", "context", "describe_figure"}, what="user_input")
    text = text_field(message, "text", what="user_input")
    chat = host.runner.get(chat_id)
    attachment = await request_attachment(
        host.runner, chat, message
    )  # cells picked with @, a figure
    if chat.working:  # a message while the agent works steers it (not 409)
        item, _, session_id = host.runner.guide(
            chat_id, f"{text}\n\n{attachment}" if attachment else text
        )
        return Response(
            202,
            {
                "chat_id": chat_id,
                "session_id": session_id,
                "as_guidance": True,
                "guidance_id": item.guidance_id,
            },
        )
    session_id = host.runner.submit(chat_id, text, attachment=attachment)
    return Response(202, {"chat_id": chat_id, "session_id": session_id})


async def _model(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """Choose the chat's model for its next session, from the models on offer."""
    only_fields(message, {"kind", "model"}, what="model")
    try:
        choice = await host.models.check(message["model"])
    except ValueError as error:
        raise RequestError(400, f"{error}. Pick one from GET /aaep/v1/models.") from error
    host.runner.set_model(chat_id, choice.model_id, choice.label)
    return Response(
        200,
        {
            "chat_id": chat_id,
            "model": choice.model_id,
            "label": choice.label,
            "message": f"The next request uses {choice.label}.",
        },
    )


async def _agent(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """Choose the coding agent that answers the chat's next messages (ours or an ACP agent)."""
    only_fields(message, {"kind", "agent"}, what="agent")
    if host.acp is None:
        raise RequestError(409, "Other coding agents are turned off on this server.")
    try:
        sentence = await host.acp.choose(chat_id, message["agent"])
    except InvalidInput as error:
        raise RequestError(400, str(error)) from error
    return Response(200, {"chat_id": chat_id, "agent": message["agent"], "message": sentence})


async def _guidance(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """Steer the running session (or start one); a change of approval mode in its settings is
    said as any change."""
    before = host.runner.get(chat_id).approval.mode
    item, applies, session_id = host.runner.guide(
        chat_id,
        message["text"],
        resume=bool(message.get("resume", False)),
        settings=message.get("settings"),
    )
    answer = Response(
        202,
        {
            "kind": "guidance.accepted",
            "chat_id": chat_id,
            "session_id": session_id,
            "guidance_id": item.guidance_id,
            "applies": applies,
        },
    )
    if host.runner.get(chat_id).approval.mode != before:
        mode_changed(host.runner.get(chat_id), sender)
    return answer


async def _control(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    action = message.get("action")
    if action not in CONTROL_ACTIONS:
        raise RequestError(
            400,
            f'Unknown control action {action!r}; use {{"kind": "control", "action": "stop"}}.',
        )
    if action == "revert":
        only_fields(message, {"kind", "action", "session_id"}, what="control")
        report = await host.runner.revert(chat_id, message.get("session_id"))
        return Response(200, {**report, "action": "revert"})
    only_fields(message, {"kind", "action"}, what="control")
    if action == "pause" and agent_of(host, chat_id) is not None:
        return Response(
            200,
            {
                "kind": "control.accepted",
                "action": "pause",
                "paused": False,
                "message": f"{agent_of(host, chat_id)} cannot pause. Stop it instead: "
                "changes made so far are kept.",
            },
        )
    if action in ("pause", "resume"):
        paused = action == "pause"
        done = host.runner.pause(chat_id) if paused else host.runner.resume(chat_id)
        return Response(200, {"action": action, "paused" if paused else "resumed": done})
    if action == "continue":
        return Response(
            202,
            {
                "action": "continue",
                "chat_id": chat_id,
                "session_id": host.runner.continue_chat(chat_id),
            },
        )
    stopped = await host.runner.stop(chat_id)
    return Response(202, {"action": "stop", "chat_id": chat_id, "stopped": stopped})


async def _approval_mode(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """Change the chat's mode; a change by anything but the person's panel is announced."""
    only_fields(message, {"kind", "mode"}, what="approval_mode")
    chat = host.runner.get(chat_id)
    before = chat.approval.mode
    try:
        host.runner.set_approval_mode(chat_id, message.get("mode"))
    except InvalidInput as error:
        raise RequestError(
            400,
            f'{error}. Send {{"kind": "approval_mode", "mode": "ask"}}, "ask_all", "auto" or "plan".',
        ) from error
    if chat.approval.mode != before:
        mode_changed(chat, sender)
    return Response(200, {"chat_id": chat_id, "approval_mode": message["mode"]})


async def _figure_alt_text(
    host: KindHost, message: dict[str, Any], chat_id: str, sender: ReplyOrigin
) -> Response:
    """The person's own description of a figure, kept with the cell's output."""
    return Response(200, await save_alt_text(host.runner, host.runner.get(chat_id), message))


# -- the table -------------------------------------------------------------------------------------
KINDS: dict[str, Kind] = {
    "user_input": Kind(
        Spec(
            "user_input",
            Obj(
                {
                    "kind": Text(),
                    "text": Text(max_length=100_000, non_blank=True),
                    # What the user picked with @ in the composer (server/request_context.py resolves it).
                    "context": ListOf(
                        Tagged(
                            {
                                "cell": Obj(
                                    {"type": Text(), "cell_id": _CELL_ID}, required=("cell_id",)
                                ),
                                "file": Obj(
                                    {
                                        "type": Text(),
                                        "path": Text(max_length=1024, non_blank=True, no_nul=True),
                                    },
                                    required=("path",),
                                ),
                                "variable": Obj(
                                    {"type": Text(), "name": _VARIABLE}, required=("name",)
                                ),
                            }
                        ),
                        max_items=10,
                    ),
                    "describe_figure": Obj(
                        {"cell_id": _CELL_ID, "output_index": Integer()}, required=("cell_id",)
                    ),
                },
                required=("text",),
            ),
            '{"kind": "user_input", "text": "Plot column A", '
            '"context": [{"type": "cell", "cell_id": "a1b2"}, {"type": "variable", "name": "df"}]}',
        ),
        _user_input,
    ),
    "guidance": Kind(
        Spec(
            "guidance",
            Obj(
                {
                    "kind": Text(),
                    "text": Text(max_length=100_000, non_blank=True),
                    "resume": Boolean(),
                    "settings": Obj(
                        {
                            "approval_mode": Text(
                                max_length=64,
                                choices=APPROVAL_MODES,
                                choice_error="settings.approval_mode says {value}, but it must be one of: "
                                + mode_choices(),
                            ),
                            "max_turns": Integer(),
                        }
                    ),
                },
                required=("text",),
            ),
            '{"kind": "guidance", "text": "Use the cleaned table instead", "resume": false, '
            '"settings": {"approval_mode": "ask", "max_turns": 30}}',
        ),
        _guidance,
    ),
    "control": Kind(
        Spec(
            "control",
            Obj(
                {
                    "kind": Text(),
                    "action": Text(
                        max_length=64,
                        choices=CONTROL_ACTIONS,
                        choice_error="Unknown control action {value}; use one of: "
                        + ", ".join(CONTROL_ACTIONS),
                    ),
                    "session_id": Text(
                        max_length=128, pattern=_SESSION_ID, example="sess_4f8a2e7d9c1b6a3f"
                    ),
                },
                required=("action",),
            ),
            '{"kind": "control", "action": "stop"}',
        ),
        _control,
    ),
    "approval_mode": Kind(
        Spec(
            "approval_mode",
            Obj(
                {
                    "kind": Text(),
                    "mode": Text(
                        max_length=64,
                        choices=APPROVAL_MODES,
                        choice_error="approval_mode says {value}, but the approval mode must be one of: "
                        + mode_choices(),
                    ),
                },
                required=("mode",),
            ),
            '{"kind": "approval_mode", "mode": "ask"}',
        ),
        _approval_mode,
    ),
    "model": Kind(
        Spec(
            "model",
            Obj(
                {
                    "kind": Text(),
                    "model": Text(max_length=128, pattern=_MODEL_ID, example="claude-sonnet-4-5"),
                },
                required=("model",),
            ),
            '{"kind": "model", "model": "claude-sonnet-4-5"}',
        ),
        _model,
    ),
    "agent": Kind(
        Spec(
            "agent",
            Obj(
                {
                    "kind": Text(),
                    "agent": Text(
                        max_length=60, non_blank=True, no_nul=True, example="Claude Code"
                    ),
                },
                required=("agent",),
            ),
            '{"kind": "agent", "agent": "Claude Code"}',
        ),
        _agent,
    ),
    "figure_alt_text": Kind(
        Spec(
            "figure_alt_text",
            Obj(
                {
                    "kind": Text(),
                    "cell_id": _CELL_ID,
                    "output_index": Integer(),
                    "alt_text": Text(max_length=4000, non_blank=True, no_nul=True),
                },
                required=("cell_id", "alt_text"),
            ),
            '{"kind": "figure_alt_text", "cell_id": "a1b2", "alt_text": "A line chart of temperature by day…"}',
        ),
        _figure_alt_text,
    ),
}

__all__ = ["KINDS", "Kind", "KindHost", "agent_of", "classify", "handle_kind", "spec_of"]
