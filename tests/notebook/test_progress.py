"""Reading a cell's progress from its output, and pacing what is heard (no kernel)."""

from __future__ import annotations

import itertools
import time

import pytest

from jupyter_aaep.notebook.progress import ProgressReading, ProgressTracker, parse_progress_text
from jupyter_aaep.notebook.progress_pacing import (
    ProgressPacer,
    heard,
    progress_phrase,
    value_text,
)
from jupyter_aaep.words import duration_words

pytestmark = pytest.mark.shared_server


@pytest.mark.parametrize(
    ("line", "percent", "current", "total", "eta", "what"),
    [
        (" 40%|████      | 40/100 [00:02<00:03, 15.2it/s]", 40, 40, 100, 3, None),
        ("training:  40%|████ | 40/100 [00:02<00:03, 15.20it/s]", 40, 40, 100, 3, "training"),
        ("loss:  7%|▋ | 7k/100k [01:02<13:50, 112it/s]", 7, 7000, 100000, 830, "loss"),
        ("step 40/100", 40, 40, 100, None, "step"),
        ("Epoch 3/10", 30, 3, 10, None, "Epoch"),
        ("epoch 3 of 10 - loss 0.2", 30, 3, 10, None, "epoch"),
        ("40/100 [=====>....] - ETA: 1:05 - loss: 0.1", 40, 40, 100, 65, None),
        ("loading 45%", 45, None, None, None, "loading"),
        # tqdm.notebook's text beside the bar: HTML-escaped, figure spaces.
        ("40/100\u2007[00:02&lt;00:03,\u200715.20it/s]", 40, 40, 100, 3, None),
    ],
)
def test_progress_lines_are_read(line, percent, current, total, eta, what) -> None:
    reading = parse_progress_text(line)
    assert reading is not None
    assert reading.percent == pytest.approx(percent)
    assert reading.current == current and reading.total == total
    assert reading.eta_seconds == eta
    assert reading.description == what


@pytest.mark.parametrize(
    "line", ["", "accuracy 0.91", "date 2024/01", "ratio 7/3", "150%", "x" * 600, "hello world"]
)
def test_lines_without_progress_are_not_taken_for_progress(line) -> None:
    assert parse_progress_text(line) is None


def stream(text: str, name: str = "stderr") -> tuple[str, dict]:
    return "stream", {"name": name, "text": text}


def test_a_carriage_return_bar_is_followed_and_never_goes_back() -> None:
    tracker = ProgressTracker()
    seen = []
    for i, chunk in enumerate(
        [
            "\r  0%|  | 0/50 [00:00<?, ?it/s]",
            "\r 20%|██ | 10/50 [00:01<00:04]",
            "\r 10%|█ | 5/50 [00:01<00:04]",  # a stale redraw: ignored
            "\r 60%|██████ | 30/50 [00:03<00:02]",
            "\r100%|██████████| 50/50 [00:05<00:00]\n",
        ]
    ):
        reading = tracker.feed(*stream(chunk), now=float(i))
        if reading is not None:
            seen.append(reading.percent)
    assert seen == [0, 20, 60, 100]
    assert tracker.reading is not None and tracker.reading.stage == 1
    assert tracker.last_line.startswith("100%")


def test_lines_split_across_messages_are_joined() -> None:
    tracker = ProgressTracker()
    assert tracker.feed(*stream("step 3/", "stdout"), now=0) is None
    reading = tracker.feed(*stream("10\n", "stdout"), now=1)
    assert reading is not None and reading.current == 3 and reading.total == 10


def test_a_second_loop_is_a_new_stage() -> None:
    tracker = ProgressTracker()
    tracker.feed(*stream("epoch 9/10\n", "stdout"), now=0)
    reading = tracker.feed(*stream("batch 1/500\n", "stdout"), now=1)
    assert reading is not None and reading.stage == 2 and reading.total == 500


def comm(kind: str, comm_id: str, **state) -> tuple[str, dict]:
    return kind, {"comm_id": comm_id, "data": {"state": state, "buffer_paths": []}}


def test_widget_progress_bars_are_read_from_their_state() -> None:
    tracker = ProgressTracker()
    tracker.feed(
        *comm(
            "comm_open",
            "w1",
            _model_name="IntProgressModel",
            value=0,
            min=0,
            max=200,
            description="Training",
        ),
        now=0,
    )
    reading = tracker.feed(*comm("comm_msg", "w1", value=50), now=10)
    assert reading is not None
    assert (reading.percent, reading.current, reading.total) == (25, 50, 200)
    assert reading.description == "Training" and reading.source == "widget"
    # No estimate from the widget itself: a linear one from the rate (25 % in 10 s).
    assert reading.eta_seconds == pytest.approx(30)
    # tqdm.notebook's HTML beside the bar gives its own estimate.
    reading = tracker.feed(
        *comm(
            "comm_open",
            "h1",
            _model_name="HTMLModel",
            value="50/200\u2007[00:10&lt;00:42,\u20074.9it/s]",
        ),
        now=10.5,
    )
    assert reading is not None and reading.eta_seconds == 42
    # A float bar without counts.
    tracker = ProgressTracker()
    tracker.feed(
        *comm("comm_open", "f", _model_name="FloatProgressModel", value=0.0, min=0.0, max=1.0),
        now=0,
    )
    reading = tracker.feed(*comm("comm_msg", "f", value=0.5), now=2)
    assert reading is not None and reading.percent == 50 and reading.current is None
    # Other widgets and tqdm's "no total" bar report nothing.
    assert (
        tracker.feed(*comm("comm_open", "b", _model_name="ButtonModel", description="Go"), now=3)
        is None
    )
    assert (
        tracker.feed(
            *comm(
                "comm_open",
                "i",
                _model_name="FloatProgressModel",
                value=1,
                min=0,
                max=1,
                bar_style="info",
            ),
            now=3,
        )
        is None
    )


# -- pacing ------------------------------------------------------------------------------------


def simulate(seconds: float, reading_at, *, step: float = 0.25, **pacer_options) -> list:
    pacer = ProgressPacer(0.0, **pacer_options)
    beats, now = [], 0.0
    while now <= seconds:
        beat = pacer.tick(now, reading_at(now))
        if beat is not None:
            beats.append((now, beat))
        now += step
    return beats


def linear(seconds: float):
    return lambda now: ProgressReading(
        percent=min(100.0, 100 * now / seconds), current=int(now), total=int(seconds)
    )


@pytest.mark.parametrize(
    "reading_at",
    [linear(120), lambda now: None, lambda now: ProgressReading(description="x", current=None)],
)
def test_a_two_minute_cell_is_heard_at_a_bearable_rate(reading_at) -> None:
    beats = simulate(120, reading_at)
    times = [t for t, _ in beats]
    assert all(b - a >= 15 for a, b in itertools.pairwise(times))  # never two within 15 s
    assert all(t >= 15 for t in times)  # nothing in the first 15 s: a short cell says only its end
    normal = [b for _, b in beats if heard(b, "normal")]
    detailed = [b for _, b in beats if heard(b, "detailed")]
    assert not [b for _, b in beats if heard(b, "terse")]
    # start + progress + end at normal verbosity: at most 6 announcements.
    assert 1 <= len(normal) <= 4 and 2 + len(normal) <= 6
    assert len(detailed) > len(normal)


def test_milestones_are_announced_once_each() -> None:
    beats = simulate(600, linear(600))
    milestones = [b.milestone for _, b in beats if b.announce]
    assert milestones == [25, 50, 75]
    percents = [b.reading.percent for _, b in beats]
    assert percents == sorted(percents)


def test_fast_progress_is_held_to_the_gap_and_slow_runs_without_percent_tick_each_minute() -> None:
    beats = simulate(60, linear(20))  # done in 20 s: milestones come faster than the gap
    # Held until 15 s, then only the highest milestone passed is said (75 %), not 25 and 50 too.
    assert [(round(t), b.milestone) for t, b in beats if b.announce] == [(15, 75)]
    beats = simulate(300, lambda now: None, announce_seconds=60)
    assert [round(t) for t, b in beats if b.announce] == [60, 120, 180, 240, 300]


def test_the_gap_counts_from_when_the_event_went_out() -> None:
    """A beat decided at 15 s whose event reached its listeners only at 27 s (the server
    stalled meanwhile): the next waits 15 s from 27, not from 15 (a CI run at load 12 heard
    two events 0.34 s apart for a 1-s gap when it counted from the tick)."""
    pacer, reading_at = ProgressPacer(0.0, min_gap=15), linear(120)
    assert pacer.tick(15, reading_at(15)) is not None
    pacer.sent(27)
    assert pacer.tick(30, reading_at(30)) is None and pacer.tick(41.75, reading_at(41.75)) is None
    assert pacer.tick(42, reading_at(42)) is not None
    pacer.sent(41)  # a clock reading before the tick's own changes nothing
    assert pacer.tick(56.75, reading_at(56.75)) is None and pacer.tick(57, reading_at(57))
    # The periodic announcement without a percent counts from when it was heard too.
    pacer = ProgressPacer(0.0, announce_seconds=60, min_gap=15)
    announced = [pacer.tick(t, None) for t in (15, 30, 45, 60)]
    assert [b.announce for b in announced if b] == [False, False, False, True]
    pacer.sent(70)
    announced = [pacer.tick(t, None) for t in (85, 100, 120, 135)]
    assert [b.announce for b in announced if b] == [False, False, False, True]  # 120 is too soon


def test_words() -> None:
    assert duration_words(40) == "40 s"
    assert duration_words(130) == "2 min 10 s"
    assert duration_words(3900) == "1 h 5 min"
    assert duration_words(130, short=False) == "2 minutes 10 seconds"
    reading = ProgressReading(
        percent=40, current=40, total=100, description="training", eta_seconds=178
    )
    assert progress_phrase(reading) == "training 40 of 100, about 3 min left"
    assert value_text(reading, 130) == "training 40 of 100, about 3 minutes left"
    assert value_text(None, 130) == "running for 2 minutes 10 seconds"
    assert progress_phrase(ProgressReading(percent=45.2)) == "45 %"


def test_a_flood_joined_into_one_chunk_is_read_from_its_end_only() -> None:
    """The executor joins a flood into one chunk: only its last lines are parsed (a line of
    99 digits costs the number patterns milliseconds: 200,000 of them took minutes)."""
    tracker = ProgressTracker()
    digits = "".join(f"{i:099d}\n" for i in range(5_000))
    started = time.perf_counter()
    tracker.feed("stream", {"name": "stdout", "text": digits}, 0.0)
    assert time.perf_counter() - started < 1.0
    assert tracker.reading is None and tracker.last_line == f"{4999:099d}"
    tracker.feed(
        "stream", {"name": "stdout", "text": digits + "\r 40%|##| 40/100 [00:02<00:03]"}, 0.1
    )
    reading = tracker.reading
    assert reading is not None and reading.current == 40 and reading.total == 100
    tracker.feed("stream", {"name": "stdout", "text": "\r 41%|##| 41/100 [00:02<00:03]"}, 0.2)
    assert tracker.reading is not None and tracker.reading.current == 41
    assert tracker.last_line.startswith("41%")
