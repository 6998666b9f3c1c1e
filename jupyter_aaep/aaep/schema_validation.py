"""Validate AAEP messages against the official AAEP 1.0.0 JSON Schemas, plus our profile.

The official schemas are the contract with every subscriber, so ``aaep-check`` and the tests
check events against those exact files, shipped unmodified beside this module
(``jupyter_aaep/aaep/schemas``, CC-BY-4.0, see its NOTICE.md) so that a clone alone can run
them; ``AAEP_SCHEMA_DIR`` points at another copy. It lives in the protocol layer, with the
schemas, so the checker never reaches up into ``testing/``. Format checking is really on:
jsonschema silently skips ``date-time`` and ``uri`` unless their optional packages are
installed, so :meth:`SchemaValidator.from_dir` refuses to run without them rather than pass
bad timestamps.

On top of the schemas, :meth:`SchemaValidator.validate` checks what the specification asks
but the schemas cannot express, at the specification's own levels:

- MUST (an error, for every producer): timestamps with 3 or 6 fraction digits, ``urgency``
  set to ``critical`` on the four critical types, summaries non-empty and within their limits;
- SHOULD (a warning, returned): ``aaep_version`` present, ``urgency`` set explicitly,
  ``summary_normal`` on every announceable event, ``localization_hints.primary_language`` on
  events with text;
- our own producer's profile (``profile="jupyter-aaep"``, used by this project's tests): every
  SHOULD above is an error, and so are ``aaep_version`` other than 1.0.0 and a ``producer``
  without ``agent_version``, ``agent_name`` and ``model``.

jsonschema and referencing are imported lazily so importing this module never needs them.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "PROFILES",
    "SHIPPED_SCHEMA_DIR",
    "SchemaValidator",
    "SchemaViolation",
    "find_schema_dir",
    "validate_event",
]

ENVELOPE_ID = "https://aaep-protocol.org/schemas/v1/envelope.schema.json"
Profile = Literal["spec", "jupyter-aaep"]
PROFILES: tuple[Profile, ...] = ("spec", "jupyter-aaep")
"""``spec``: AAEP 1.0.0's MUSTs are errors, its SHOULDs warnings; ``jupyter-aaep``: our producer's
stricter promises are errors too."""
Level = Literal["must", "should", "profile"]
CORE_PREFIX = "aaep:agent."
HANDSHAKE_SCHEMAS = {
    "subscription.request": "handshake/subscription.request.schema.json",
    "subscription.accepted": "handshake/subscription.accepted.schema.json",
    "subscription.rejected": "handshake/subscription.rejected.schema.json",
    "confirmation.reply": "handshake/confirmation.reply.schema.json",
    "clarification.reply": "handshake/clarification.reply.schema.json",
}
CRITICAL_NAMES = frozenset(
    {"session.errored", "awaiting.confirmation", "awaiting.clarification", "handoff.requested"}
)
#: Events that are not announced on their own, so a summary is optional.
UNANNOUNCED_NAMES = frozenset({"output.streaming", "progress.updated"})
SUMMARY_LIMITS = {"summary_terse": 4096, "summary_normal": 16384, "summary_detailed": 16384}
#: Payload fields whose value is text a person reads (so its language must be declared).
TEXT_FIELDS = (
    *SUMMARY_LIMITS,
    "chunk",
    "action",
    "consequence",
    "question",
    "context",
    "reason",
    "error_message",
    "description",
    "args_summary",
    "remediation_hint",
    "request_text",
    "partial_result",
    "output_summary",
    "default_response",
)
PRODUCER_FIELDS = ("agent_id", "agent_version", "agent_name", "model")
AAEP_VERSION = "1.0.0"
TIMESTAMP_FRACTION_RE = re.compile(r".*T\d{2}:\d{2}:\d{2}\.(?:\d{3}|\d{6})(?:Z|[+-]\d{2}:\d{2})")
REQUIRED_FORMATS = ("date-time", "uri")
#: The AAEP 1.0.0 schemas shipped inside the package (data files, no code).
SHIPPED_SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMAS_MISSING = (
    "AAEP schemas not found: point AAEP_SCHEMA_DIR at a folder holding envelope.schema.json "
    "and core/, or reinstall jupyter-aaep (it ships them in jupyter_aaep/aaep/schemas)"
)


class SchemaViolation(AssertionError):
    """A message that breaks a schema or our producer profile (an ``AssertionError`` so
    pytest shows it as a plain test failure)."""

    def __init__(self, message: Mapping[str, Any] | Any, path: str, reason: str) -> None:
        event_type = message.get("type") if isinstance(message, Mapping) else None
        event_id = message.get("event_id") if isinstance(message, Mapping) else None
        self.event_type, self.event_id, self.path, self.reason = event_type, event_id, path, reason
        super().__init__(f"{event_type} {event_id or '(no event_id)'} at {path}: {reason}")


def _is_schema_dir(path: Path) -> bool:
    return (path / "envelope.schema.json").is_file() and (path / "core").is_dir()


def find_schema_dir() -> Path:
    """Locate the official schemas: ``$AAEP_SCHEMA_DIR`` when set (to test against another
    copy), else the copy shipped in the package. Raise ``FileNotFoundError`` rather than
    return a folder without schemas, so CI fails instead of skipping."""
    configured = os.environ.get("AAEP_SCHEMA_DIR")
    if configured:
        path = Path(configured).expanduser()
        if not _is_schema_dir(path):
            raise FileNotFoundError(
                f"{SCHEMAS_MISSING} (AAEP_SCHEMA_DIR={configured!r} has no "
                "envelope.schema.json and core/)"
            )
        return path.resolve()
    if not _is_schema_dir(SHIPPED_SCHEMA_DIR):
        raise FileNotFoundError(f"{SCHEMAS_MISSING} ({SHIPPED_SCHEMA_DIR} is incomplete)")
    return SHIPPED_SCHEMA_DIR


def _shorten(text: str, limit: int = 400) -> str:
    """jsonschema quotes whole offending values; keep test output readable."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_path(parts: Iterable[Any]) -> str:
    """``$.a.b[0]`` from a jsonschema ``absolute_path``."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


class SchemaValidator:
    """One compiled validator per message type, all sharing a registry of the schemas."""

    def __init__(
        self, schema_dir: Path, validators: Mapping[str, Any], *, profile: Profile = "jupyter-aaep"
    ) -> None:
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        self.schema_dir = schema_dir
        self.profile: Profile = profile
        self._validators = dict(validators)

    @property
    def known_types(self) -> frozenset[str]:
        """Every ``type`` value this validator has a schema for."""
        return frozenset(self._validators) - {ENVELOPE_ID}

    @classmethod
    def from_dir(
        cls, path: str | os.PathLike[str] | None = None, *, profile: Profile = "jupyter-aaep"
    ) -> SchemaValidator:
        """Load envelope, core and handshake schemas from ``path`` (default:
        :func:`find_schema_dir`), checking at *profile*'s strictness."""
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource

        root = Path(path) if path else find_schema_dir()
        if not _is_schema_dir(root):
            raise FileNotFoundError(
                f"{SCHEMAS_MISSING} ({root} has no envelope.schema.json and core/)"
            )
        format_checker = Draft202012Validator.FORMAT_CHECKER
        missing = [f for f in REQUIRED_FORMATS if f not in format_checker.checkers]
        if missing:
            raise RuntimeError(
                f"jsonschema cannot check formats {missing}; install jsonschema[format]"
            )
        files = [root / "envelope.schema.json", *sorted((root / "core").glob("*.schema.json"))]
        files += sorted((root / "handshake").glob("*.schema.json"))
        schemas = {p: json.loads(p.read_text(encoding="utf-8")) for p in files}
        registry: Registry[Any] = Registry().with_resources(
            (s["$id"], Resource.from_contents(s)) for s in schemas.values()
        )
        validators: dict[str, Any] = {}
        for file, schema in schemas.items():
            Draft202012Validator.check_schema(schema)
            message_type = (
                schema["$id"]
                if schema["$id"] == ENVELOPE_ID
                else cls._type_for(file.relative_to(root))
            )
            if message_type is not None:
                validators[message_type] = Draft202012Validator(
                    schema, registry=registry, format_checker=format_checker
                )
        return cls(root, validators, profile=profile)

    @staticmethod
    def _type_for(relative: Path) -> str | None:
        """``core/agent.tool.invoked.schema.json`` -> ``aaep:agent.tool.invoked``."""
        stem = relative.name.removesuffix(".schema.json")
        if relative.parts[0] == "core":
            return "aaep:" + stem
        return stem if relative.parts[0] == "handshake" else None

    def validate(self, message: Mapping[str, Any]) -> list[SchemaViolation]:
        """Raise :class:`SchemaViolation` for the first error in ``message``; return the
        warnings (SHOULDs the message misses; none under the ``jupyter-aaep`` profile, where
        they are errors)."""
        from jsonschema.exceptions import best_match

        if not isinstance(message, Mapping):
            raise SchemaViolation(
                message, "$", f"a message must be a JSON object, not {type(message).__name__}"
            )
        message_type = message.get("type")
        validator = self._validators.get(message_type) if isinstance(message_type, str) else None
        if validator is None and _is_extension_event(message):
            validator = self._validators[
                ENVELOPE_ID
            ]  # extension types: the envelope is the contract
        if validator is None:
            raise SchemaViolation(message, "$.type", f"no AAEP schema for type {message_type!r}")
        error = best_match(validator.iter_errors(message))
        if error is not None:
            raise SchemaViolation(message, _json_path(error.absolute_path), _shorten(error.message))
        warnings: list[SchemaViolation] = []
        if isinstance(message_type, str) and message_type.startswith(CORE_PREFIX):
            for level, finding in spec_findings(message, message_type[len(CORE_PREFIX) :]):
                if level == "must" or self.profile == "jupyter-aaep":
                    raise finding
                if level == "should":
                    warnings.append(finding)
        return warnings


def _is_extension_event(message: Mapping[str, Any]) -> bool:
    """An event (it has ``@context``) whose type lives outside the ``aaep:`` namespace."""
    message_type = message.get("type")
    return (
        "@context" in message
        and isinstance(message_type, str)
        and ":" in message_type
        and not message_type.startswith(("aaep:", "https://aaep-protocol.org/"))
    )


def spec_findings(event: Mapping[str, Any], name: str) -> list[tuple[Level, SchemaViolation]]:
    """What the schemas cannot check, each finding with its level (§3, §4, §9.3.1, §11)."""
    found: list[tuple[Level, SchemaViolation]] = []

    def note(level: Level, path: str, message: str) -> None:
        found.append((level, SchemaViolation(event, path, message)))

    timestamp = str(event.get("timestamp"))
    if TIMESTAMP_FRACTION_RE.fullmatch(timestamp) is None:
        note("must", "$.timestamp", f"{timestamp!r} needs exactly 3 or 6 fraction digits")
    urgency = event.get("urgency")
    if name in CRITICAL_NAMES and urgency != "critical":
        note("must", "$.urgency", f"{name} must have urgency 'critical', set explicitly")
    for key, limit in SUMMARY_LIMITS.items():
        value = event.get(key)
        if value is not None and not (isinstance(value, str) and 0 < len(value) <= limit):
            note("must", f"$.{key}", f"must be a non-empty string of at most {limit} characters")
    if "aaep_version" not in event:
        note(
            "should",
            "$.aaep_version",
            f"should be present; ours must be {AAEP_VERSION!r}, got None",
        )
    elif event.get("aaep_version") != AAEP_VERSION:
        note(
            "profile",
            "$.aaep_version",
            f"must be {AAEP_VERSION!r}, got {event.get('aaep_version')!r}",
        )
    if urgency is None:
        note("should", "$.urgency", "urgency should be set explicitly on every event")
    if name not in UNANNOUNCED_NAMES and "summary_normal" not in event:
        note(
            "should",
            "$.summary_normal",
            f"{name} is announceable, so it needs summary_normal (a SHOULD of §9.3.1)",
        )
    if _has_text(event) and not (event.get("localization_hints") or {}).get("primary_language"):
        note(
            "should",
            "$.localization_hints.primary_language",
            "events with human-readable text should declare their language",
        )
    producer = event.get("producer") or {}
    for key in PRODUCER_FIELDS:
        if not producer.get(key):
            note("profile", f"$.producer.{key}", "our producer always names itself fully")
    order = {"must": 0, "profile": 1, "should": 2}
    return sorted(found, key=lambda pair: order[pair[0]])


def check_producer_profile(event: Mapping[str, Any], name: str) -> None:
    """Our producer's profile: raise the first finding of any level."""
    for _, finding in spec_findings(event, name):
        raise finding


def _has_text(event: Mapping[str, Any]) -> bool:
    """Whether any human-readable text is present (an empty final chunk is not text)."""
    if any(isinstance(event.get(k), str) and event.get(k) for k in TEXT_FIELDS):
        return True
    progress = event.get("progress")
    return bool(event.get("choices")) or (
        isinstance(progress, Mapping) and bool(progress.get("description"))
    )


@functools.lru_cache(maxsize=1)
def default_validator() -> SchemaValidator:
    """The validator for the discovered schema directory at our producer's profile, built once."""
    return SchemaValidator.from_dir(profile="jupyter-aaep")


def validate_event(event: Mapping[str, Any]) -> None:
    """Validate one message with the cached default :class:`SchemaValidator`."""
    default_validator().validate(event)
