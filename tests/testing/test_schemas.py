"""Tests for ``jupyter_aaep.aaep.schema_validation``: the official AAEP schemas plus our profile.

The rest of the suite trusts this validator to say "this event is what a subscriber
expects", so these tests pin down that it really loads the official files, that format
checks are on, and that each of our producer-profile checks bites.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

import jupyter_aaep
import jupyter_aaep.aaep.schema_validation as schemas_module
from jupyter_aaep.aaep.check import check_events
from jupyter_aaep.aaep.schema_validation import (
    SHIPPED_SCHEMA_DIR,
    SchemaValidator,
    SchemaViolation,
    find_schema_dir,
    validate_event,
)

Event = dict[str, Any]
CONTEXT = "https://aaep-protocol.org/context/v1"
TEXT = {"summary_normal": "Running cell 3."}


@pytest.fixture(scope="module")
def validator() -> SchemaValidator:
    return SchemaValidator.from_dir()


# --------------------------------------------------------------------------- factory


def envelope(name: str, index: int = 1, **payload: Any) -> Event:
    """The smallest envelope our producer may send (it always names itself fully)."""
    event: Event = {
        "@context": CONTEXT,
        "aaep_version": "1.0.0",
        "type": f"aaep:agent.{name}",
        "event_id": f"evt_{index:08x}",
        "session_id": "sess_7f3a9c",
        "timestamp": f"2026-11-21T09:30:{index % 60:02d}.125Z",
        "producer": {
            "agent_id": "jupyter-aaep",
            "agent_version": "0.1.0",
            "agent_name": "Notebook assistant",
            "model": "claude-test",
        },
        "urgency": "critical" if name in CRITICAL else "normal",
        "localization_hints": {"primary_language": "en-US"},
    }
    event.update(payload)
    return event


CRITICAL = {
    "session.errored",
    "awaiting.confirmation",
    "awaiting.clarification",
    "handoff.requested",
}

MINIMAL: dict[str, Event] = {
    "session.started": {"summary_normal": "Starting on your request."},
    "session.completed": {"summary_normal": "Done."},
    "session.errored": {"error_category": "transient", "summary_normal": "The model is busy."},
    "session.cancelled": {"cancelled_by": "user", "summary_normal": "Stopped at your request."},
    "state.changed": {"from_state": "idle", "to_state": "thinking", "summary_normal": "Thinking."},
    "progress.updated": {"progress": {"percent": 50}},
    "tool.invoked": {"tool": "run_cell", "summary_normal": "Running cell 3."},
    "tool.completed": {"tool": "run_cell", "status": "success", "summary_normal": "Cell 3 ran."},
    "output.streaming": {"chunk": "The mean is 4.2. ", "position": 0, "complete": False},
    "awaiting.confirmation": {
        "action": "Run cell 3.",
        "consequence": "It deletes results.csv.",
        "reply_token": "rpl_9f2c",
        "timeout_seconds": 300,
        "default_decision": "reject",
        "summary_normal": "Approve running cell 3?",
    },
    "awaiting.clarification": {
        "question": "Which column holds dates?",
        "reply_token": "rpl_1b7e",
        "timeout_seconds": 120,
        "summary_normal": "Which column holds dates?",
    },
    "handoff.requested": {
        "reason": "The kernel keeps crashing.",
        "target_kind": "human",
        "summary_normal": "Handing over to you.",
    },
}

SUMMARIES = {
    "summary_terse": "Short.",
    "summary_normal": "Normal length summary.",
    "summary_detailed": "A detailed summary with the reasons behind it.",
}

FULL_PAYLOAD: dict[str, Event] = {
    "session.started": {
        "expected_duration_ms": 30000,
        "requested_by": "user:ada",
        "request_text": "Plot the data.",
        "tools_available": ["run_cell", "read_cell"],
    },
    "session.completed": {
        "duration_ms": 12000,
        "tool_invocations_count": 2,
        "output_summary": "A plot.",
        "result_uri": "https://example.org/results/1",
    },
    "session.errored": {
        "error_code": "MODEL_OVERLOADED",
        "error_uri": "https://example.org/errors/overloaded",
        "recoverable": True,
        "remediation_hint": "Try again in a minute.",
    },
    "session.cancelled": {"cancellation_reason": "user_stop", "partial_result": "Half a plot."},
    "state.changed": {"expected_duration_ms": 4000},
    "progress.updated": {
        "progress": {"percent": 47.5, "step": 2, "total_steps": 4, "description": "Loading data"},
        "eta_ms": 2000,
    },
    "tool.invoked": {
        "description": "Execute a notebook cell",
        "args_summary": "cell 3",
        "expected_duration_ms": 2000,
        "risk_level": "high",
        "irreversible": True,
        "tool_call_id": "call_4e1f",
    },
    "tool.completed": {
        "tool_call_id": "call_4e1f",
        "status": "error",
        "duration_ms": 1800,
        "error_message": "NameError: name 'df' is not defined",
    },
    "output.streaming": {
        "coalesce_hint": "sentence",
        "output_id": "out_1",
        "content_type": "text/markdown",
        "language": "en-GB",
    },
    "awaiting.confirmation": {
        "risk_level": "high",
        "irreversible": True,
        "reversibility": "irreversible",
        "allowed_replies": ["accept", "reject"],
        "extra_context": {"tool_call_id": "call_4e1f"},
    },
    "awaiting.clarification": {
        "accepted_response_kinds": ["multiple_choice", "freetext"],
        "choices": [{"value": "a", "label": "Column A"}, {"value": "b", "label": "Column B"}],
        "context": "Two columns look like dates.",
        "default_response": "a",
    },
    "handoff.requested": {
        "target_uri": "https://example.org/queue",
        "packaged_context": {"notebook": "a.ipynb"},
        "urgency_for_handoff": "high",
    },
}

FULL_ENVELOPE: Event = {
    "@context": [CONTEXT, "https://example.org/jupyter/context/v1"],
    "sequence_number": 3,
    "verbosity": "detailed",
    "correlation_id": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "extensions": {"jupyter": {"cell_index": 3}},
    "localization_hints": {
        "primary_language": "en-US",
        "text_direction": "ltr",
        "available_languages": ["en-US", "fr"],
        "fallback_chain": ["en"],
        "script": "Latn",
        "calendar": "gregorian",
    },
}


def minimal(name: str) -> Event:
    return envelope(name, **copy.deepcopy(MINIMAL[name]))


def full(name: str) -> Event:
    event = envelope(name, **copy.deepcopy(MINIMAL[name]))
    event.update(copy.deepcopy(FULL_ENVELOPE))
    event["producer"]["manifest_uri"] = "https://example.org/.well-known/aaep-manifest.json"
    event.update(SUMMARIES if name not in ("output.streaming",) else {"summary_normal": "Text."})
    event.update(copy.deepcopy(FULL_PAYLOAD[name]))
    return event


def canonical_session() -> list[Event]:
    """The flow from the protocol digest, as our producer emits it."""
    calls = {"tool_call_id": "call_4e1f", "risk_level": "high", "irreversible": True}
    steps: list[tuple[str, Event]] = [
        ("session.started", MINIMAL["session.started"]),
        ("state.changed", {"from_state": "idle", "to_state": "thinking", **TEXT}),
        ("state.changed", {"from_state": "thinking", "to_state": "awaiting_input", **TEXT}),
        (
            "awaiting.confirmation",
            {**MINIMAL["awaiting.confirmation"], **FULL_PAYLOAD["awaiting.confirmation"]},
        ),
        ("state.changed", {"from_state": "awaiting_input", "to_state": "calling_tool", **TEXT}),
        ("tool.invoked", {"tool": "run_cell", **calls, **TEXT}),
        (
            "tool.completed",
            {"tool": "run_cell", "status": "success", "tool_call_id": "call_4e1f", **TEXT},
        ),
        ("state.changed", {"from_state": "calling_tool", "to_state": "thinking", **TEXT}),
        ("state.changed", {"from_state": "thinking", "to_state": "writing_output", **TEXT}),
        (
            "output.streaming",
            {"chunk": "Done. ", "position": 0, "complete": False, "output_id": "out_1"},
        ),
        ("output.streaming", {"chunk": "", "position": 6, "complete": True, "output_id": "out_1"}),
        ("session.completed", MINIMAL["session.completed"]),
    ]
    return [envelope(name, i, **copy.deepcopy(payload)) for i, (name, payload) in enumerate(steps)]


def rejection(validator: SchemaValidator, event: Any) -> SchemaViolation:
    with pytest.raises(SchemaViolation) as caught:
        validator.validate(event)
    return caught.value


# --------------------------------------------------------------------------- discovery


def test_find_schema_dir_defaults_to_the_copy_shipped_in_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AAEP_SCHEMA_DIR", raising=False)
    found = find_schema_dir()
    package = Path(jupyter_aaep.__file__).resolve().parent
    assert found == SHIPPED_SCHEMA_DIR == package / "aaep" / "schemas"
    assert (found / "envelope.schema.json").is_file()
    assert len(list((found / "core").glob("*.schema.json"))) == 12
    assert len(list((found / "handshake").glob("*.schema.json"))) == 5
    # CC-BY-4.0 asks for attribution: the NOTICE travels with the files.
    notice = (found / "NOTICE.md").read_text(encoding="utf-8")
    assert "CC-BY-4.0" in notice and "AAEP 1.0.0" in notice


def test_find_schema_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    copy_dir = tmp_path / "other-copy"
    shutil.copytree(SHIPPED_SCHEMA_DIR, copy_dir)
    monkeypatch.setenv("AAEP_SCHEMA_DIR", str(copy_dir))
    assert find_schema_dir() == copy_dir.resolve()
    assert SchemaValidator.from_dir().schema_dir == copy_dir.resolve()
    monkeypatch.setenv("AAEP_SCHEMA_DIR", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="AAEP schemas not found: point AAEP_SCHEMA_DIR"):
        find_schema_dir()
    with pytest.raises(FileNotFoundError, match="missing"):
        SchemaValidator.from_dir()


def test_find_schema_dir_says_so_when_the_shipped_copy_is_incomplete(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AAEP_SCHEMA_DIR", raising=False)
    monkeypatch.setattr(schemas_module, "SHIPPED_SCHEMA_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="reinstall jupyter-aaep"):
        find_schema_dir()


def test_from_dir_rejects_a_directory_without_schemas(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="AAEP schemas not found"):
        SchemaValidator.from_dir(tmp_path)


def test_loads_every_core_and_handshake_schema(validator: SchemaValidator) -> None:
    core = {f"aaep:agent.{name}" for name in MINIMAL}
    handshake = {
        "subscription.request",
        "subscription.accepted",
        "subscription.rejected",
        "confirmation.reply",
        "clarification.reply",
    }
    assert validator.known_types == core | handshake


def test_format_checking_is_really_on() -> None:
    from jsonschema import Draft202012Validator

    checker = Draft202012Validator.FORMAT_CHECKER
    assert not checker.conforms("2026-13-45T99:00:00.000Z", "date-time")
    assert checker.conforms("2026-11-21T09:30:00.125Z", "date-time")
    assert not checker.conforms("not a uri", "uri")


# --------------------------------------------------------------------------- valid messages


def test_canonical_session_is_valid(validator: SchemaValidator) -> None:
    events = canonical_session()
    for event in events:
        validator.validate(event)
    assert check_events(events) == []  # and it is a valid sequence, too


@pytest.mark.parametrize("form", [minimal, full], ids=["minimal", "full"])
@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_each_core_type_in_minimal_and_full_form(
    validator: SchemaValidator, name: str, form: Any
) -> None:
    validator.validate(form(name))


def test_progress_without_text_needs_no_language(validator: SchemaValidator) -> None:
    event = minimal("progress.updated")
    del event["localization_hints"]
    validator.validate(event)
    event["progress"] = {"description": "Loading data"}
    assert rejection(validator, event).path == "$.localization_hints.primary_language"


@pytest.mark.parametrize(
    "message",
    [
        {
            "type": "subscription.request",
            "aaep_version": "1.0.0",
            "subscriber_id": "panel",
            "capabilities": {},
        },
        {
            "type": "subscription.accepted",
            "subscription_id": "sub_1a",
            "aaep_version": "1.0.0",
            "producer": {"agent_id": "jupyter-aaep"},
            "honored_capabilities": {"languages": ["en-US"]},
        },
        {"type": "subscription.rejected", "reason_code": "rate_limit", "reason_message": "Busy."},
        {
            "type": "confirmation.reply",
            "reply_token": "rpl_9f2c",
            "decision": "accept",
            "subscription_id": "sub_1a",
            "timestamp": "2026-11-21T09:31:00.000Z",
        },
        {
            "type": "clarification.reply",
            "reply_token": "rpl_1b7e",
            "response": 42,
            "subscription_id": "sub_1a",
            "timestamp": "2026-11-21T09:31:00.000Z",
        },
    ],
    ids=lambda m: m["type"],
)
def test_handshake_messages(validator: SchemaValidator, message: Event) -> None:
    validator.validate(message)
    with pytest.raises(SchemaViolation, match="Additional properties"):
        validator.validate({**message, "surprise": 1})


def test_extension_events_are_checked_against_the_envelope(validator: SchemaValidator) -> None:
    event = envelope("x", type="jupyter:cell.edited", summary_normal="Cell 3 changed.")
    validator.validate(event)
    assert rejection(validator, changed(event, timestamp="yesterday")).path == "$.timestamp"
    uri_form = changed(event, type="https://aaep-protocol.org/types/agent.session.started")
    assert "no AAEP schema" in str(rejection(validator, uri_form))


def test_validate_event_uses_a_cached_default() -> None:
    from jupyter_aaep.testing import schemas

    validate_event(minimal("session.started"))
    assert schemas.default_validator() is schemas.default_validator()
    with pytest.raises(SchemaViolation):
        validate_event(minimal("session.started") | {"event_id": "nope"})


# --------------------------------------------------------------------------- rejections


def changed(event: Event, **changes: Any) -> Event:
    out = copy.deepcopy(event)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


REJECTIONS: list[tuple[str, Event, str, str]] = [
    (
        "bad event_id",
        changed(minimal("session.started"), event_id="evt-1"),
        "$.event_id",
        "does not match",
    ),
    (
        "bad session_id",
        changed(minimal("session.started"), session_id="sess_"),
        "$.session_id",
        "does not match",
    ),
    (
        "impossible timestamp",
        changed(minimal("state.changed"), timestamp="2026-13-45T99:00:00.000Z"),
        "$.timestamp",
        "is not a 'date-time'",
    ),
    (
        "timestamp with 2 fraction digits",
        changed(minimal("state.changed"), timestamp="2026-11-21T09:30:00.12Z"),
        "$.timestamp",
        "3 or 6 fraction digits",
    ),
    (
        "timestamp without fraction",
        changed(minimal("state.changed"), timestamp="2026-11-21T09:30:00Z"),
        "$.timestamp",
        "3 or 6 fraction digits",
    ),
    (
        "bad uri",
        changed(full("session.completed"), result_uri="not a uri"),
        "$.result_uri",
        "is not a 'uri'",
    ),
    (
        "irreversible high risk, default accept",
        changed(full("awaiting.confirmation"), default_decision="accept"),
        "$.default_decision",
        "'reject' was expected",
    ),
    (
        "irreversible medium risk, default accept",
        changed(full("awaiting.confirmation"), default_decision="accept", risk_level="medium"),
        "$.default_decision",
        "'reject' was expected",
    ),
    (
        "errored without urgency",
        changed(minimal("session.errored"), urgency=None),
        "$.urgency",
        "set explicitly",
    ),
    (
        "errored with normal urgency",
        changed(minimal("session.errored"), urgency="normal"),
        "$.urgency",
        "'critical' was expected",
    ),
    (
        "handoff without urgency",
        changed(minimal("handoff.requested"), urgency=None),
        "$.urgency",
        "set explicitly",
    ),
    (
        "normal event without urgency",
        changed(minimal("tool.invoked"), urgency=None),
        "$.urgency",
        "set explicitly",
    ),
    (
        "unknown core type",
        changed(minimal("session.started"), type="aaep:agent.session.paused"),
        "$.type",
        "no AAEP schema",
    ),
    ("type missing", changed(minimal("session.started"), type=None), "$.type", "no AAEP schema"),
    (
        "summary_normal missing on state.changed",
        changed(minimal("state.changed"), summary_normal=None),
        "$.summary_normal",
        "needs summary_normal",
    ),
    (
        "summary_normal missing on tool.completed",
        changed(minimal("tool.completed"), summary_normal=None),
        "$.summary_normal",
        "needs summary_normal",
    ),
    (
        "summary_normal missing on session.started",
        changed(minimal("session.started"), summary_normal=None),
        "$",
        "'summary_normal' is a required property",
    ),
    (
        "summary_terse too long",
        changed(minimal("session.started"), summary_terse="x" * 4097),
        "$.summary_terse",
        "xxx…",
    ),
    (
        "empty summary_detailed",
        changed(minimal("session.started"), summary_detailed=""),
        "$.summary_detailed",
        "should be non-empty",
    ),
    (
        "text without a language",
        changed(minimal("output.streaming"), localization_hints=None),
        "$.localization_hints.primary_language",
        "declare their language",
    ),
    (
        "language hints without the language",
        changed(minimal("tool.invoked"), localization_hints={"text_direction": "ltr"}),
        "$.localization_hints.primary_language",
        "declare their language",
    ),
    (
        "producer without model",
        changed(
            minimal("session.started"),
            producer={"agent_id": "jupyter-aaep", "agent_version": "0.1.0", "agent_name": "x"},
        ),
        "$.producer.model",
        "names itself fully",
    ),
    (
        "producer with an extra key",
        changed(
            minimal("session.started"),
            producer={
                "agent_id": "a",
                "agent_version": "1",
                "agent_name": "x",
                "model": "m",
                "build": "7",
            },
        ),
        "$.producer",
        "Additional properties",
    ),
    (
        "aaep_version missing",
        changed(minimal("session.started"), aaep_version=None),
        "$.aaep_version",
        "must be '1.0.0'",
    ),
    (
        "aaep_version 1.0.1",
        changed(minimal("session.started"), aaep_version="1.0.1"),
        "$.aaep_version",
        "must be '1.0.0'",
    ),
    (
        "wrong @context",
        changed(minimal("session.started"), **{"@context": "https://example.org/ctx"}),
        "$.@context",
        "was expected",
    ),
    (
        "reply_token malformed",
        changed(minimal("awaiting.clarification"), reply_token="token"),
        "$.reply_token",
        "does not match",
    ),
    (
        "timeout too long",
        changed(minimal("awaiting.clarification"), timeout_seconds=86401),
        "$.timeout_seconds",
        "maximum",
    ),
    (
        "progress with unknown key",
        changed(minimal("progress.updated"), progress={"percent": 5, "eta": 1}),
        "$.progress",
        "Additional properties",
    ),
]


@pytest.mark.parametrize(
    ("event", "path", "fragment"),
    [pytest.param(event, path, fragment, id=label) for label, event, path, fragment in REJECTIONS],
)
def test_rejections(validator: SchemaValidator, event: Event, path: str, fragment: str) -> None:
    violation = rejection(validator, event)
    assert violation.path == path, str(violation)
    assert fragment in str(violation)


def test_violation_message_names_type_id_and_path(validator: SchemaValidator) -> None:
    event = changed(minimal("session.errored"), urgency="normal")
    violation = rejection(validator, event)
    assert (
        str(violation)
        == "aaep:agent.session.errored evt_00000001 at $.urgency: 'critical' was expected"
    )
    assert (violation.event_type, violation.event_id) == (
        "aaep:agent.session.errored",
        "evt_00000001",
    )
    assert isinstance(violation, AssertionError)


def test_non_object_is_rejected(validator: SchemaValidator) -> None:
    assert "JSON object" in str(rejection(validator, ["not", "an", "event"]))
