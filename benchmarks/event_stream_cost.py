"""What announcing an answer costs: the AAEP path for streamed text against a plain baseline.

A model answer of about 20 000 characters arrives as 4-character deltas (how the Messages API
streams). The baseline only concatenates the deltas and serialises one JSON message per delta
(what a naive producer would push to a socket). The AAEP path runs the real coalescer, the
session's envelope stamping, the emitter's fan-out to three subscribers and JSON
serialisation of every event delivered. Printed: time per delta for both, their ratio, and
how many messages a listener receives (the point of coalescing: sentences, not tokens).

Run: ``python benchmarks/event_stream_cost.py``
"""

from __future__ import annotations

import json
import time

from jupyter_aaep.aaep import (
    Emitter,
    ListSubscriber,
    Producer,
    Session,
    SessionCompleted,
    SessionStarted,
    Summary,
)
from jupyter_aaep.aaep.coalescer import OutputCoalescer

SENTENCE = "The mean temperature rose by 1.2 degrees over the week, while humidity stayed near 42 percent. "
TEXT = SENTENCE * (20_000 // len(SENTENCE))
DELTAS = [TEXT[i : i + 4] for i in range(0, len(TEXT), 4)]
ROUNDS = 5


def baseline() -> tuple[float, int]:
    started = time.perf_counter()
    sent = 0
    for _ in range(ROUNDS):
        text = ""
        for delta in DELTAS:
            text += delta
            json.dumps({"type": "delta", "text": delta, "position": len(text)})
            sent += 1
    return (time.perf_counter() - started) / ROUNDS, sent // ROUNDS


class Serialising(ListSubscriber):
    def deliver(self, event: dict) -> None:
        json.dumps(event)
        super().deliver(event)


def aaep_path() -> tuple[float, int]:
    started = time.perf_counter()
    delivered = 0
    for _ in range(ROUNDS):
        emitter = Emitter()
        listeners = [Serialising() for _ in range(3)]
        for listener in listeners:
            emitter.subscribe(listener)
        session = Session(emitter, Producer(model="benchmark"))
        session.emit(SessionStarted(summary=Summary("Started.")))
        session.change_state("thinking")
        session.change_state("writing_output")
        output = OutputCoalescer(session)
        for delta in DELTAS:
            output.feed(delta)
        output.finish()
        session.emit(SessionCompleted(summary=Summary("Done.")))
        delivered += len(listeners[0].of_type("output.streaming"))
    return (time.perf_counter() - started) / ROUNDS, delivered // ROUNDS


def main() -> None:
    base_seconds, base_messages = baseline()
    aaep_seconds, chunks = aaep_path()
    per_delta_base = base_seconds / len(DELTAS) * 1e6
    per_delta_aaep = aaep_seconds / len(DELTAS) * 1e6
    print(f"answer:                {len(TEXT):,} characters in {len(DELTAS):,} deltas")
    print(
        f"baseline (json/delta): {per_delta_base:.2f} µs per delta, {base_messages:,} messages to a listener"
    )
    print(
        f"AAEP (3 subscribers):  {per_delta_aaep:.2f} µs per delta, {chunks:,} output.streaming events per listener"
    )
    print(f"cost ratio:            {per_delta_aaep / per_delta_base:.2f}× the baseline per delta")
    print(
        f"messages ratio:        {chunks / base_messages:.4f} (a listener hears sentences, not tokens)"
    )


if __name__ == "__main__":
    main()
