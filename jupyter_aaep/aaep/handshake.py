"""Answering ``subscription.request`` and ``subscription.renegotiate`` (AAEP §5.2–§5.7).

Every request gets exactly one answer: ``subscription.accepted`` with honoured capabilities
that are never more permissive than the request (rate ≤ requested, languages and boundaries
⊆ requested, filters exactly as strict), or ``subscription.rejected`` with the reason code the
spec names for the problem. Silence is never an answer, so even a malformed request is
answered (with a rejection). The structural checks mirror the official handshake schemas
without needing jsonschema at run time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from .capabilities import (
    BOUNDARY_LEVELS,
    CONFORMANCE_LEVELS,
    DEFAULT_BOUNDARIES,
    DEFAULT_INCLUDE,
    VERBOSITIES,
    EventFilter,
    Terms,
    language_servable,
    valid_language_tag,
    valid_pattern,
)
from .ids import is_valid_id, new_subscription_id
from .session import AAEP_VERSION, Producer

ReasonCode = Literal[
    "version_unsupported",
    "manifest_signature_required",
    "capabilities_incompatible",
    "rate_limit",
    "authentication_required",
    "authorization_denied",
    "transport_unavailable",
    "unknown",
]

SUPPORTED_MAJOR = 1
_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)(-[A-Za-z0-9.-]+)?$")
_REQUEST_FIELDS = {
    "type",
    "aaep_version",
    "subscriber_id",
    "subscriber_name",
    "subscriber_version",
    "subscriber_manifest_uri",
    "correlation_id",
    "capabilities",
    "extensions",
}
_KNOWN_CAPABILITIES = {
    "max_events_per_second",
    "preferred_verbosity",
    "languages",
    "supports_confirmation_reply",
    "supports_clarification_reply",
    "coalesce_boundaries",
    "event_filters",
    "supported_conformance_levels",
    "supported_extensions",
    "cognitive_load",
    "pace_wpm",
    "accept_signed_manifests_only",
}
_NOT_ADAPTED = ("cognitive_load", "pace_wpm")


@dataclass(frozen=True)
class Accepted:
    """A successful negotiation: the terms to enforce and the message announcing them."""

    subscription_id: str
    terms: Terms
    requested: dict[str, Any]
    """The capabilities asked for (renegotiation applies changes on top of these)."""
    message: dict[str, Any]

    @property
    def accepted(self) -> bool:
        return True


@dataclass(frozen=True)
class Rejected:
    reason_code: ReasonCode
    reason_message: str
    message: dict[str, Any]
    malformed: bool = False
    """The request itself was malformed (HTTP callers answer it with 400 as well)."""

    @property
    def accepted(self) -> bool:
        return False


Answer = Accepted | Rejected


class _Malformed(ValueError):
    def __init__(self, reason: ReasonCode, message: str) -> None:
        super().__init__(message)
        self.reason: ReasonCode = reason


def reject(reason_code: ReasonCode, reason_message: str, *, malformed: bool = False) -> Rejected:
    message = {
        "type": "subscription.rejected",
        "reason_code": reason_code,
        "reason_message": reason_message[:4096],
    }
    return Rejected(reason_code, reason_message, message, malformed)


def negotiate(
    request: Any,
    *,
    producer: Producer,
    subscription_id: str | None = None,
    manifest_uri: str | None = None,
) -> Answer:
    """Answer one ``subscription.request`` (§5.4–§5.5); never raises for bad input."""
    try:
        _check_request(request)
    except _Malformed as problem:
        return reject(problem.reason, str(problem), malformed=True)
    version = _VERSION.match(request["aaep_version"])
    if version is None or int(version.group(1)) != SUPPORTED_MAJOR:
        return reject(
            "version_unsupported",
            f"AAEP version {request['aaep_version']} is not supported; this producer speaks {AAEP_VERSION}. "
            f"Send the request again with aaep_version {AAEP_VERSION}.",
        )
    return _accept(
        dict(request["capabilities"]),
        producer=producer,
        subscription_id=subscription_id or new_subscription_id(),
        manifest_uri=manifest_uri,
    )


def renegotiate(
    message: Any,
    previous: Mapping[str, Any],
    *,
    producer: Producer,
    manifest_uri: str | None = None,
) -> Answer:
    """Answer ``subscription.renegotiate``: the changed capabilities on top of *previous* (§5.7).

    A rejection ends the subscription (the caller closes it).
    """
    if not isinstance(message, Mapping) or message.get("type") != "subscription.renegotiate":
        return reject("unknown", "Not a subscription.renegotiate message.", malformed=True)
    extra = set(message) - {"type", "subscription_id", "capabilities", "correlation_id"}
    if extra:
        return reject(
            "unknown",
            f"Unexpected fields in subscription.renegotiate: {', '.join(sorted(extra))}.",
            malformed=True,
        )
    if not is_valid_id("sub", message.get("subscription_id")):
        return reject(
            "unknown",
            "subscription_id must look like sub_ followed by letters and digits.",
            malformed=True,
        )
    changes = message.get("capabilities")
    if not isinstance(changes, Mapping):
        return reject(
            "capabilities_incompatible",
            "capabilities must be an object of changed capabilities.",
            malformed=True,
        )
    merged = {**previous, **changes}
    try:
        _check_capabilities(merged)
    except _Malformed as problem:
        return reject(problem.reason, str(problem), malformed=True)
    return _accept(
        merged,
        producer=producer,
        subscription_id=message["subscription_id"],
        manifest_uri=manifest_uri,
    )


def close_message(subscription_id: str, reason_code: str, reason_message: str) -> dict[str, Any]:
    """The producer's ``subscription.close`` (it ends a subscription from our side)."""
    return {
        "type": "subscription.close",
        "subscription_id": subscription_id,
        "reason_code": reason_code,
        "reason_message": reason_message,
    }


# -- negotiation -------------------------------------------------------------------------------
def _accept(
    caps: dict[str, Any], *, producer: Producer, subscription_id: str, manifest_uri: str | None
) -> Answer:
    notes: list[str] = []
    if caps.get("accept_signed_manifests_only") is True:
        return reject(
            "manifest_signature_required",
            "This producer does not sign its manifest, so it cannot serve a subscriber that accepts "
            "signed manifests only. Subscribe without accept_signed_manifests_only.",
        )
    requested_languages = list(caps.get("languages") or ["en-US"])
    languages = [tag for tag in requested_languages if language_servable(tag)]
    if not languages:
        return reject(
            "capabilities_incompatible",
            f"None of the requested languages ({', '.join(requested_languages)}) can be produced; "
            "this producer writes en-US. Add en-US to languages.",
        )
    if len(languages) < len(requested_languages):
        notes.append(
            f"Text is written in en-US; {', '.join(t for t in requested_languages if t not in languages)} "
            "is not available."
        )
    filters = caps.get("event_filters") or {}
    event_filter = EventFilter(
        include=tuple(filters.get("include", DEFAULT_INCLUDE)),
        exclude=tuple(filters.get("exclude", ())),
    )
    levels = tuple(
        sorted(set(caps.get("supported_conformance_levels") or (1,)) & set(CONFORMANCE_LEVELS))
    )
    terms = Terms(
        max_events_per_second=caps.get("max_events_per_second"),
        preferred_verbosity=caps.get("preferred_verbosity", "normal"),
        languages=tuple(languages),
        supports_confirmation_reply=bool(caps.get("supports_confirmation_reply", False)),
        supports_clarification_reply=bool(caps.get("supports_clarification_reply", False)),
        coalesce_boundaries=tuple(caps.get("coalesce_boundaries") or DEFAULT_BOUNDARIES),
        event_filter=event_filter,
        conformance_levels=levels or (1,),
        extensions=() if "supported_extensions" in caps else None,
    )
    if caps.get("supported_extensions"):
        notes.append("No extensions are supported.")
    not_adapted = [name for name in _NOT_ADAPTED if name in caps]
    not_adapted += sorted(k for k in caps if k not in _KNOWN_CAPABILITIES)
    if not_adapted:
        notes.append(f"Not honoured: {', '.join(not_adapted)}.")
    producer_json: dict[str, Any] = dict(producer.to_json())
    if manifest_uri:
        producer_json["manifest_uri"] = manifest_uri
    message: dict[str, Any] = {
        "type": "subscription.accepted",
        "subscription_id": subscription_id,
        "aaep_version": AAEP_VERSION,
        "producer": producer_json,
        "honored_capabilities": terms.to_json(),
    }
    if manifest_uri:
        message["manifest_uri"] = manifest_uri
    if notes:
        message["negotiation_notes"] = " ".join(notes)[:4096]
    return Accepted(subscription_id, terms, caps, message)


# -- structure (the official subscription.request schema, by hand) ---------------------------------
def _check_request(request: Any) -> None:
    if not isinstance(request, Mapping):
        raise _Malformed("unknown", "A subscription.request must be a JSON object.")
    if request.get("type") != "subscription.request":
        raise _Malformed("unknown", "type must be 'subscription.request'.")
    missing = [
        name for name in ("aaep_version", "subscriber_id", "capabilities") if name not in request
    ]
    if missing:
        raise _Malformed("unknown", f"subscription.request is missing {', '.join(missing)}.")
    extra = set(request) - _REQUEST_FIELDS
    if extra:
        raise _Malformed(
            "unknown", f"Unexpected fields in subscription.request: {', '.join(sorted(extra))}."
        )
    if not isinstance(request["aaep_version"], str) or not _VERSION.match(request["aaep_version"]):
        raise _Malformed("version_unsupported", "aaep_version must be a version such as 1.0.0.")
    subscriber = request["subscriber_id"]
    if not isinstance(subscriber, str) or not 1 <= len(subscriber) <= 256:
        raise _Malformed("unknown", "subscriber_id must be a string of 1 to 256 characters.")
    for name, limit in (("subscriber_name", 256), ("subscriber_version", 64)):
        if name in request and (not isinstance(request[name], str) or len(request[name]) > limit):
            raise _Malformed("unknown", f"{name} must be a string of at most {limit} characters.")
    for name in ("subscriber_manifest_uri", "correlation_id"):
        if name in request and not isinstance(request[name], str):
            raise _Malformed("unknown", f"{name} must be a string.")
    extensions = request.get("extensions", {})
    if not isinstance(extensions, Mapping) or not all(
        isinstance(v, Mapping) for v in extensions.values()
    ):
        raise _Malformed("unknown", "extensions must be an object of objects.")
    if not isinstance(request["capabilities"], Mapping):
        raise _Malformed(
            "capabilities_incompatible",
            "capabilities must be an object ({} asks for the defaults).",
        )
    _check_capabilities(request["capabilities"])


def _check_capabilities(caps: Mapping[str, Any]) -> None:
    def bad(message: str) -> _Malformed:
        return _Malformed("capabilities_incompatible", message)

    # Present means an integer: null is not "no limit" (the schema has no null), it is malformed.
    rate = caps.get("max_events_per_second")
    if "max_events_per_second" in caps and (not _is_int(rate) or not 1 <= rate <= 100_000):
        raise bad("max_events_per_second must be a whole number from 1 to 100000.")
    if "preferred_verbosity" in caps and not (
        isinstance(caps["preferred_verbosity"], str) and caps["preferred_verbosity"] in VERBOSITIES
    ):
        raise bad("preferred_verbosity must be terse, normal or detailed.")
    if "languages" in caps:
        languages = caps["languages"]
        if (
            not isinstance(languages, list)
            or not 1 <= len(languages) <= 32
            or not all(valid_language_tag(t) for t in languages)
            or len(set(languages)) != len(languages)
        ):
            raise bad("languages must list 1 to 32 distinct BCP 47 language tags, such as en-US.")
    for name in (
        "supports_confirmation_reply",
        "supports_clarification_reply",
        "accept_signed_manifests_only",
    ):
        if name in caps and not isinstance(caps[name], bool):
            raise bad(f"{name} must be true or false.")
    if "coalesce_boundaries" in caps:
        boundaries = caps["coalesce_boundaries"]
        if (
            not isinstance(boundaries, list)
            or not 1 <= len(boundaries) <= 5
            or not all(isinstance(b, str) and b in BOUNDARY_LEVELS for b in boundaries)
            or len(set(boundaries)) != len(boundaries)
        ):
            raise bad(
                "coalesce_boundaries must list distinct values among none, word, sentence, paragraph, completion."
            )
    if "event_filters" in caps:
        _check_filters(caps["event_filters"])
    if "supported_conformance_levels" in caps:
        levels = caps["supported_conformance_levels"]
        if (
            not isinstance(levels, list)
            or not 1 <= len(levels) <= 3
            or not all(_is_int(x) and x in CONFORMANCE_LEVELS for x in levels)
            or len(set(levels)) != len(levels)
        ):
            raise bad("supported_conformance_levels must list distinct levels among 1, 2 and 3.")
    if "supported_extensions" in caps:
        extensions = caps["supported_extensions"]
        if (
            not isinstance(extensions, list)
            or len(extensions) > 64
            or not all(isinstance(e, str) for e in extensions)
        ):
            raise bad("supported_extensions must list at most 64 extension URIs.")
    if "cognitive_load" in caps and not (
        isinstance(caps["cognitive_load"], str)
        and caps["cognitive_load"] in ("low", "medium", "high")
    ):
        raise bad("cognitive_load must be low, medium or high.")
    pace = caps.get("pace_wpm")
    if "pace_wpm" in caps and (not _is_int(pace) or not 50 <= pace <= 1000):
        raise bad("pace_wpm must be a whole number from 50 to 1000.")
    for name, value in caps.items():
        if name not in _KNOWN_CAPABILITIES and not isinstance(value, Mapping):
            raise bad(f"Unknown capability {name!r}: extension capabilities must be objects.")


def _check_filters(filters: Any) -> None:
    if not isinstance(filters, Mapping) or set(filters) - {"include", "exclude"}:
        raise _Malformed(
            "capabilities_incompatible", "event_filters may only hold include and exclude lists."
        )
    for name in ("include", "exclude"):
        patterns = filters.get(name, [])
        if (
            not isinstance(patterns, list)
            or len(set(map(str, patterns))) != len(patterns)
            or not all(isinstance(p, str) and 1 <= len(p) <= 256 for p in patterns)
        ):
            raise _Malformed(
                "capabilities_incompatible", f"event_filters.{name} must list distinct event types."
            )
        wrong = [p for p in patterns if not valid_pattern(p)]
        if wrong:
            raise _Malformed(
                "capabilities_incompatible",
                f"Event filter {wrong[0]!r} is not supported: use an exact type or a prefix ending in '*'.",
            )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
