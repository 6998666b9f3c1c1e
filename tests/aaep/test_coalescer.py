from __future__ import annotations

import pytest

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, Session, SessionCompleted, Summary
from jupyter_aaep.aaep.coalescer import OutputCoalescer


def run(deltas: list[str], **options) -> list[dict]:
    emitter = Emitter()
    events = ListSubscriber()
    emitter.subscribe(events)
    session = Session(emitter, Producer(model="claude-test"))
    from jupyter_aaep.aaep import SessionStarted

    session.emit(SessionStarted(summary=Summary("Started.")))
    session.change_state("thinking")
    session.change_state("writing_output")
    out = OutputCoalescer(session, **options)
    for delta in deltas:
        out.feed(delta)
    out.finish()
    out.finish()  # a second finish is a no-op
    with pytest.raises(RuntimeError):
        out.feed("late")
    session.emit(SessionCompleted(summary=Summary("Done.")))
    return events.of_type("output.streaming")


def chunks(events: list[dict]) -> list[str]:
    return [e["chunk"] for e in events]


def test_sentences_are_never_split_and_positions_are_chunk_starts() -> None:
    text = "Hello there. How are you? I am fine! Thanks"
    events = run(list(text))
    assert chunks(events) == ["Hello there. ", "How are you? ", "I am fine! ", "Thanks"]
    assert [e["position"] for e in events] == [0, 13, 26, 37]
    assert [e["complete"] for e in events] == [False, False, False, True]
    assert [e["coalesce_hint"] for e in events] == ["sentence"] * 3 + ["completion"]
    assert len({e["output_id"] for e in events}) == 1


def test_abbreviations_numbers_and_list_items_do_not_end_sentences() -> None:
    events = run(["Use e.g. pandas for this. ", "1. Load the data\n", "2. Plot it"])
    assert chunks(events) == ["Use e.g. pandas for this. ", "1. Load the data\n", "2. Plot it"]


def test_word_and_paragraph_boundaries() -> None:
    assert chunks(run(["one tw", "o three"], boundary="word")) == ["one ", "two ", "three"]
    assert chunks(run(["Para one. Still one.\n", "\nPara two."], boundary="paragraph")) == [
        "Para one. Still one.\n\n",
        "Para two.",
    ]


def test_long_text_without_sentence_end_is_flushed_at_a_word() -> None:
    events = run(["word " * 10 + "tail"], max_buffer=20)
    assert events[0]["chunk"].endswith(" ") and not events[0]["complete"]
    assert "".join(chunks(events)) == "word " * 10 + "tail"


def test_secrets_are_masked_in_output() -> None:
    events = run(["Your key is sk-ant-abcdef123456. Keep it safe."])
    assert "sk-" not in "".join(chunks(events))
    assert "[hidden]" in events[0]["chunk"]


def test_empty_output_still_completes_once() -> None:
    events = run(["", ""])
    assert [(e["chunk"], e["complete"]) for e in events] == [("", True)]
