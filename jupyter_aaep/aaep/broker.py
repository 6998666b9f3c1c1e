"""Confirmation and clarification replies: who may answer, until when, and what counts.

The broker owns outstanding reply tokens. A request is opened right after its
``awaiting.*`` event is emitted and resolved exactly once: by the first valid reply, by its
timeout (counted from the event's timestamp, applying the default), or by cancellation when
the session ends. While its session is paused a request's clock is frozen: the deadline moves
on by the time spent paused, so a paused session keeps its question open. Invalid replies
are ignored without telling the sender why (§6.3.4); the caller always answers the sender with 2xx.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from .clock import parse_timestamp, utc_now_ms
from .events import Choice, ResponseKind
from .ids import is_valid_id

log = logging.getLogger(__name__)

Resolution = Literal["reply", "timeout", "cancelled", "unsubscribed"]
OriginKind = Literal["panel", "notebook", "client", "program", "policy"]


@dataclass(frozen=True)
class ReplyOrigin:
    """Where a reply came from, as the transport that received it knows it (never what the
    reply says of itself): ``"panel"`` the person's panel, ``"notebook"`` the notebook's own
    view, ``"client"`` a subscriber that named itself in its handshake (*name*), ``"program"``
    any other client holding the person's login, ``"policy"`` a setting the person chose."""

    kind: OriginKind
    name: str | None = None
    """The client's own name, from its handshake (``"client"`` only)."""

    @property
    def decided_by(self) -> str:
        """The ``decided_by`` the server records: its own knowledge, not the reply's claim."""
        if self.kind == "client":
            return f"client:{self.name}"[:256]
        return _DECIDED_BY[self.kind]

    @property
    def is_person(self) -> bool:
        """Whether the reply came through the person's own view (the panel or the notebook)."""
        return self.kind in ("panel", "notebook")


_DECIDED_BY: dict[str, str] = {
    "panel": "user:panel",
    "notebook": "user:notebook",
    "program": "program:jupyter-login",
    "policy": "auto:configured_policy",
}

_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?(Z|[+-]\d{2}:\d{2})$"
)
_CONFIRMATION_FIELDS = {
    "type",
    "reply_token",
    "decision",
    "subscription_id",
    "timestamp",
    "decided_by",
    "decision_rationale",
    "modified_action",
    "correlation_id",
}
_CLARIFICATION_FIELDS = {
    "type",
    "reply_token",
    "response",
    "subscription_id",
    "timestamp",
    "decided_by",
    "confidence",
    "correlation_id",
}


@dataclass(frozen=True)
class Outcome:
    """How a pending request ended."""

    value: Any
    """``"accept"``/``"reject"`` for confirmations; the response (or ``None``) for clarifications."""
    resolution: Resolution
    decided_by: str | None = None
    subscription_id: str | None = None
    origin: ReplyOrigin | None = None
    """Where a reply came from, as the transport that received it knows (see :class:`ReplyOrigin`)."""
    rationale: str | None = None
    """A confirmation reply's ``decision_rationale`` (what the person wrote with it)."""
    modified: Mapping[str, Any] | None = None
    """A confirmation reply's ``modified_action``, when its request said which keys it takes."""

    @property
    def accepted(self) -> bool:
        return bool(self.value == "accept")


@dataclass
class PendingRequest:
    token: str
    session_id: str
    kind: Literal["confirmation", "clarification"]
    deadline: datetime
    default: Any
    allowed_replies: tuple[str, ...] = ("accept", "reject")
    response_kinds: tuple[ResponseKind, ...] = ("freetext",)
    choices: tuple[Choice, ...] = ()
    allowed_subscriptions: frozenset[str] | None = None
    """Subscriptions entitled to answer; ``None`` lets any authenticated sender answer."""
    modifications: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The ``modified_action`` keys this confirmation takes, each with its allowed values
    (a plan's "ask before each step"); empty: a reply with a modified action is ignored."""
    future: asyncio.Future[Outcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    paused_at_ms: int | None = None
    """When the session was paused (the clock of this request is frozen since then)."""
    rearm: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the deadline changes, so a waiter recomputes its timeout."""

    @property
    def resolved(self) -> bool:
        return self.future.done()


Entitlement = Callable[
    [Mapping[str, Any], Literal["confirmation", "clarification"]], "frozenset[str] | None"
]


class ReplyBroker:
    """Matches replies to outstanding requests; single-use tokens bound to their session.

    Parameters
    ----------
    entitled
        Called when a request opens without explicit ``allowed_subscriptions``: which
        subscriptions can answer it (``None``: anyone). An empty set means nobody is there to
        answer, so the default applies at once (§5.8.2).
    check_sender
        Whether a reply must come from an entitled subscription. Off, the entitled set only
        decides when the last subscriber able to answer has gone (its default then applies).
    """

    def __init__(self, *, entitled: Entitlement | None = None, check_sender: bool = True) -> None:
        self._pending: dict[str, PendingRequest] = {}
        self._paused: dict[str, int] = {}
        """Paused sessions and when they were paused (ms since the epoch)."""
        self._used: set[str] = set()
        self._entitled = entitled
        self._check_sender = check_sender

    @property
    def checks_sender(self) -> bool:
        """Whether a reply counts only from a subscription entitled to answer (§10.2)."""
        return self._check_sender

    # -- opening -------------------------------------------------------------------------
    def open_confirmation(
        self,
        event: Mapping[str, Any],
        *,
        allowed_subscriptions: frozenset[str] | None = None,
        modifications: Mapping[str, frozenset[str]] | None = None,
    ) -> PendingRequest:
        """Register the request described by an emitted ``awaiting.confirmation`` event;
        *modifications* names the ``modified_action`` keys and values it takes (none by default)."""
        return self._open(
            event,
            kind="confirmation",
            default=event["default_decision"],
            allowed_replies=tuple(event.get("allowed_replies") or ("accept", "reject")),
            allowed_subscriptions=allowed_subscriptions,
            modifications=dict(modifications or {}),
        )

    def open_clarification(
        self,
        event: Mapping[str, Any],
        *,
        allowed_subscriptions: frozenset[str] | None = None,
    ) -> PendingRequest:
        """Register the request described by an emitted ``awaiting.clarification`` event."""
        choices = tuple(Choice(c["value"], c["label"]) for c in event.get("choices") or ())
        return self._open(
            event,
            kind="clarification",
            default=event.get("default_response"),
            response_kinds=tuple(event.get("accepted_response_kinds") or ("freetext",)),
            choices=choices,
            allowed_subscriptions=allowed_subscriptions,
        )

    def _open(self, event: Mapping[str, Any], **kwargs: Any) -> PendingRequest:
        token = event["reply_token"]
        if token in self._pending or token in self._used:
            raise ValueError(f"reply token {token} is already in use")
        deadline = parse_timestamp(event["timestamp"]) + timedelta(seconds=event["timeout_seconds"])
        if kwargs.get("allowed_subscriptions") is None and self._entitled is not None:
            kwargs["allowed_subscriptions"] = self._entitled(event, kwargs["kind"])
        request = PendingRequest(
            token=token, session_id=event["session_id"], deadline=deadline, **kwargs
        )
        self._pending[token] = request
        if request.session_id in self._paused:
            request.paused_at_ms = self._paused[request.session_id]
        if request.allowed_subscriptions is not None and not request.allowed_subscriptions:
            self._resolve(
                request, Outcome(request.default, "unsubscribed", decided_by="auto:no_subscriber")
            )
        return request

    # -- waiting -------------------------------------------------------------------------
    async def wait(self, request: PendingRequest) -> Outcome:
        """Wait for a reply or the deadline; on timeout the request's default applies.

        No timeout runs while the session is paused; a resume re-arms the wait with the
        moved deadline (an event, not a polling loop)."""
        try:
            while not request.future.done():
                request.rearm.clear()
                timeout = None
                if request.paused_at_ms is None:
                    timeout = max(0.0, (request.deadline.timestamp() * 1000 - utc_now_ms()) / 1000)
                rearmed: asyncio.Future[Any] = asyncio.ensure_future(request.rearm.wait())
                waiters: set[asyncio.Future[Any]] = {request.future, rearmed}
                try:
                    done, _ = await asyncio.wait(
                        waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    rearmed.cancel()
                if not done:
                    self._resolve(
                        request, Outcome(request.default, "timeout", decided_by="auto:timeout")
                    )
            return request.future.result()
        except asyncio.CancelledError:
            self._resolve(
                request, Outcome(request.default, "cancelled", decided_by="system:cancelled")
            )
            raise

    def pause_session(self, session_id: str) -> None:
        """Freeze the clocks of the session's requests (and of any it opens while paused)."""
        now = utc_now_ms()
        self._paused.setdefault(session_id, now)
        for request in self.pending(session_id):
            if request.paused_at_ms is None:
                request.paused_at_ms = now
                request.rearm.set()

    def resume_session(self, session_id: str) -> None:
        """Restart the clocks: each deadline moves on by the time its request spent paused."""
        self._paused.pop(session_id, None)
        now = utc_now_ms()
        for request in self.pending(session_id):
            if request.paused_at_ms is not None:
                request.deadline += timedelta(milliseconds=max(0, now - request.paused_at_ms))
                request.paused_at_ms = None
                request.rearm.set()

    # -- replies ---------------------------------------------------------------------------
    def submit(
        self,
        reply: Mapping[str, Any],
        *,
        session_id: str | None = None,
        origin: ReplyOrigin | None = None,
    ) -> bool:
        """Offer a reply; ``True`` when it resolved a request. Never raises on bad input.

        ``session_id`` narrows the search to one session (a chat endpoint knows which session
        its sender can see); tokens of other sessions are then ignored.
        """
        try:
            request = self._check(reply, session_id)
        except _Ignored as why:
            # Seen by whoever debugs a subscriber; the token is shortened (it is a credential).
            token = reply.get("reply_token") if isinstance(reply, Mapping) else None
            log.warning("AAEP reply ignored (reply_token %s): %s", short_token(token), why)
            return False
        value = reply["decision"] if request.kind == "confirmation" else reply["response"]
        self._resolve(
            request,
            Outcome(
                value,
                "reply",
                # what the server knows of the sender; the reply's own decided_by is only a claim
                decided_by=origin.decided_by if origin is not None else reply.get("decided_by"),
                subscription_id=reply.get("subscription_id"),
                origin=origin,
                rationale=reply.get("decision_rationale"),
                modified=reply.get("modified_action"),
            ),
        )
        return True

    def _check(self, reply: Mapping[str, Any], session_id: str | None) -> PendingRequest:
        if not isinstance(reply, Mapping):
            raise _Ignored("not an object")
        kind = {"confirmation.reply": "confirmation", "clarification.reply": "clarification"}.get(
            str(reply.get("type"))
        )
        if kind is None:
            raise _Ignored("unknown reply type")
        fields = _CONFIRMATION_FIELDS if kind == "confirmation" else _CLARIFICATION_FIELDS
        if set(reply) - fields:
            raise _Ignored(f"unexpected fields {sorted(set(reply) - fields)}")
        token = reply.get("reply_token")
        if not is_valid_id("rpl", token):
            raise _Ignored("reply_token is missing or malformed")
        if "subscription_id" not in reply:
            raise _Ignored(
                "no subscription_id (required by AAEP §5; on a chat's own endpoint a reply "
                "without one is attributed to that chat's subscriber)"
            )
        if not is_valid_id("sub", reply.get("subscription_id")):
            raise _Ignored(
                "subscription_id is malformed (it must look like sub_ followed by letters and digits)"
            )
        stamp = reply.get("timestamp")
        if not isinstance(stamp, str) or not _TIMESTAMP.match(stamp):
            raise _Ignored("malformed timestamp")
        request = self._pending.get(str(token))
        if request is None or request.resolved:
            raise _Ignored("token not outstanding")
        if request.kind != kind:
            raise _Ignored("reply type does not match the request")
        if session_id is not None and request.session_id != session_id:
            raise _Ignored("token belongs to another session")
        if request.paused_at_ms is None and parse_timestamp(stamp) >= request.deadline:
            raise _Ignored("reply decided after the deadline")
        if (
            self._check_sender
            and request.allowed_subscriptions is not None
            and reply["subscription_id"] not in request.allowed_subscriptions
        ):
            raise _Ignored("subscription not entitled to answer")
        if kind == "confirmation":
            if reply.get("decision") not in request.allowed_replies:
                raise _Ignored("decision not allowed")
            modified = reply.get("modified_action")
            if modified is not None and not _modification_fits(modified, request):
                raise _Ignored("modified actions are not supported")
        elif not _response_fits(reply.get("response"), request):
            raise _Ignored("response does not match the accepted kinds")
        return request

    # -- ending ----------------------------------------------------------------------------
    def _resolve(self, request: PendingRequest, outcome: Outcome) -> None:
        if not request.future.done():
            request.future.set_result(outcome)
        self._pending.pop(request.token, None)
        self._used.add(request.token)

    def resolve(self, request: PendingRequest, value: Any, *, decided_by: str) -> None:
        """Answer on the user's behalf (a policy the user configured, such as auto-approve)."""
        self._resolve(
            request, Outcome(value, "reply", decided_by=decided_by, origin=ReplyOrigin("policy"))
        )

    def cancel(self, request: PendingRequest) -> None:
        """Withdraw one request (its token is dead afterwards)."""
        self._resolve(request, Outcome(request.default, "cancelled", decided_by="system:cancelled"))

    def cancel_session(self, session_id: str) -> int:
        """Resolve every request of a finished session as cancelled; returns how many."""
        self._paused.pop(session_id, None)
        requests = [r for r in self._pending.values() if r.session_id == session_id]
        for request in requests:
            self.cancel(request)
        return len(requests)

    def entitle(
        self, session_id: str, subscription_id: str, kind: Literal["confirmation", "clarification"]
    ) -> int:
        """Let a newly arrived subscription answer the session's open requests of *kind*."""
        count = 0
        for request in self._pending.values():
            if (
                request.session_id == session_id
                and request.kind == kind
                and request.allowed_subscriptions is not None
            ):
                request.allowed_subscriptions = request.allowed_subscriptions | {subscription_id}
                count += 1
        return count

    def apply_defaults_for_subscription(self, subscription_id: str) -> int:
        """A subscription closed: it can no longer answer, and requests nobody else can answer
        take their default now (§5.8.2)."""
        hits = []
        for request in list(self._pending.values()):
            allowed = request.allowed_subscriptions
            if allowed is None or subscription_id not in allowed:
                continue
            request.allowed_subscriptions = allowed - {subscription_id}
            if not request.allowed_subscriptions:
                hits.append(request)
        for request in hits:
            self._resolve(
                request,
                Outcome(request.default, "unsubscribed", decided_by="auto:subscription_closed"),
            )
        return len(hits)

    def pending(self, session_id: str | None = None) -> list[PendingRequest]:
        return [
            r for r in self._pending.values() if session_id is None or r.session_id == session_id
        ]


def short_token(token: Any) -> str:
    """A reply token fit for a log line: its first characters only, never the whole secret."""
    if not isinstance(token, str) or not token:
        return "(none)"
    return token[: min(8, len(token) // 2)] + "…"


class _Ignored(Exception):
    """Why a reply was ignored; logged, never sent back."""


def _modification_fits(modified: Any, request: PendingRequest) -> bool:
    """A ``modified_action`` counts only as the request declared: known keys, listed values."""
    allowed = request.modifications
    return (
        isinstance(modified, Mapping)
        and bool(modified)
        and all(
            key in allowed and isinstance(modified[key], str) and modified[key] in allowed[key]
            for key in modified
        )
    )


def _response_fits(response: Any, request: PendingRequest) -> bool:
    kinds = request.response_kinds
    if isinstance(response, bool):
        return "yes_no" in kinds
    if isinstance(response, (int, float)):
        return "numeric" in kinds
    if isinstance(response, str):
        if not response.strip() or len(response) > 16384:
            return False
        if "freetext" in kinds:
            return True
        if "multiple_choice" in kinds:
            return any(choice.value == response for choice in request.choices)
    return False
