"""The producer manifest (AAEP §5.10): what this agent is and what it can be asked for.

Subscribers read it before subscribing (or to check a ``manifest_uri`` they were given). It
is unsigned: this producer does not hold a signing key, which is why a request with
``accept_signed_manifests_only`` is rejected with ``manifest_signature_required``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .capabilities import CONFORMANCE_LEVELS, PRODUCED_LANGUAGES
from .events import CORE_EVENT_TYPES
from .session import AAEP_CONTEXT, AAEP_VERSION, Producer

MANIFEST_TYPE = "aaep:producer.manifest"


def build_manifest(
    producer: Producer,
    *,
    transports: Sequence[str] = ("sse", "websocket"),
    endpoints: dict[str, str] | None = None,
    max_concurrent_subscriptions: int = 64,
    contact: str | None = None,
    extensions: Sequence[str] = (),
) -> dict[str, Any]:
    """The manifest document, ready to serve as JSON.

    Parameters
    ----------
    transports
        Transport bindings offered (Appendix B names).
    endpoints
        Where each binding lives (our own addition, so a subscriber needs no guessing).
    max_concurrent_subscriptions
        How many subscriptions the producer keeps at once.
    contact
        Who runs this producer (omitted when unknown).
    extensions
        Context URIs of the extensions the producer's events may carry.
    """
    manifest: dict[str, Any] = {
        "@context": AAEP_CONTEXT,
        "type": MANIFEST_TYPE,
        "agent_id": producer.agent_id,
        "agent_version": producer.agent_version,
        "agent_name": producer.agent_name,
        "aaep_versions_supported": [AAEP_VERSION],
        "conformance_levels_supported": list(CONFORMANCE_LEVELS),
        "transports_supported": list(transports),
        "languages_supported": list(PRODUCED_LANGUAGES),
        "event_types_emitted": [payload.TYPE for payload in CORE_EVENT_TYPES],
        "extensions_supported": list(extensions),
        "default_verbosity": "normal",
        "max_concurrent_subscriptions": max_concurrent_subscriptions,
        "signed": False,
    }
    if producer.model:
        manifest["model"] = producer.model
    if endpoints:
        manifest["endpoints"] = dict(endpoints)
    if contact:
        manifest["contact"] = contact
    return manifest
