"""AAEP 1.0.0 sequence checker for the events our producer emits.

JSON Schemas can only judge one event at a time; the AAEP rules that matter most to a
screen-reader user are about *order*: a session is bracketed, tool calls pair up, an
irreversible action never runs without an accepted confirmation, streamed output
finishes. This module checks those rules incrementally, so it can watch a live stream
(``SequenceChecker.feed``) as well as a recorded JSONL log (``check_events``, or
``python -m jupyter_aaep.aaep.check FILE.jsonl``). It is deliberately stricter than the
specification where our own producer promises more (explicit urgency, every confirmation
linked to its tool call, tool events only inside ``calling_tool``).

Standard library only. The CLI also validates each message against the AAEP JSON Schemas
shipped in the package (or ``--schemas DIR``) when jsonschema is installed, importing it lazily,
at the specification's levels: a MUST it breaks is a violation (exit 1), a SHOULD it misses a
warning (printed; exit 0). ``--profile jupyter-aaep`` holds a stream to our own producer's
stricter promises (every SHOULD, a fully named producer), as this project's tests do.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from jupyter_aaep.aaep import _check_rules as r
from jupyter_aaep.aaep._check_rules import RuleBreach, SessionState
from jupyter_aaep.aaep.schema_validation import Profile, SchemaValidator, SchemaViolation
from jupyter_aaep.words import plural

__all__ = ["SequenceChecker", "SequenceViolation", "check_events", "main"]

#: Message types that are part of AAEP but are not events (no ``@context``); the CLI
#: validates them against the handshake schemas yet the sequence rules ignore them.
HANDSHAKE_TYPES = frozenset(
    {
        "subscription.request",
        "subscription.accepted",
        "subscription.rejected",
        "confirmation.reply",
        "clarification.reply",
    }
)


class SequenceViolation(ValueError):
    """One broken rule, with enough context to find the event in a log.

    ``index`` is the 0-based position of the event among everything fed to the checker
    (``None`` for end-of-stream findings); ``rule`` is the number in :data:`RULES`.
    """

    def __init__(
        self,
        rule: int,
        reason: str,
        *,
        session_id: str | None,
        event_type: str | None = None,
        event_id: str | None = None,
        index: int | None = None,
    ) -> None:
        self.rule = rule
        self.reason = reason
        self.session_id = session_id
        self.event_type = event_type
        self.event_id = event_id
        self.index = index
        super().__init__(self._compose())

    def _compose(self) -> str:
        """Render one sentence: rule, where, why."""
        head = f"rule {self.rule} ({r.RULES[self.rule]}) broken"
        if self.index is None:
            where = f"in session {self.session_id} at end of stream"
        elif self.event_type is None:
            where = f"by message #{self.index}"
        else:
            where = f"by event #{self.index} {self.event_type} {self.event_id}"
            if self.session_id is not None:
                where += f" in session {self.session_id}"
        return f"{head} {where}: {self.reason}"


RULES = r.RULES


def _name_of(event_type: Any) -> str | None:
    """Core event name (``tool.invoked``) of a compact type, else ``None``."""
    if isinstance(event_type, str) and event_type.startswith(r.CORE_PREFIX):
        return event_type[len(r.CORE_PREFIX) :]
    return None


class SequenceChecker:
    """Incremental checker: ``feed`` each event, then ``finish`` at end of stream.

    After a violation in a session, that session's later events are ignored, so one bug
    yields one message rather than a cascade; other sessions keep being checked.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, SessionState] = {}
        self._event_ids: set[str] = set()
        self._reply_tokens: dict[str, str] = {}
        self._index = -1
        self.events_checked = 0
        self.skipped = 0

    @property
    def sessions(self) -> dict[str, SessionState]:
        """Per-session state by ``session_id`` (a copy of the mapping, for debugging)."""
        return dict(self._sessions)

    def feed(self, event: Mapping[str, Any]) -> None:
        """Check one message; raise :class:`SequenceViolation` on the first broken rule.

        Messages without ``@context`` (transport acks, handshake messages) are skipped.
        """
        self._index += 1
        if not isinstance(event, Mapping):
            raise SequenceViolation(
                1,
                f"the message is a JSON {type(event).__name__}, not an object.",
                session_id=None,
                event_type=None,
                event_id=None,
                index=self._index,
            )
        if "@context" not in event:
            self.skipped += 1
            return
        self.events_checked += 1
        sid = event.get("session_id")
        session = self._sessions.get(sid) if isinstance(sid, str) else None
        if session is not None and session.violation is not None:
            self._remember_event_id(event)
            return
        try:
            self._check(event)
        except RuleBreach as breach:
            violation = self._violation(breach, event)
            if session is None and isinstance(sid, str):
                session = self._sessions.setdefault(sid, SessionState(sid))
            if session is not None:
                session.violation = str(violation)
            raise violation from None

    def finish(self) -> None:
        """End-of-stream rules; raise the first violation found."""
        for violation in self._end_violations():
            raise violation

    # ------------------------------------------------------------------ internals

    def _violation(self, breach: RuleBreach, event: Mapping[str, Any]) -> SequenceViolation:
        sid = event.get("session_id")
        return SequenceViolation(
            breach.rule,
            breach.reason,
            session_id=sid if isinstance(sid, str) else repr(sid),
            event_type=str(event.get("type")),
            event_id=str(event.get("event_id")),
            index=self._index,
        )

    def _end_violations(self) -> Iterator[SequenceViolation]:
        for sid, s in self._sessions.items():
            if s.violation is None and s.started_event is not None and s.terminal_event is None:
                s.violation = "no terminal event"
                yield SequenceViolation(
                    2,
                    f"the session started ({s.started_event}) but never sent "
                    "session.completed, session.errored or session.cancelled.",
                    session_id=sid,
                )

    def _remember_event_id(self, event: Mapping[str, Any]) -> None:
        event_id = event.get("event_id")
        if isinstance(event_id, str):
            self._event_ids.add(event_id)

    def _check(self, event: Mapping[str, Any]) -> None:
        """Run the stream-wide rules, then the session's rules for this event's type."""
        event_type = event.get("type")
        name = self._check_envelope(event, event_type)
        session = self._session_for(event)
        r.check_bracketing(session, name)
        r.check_time_and_sequence(session, event, name)
        r.check_urgency(event, name)
        if name in ("awaiting.confirmation", "awaiting.clarification"):
            self._check_reply_token(event)
        handler = r.HANDLERS.get(name or "")
        if handler is not None:
            handler(session, event)
        session.event_count += 1
        if name == "session.started":
            session.started_event = str(event["event_id"])
        elif name in r.TERMINAL_NAMES:
            r.check_nothing_open(session)
            session.terminal_event = str(event["event_id"])

    def _check_envelope(self, event: Mapping[str, Any], event_type: Any) -> str | None:
        """Rule 1 parts that need no session: context, type, ids; returns the core name."""
        r.check_context(event)
        if not isinstance(event_type, str) or not event_type:
            raise RuleBreach(1, f"type {event_type!r} is not a non-empty string.")
        if event_type.startswith(r.URI_TYPE_PREFIX):
            raise RuleBreach(1, "use the compact aaep:agent.<family>.<name> form for core types.")
        name = _name_of(event_type)
        if name is not None and name not in r.CORE_NAMES:
            raise RuleBreach(1, f"{event_type!r} is not one of the 12 core AAEP event types.")
        event_id = event.get("event_id")
        if not isinstance(event_id, str) or r.EVENT_ID_RE.fullmatch(event_id) is None:
            raise RuleBreach(1, f"event_id {event_id!r} does not match evt_ + 1-64 letters/digits.")
        if event_id in self._event_ids:
            raise RuleBreach(1, f"event_id {event_id} was already used earlier in the stream.")
        self._event_ids.add(event_id)
        sid = event.get("session_id")
        if not isinstance(sid, str) or r.SESSION_ID_RE.fullmatch(sid) is None:
            raise RuleBreach(1, f"session_id {sid!r} does not match sess_ + 1-64 letters/digits.")
        return name

    def _session_for(self, event: Mapping[str, Any]) -> SessionState:
        sid = str(event["session_id"])
        if sid not in self._sessions:
            self._sessions[sid] = SessionState(sid)
        return self._sessions[sid]

    def _check_reply_token(self, event: Mapping[str, Any]) -> None:
        """Rule 9: tokens are well formed and never reused anywhere in the stream."""
        token = event.get("reply_token")
        if not isinstance(token, str) or r.REPLY_TOKEN_RE.fullmatch(token) is None:
            raise RuleBreach(9, f"reply_token {token!r} does not match rpl_ + 1-64 letters/digits.")
        earlier = self._reply_tokens.get(token)
        if earlier is not None:
            raise RuleBreach(9, f"reply_token {token} was already used by event {earlier}.")
        self._reply_tokens[token] = str(event.get("event_id"))


def _iter_violations(
    checker: SequenceChecker, events: Iterable[Mapping[str, Any]]
) -> Iterator[SequenceViolation]:
    """Feed everything, yielding each violation instead of stopping at the first."""
    for event in events:
        try:
            checker.feed(event)
        except SequenceViolation as violation:
            yield violation
    yield from checker._end_violations()


def check_events(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every violation in ``events`` as a message; empty when the stream is clean."""
    return [str(v) for v in _iter_violations(SequenceChecker(), events)]


# ---------------------------------------------------------------------- command line


class _Unreadable(Exception):
    """Input that cannot be parsed at all (exit status 2)."""


def _read_jsonl(paths: list[Path]) -> list[tuple[str, Any]]:
    """All non-blank lines of all files as (``file:line``, parsed JSON) pairs."""
    records: list[tuple[str, Any]] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _Unreadable(f"{path}: cannot read: {exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise _Unreadable(
                    f"{path}:{number}: line {number} is not valid JSON: {exc.msg}"
                ) from None
    return records


def _schema_checker(
    schema_dir: str | None, *, wanted: bool = True, profile: Profile = "spec"
) -> tuple[Any, type[Exception]] | None:
    """A ``SchemaValidator`` for ``schema_dir`` (default: the schemas shipped in the package,
    or ``$AAEP_SCHEMA_DIR``), or ``None`` when not wanted or jsonschema cannot check them.

    Without jsonschema the sequence rules still run, with a note; a folder named with
    ``--schemas`` that cannot be used is an error (``FileNotFoundError``/``RuntimeError``)."""
    if not wanted:
        return None
    if importlib.util.find_spec("jsonschema") is None:
        print(
            "note: jsonschema is not installed, so schema validation was skipped "
            "(pip install 'jsonschema[format]' to enable it)."
        )
        return None
    try:
        validator = SchemaValidator.from_dir(schema_dir, profile=profile)
    except RuntimeError as exc:
        if schema_dir is not None:
            raise
        print(f"note: schema validation was skipped: {exc}.")
        return None
    return validator, SchemaViolation


def _wants_schema(message: Any) -> bool:
    return isinstance(message, Mapping) and (
        "@context" in message or message.get("type") in HANDSHAKE_TYPES
    )


def main(argv: list[str] | None = None) -> int:
    """Check JSONL event logs; exit 0 clean, 1 violations, 2 unreadable input."""
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_aaep.aaep.check",
        description="Check AAEP 1.0.0 event logs (one JSON message per line).",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE.jsonl")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--schemas",
        metavar="DIR",
        help="validate each message against the AAEP JSON Schemas in DIR "
        "(default: the AAEP 1.0.0 schemas shipped with jupyter-aaep, or $AAEP_SCHEMA_DIR)",
    )
    which.add_argument(
        "--no-schemas",
        action="store_true",
        help="check the sequence rules only, without JSON Schema validation",
    )
    parser.add_argument(
        "--profile",
        choices=("spec", "jupyter-aaep"),
        default="spec",
        help="spec (default): AAEP 1.0.0's MUSTs are violations and its SHOULDs warnings; "
        "jupyter-aaep: also hold the stream to jupyter-aaep's own producer profile (every SHOULD, "
        "aaep_version 1.0.0, a producer with agent_version, agent_name and model)",
    )
    args = parser.parse_args(argv)
    try:
        records = _read_jsonl(args.files)
        schemas = _schema_checker(args.schemas, wanted=not args.no_schemas, profile=args.profile)
    except (_Unreadable, FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    checker = SequenceChecker()
    problems = warnings = 0
    for where, message in records:
        if schemas is not None and _wants_schema(message):
            validator, schema_error = schemas
            try:
                for warning in validator.validate(message) or ():
                    warnings += 1
                    print(f"{where}: warning (SHOULD): {warning}")
            except schema_error as exc:
                problems += 1
                print(f"{where}: schema: {exc}")
        try:
            checker.feed(message)
        except SequenceViolation as violation:
            problems += 1
            print(f"{where}: {violation}")
    for finding in checker._end_violations():
        problems += 1
        print(finding)
    print(
        f"checked {plural(checker.events_checked, 'event')} in "
        f"{plural(len(checker.sessions), 'session')}: {plural(problems, 'violation')}"
        + (f", {plural(warnings, 'warning')}" if warnings else "")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
