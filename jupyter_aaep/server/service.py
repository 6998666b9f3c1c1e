"""The one object the handlers call: chats, streams and every client message.

Handlers stay thin (parse, one call here, JSON out); the rules of the HTTP contract live
here, next to each other, so they read as one document:

- our own kinds are answered as :mod:`.message_kinds` says;
- replies → always 204, even when ignored: a sender is never told why (§6.3.4), but the
  server log says why (with the reply token shortened). On a chat's own endpoint a reply
  without ``subscription_id`` (aaep-listen sends such replies) is attributed to that chat's
  subscriber: the sender is authenticated by Jupyter and the token is single-use, unguessable
  and was only sent to that chat's streams;
- a reply marked ``"via": "notebook"`` (the ``%aaep`` view's buttons, drawn by the panel's
  labextension) is heard as approved from the notebook (:mod:`.notebook_approval`);
- ``subscription.request`` → 201 + ``Location`` with ``subscription.accepted``, or 200 with
  ``subscription.rejected`` (400 if the request itself was malformed); the answer also goes
  out on the stream(s) it applies to;
- ``subscription.renegotiate`` → 200 with the answer (404 for an unknown subscription);
  ``subscription.close`` → 204;
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..aaep.broker import PendingRequest, short_token
from ..aaep.emitter import Event
from ..aaep.handshake import Rejected
from ..aaep.ids import is_valid_id
from ..acp.agents import BUILT_IN
from ..chats.chat import Chat
from ..chats.chat_json import ServerFacts, chat_json
from ..chats.runner import ChatRunner
from ..errors import RequestError
from .message_kinds import KINDS, agent_of, classify, handle_kind, spec_of
from .messages import REPLY_TYPES, Response, only_fields
from .models import ModelCatalog
from .notebook_approval import AWAITING_KINDS, describe_request
from .permissions import Permissions, take_grant_field
from .policy import AdminPolicy
from .reply_origin import refused_own_answer, take_sender_fields
from .streams import Stream, StreamHub, Transport
from .toolbox import Toolbox
from .validation import SPECS, check_last_event_id, check_subscription_id, validate

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..acp.host import AcpHost

log = logging.getLogger(__name__)

DEFAULT_PAGE = 20
MAX_PAGE = 200


AUTO_FROM_THE_START = (
    "This chat started in auto mode: steps are approved by themselves, except code the risk scan "
    "flags. Choose another mode in the panel to be asked."
)
"""Said at a chat's first request when it was created in auto mode (by the panel's default or
by any program with the login: creating a chat carries no stream key to tell them apart)."""


class AAEPService:
    """Parameters
    ----------
    runner
        Chats and their sessions.
    hub
        Streams and subscriptions.
    url_for
        Turns a path under ``aaep/v1/`` into a URL path under the server's ``base_url``.
    """

    def __init__(
        self,
        runner: ChatRunner,
        hub: StreamHub,
        *,
        url_for: Callable[[str], str],
        models: ModelCatalog | None = None,
        policy: AdminPolicy | None = None,
        toolbox: Toolbox | None = None,
        acp: AcpHost | None = None,
    ) -> None:
        self.runner = runner
        self.toolbox = toolbox or Toolbox(log=log)
        """The tools and the collaborators the server's own endpoints use (kernel tools, MCP)."""
        self.policy = policy or AdminPolicy()
        self.hub = hub
        self.url_for = url_for
        self.models = models or ModelCatalog(runner.client_factory, default=runner.config.model)
        self.acp: AcpHost | None = acp
        """The chats' ACP agents (``None``: only our own agent is offered)."""
        self.permissions: Permissions | None = None
        """The person's standing permissions (:mod:`.permissions`); ``None`` until the parts set it."""

    # -- chats ------------------------------------------------------------------------------------
    def create_chat(self, body: dict[str, Any]) -> Response:
        validate(body, SPECS["new chat"])
        path = body.get("notebook_path")
        if path is not None and (not isinstance(path, str) or not path.strip()):
            raise RequestError(
                400,
                "notebook_path must be the notebook's path relative to the server root, "
                'e.g. "analysis.ipynb".',
            )
        chat = self.runner.create_chat(path, approval_mode=body.get("approval_mode"))
        if chat.approval.mode == "auto":
            # Whoever asked for it (a program holding the login can), the person hears it once.
            chat.notices.append(AUTO_FROM_THE_START)
        self.hub.attach_chat(chat)
        return Response(
            201,
            chat_json(chat, self._server_facts()),
            {"Location": self.url_for(f"chats/{chat.chat_id}")},
        )

    def list_chats(
        self,
        notebook_path: str | None,
        *,
        limit: str | int | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """One page of chats, newest first; ``next`` is the ``before`` cursor of the next page."""
        try:
            size = int(limit) if limit not in (None, "") else DEFAULT_PAGE
        except (TypeError, ValueError):
            size = 0
        if not 1 <= size <= MAX_PAGE:
            raise RequestError(
                400, f"limit must be a whole number from 1 to {MAX_PAGE}, e.g. ?limit=20."
            )
        chats, cursor = self.runner.page(notebook_path, limit=size, before=before or None)
        server = self._server_facts()
        return {
            "chats": [chat_json(c, server) for c in chats],
            "next": cursor,
        }

    def chat_view(self, chat_id: str) -> dict[str, Any]:
        """Status, the AAEP events so far, the requests still waiting for an answer, and the
        chat's token usage with its estimated cost (``usage``; ``budget_usd`` is null without a budget)."""
        chat = self.runner.get(chat_id)
        transcript = [event for event in chat.emitter.history if "@context" in event]
        return {
            **chat_json(chat, self._server_facts()),
            "transcript": transcript,
            "pending_requests": self.open_requests(chat),
            "usage": self._usage(chat),
            "guidance": [item.to_json() for item in chat.guidance],
        }

    def chat_usage(self, chat_id: str) -> dict[str, Any]:
        """What a session's end changes, for the panel's meter, Continue and Undo: the usage, and
        the chat's ``can_continue``, ``undoable_sessions`` and ``title`` (no transcript)."""
        chat = self.runner.get(chat_id)
        described = chat_json(chat)
        return {
            "chat_id": chat.chat_id,
            "usage": self._usage(chat),
            **{key: described[key] for key in ("can_continue", "undoable_sessions", "title")},
        }

    def _usage(self, chat: Chat) -> dict[str, Any]:
        """The chat's token usage with its estimated cost (``budget_usd`` null without a budget)."""
        return {**chat.usage_report(), "budget_usd": self.runner.config.budget_usd}

    def open_requests(self, chat: Chat) -> list[Event]:
        """The chat's questions and approval requests still waiting for an answer (the chat
        view's ``pending_requests``, the kernel's status), oldest first."""
        open_tokens = self._open_tokens()
        return [
            e
            for e in chat.emitter.history
            if e.get("type") in AWAITING_KINDS and e.get("reply_token") in open_tokens
        ]

    def pending_request(self, chat_id: str, request_id: str) -> dict[str, Any]:
        """One request of the chat as the server describes it (the notebook view's buttons)."""
        chat = self.runner.get(chat_id)
        return describe_request(chat.emitter.history, request_id, open_tokens=self._open_tokens())

    def _open_tokens(self) -> set[str]:
        return {request.token for request in self.runner.broker.pending()}

    def session_steps(self, chat_id: str, session_id: str) -> dict[str, Any]:
        """One session's step records: status, text, tool, latency, error and token usage of each."""
        return {
            "chat_id": chat_id,
            "session_id": session_id,
            "steps": self.runner.steps(chat_id, session_id),
        }

    def _server_facts(self) -> ServerFacts:
        """What the server adds to every chat's JSON (:mod:`..chats.chat_json`)."""

        def mode_of_stored(stored_mode: str) -> str:
            mode = self.runner.policy_factory()  # the mode it loads with: auto is never remembered
            mode.restore(stored_mode)
            return mode.mode

        return ServerFacts(
            default_model=self.runner.config.model,
            label_of=self.models.label,
            policy=self.policy.describe(),
            saved=self.runner.storage_problem is None,
            url_for=self.url_for,
            agent_of=lambda chat_id: agent_of(self, chat_id),
            built_in=BUILT_IN,
            mode_of_stored=mode_of_stored,
        )

    # -- streams -------------------------------------------------------------------------------------
    def open_stream(
        self,
        chat_id: str | None,
        *,
        transport: Transport,
        subscription_id: str | None = None,
        last_event_id: str | None = None,
        client: str = "",
    ) -> Stream:
        """A new stream; a chat stream starts with a replay (see :meth:`_replay`).

        *client* (the user and their address) is whom the per-client stream limit counts.
        """
        chat = self.runner.get(chat_id) if chat_id is not None else None
        check_subscription_id(subscription_id)
        check_last_event_id(last_event_id)
        replay, note = self._replay(chat, last_event_id)
        try:
            stream = self.hub.open_stream(
                chat,
                transport=transport,
                subscription_id=subscription_id,
                replay=replay,
                client=client,
            )
        except LookupError as error:
            raise RequestError(404, str(error)) from error
        if note is not None:
            stream.subscription.send_control(note)
        return stream

    def _replay(
        self, chat: Chat | None, last_event_id: str | None
    ) -> tuple[list[Event], Event | None]:
        """What a new stream gets first.

        With ``Last-Event-ID``: everything after that event. Without one (or when that event
        is no longer kept): the running session from its start, so a subscriber that joins
        late, or comes back, sees the whole request, including any question still open.
        """
        if chat is None:
            note = None
            if last_event_id:
                note = {
                    "kind": "replay.unavailable",
                    "last_event_id": last_event_id,
                    "message": "Replay is available per chat: reconnect to /aaep/v1/chats/{chat_id}/events.",
                }
            return [], note
        history = chat.emitter.history
        note = None
        if last_event_id:
            index = next(
                (i for i, m in enumerate(history) if m.get("event_id") == last_event_id), None
            )
            if index is not None:
                return history[index + 1 :], None
            stored = self.runner.stored_events_after(chat.chat_id, last_event_id)
            if stored is not None:  # older than what memory keeps, but in the chat's stored log
                return stored, None
            note = {
                "kind": "replay.unavailable",
                "chat_id": chat.chat_id,
                "last_event_id": last_event_id,
                "status": chat.status,
                "message": f"Event {last_event_id} is no longer available. The chat is {chat.status}"
                + ("; the running session follows from its start." if chat.running else "."),
            }
        if chat.running and chat.session is not None:
            start = next(
                (i for i, m in enumerate(history) if m.get("session_id") == chat.session.id),
                len(history),
            )
            return history[start:], note
        return [], note

    # -- messages --------------------------------------------------------------------------------------
    async def handle(
        self, message: dict[str, Any], *, chat_id: str | None, origin: Stream | None = None
    ) -> Response:
        """Act on one client message (a POST body or a WebSocket frame); *origin* is the
        WebSocket's stream it came on (``None`` for a POST)."""
        kind = classify(message)
        key, via = take_sender_fields(message, reply=kind in REPLY_TYPES)  # who sent it
        wish = take_grant_field(message) if kind == "confirmation.reply" else None
        try:
            validate(message, spec_of(kind))
        except RequestError as error:
            if kind not in REPLY_TYPES:
                raise
            if chat_id is not None:
                self.runner.get(chat_id)  # a wrong URL is still a 404
            log.warning(
                "AAEP reply ignored: %s", error.message
            )  # §6.3.4: the sender gets 204 all the same
            return Response(204)
        if origin is not None:
            origin.touch()
        self.hub.touch_subscription(message.get("subscription_id"))
        if kind in KINDS:
            chat = self._need_chat(chat_id, kind)
            sender = self.hub.keys.sender(key, via, origin, chat_id=chat)
            return await handle_kind(self, kind, message, chat, sender)
        if kind in ("confirmation.reply", "clarification.reply"):
            return self._reply(message, chat_id, (key, via, origin), wish)
        if kind == "subscription.request":
            return self._subscribe(message, chat_id, origin)
        if kind == "subscription.renegotiate":
            return self._renegotiate(message)
        return self._close(message)

    def _need_chat(self, chat_id: str | None, kind: str) -> str:
        if chat_id is None:
            raise RequestError(
                400, f"Send {kind} to a chat: POST /aaep/v1/chats/{{chat_id}}/messages."
            )
        return chat_id

    def _reply(
        self,
        message: dict[str, Any],
        chat_id: str | None,
        sent_by: tuple[Any, Any, Stream | None],
        wish: Any = None,
    ) -> Response:
        """Offer the reply to the broker; the answer is 204 whatever happened to it (§6.3.4),
        also when it is refused as the outside agent's answer to its own request. A *wish* (the
        card's "don't ask again") is given only as :mod:`.permissions` allows."""
        if chat_id is not None:
            chat = self.runner.get(chat_id)  # an unknown chat is a wrong URL, not a reply to hide
            sender = self.hub.keys.sender(*sent_by, chat_id=chat_id)
            resolved = False
            if not refused_own_answer(message, chat, sender, self.runner.broker):
                attributed = self._attributed(message, chat)
                resolved = self.runner.reply(chat_id, attributed, origin=sender)
            if wish is not None and self.permissions is not None:
                self.permissions.from_reply(wish, message, chat, sender.is_person, resolved)
            return Response(204)
        token = message.get("reply_token")
        session = next(
            (r.session_id for r in self.runner.broker.pending() if r.token == token), None
        )
        found = next(
            (c for c in self.runner.chats() if c.session is not None and c.session.id == session),
            None,
        )
        if found is not None:
            sender = self.hub.keys.sender(*sent_by, chat_id=found.chat_id)
            resolved = False
            if not refused_own_answer(message, found, sender, self.runner.broker):
                resolved = self.runner.reply(found.chat_id, message, origin=sender)
            if wish is not None and self.permissions is not None:
                self.permissions.from_reply(wish, message, found, sender.is_person, resolved)
        else:
            log.warning(
                "AAEP reply ignored (reply_token %s): no open request has that token",
                short_token(token),
            )
        return Response(204)

    def _attributed(self, message: dict[str, Any], chat: Chat) -> dict[str, Any]:
        """A reply without ``subscription_id`` on this chat's endpoint, as sent by the chat's
        subscriber that can answer it; unchanged when there is none (the broker then ignores
        it and logs why). With ``require_reply_sender`` it must be the only such subscriber."""
        if "subscription_id" in message or chat.session is None:
            return message
        token = message.get("reply_token")
        request = next(
            (r for r in self.runner.broker.pending(chat.session.id) if r.token == token), None
        )
        if request is None:
            return message
        senders = self._possible_senders(request)
        strict = self.runner.broker.checks_sender
        if not senders or (strict and len(senders) > 1):
            why = (
                f"{len(senders)} subscriptions of this chat could have sent it and require_reply_sender is on"
                if senders
                else "no subscription of this chat can answer it now"
            )
            log.warning(
                "AAEP reply ignored (reply_token %s, chat %s): it has no subscription_id and %s. "
                "Send the subscription_id from subscription.accepted.",
                short_token(token),
                chat.chat_id,
                why,
            )
            return message
        log.info(
            "AAEP reply without subscription_id (reply_token %s) attributed to %s, the subscriber of chat %s",
            short_token(token),
            senders[0],
            chat.chat_id,
        )
        return {**message, "subscription_id": senders[0]}

    def _possible_senders(self, request: PendingRequest) -> list[str]:
        """Open subscriptions that received *request* and may answer it, sorted (a stable choice)."""
        live = self.hub.entitled({"session_id": request.session_id}, request.kind)
        allowed = request.allowed_subscriptions
        return sorted(live & allowed if allowed is not None else live)

    def _subscribe(
        self,
        message: dict[str, Any],
        chat_id: str | None,
        origin: Stream | None,
        *,
        in_band: bool = True,
    ) -> Response:
        if chat_id is not None:
            self.runner.get(chat_id)
        answer = self.hub.handshake(message, chat_id=chat_id, origin=origin, in_band=in_band)
        if isinstance(answer, Rejected):
            if answer.malformed:
                return Response(400, {"message": answer.reason_message, **answer.message})
            return Response(200, answer.message)
        events = f"chats/{chat_id}/events" if chat_id is not None else "events"
        location = self.url_for(events)
        if self.hub.is_waiting(answer.subscription_id):
            location += f"?subscription_id={answer.subscription_id}"
        return Response(201, answer.message, {"Location": location})

    def subscribe(self, message: dict[str, Any], chat_id: str | None) -> Response:
        """``POST /aaep/v1/subscriptions``: negotiate now, stream later (Appendix B)."""
        if classify(message) != "subscription.request":
            raise RequestError(400, "POST /aaep/v1/subscriptions takes a subscription.request.")
        return self._subscribe(message, chat_id, None, in_band=False)

    def _renegotiate(self, message: dict[str, Any]) -> Response:
        try:
            answer, _ = self.hub.renegotiate(message)
        except LookupError as error:
            raise RequestError(404, str(error)) from error
        if isinstance(answer, Rejected) and answer.malformed:
            return Response(400, {"message": answer.reason_message, **answer.message})
        return Response(200, answer.message)

    def _close(self, message: dict[str, Any]) -> Response:
        only_fields(
            message,
            {"type", "subscription_id", "reason_code", "reason_message"},
            what="subscription.close",
        )
        if not is_valid_id("sub", message.get("subscription_id")):
            raise RequestError(
                400,
                "subscription.close needs the subscription_id (sub_…) of the subscription to end.",
            )
        self.hub.end_subscription(message["subscription_id"])
        return Response(204)


__all__ = ["AAEPService", "RequestError", "Response"]
