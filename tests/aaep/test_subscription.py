"""Per-subscription delivery: filters, verbosity, boundaries, token bucket, critical bypass."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_aaep.aaep import Emitter, Producer, Session
from jupyter_aaep.aaep.capabilities import EventFilter, Terms
from jupyter_aaep.aaep.coalescer import OutputCoalescer
from jupyter_aaep.aaep.emitter import SubscriberOverflow
from jupyter_aaep.aaep.events import (
    AwaitingConfirmation,
    Progress,
    ProgressUpdated,
    SessionCompleted,
    SessionErrored,
    SessionStarted,
    Summary,
    ToolCompleted,
    ToolInvoked,
)
from jupyter_aaep.aaep.ids import new_reply_token
from jupyter_aaep.aaep.subscription import Subscription
from jupyter_aaep.aaep.token_bucket import TokenBucket

pytestmark = pytest.mark.open_sessions  # delivery is what is tested here, not whole sessions


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def started(session: Session) -> None:
    session.emit(
        SessionStarted(
            summary=Summary("Started.", terse="Go.", detailed="Started working, in detail.")
        )
    )


def tool_call(session: Session) -> None:
    session.change_state("calling_tool")
    session.emit(
        ToolInvoked(tool="lookup", tool_call_id="call_1", summary=Summary("Looking it up."))
    )
    session.emit(
        ToolCompleted(
            tool="lookup", status="success", tool_call_id="call_1", summary=Summary("Found it.")
        )
    )


def confirmation(session: Session) -> dict:
    session.change_state("awaiting_input")
    return session.emit(
        AwaitingConfirmation(
            action="Delete the table.",
            consequence="It cannot be undone.",
            reply_token=new_reply_token(),
            timeout_seconds=300,
            default_decision="reject",
            risk_level="high",
            irreversible=True,
            summary=Summary("Approve deleting the table?"),
        )
    )


def answer(session: Session, text: str) -> None:
    session.change_state("writing_output")
    out = OutputCoalescer(session)
    out.feed(text)
    out.finish()


def completed(session: Session) -> None:
    session.emit(SessionCompleted(summary=Summary("Done.")))


def setup(terms: Terms, clock: Clock | None = None) -> tuple[Session, Subscription]:
    emitter = Emitter()
    subscription = Subscription(terms, clock=clock or Clock())
    emitter.subscribe(subscription)
    return Session(emitter, Producer(model="m")), subscription


def names(messages: list[dict]) -> list[str]:
    return [str(m.get("type", m.get("kind"))).removeprefix("aaep:agent.") for m in messages]


def test_filters_exclude_but_critical_events_pass(aaep_schema_validator) -> None:
    terms = Terms(
        event_filter=EventFilter(exclude=("aaep:agent.tool.*", "aaep:agent.state.changed")),
        supports_confirmation_reply=True,
    )
    session, subscription = setup(terms)
    started(session)
    tool_call(session)
    confirmation(session)
    session.change_state("thinking")
    session.emit(SessionErrored(error_category="permanent", summary=Summary("Broken.")))
    delivered = subscription.take_ready()
    assert names(delivered) == ["session.started", "awaiting.confirmation", "session.errored"]
    for event in delivered:
        aaep_schema_validator.validate(event)


def test_include_filter_with_exact_type_and_uri_form() -> None:
    terms = Terms(
        event_filter=EventFilter(include=("https://aaep-protocol.org/types/agent.session.*",))
    )
    session, subscription = setup(terms)
    started(session)
    tool_call(session)
    completed(session)
    assert names(subscription.take_ready()) == ["session.started", "session.completed"]


def test_prompts_go_only_to_subscribers_that_can_answer() -> None:
    session, mute = setup(Terms())
    replying = Subscription(Terms.implicit(can_reply=True))
    session.emitter.subscribe(replying)
    started(session)
    confirmation(session)
    assert "awaiting.confirmation" not in names(mute.take_ready())
    assert "awaiting.confirmation" in names(replying.take_ready())


@pytest.mark.parametrize("verbosity", ["terse", "normal", "detailed"])
def test_verbosity_shapes_summaries(aaep_schema_validator, verbosity) -> None:
    session, subscription = setup(Terms(preferred_verbosity=verbosity))
    started(session)
    event = subscription.take_ready()[0]
    aaep_schema_validator.validate(event)
    assert event["verbosity"] == verbosity and event["summary_normal"] == "Started."
    assert ("summary_detailed" in event) is (verbosity != "terse")
    assert event["summary_terse"] == "Go."


def test_rate_limit_merges_states_and_chunks_and_keeps_outputs_valid(aaep_schema_validator) -> None:
    clock = Clock()
    session, subscription = setup(Terms(max_events_per_second=1), clock)
    # A non-AAEP message (here the conformance switch's acknowledgement) takes a token too.
    session.emitter.publish({"kind": "user_input.accepted", "session_id": session.id})
    started(session)
    session.change_state("thinking")
    answer(session, "One sentence here. Two sentences here. Three at the end.")
    completed(session)
    seen: list[dict] = []
    for _ in range(10):
        ready = subscription.take_ready()
        assert len(ready) <= 1, "never more than one message per token"
        seen += ready
        clock.now += 1.0
    assert names(seen) == [
        "user_input.accepted",
        "session.started",
        "state.changed",
        "output.streaming",
        "session.completed",
    ]
    state, chunk = seen[2], seen[3]
    assert (state["from_state"], state["to_state"]) == ("idle", "writing_output")
    assert chunk["chunk"] == "One sentence here. Two sentences here. Three at the end."
    assert (
        chunk["position"] == 0
        and chunk["complete"] is True
        and chunk["coalesce_hint"] == "completion"
    )
    for event in seen[1:]:
        aaep_schema_validator.validate(event)


def test_critical_bypasses_the_bucket_after_its_own_sessions_backlog() -> None:
    clock = Clock()
    emitter = Emitter()
    subscription = Subscription(
        Terms(max_events_per_second=1, supports_confirmation_reply=True), clock=clock
    )
    emitter.subscribe(subscription)
    first = Session(emitter, Producer(model="m"))
    other = Session(emitter, Producer(model="m"))
    started(first)
    assert subscription.take_ready()[0]["session_id"] == first.id  # the only token
    started(other)
    tool_call(first)
    confirmation(first)
    ready = subscription.take_ready()
    # The confirmation goes out at once, after its own session's backlog (in order, free of the
    # bucket); the other session keeps its place and waits for the next token.
    assert names(ready) == [
        "state.changed",
        "tool.invoked",
        "tool.completed",
        "state.changed",
        "awaiting.confirmation",
    ]
    assert [e["session_id"] for e in ready] == [first.id] * 5
    clock.now += 1
    assert subscription.take_ready() == [], "the flushed backlog put the bucket into debt"
    clock.now += 4
    assert [e["session_id"] for e in subscription.take_ready()] == [other.id]
    assert subscription.take_ready() == []


def test_boundaries_hold_chunks_until_a_negotiated_boundary(aaep_schema_validator) -> None:
    session, subscription = setup(Terms(coalesce_boundaries=("paragraph", "completion")))
    started(session)
    session.change_state("writing_output")
    out = OutputCoalescer(session)
    for piece in ("First sentence. ", "Second sentence.\n\n", "Next paragraph. "):
        out.feed(piece)
    ready = subscription.take_ready()
    chunks = [e for e in ready if e["type"].endswith("output.streaming")]
    assert [c["chunk"] for c in chunks] == ["First sentence. Second sentence.\n\n"]
    assert chunks[0]["coalesce_hint"] == "paragraph"
    out.feed("More. ")
    assert subscription.take_ready() == []  # still inside the paragraph
    out.finish()
    last = subscription.take_ready()
    assert [c["chunk"] for c in last] == ["Next paragraph. More. "]
    assert (
        last[0]["position"] == len("First sentence. Second sentence.\n\n") and last[0]["complete"]
    )
    for event in chunks + last:
        aaep_schema_validator.validate(event)


def test_word_only_subscribers_get_sentences_labelled_word() -> None:
    session, subscription = setup(Terms(coalesce_boundaries=("word",)))
    started(session)
    session.change_state("writing_output")
    out = OutputCoalescer(session)
    chunks = []
    for piece in ("Hello there. ", "Bye."):
        out.feed(piece)
        chunks += subscription.take_ready()
    out.finish()
    chunks += subscription.take_ready()
    chunks = [e for e in chunks if e["type"].endswith("output.streaming")]
    assert [(c["chunk"], c["coalesce_hint"]) for c in chunks] == [
        ("Hello there. ", "word"),
        ("Bye.", "word"),
    ]


def test_progress_updates_collapse_to_the_latest_under_pressure() -> None:
    clock = Clock()
    session, subscription = setup(Terms(max_events_per_second=1), clock)
    started(session)
    for percent in (10, 20, 30):
        session.emit(
            ProgressUpdated(
                progress=Progress(percent=percent), summary=Summary(f"{percent} percent.")
            )
        )
    assert names(subscription.take_ready()) == ["session.started"]
    clock.now += 1
    progress = subscription.take_ready()
    assert len(progress) == 1 and progress[0]["progress"]["percent"] == 30


def test_state_changes_that_cancel_out_are_dropped_but_leaving_awaiting_input_is_kept() -> None:
    clock = Clock()
    session, subscription = setup(
        Terms(max_events_per_second=1, supports_confirmation_reply=True), clock
    )
    started(session)
    session.change_state("thinking")
    session.change_state("calling_tool")
    session.change_state("thinking")
    session.change_state("idle")
    assert names(subscription.take_ready()) == ["session.started"]
    clock.now += 5
    assert subscription.take_ready() == []  # idle → … → idle says nothing
    confirmation(session)
    session.change_state("thinking")
    session.change_state("calling_tool")
    flushed = subscription.take_ready()
    assert names(flushed) == ["state.changed", "awaiting.confirmation"]
    clock.now += 1
    resolved = subscription.take_ready()
    assert [(m["from_state"], m["to_state"]) for m in resolved] == [("awaiting_input", "thinking")]


def test_renegotiated_terms_apply_to_what_is_still_queued() -> None:
    clock = Clock()
    session, subscription = setup(Terms(max_events_per_second=1), clock)
    started(session)
    tool_call(session)
    assert len(subscription.take_ready()) == 1
    subscription.update_terms(Terms())
    assert names(subscription.take_ready()) == ["state.changed", "tool.invoked", "tool.completed"]


def test_control_messages_jump_the_queue_and_survive_close() -> None:
    session, subscription = setup(Terms(max_events_per_second=1))
    started(session)
    started_twice = Session(session.emitter, Producer(model="m"))
    started(started_twice)
    subscription.send_control({"type": "subscription.accepted"})
    subscription.close()
    assert subscription.take_ready() == [{"type": "subscription.accepted"}]
    session.emitter.publish({"kind": "late"})
    assert subscription.pending() == 0


def test_release_hands_back_the_backlog_as_emitted() -> None:
    session, subscription = setup(Terms(max_events_per_second=1, preferred_verbosity="terse"))
    started(session)
    completed(session)
    subscription.take_ready()
    leftovers = subscription.release()
    assert [e["type"] for e in leftovers] == ["aaep:agent.session.completed"]
    assert leftovers[0]["verbosity"] == "normal" and subscription.closed


def test_a_stalled_subscriber_overflows() -> None:
    subscription = Subscription(Terms(), max_pending=2)
    subscription.deliver({"kind": "a"})
    subscription.deliver({"kind": "b"})
    with pytest.raises(SubscriberOverflow):
        subscription.deliver({"kind": "c"})


async def test_next_waits_for_tokens_and_new_messages() -> None:
    subscription = Subscription(Terms(max_events_per_second=20))
    for n in range(3):
        subscription.deliver({"kind": "note", "session_id": f"sess_{n}", "n": n})
    loop = asyncio.get_running_loop()
    start = loop.time()
    got = [await subscription.next() for _ in range(3)]
    assert [m["n"] for m in got] == [0, 1, 2]
    assert loop.time() - start < 1.0
    waiter = asyncio.ensure_future(subscription.next())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    subscription.deliver({"kind": "note", "n": 3})
    assert (await asyncio.wait_for(waiter, 1))["n"] == 3
    closing = asyncio.ensure_future(subscription.next())
    await asyncio.sleep(0)
    subscription.close()
    assert await asyncio.wait_for(closing, 1) is None


def test_token_bucket_refills_smoothly() -> None:
    clock = Clock()
    bucket = TokenBucket(2, clock=clock)
    assert bucket.take() and bucket.take() and not bucket.take()
    assert bucket.wait_time() == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.take() and not bucket.take()
    bucket.set_rate(None)
    assert bucket.take() and bucket.wait_time() == 0
    bucket.set_rate(1)
    assert bucket.take() and not bucket.take()
    assert TokenBucket(None).take()
    clock.now += 10
    bucket.spend()
    bucket.spend()  # into debt: one token owed, and one more to spend
    assert not bucket.take() and bucket.wait_time() == pytest.approx(2.0)


def test_renegotiated_filter_applies_to_later_events() -> None:
    """The filter's verdict is remembered per event type; new terms forget it."""
    session, subscription = setup(Terms())
    started(session)

    def progress() -> list[str]:
        session.emit(ProgressUpdated(progress=Progress(description="Half way.")))
        return names(subscription.take_ready())

    assert progress() == ["session.started", "progress.updated"]
    subscription.update_terms(Terms(event_filter=EventFilter(exclude=("aaep:agent.progress.*",))))
    assert progress() == []
    subscription.update_terms(Terms())
    assert progress() == ["progress.updated"]


async def test_a_message_the_transport_sent_at_once_does_not_wake_the_sender() -> None:
    """``on_queued`` took everything: ``next()`` stays asleep (waking it to find nothing cost
    every message a loop step per subscriber); what the transport left wakes it."""
    session, subscription = setup(Terms())
    sent: list[dict] = []
    subscription.on_queued = lambda: sent.extend(subscription.take_ready())
    waiting = asyncio.ensure_future(subscription.next())
    await asyncio.sleep(0)
    started(session)
    assert names(sent) == ["session.started"] and not subscription._wakeup.is_set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert not waiting.done()
    subscription.on_queued = None  # the transport holds back (a slow client): next() sends
    completed(session)
    assert names([await asyncio.wait_for(waiting, 5)]) == ["session.completed"]
