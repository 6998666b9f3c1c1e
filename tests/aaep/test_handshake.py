"""Handshake negotiation (Level 3): every request answered, never more permissive than asked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jupyter_aaep.aaep.handshake import Accepted, Rejected, negotiate, renegotiate
from jupyter_aaep.aaep.manifest import build_manifest
from jupyter_aaep.aaep.session import Producer

PRODUCER = Producer(model="claude-test")


def request(capabilities: dict | None = None, **fields) -> dict:
    body = {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "screen-reader",
        "capabilities": {} if capabilities is None else capabilities,
    }
    body.update(fields)
    return body


def answer(caps: dict | None = None, **fields):
    return negotiate(
        request(caps, **fields),
        producer=PRODUCER,
        manifest_uri="http://127.0.0.1:8888/aaep/v1/manifest",
    )


def test_accepted_answers_validate_and_honour_what_was_asked(aaep_schema_validator) -> None:
    asked = {
        "max_events_per_second": 5,
        "preferred_verbosity": "terse",
        "languages": ["en-US"],
        "supports_confirmation_reply": True,
        "supports_clarification_reply": True,
        "coalesce_boundaries": ["sentence", "completion"],
        "supported_conformance_levels": [1, 2, 3],
        "event_filters": {"include": ["aaep:agent.*"], "exclude": ["aaep:agent.tool.*"]},
    }
    result = answer(asked, subscriber_name="NVDA bridge", subscriber_version="2.1")
    assert isinstance(result, Accepted)
    aaep_schema_validator.validate(request(asked))
    aaep_schema_validator.validate(result.message)
    honoured = result.message["honored_capabilities"]
    assert honoured["max_events_per_second"] == 5
    assert honoured["preferred_verbosity"] == "terse"
    assert honoured["event_filters"] == {
        "include": ["aaep:agent.*"],
        "exclude": ["aaep:agent.tool.*"],
    }
    assert honoured["supported_conformance_levels"] == [1, 2, 3]
    assert result.message["subscription_id"].startswith("sub_")
    assert result.message["producer"]["manifest_uri"].endswith("/aaep/v1/manifest")
    assert result.terms.supports_confirmation_reply


def test_empty_capabilities_get_the_defaults(aaep_schema_validator) -> None:
    result = answer({})
    assert isinstance(result, Accepted)
    aaep_schema_validator.validate(result.message)
    honoured = result.message["honored_capabilities"]
    assert "max_events_per_second" not in honoured
    assert honoured["languages"] == ["en-US"]
    assert honoured["coalesce_boundaries"] == ["sentence", "completion"]
    assert honoured["supports_confirmation_reply"] is False


def test_languages_are_narrowed_to_what_we_write(aaep_schema_validator) -> None:
    result = answer({"languages": ["yo-NG", "en-US"]})
    assert isinstance(result, Accepted)
    assert result.message["honored_capabilities"]["languages"] == ["en-US"]
    assert "yo-NG" in result.message["negotiation_notes"]
    aaep_schema_validator.validate(result.message)
    assert answer({"languages": ["en"]}).message["honored_capabilities"]["languages"] == ["en"]


@pytest.mark.parametrize(
    ("caps", "fields", "code"),
    [
        ({}, {"aaep_version": "99.99.99"}, "version_unsupported"),
        ({}, {"aaep_version": "2.0.0"}, "version_unsupported"),
        ({"languages": ["yo-NG"]}, {}, "capabilities_incompatible"),
        ({"accept_signed_manifests_only": True}, {}, "manifest_signature_required"),
        ({"max_events_per_second": 0}, {}, "capabilities_incompatible"),
        ({"max_events_per_second": "fast"}, {}, "capabilities_incompatible"),
        ({"event_filters": {"include": ["aaep:*.tool"]}}, {}, "capabilities_incompatible"),
        ({"coalesce_boundaries": ["line"]}, {}, "capabilities_incompatible"),
        ({"x-vendor": 3}, {}, "capabilities_incompatible"),
        ({}, {"surprise": True}, "unknown"),
    ],
)
def test_rejections_carry_the_right_reason(aaep_schema_validator, caps, fields, code) -> None:
    result = answer(caps, **fields)
    assert isinstance(result, Rejected) and result.reason_code == code
    aaep_schema_validator.validate(result.message)
    assert result.reason_message.endswith(".")


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        "subscription.request",
        {"type": "subscription.request"},
        {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "",
            "capabilities": {},
        },
        {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "x",
            "capabilities": [],
        },
    ],
)
def test_malformed_requests_are_still_answered(aaep_schema_validator, bad) -> None:
    result = negotiate(bad, producer=PRODUCER)
    assert isinstance(result, Rejected) and result.malformed
    aaep_schema_validator.validate(result.message)


def test_extension_capabilities_are_ignored_not_refused(aaep_schema_validator) -> None:
    result = answer(
        {
            "acme:haptics": {"pattern": "short"},
            "cognitive_load": "low",
            "supported_extensions": ["https://x.example/ext"],
        }
    )
    assert isinstance(result, Accepted)
    assert result.message["honored_capabilities"]["supported_extensions"] == []
    assert "cognitive_load" in result.message["negotiation_notes"]
    aaep_schema_validator.validate(result.message)


def test_renegotiation_applies_changes_on_top_of_the_request(aaep_schema_validator) -> None:
    first = answer({"max_events_per_second": 10, "preferred_verbosity": "detailed"})
    assert isinstance(first, Accepted)
    again = renegotiate(
        {
            "type": "subscription.renegotiate",
            "subscription_id": first.subscription_id,
            "capabilities": {"max_events_per_second": 2},
        },
        first.requested,
        producer=PRODUCER,
    )
    assert isinstance(again, Accepted) and again.subscription_id == first.subscription_id
    assert again.terms.max_events_per_second == 2 and again.terms.preferred_verbosity == "detailed"
    aaep_schema_validator.validate(again.message)
    refused = renegotiate(
        {
            "type": "subscription.renegotiate",
            "subscription_id": first.subscription_id,
            "capabilities": {"languages": ["fr-FR"]},
        },
        first.requested,
        producer=PRODUCER,
    )
    assert isinstance(refused, Rejected) and refused.reason_code == "capabilities_incompatible"
    for bad in (
        {"type": "subscription.renegotiate", "subscription_id": "nope", "capabilities": {}},
        {
            "type": "subscription.renegotiate",
            "subscription_id": first.subscription_id,
            "capabilities": 3,
        },
        {
            "type": "subscription.renegotiate",
            "subscription_id": first.subscription_id,
            "capabilities": {},
            "extra": 1,
        },
        {"type": "other"},
    ):
        result = renegotiate(bad, first.requested, producer=PRODUCER)
        assert isinstance(result, Rejected) and result.malformed
        aaep_schema_validator.validate(result.message)


def test_manifest_lists_what_the_producer_offers() -> None:
    manifest = build_manifest(
        PRODUCER, endpoints={"events": "/aaep/v1/events"}, contact="ops@example.org"
    )
    assert manifest["type"] == "aaep:producer.manifest"
    assert manifest["aaep_versions_supported"] == ["1.0.0"]
    assert manifest["conformance_levels_supported"] == [1, 2, 3]
    assert len(manifest["event_types_emitted"]) == 12
    assert manifest["languages_supported"] == ["en-US"] and manifest["signed"] is False
    assert (
        manifest["endpoints"]["events"] == "/aaep/v1/events"
        and manifest["contact"] == "ops@example.org"
    )


def test_protocol_modules_load_no_jupyter_tornado_or_anthropic() -> None:
    code = (
        "import sys\n"
        "import jupyter_aaep.aaep.subscription, jupyter_aaep.aaep.handshake, jupyter_aaep.aaep.manifest\n"
        "print(','.join(m for m in ('tornado', 'jupyter_server', 'anthropic', 'traitlets') if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
