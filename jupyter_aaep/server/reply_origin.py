"""Who sent a reply or a change of mode: stream keys, and the name listeners hear.

Why this shape: every client holding the person's Jupyter login (the panel, ``aaep-listen``,
an outside agent's shell with ``curl``) looks the same to Jupyter, and a reply's own
``decided_by`` is only what its sender claims. What the server does know is the connection a
message came through. So each event stream that asks for one (``extensions.jupyter_aaep.
stream_key: true`` in its ``subscription.request``) receives a random *stream key* on that
stream only, right after its ``subscription.accepted``::

    {"kind": "stream.key", "subscription_id": "sub_…", "stream_key": "key_…"}

A message sent with ``"stream_key"`` (by POST, or as a WebSocket frame) speaks for that stream
while it is open (and for :data:`KEY_GRACE_SECONDS` after it closed, so a reply sent during a
reconnect keeps its name), and only on that stream's chat. A WebSocket frame speaks for its own
socket. The stream's handshake says who it is: the panel's ``subscriber_id`` makes it the
panel; any other handshake names the client (``subscriber_name``, else ``subscriber_id``);
without a handshake or a key the sender is "a program using your Jupyter login". The panel's
notebook view sends replies through the panel with ``"via": "notebook"``, which counts only
together with the panel's key.

This names honest clients truthfully; it is not a wall against a program that holds the
login and sets out to imitate the panel (it can open a stream and say it is the panel):
docs/security.md says what is and is not a boundary.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..aaep.broker import ReplyBroker, ReplyOrigin, short_token
from ..aaep.events import Progress, ProgressUpdated, Summary
from ..agent.approval import MODE_LABELS
from ..chats.chat import Chat

log = logging.getLogger(__name__)

PANEL_SUBSCRIBER_ID = "jupyter-aaep-panel"
"""The ``subscriber_id`` the panel's handshake declares (``labextension/src/handshake.ts``)."""
EXTENSION = "jupyter_aaep"
KEY_FIELD = "stream_key"
VIA_FIELD = "via"
KEY_GRACE_SECONDS = 30.0
PROGRAM = ReplyOrigin("program")
_KEY = re.compile(r"^key_[0-9a-f]{32}$")
_NAME_LIMIT = 60


@dataclass
class _Keyed:
    chat_id: str | None
    origin: ReplyOrigin
    closed_at: float | None = None


class StreamKeys:
    """The identity each stream declared, and the keys handed out to streams that asked."""

    def __init__(self) -> None:
        self._by_stream: dict[str, ReplyOrigin] = {}
        self._keys: dict[str, _Keyed] = {}
        self._key_of: dict[str, str] = {}

    def bound(self, stream: Any, request: Mapping[str, Any]) -> None:
        """*stream* (a :class:`~.streams.Stream`) was accepted on *request*: remember who it
        says it is and, when it asked, send it its key (a new one after each handshake)."""
        origin = declared(request)
        self._by_stream[stream.stream_id] = origin
        self._forget_key(stream.stream_id)
        if not _asks_for_key(request):
            return
        key = f"key_{secrets.token_hex(16)}"
        self._keys[key] = _Keyed(stream.chat_id, origin)
        self._key_of[stream.stream_id] = key
        stream.subscription.send_control(
            {"kind": "stream.key", "subscription_id": stream.subscription.id, KEY_FIELD: key}
        )

    def closed(self, stream: Any) -> None:
        """The connection is gone: its key keeps working a short while (a reconnect)."""
        self._by_stream.pop(stream.stream_id, None)
        key = self._key_of.pop(stream.stream_id, None)
        if key is not None and key in self._keys:
            self._keys[key].closed_at = time.monotonic()
        now = time.monotonic()
        for old in [
            k
            for k, v in self._keys.items()
            if v.closed_at is not None and now - v.closed_at > KEY_GRACE_SECONDS
        ]:
            del self._keys[old]

    def _forget_key(self, stream_id: str) -> None:
        key = self._key_of.pop(stream_id, None)
        if key is not None:
            self._keys.pop(key, None)

    def sender(self, key: Any, via: Any, stream: Any, *, chat_id: str | None) -> ReplyOrigin:
        """Who sent a message to *chat_id* carrying *key* and *via*, through *stream* (the
        WebSocket it came on; ``None`` for a POST)."""
        origin = self._by_key(key, chat_id)
        if origin is None and stream is not None:
            origin = self._by_stream.get(stream.stream_id)
        origin = origin or PROGRAM
        if via == "notebook" and origin.kind == "panel":
            return ReplyOrigin("notebook")
        return origin

    def person(self, key: Any) -> bool:
        """Whether *key* is the live key of the person's own panel, on any chat (what a grant
        made outside a reply must carry: :mod:`.permissions`)."""
        keyed = self._keys.get(key) if isinstance(key, str) and _KEY.match(key) else None
        return (
            keyed is not None
            and keyed.origin.is_person
            and (keyed.closed_at is None or time.monotonic() - keyed.closed_at <= KEY_GRACE_SECONDS)
        )

    def _by_key(self, key: Any, chat_id: str | None) -> ReplyOrigin | None:
        if not isinstance(key, str) or not _KEY.match(key):
            return None
        keyed = self._keys.get(key)
        if keyed is None or keyed.chat_id != chat_id:
            return None
        if keyed.closed_at is not None and time.monotonic() - keyed.closed_at > KEY_GRACE_SECONDS:
            return None
        return keyed.origin


def take_sender_fields(message: dict[str, Any], *, reply: bool) -> tuple[Any, Any]:
    """Remove and return the message's ``stream_key`` and, of a *reply*, its ``via`` (ours,
    not AAEP's: a reply's fields are a closed set)."""
    return message.pop(KEY_FIELD, None), message.pop(VIA_FIELD, None) if reply else None


def declared(request: Mapping[str, Any]) -> ReplyOrigin:
    """Who a ``subscription.request`` says its sender is."""
    if request.get("subscriber_id") == PANEL_SUBSCRIBER_ID:
        return ReplyOrigin("panel")
    for field in ("subscriber_name", "subscriber_id"):
        name = _clean(request.get(field))
        if name:
            return ReplyOrigin("client", name)
    return PROGRAM


def _clean(value: Any) -> str:
    """A declared name fit to be spoken: printable, one line, at most 60 characters."""
    if not isinstance(value, str):
        return ""
    text = " ".join("".join(c for c in value if c.isprintable()).split())
    return text[:_NAME_LIMIT]


def _asks_for_key(request: Mapping[str, Any]) -> bool:
    extensions = request.get("extensions")
    ours = extensions.get(EXTENSION) if isinstance(extensions, Mapping) else None
    return isinstance(ours, Mapping) and ours.get(KEY_FIELD) is True


def who(origin: ReplyOrigin) -> str:
    """The sender as the subject of a sentence ("A program using your Jupyter login")."""
    if origin.kind == "client":
        return str(origin.name)
    if origin.is_person:
        return "You"
    return "A program using your Jupyter login"


def same_client(name: str | None, agent: str) -> bool:
    """Whether a declared client name is the outside agent's ("claude-code" is "Claude Code")."""
    return name is not None and _squash(name) == _squash(agent)


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def own_answer_refused(chat: Chat, origin: ReplyOrigin) -> str | None:
    """The sentence to tell when *origin* may not answer the request of the outside agent at
    work in *chat*: the agent itself, or a program that may be it. ``None``: it may answer."""
    agent = chat.held_by if chat.running else None
    if agent is None or origin.is_person or origin.kind == "policy":
        return None
    if origin.kind == "client" and not same_client(origin.name, agent):
        return None
    if origin.kind == "client":
        return (
            f"{agent} tried to answer its own request; that answer was ignored. "
            "The step still waits for you."
        )
    return (
        f"A program using your Jupyter login tried to answer {agent}'s request; it was ignored, "
        f"since that program may be {agent} itself. The step still waits for your answer in the "
        "panel or the notebook."
    )


def refused_own_answer(
    message: Mapping[str, Any], chat: Chat, sender: ReplyOrigin, broker: ReplyBroker
) -> bool:
    """Whether the reply answers an outside agent's open request from that agent (or from a
    program that may be it): refused, and said in the chat (its sender still gets 204)."""
    session = chat.session
    refused = own_answer_refused(chat, sender)
    if refused is None or session is None:
        return False
    token = message.get("reply_token")
    if not any(r.token == token for r in broker.pending(session.id)):
        return False  # no open request of the agent's: the broker ignores it anyway
    log.warning(
        "AAEP reply ignored (reply_token %s, chat %s): %s",
        short_token(token),
        chat.chat_id,
        refused,
    )
    tell(chat, refused, "An answer was refused.")
    return True


def mode_changed(chat: Chat, sender: ReplyOrigin) -> None:
    """The chat's approval mode changed: said in the chat unless the person changed it."""
    if sender.is_person:
        return
    said = f"{who(sender)} switched this chat to {mode_words(chat.approval.mode)}."
    log.warning("AAEP chat %s: %s", chat.chat_id, said)
    if not tell(chat, said, "Approval mode changed by a program."):
        chat.notices.append(said)  # nothing runs now: told when the next request starts


def mode_words(mode: str) -> str:
    """A mode as the end of "switched this chat to …"."""
    return "auto mode" if mode == "auto" else f"'{MODE_LABELS.get(mode, mode)}'"  # type: ignore[call-overload]


def tell(chat: Chat, normal: str, terse: str) -> bool:
    """Say *normal* in the chat's running session, as a notice (``progress.updated``, heard at
    normal verbosity, as the store's notices are); ``False`` when no session runs."""
    session = chat.session
    if session is None or session.closed or not session.started:
        return False
    session.emit(
        ProgressUpdated(
            progress=Progress(description=normal[:4096]),
            urgency="normal",
            summary=Summary(normal=normal, terse=terse),
        )
    )
    return True


__all__ = [
    "PANEL_SUBSCRIBER_ID",
    "StreamKeys",
    "declared",
    "mode_changed",
    "mode_words",
    "own_answer_refused",
    "refused_own_answer",
    "take_sender_fields",
    "tell",
    "who",
]
