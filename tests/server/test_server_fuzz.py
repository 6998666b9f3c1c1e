"""Fuzzing every endpoint and message kind (issue 9): no input gets a 5xx, a WebSocket answers
every frame with an error frame and stays open, and the server still serves a normal session.

Inputs come from ``hypothesis`` with a fixed number of examples and ``derandomize=True``, so
every run sends the same inputs (reproducible in CI). They are drawn first, then sent to one
server: a failure prints the exact input, which is what shrinking would otherwise give.

Two families: *typed* messages are a valid message of one kind with one field (nested ones
too, taken from the kind's spec in ``server/validation.py``) replaced by a value of another
JSON type; *junk* is deep nesting, lone surrogates, huge strings, invalid UTF-8, JSON of the
wrong type and text that is not JSON.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from conftest import read_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import of_type

from jupyter_aaep.server.message_kinds import spec_of
from jupyter_aaep.server.messages import REPLY_TYPES, surrogate_path
from jupyter_aaep.server.validation import (
    Anything,
    Boolean,
    Integer,
    ListOf,
    Number,
    Obj,
    OneOf,
    Shape,
    Text,
)
from jupyter_aaep.testing.fake_anthropic import Turn

EXAMPLES_PER_FAMILY = 250
"""Drawn per family (typed, junk, query strings); the WebSocket gets the typed and junk ones."""

VALID: dict[str, dict[str, Any]] = {
    "new chat": {"notebook_path": "fuzz.ipynb"},
    "user_input": {"kind": "user_input", "text": "Plot column A"},
    "control": {"kind": "control", "action": "revert", "session_id": "sess_abc"},
    "approval_mode": {"kind": "approval_mode", "mode": "ask"},
    "agent": {"kind": "agent", "agent": "Claude Code"},
    "confirmation.reply": {
        "type": "confirmation.reply",
        "reply_token": "rpl_abc",
        "decision": "accept",
        "subscription_id": "sub_abc",
        "timestamp": "2026-05-24T14:22:24.812Z",
        "decided_by": "user:x",
        "decision_rationale": "ok",
        "modified_action": {"a": 1},
        "correlation_id": "c",
    },
    "clarification.reply": {
        "type": "clarification.reply",
        "reply_token": "rpl_abc",
        "response": "Lagos",
        "subscription_id": "sub_abc",
        "timestamp": "2026-05-24T14:22:24.812Z",
        "confidence": 0.5,
    },
    "subscription.request": {
        "type": "subscription.request",
        "aaep_version": "1.0.0",
        "subscriber_id": "fuzz",
        "subscriber_name": "F",
        "subscriber_version": "1",
        "subscriber_manifest_uri": "https://x",
        "correlation_id": "c",
        "extensions": {"x": {}},
        "capabilities": {
            "max_events_per_second": 5,
            "preferred_verbosity": "terse",
            "languages": ["en-US"],
            "supports_confirmation_reply": True,
            "supports_clarification_reply": False,
            "coalesce_boundaries": ["sentence"],
            "event_filters": {"include": ["aaep:agent.*"], "exclude": ["aaep:agent.tool.*"]},
            "supported_conformance_levels": [1, 2],
            "supported_extensions": ["https://e"],
            "cognitive_load": "low",
            "pace_wpm": 180,
            "accept_signed_manifests_only": False,
        },
    },
    "subscription.renegotiate": {
        "type": "subscription.renegotiate",
        "subscription_id": "sub_abc",
        "capabilities": {"preferred_verbosity": "terse", "languages": ["en"]},
        "correlation_id": "c",
    },
    "subscription.close": {
        "type": "subscription.close",
        "subscription_id": "sub_abc",
        "reason_code": "done",
        "reason_message": "bye",
    },
}
MESSAGE_KINDS = [kind for kind in VALID if kind != "new chat"]


def typed_paths(
    shape: Shape, value: Any, path: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], Shape]]:
    """Every place in a valid message whose JSON type the spec fixes, with its shape."""
    found: list[tuple[tuple[Any, ...], Shape]] = []
    if path and not isinstance(shape, Anything):
        found.append((path, shape))
    if isinstance(shape, Obj) and isinstance(value, dict):
        for name, item in value.items():
            child = shape.fields.get(name, shape.other)
            if child is not None and name not in ("kind", "type"):
                found += typed_paths(child, item, (*path, name))
    elif isinstance(shape, ListOf) and isinstance(value, list):
        for index, item in enumerate(value):
            found += typed_paths(shape.item, item, (*path, index))
    return found


def accepts(shape: Shape, value: Any) -> bool:
    try:
        shape.check(value, "x", "x")
    except ValueError:
        return False
    return True


def json_types(shape: Shape) -> set[str]:
    if isinstance(shape, Text):
        return {"str"}
    if isinstance(shape, (Integer, Number)):
        return {"int", "float"} if isinstance(shape, Number) else {"int"}
    if isinstance(shape, Boolean):
        return {"bool"}
    if isinstance(shape, ListOf):
        return {"list"}
    if isinstance(shape, Obj):
        return {"dict"}
    if isinstance(shape, OneOf):
        return set().union(*(json_types(option) for option in shape.options))
    return set()


SURROGATE_TEXT = st.builds(
    lambda a, s, b: a + s + b,
    st.text(max_size=5),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # alone: never a pair
    st.text(max_size=5),
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | SURROGATE_TEXT,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def wrong_typed(draw: Any) -> tuple[str, str, tuple[Any, ...]]:
    """(kind, JSON text, path): a valid message of *kind* with one field of the wrong JSON type."""
    kind = draw(st.sampled_from(list(VALID)))
    message = json.loads(json.dumps(VALID[kind]))
    path, shape = draw(st.sampled_from(typed_paths(spec_of(kind).shape, message)))
    allowed = json_types(shape)
    value = draw(
        JSON_VALUES.filter(lambda v: type(v).__name__ not in allowed and not accepts(shape, v))
    )
    target = message
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return kind, json.dumps(message), path


def _nest(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


JUNK = st.one_of(
    st.integers(33, 4000).map(lambda n: _nest(n, "")),
    st.integers(33, 4000).map(
        lambda n: '{"kind": "user_input", "text": "x", "x": ' + _nest(n, "1") + "}"
    ),
    st.integers(17, 2000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.builds(
        lambda kind, text: json.dumps(
            {
                **VALID[kind],
                **(
                    {"text": text}
                    if kind == "user_input"
                    else {"reply_token": text}
                    if "reply" in kind
                    else {"subscriber_id": text}
                    if kind.startswith("sub")
                    else {"notebook_path": text}
                ),
            }
        ),
        st.sampled_from(list(VALID)),
        SURROGATE_TEXT,
    ),
    st.integers(100_001, 300_000).map(
        lambda n: json.dumps({"kind": "user_input", "text": "a" * n})
    ),
    st.just('{"kind": "user_input", "text": "' + "b" * (1 << 20) + '"}'),
    # our own field on a reply: any "don't ask again" wish, well formed or not
    JSON_VALUES.map(lambda wish: json.dumps({**VALID["confirmation.reply"], "grant": wish})),
    JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(json.dumps),
    st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=4).map(json.dumps),
    st.binary(max_size=40),
    st.text(max_size=40),
)
QUERIES = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=80),
    st.from_regex(r"(evt|sub)_[A-Za-z0-9%]{0,70}", fullmatch=True),
    st.binary(max_size=20).map(lambda b: "".join(f"%{x:02x}" for x in b)),
)


def has_lone_surrogate(raw: str) -> bool:
    return surrogate_path(json.loads(raw)) is not None


def silent_reply(raw: str | bytes) -> bool:
    """A frame the server takes as a reply, which it ignores silently (AAEP §6.3.4), as
    over HTTP: a JSON object of a reply type without lone surrogates (which are refused
    first), whatever its other fields."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses
        return False
    return (
        isinstance(message, dict)
        and "kind" not in message
        and message.get("type") in REPLY_TYPES
        and surrogate_path(message) is None
    )


def draw_all(strategy: Any, count: int = EXAMPLES_PER_FAMILY) -> list[Any]:
    """The same *count* examples of *strategy* on every run."""
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn


@pytest.fixture
def jp_base_url() -> str:
    """The base URL a JupyterHub user's server has, for a user named "a@b" (the hub escapes the
    name in the URL): a ``/user/<name>/`` prefix and pytest-jupyter's escaped ``/a%40b/`` in one."""
    return "/user/a%40b/"


async def test_fuzzed_input_never_gets_a_5xx_and_the_server_keeps_serving(
    api, new_chat, ws, sse, fake_model, jp_http_port, jp_base_url, jp_auth_header, capsys
) -> None:
    typed, junk, queries = draw_all(wrong_typed()), draw_all(JUNK), draw_all(QUERIES)
    chat_id = await new_chat()
    failures: list[str] = []
    sent = server_errors = 0

    def expect(ok: bool, what: str, status: int = 0) -> None:
        nonlocal server_errors
        server_errors += status >= 500
        if not ok:
            failures.append(what)

    # HTTP: every typed input at its own endpoint, every junk input at every POST endpoint
    for kind, raw, path in typed:
        parts = ("chats",) if kind == "new chat" else ("chats", chat_id, "messages")
        status, body, _ = await api(*parts, method="POST", raw=raw)
        sent += 1
        wanted = 204 if kind in REPLY_TYPES and not has_lone_surrogate(raw) else 400
        expect(
            status == wanted and (status == 204 or "." in body["message"]),
            f"{kind} {path}: {status} {body} for {raw[:200]}",
            status,
        )
        if kind in MESSAGE_KINDS:
            status, body, _ = await api("replies", method="POST", raw=raw)
            sent += 1
            expect(status < 500, f"/replies {kind}: {status} {body}", status)
    for raw in junk:
        for parts in (
            ("chats",),
            ("chats", chat_id, "messages"),
            ("replies",),
            ("messages",),
            ("subscriptions",),
        ):
            status, body, _ = await api(*parts, method="POST", raw=raw)
            sent += 1
            expect(
                400 <= status < 500 or (parts == ("chats",) and status == 201) or (status == 204),
                f"{parts} junk: {status} {body} for {raw[:120]!r}",
                status,
            )
    subscriptions = [raw for kind, raw, _ in typed if kind == "subscription.request"]
    for raw in subscriptions:
        status, body, _ = await api(
            "subscriptions", method="POST", raw=raw, params={"chat_id": chat_id}
        )
        sent += 1
        expect(status == 400, f"/subscriptions: {status} {body} for {raw[:300]!r}", status)

    # GET with odd Last-Event-ID and query strings: a 4xx, or a stream that opens (then we leave)
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}aaep/v1/"
    async with httpx.AsyncClient(timeout=10) as client:
        for index, value in enumerate(queries):
            header = (
                {"Last-Event-ID": value}
                if index % 3 == 0 and "\r" not in value and "\n" not in value
                else {}
            )
            name = ("last_event_id", "subscription_id", "notebook_path")[index % 3]
            for path in (f"chats/{chat_id}/events", "events", "chats", f"chats/{value[:20]}"):
                url = f"{base}{path}?{name}={value}" if not header else f"{base}{path}"
                try:
                    async with client.stream(
                        "GET", url, headers={**jp_auth_header, **header}
                    ) as got:
                        status = got.status_code
                except (httpx.InvalidURL, UnicodeEncodeError, httpx.LocalProtocolError):
                    continue  # the client itself refuses to send it
                sent += 1
                expect(status < 500, f"GET {url!r} {header}: {status}", status)

    # WebSocket: every typed and junk frame gets an error frame, and the socket stays open
    connection = await ws(chat_id)
    for frame in [raw for _, raw, _ in typed] + junk:
        await connection.write_message(frame, binary=isinstance(frame, bytes))
        sent += 1
        if silent_reply(frame):
            continue
        try:
            answer = await read_frame(connection, timeout=5)
        except asyncio.TimeoutError:
            failures.append(f"ws: no answer to {str(frame)[:200]!r}")
            continue
        expect(
            answer is not None
            and (answer.get("kind") == "error" or str(answer.get("kind")).endswith(".accepted"))
            and answer.get("status", 0) < 500,
            f"ws: {answer} for {str(frame)[:120]!r}",
            (answer or {}).get("status", 0),
        )
        if answer is None:
            connection = await ws(chat_id)
    await connection.write_message(json.dumps({"kind": "approval_mode", "mode": "ask"}))
    probe = await read_frame(connection)
    expect(
        probe is not None and probe["kind"] == "approval_mode.accepted",
        f"ws after fuzzing: {probe}",
    )
    expect(connection.close_code is None, f"ws closed: {connection.close_code}")
    connection.close()

    # nothing reached the model, and a normal session still works end to end
    expect(
        fake_model.requests == [], f"fuzzing started {len(fake_model.requests)} model request(s)"
    )
    fake_model.add(Turn(text="Still here. All good."))
    async with sse(chat_id) as stream:
        status, body, _ = await api(
            "chats",
            chat_id,
            "messages",
            method="POST",
            body={"kind": "user_input", "text": "Are you there?"},
        )
        assert status == 202, body
        session = await stream.until(of_type("session.completed"), timeout=20)
    assert "".join(m.get("chunk", "") for m in session).startswith("Still here.")
    with capsys.disabled():
        print(
            f"\nfuzz: {sent} inputs sent ({len(typed)} typed, {len(junk)} junk, {len(queries)} query strings), "
            f"{server_errors} answered 5xx, {len(failures)} unexpected answers"
        )
    assert server_errors == 0 and not failures, (
        f"{server_errors} 5xx; {len(failures)} of {sent} inputs got an unexpected answer:\n"
        + "\n".join(failures[:20])
    )
    await asyncio.sleep(0)
