"""One bad character in an event is repaired where it is published, never sent as it was."""

from __future__ import annotations

import json
import logging
import math

from jupyter_aaep.aaep.emitter import Emitter, ListSubscriber
from jupyter_aaep.aaep.wire import REPLACEMENT, dumps, has_lone_surrogate, sanitize


def test_clean_values_come_back_unchanged_and_uncopied() -> None:
    event = {"kind": "note", "text": "naïve café 😀", "items": [1, 2.5, True, None, {"a": "b"}]}
    clean, problems = sanitize(event)
    assert clean is event and problems == []
    assert json.loads(dumps(event)) == event


def test_lone_surrogates_are_replaced_wherever_they_are() -> None:
    event = {
        "kind": "note",
        "path": "data\udcff.csv",
        "nested": {"lines": ["ok", "bad \ud800"]},
        "key\udc80": 1,
    }
    clean, problems = sanitize(event)
    assert clean["path"] == f"data{REPLACEMENT}.csv"
    assert clean["nested"]["lines"] == ["ok", f"bad {REPLACEMENT}"]
    assert f"key{REPLACEMENT}" in clean
    assert event["path"] == "data\udcff.csv"  # the original is left alone
    assert sorted(problems) == sorted(
        [
            "path: lone surrogate replaced",
            "nested.lines[1]: lone surrogate replaced",
            "key\udc80: lone surrogate replaced",
        ]
    )
    dumps(clean).encode("utf-8")  # no UnicodeEncodeError


def test_a_surrogate_pair_is_a_character_not_a_problem() -> None:
    text = json.loads('"\\ud83d\\ude00"')
    assert text == "😀" and not has_lone_surrogate(text)
    assert has_lone_surrogate(json.loads('"\\ud83d"'))


def test_what_json_cannot_hold_is_made_representable() -> None:
    loop: list = []
    loop.append(loop)
    deep: list = []
    cursor = deep
    for _ in range(100):
        cursor.append([])
        cursor = cursor[0]
    value = {
        "nan": math.nan,
        "inf": -math.inf,
        "set": {1},
        "tuple": (1, "x"),
        3: "int key",
        "loop": loop,
        "deep": deep,
    }
    clean, problems = sanitize(value)
    assert clean["nan"] is None and clean["inf"] is None
    assert clean["set"] == "{1}" and clean["tuple"] == [1, "x"] and clean["3"] == "int key"
    assert clean["loop"] == [None]
    assert any("nan is not a JSON number" in p for p in problems)
    assert any("a set is not JSON" in p for p in problems)
    assert any("cycle" in p for p in problems)
    text = dumps(value)
    assert json.loads(text)["nan"] is None
    assert "NaN" not in text and "Infinity" not in text


def test_dumps_is_compact_and_keeps_text_readable() -> None:
    assert dumps({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'
    assert dumps({"a": "x\ud800"}) == '{"a":"x\ufffd"}'


def test_the_emitter_repairs_an_event_before_history_and_subscribers(caplog) -> None:
    emitter = Emitter(history_limit=10)
    seen = ListSubscriber()
    emitter.subscribe(seen)
    with caplog.at_level(logging.WARNING, logger="jupyter_aaep.aaep.emitter"):
        emitter.publish({"kind": "kernel.output", "text": "out \udcff"})
        emitter.publish({"kind": "kernel.output", "text": "fine"})
    assert seen.events[0]["text"] == f"out {REPLACEMENT}"
    assert emitter.history[0]["text"] == f"out {REPLACEMENT}"
    assert [e["text"] for e in emitter.history] == [f"out {REPLACEMENT}", "fine"]
    warnings = [r.getMessage() for r in caplog.records]
    assert (
        len(warnings) == 1
        and "kernel.output" in warnings[0]
        and "text: lone surrogate replaced" in warnings[0]
    )


def test_the_quick_check_lets_through_only_what_needs_no_repair() -> None:
    """``sanitize`` first checks without building paths; anything unusual still gets the walk."""
    deep: dict = {}
    cursor = deep
    for _ in range(70):  # plain values, nested past MAX_DEPTH: still cut
        cursor["d"] = {}
        cursor = cursor["d"]
    clean, problems = sanitize({"deep": deep})
    assert clean is not None and any("nested too deeply" in p for p in problems)

    class Text(str):
        pass

    value = {"name": Text("ok"), "pair": ("a", 1)}
    clean, problems = sanitize(value)
    assert clean is not value and clean["pair"] == ["a", 1] and problems == []
    event = {"kind": "note", "lines": ["naïve", {"x": 1.5}], "bad": ["ok", "x\udc80"]}
    clean, problems = sanitize(event)
    assert clean["bad"] == ["ok", f"x{REPLACEMENT}"] and problems == [
        "bad[1]: lone surrogate replaced"
    ]
