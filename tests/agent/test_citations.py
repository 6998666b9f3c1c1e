"""Cell citations: words for people, ids only in the extension, never half a markup."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_aaep.aaep import Emitter, ListSubscriber, Producer, Session, SessionCompleted, Summary
from jupyter_aaep.aaep.check import check_events
from jupyter_aaep.aaep.coalescer import OutputCoalescer
from jupyter_aaep.aaep.schema_validation import validate_event
from jupyter_aaep.agent.citations import (
    CITATIONS_CONTEXT,
    CitationRewriter,
    citation_words,
    plain,
)

NUMBERS = {"c1": 1, "ab12-cd": 4}


def stream(deltas: list[str]) -> list[dict]:
    emitter = Emitter()
    events = ListSubscriber()
    emitter.subscribe(events)
    session = Session(emitter, Producer(model="claude-test"))
    from jupyter_aaep.aaep import SessionStarted

    session.emit(SessionStarted(summary=Summary("Started.")))
    session.change_state("thinking")
    session.change_state("writing_output")
    out = OutputCoalescer(session, rewrite=CitationRewriter(NUMBERS))
    for delta in deltas:
        out.feed(delta)
    out.finish()
    session.emit(SessionCompleted(summary=Summary("Done.")))
    return events.events


def test_words_for_each_shape() -> None:
    assert citation_words(4, None, None) == "cell 4"
    assert citation_words(4, 3, None) == "cell 4, line 3"
    assert citation_words(4, 5, 3) == "cell 4, lines 3 to 5"
    assert citation_words(None, 1, 2) == "a cell that no longer exists"
    assert plain("See [[cell:ab12-cd:3-5]] and [[cell:gone]].", NUMBERS) == (
        "See cell 4, lines 3 to 5 and a cell that no longer exists."
    )


def test_the_stream_says_cell_4_and_the_extension_holds_the_id() -> None:
    text = "The mean is in [[cell:ab12-cd]]. It reads [[cell:c1:2-3]] first. Done."
    events = stream([text[i : i + 3] for i in range(0, len(text), 3)])
    outputs = [e for e in events if e["type"].endswith("output.streaming")]
    said = "".join(e["chunk"] for e in outputs)
    assert said == "The mean is in cell 4. It reads cell 1, lines 2 to 3 first. Done."
    assert "ab12" not in said and "[[" not in said
    cited = []
    for event in outputs:
        validate_event(event)  # the official schemas accept the extension
        if "extensions" in event:
            assert event["@context"] == ["https://aaep-protocol.org/context/v1", CITATIONS_CONTEXT]
            for c in event["extensions"]["jaaep"]["citations"]:
                start = event["position"] + c["start"]
                cited.append((said[start : event["position"] + c["end"]], c["cell_id"]))
        else:
            assert event["@context"] == "https://aaep-protocol.org/context/v1"
    assert cited == [("cell 4", "ab12-cd"), ("cell 1, lines 2 to 3", "c1")]
    assert check_events(events) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_any_split_of_the_stream_says_the_same(seed: int) -> None:
    """However the model's deltas cut the markup, listeners get whole words, never markup."""
    text = "A [[cell:c1]] b [[cell:ab12-cd:1-2]]. [[cell:zz]] end [[ce"
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 12)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    outputs = [e for e in stream(deltas) if e["type"].endswith("output.streaming")]
    said = "".join(e["chunk"] for e in outputs)
    assert said == (
        "A cell 1 b cell 4, lines 1 to 2. a cell that no longer exists end [[ce"
    )  # an unfinished tail at the very end is given up as written
    positions = [e["position"] for e in outputs]
    assert positions == sorted(positions)


def test_brackets_that_are_not_citations_pass_through() -> None:
    rewrite = CitationRewriter(NUMBERS)
    assert rewrite("a[0] and [[1, 2]] and [link](x)", True) == (
        "a[0] and [[1, 2]] and [link](x)",
        (),
    )
