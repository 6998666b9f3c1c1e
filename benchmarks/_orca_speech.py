"""What speech-dispatcher did with each of Orca's messages, read from its level-5 log.

The log records, per message, what its client (Orca) was told over SSIP:

- ``Queueing message |<speak>…</speak>| with priority N`` then ``REPLY:|225-ID``: queued;
- ``REPLY:|701-ID`` begin (playing starts), ``REPLY:|702-ID`` end (played to the end),
  ``REPLY:|703-ID`` cancelled: cut if it had begun, dropped if it never did;
- ``REPLY:|700-ID`` then ``700-<start>:<end>``: Orca's index mark before each word, sent back
  when playback reaches that word (audio time, so it says which words were really heard).

Orca's marks name character offsets in the text it spoke, which is the SSML with the tags
removed. Everything here is plain parsing; no process is started.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

_STAMP = re.compile(r"^\[\w{3} (\w{3} +\d+ \d\d:\d\d:\d\d \d{4}) : (\d+)\]")
_QUEUE = re.compile(r"Queueing message \|(.*)")
_QUEUE_END = re.compile(r"(.*)\| with priority (\d+)\s*$", re.DOTALL)
_REPLY = re.compile(r"REPLY:\|(\d{3})-(\d+)\s*$")
_TAG = re.compile(r"<[^>]*>")
_WORD = re.compile(r"[\w']+")


def words(text: str) -> list[str]:
    """Lower-case words, the unit speech is compared in (punctuation is spoken or not by the
    synthesiser's settings, so it is left out)."""
    return [w.lower().strip("'") for w in _WORD.findall(text) if w.strip("'")]


@dataclass
class Utterance:
    """One message Orca gave speech-dispatcher."""

    msg_id: int
    text: str
    queued: float
    begun: float | None = None
    ended: float | None = None
    cancelled: float | None = None
    marks: list[tuple[float, int]] = field(default_factory=list)
    """(time the word started playing, its character offset)."""

    @property
    def status(self) -> str:
        if self.ended is not None:
            return "played"
        if self.cancelled is not None:
            return "cut" if self.begun is not None else "dropped"
        return "playing" if self.begun is not None else "queued"

    @property
    def finished(self) -> float | None:
        return self.ended if self.ended is not None else self.cancelled

    def word_spans(self) -> list[tuple[str, int]]:
        return [
            (m.group(0).lower().strip("'"), m.start())
            for m in _WORD.finditer(self.text)
            if m.group(0).strip("'")
        ]

    def heard_upto(self) -> int:
        """Character offset up to which the utterance was heard (its length when played)."""
        if self.status == "played":
            return len(self.text)
        if not self.marks:
            return 0
        last = max(offset for _, offset in self.marks)
        # The word at the last mark was (at least partly) heard: count it.
        match = _WORD.search(self.text, last)
        return match.end() if match else len(self.text)

    def heard_text(self) -> str:
        return self.text[: self.heard_upto()].strip()

    def time_at(self, offset: int) -> float | None:
        """When the word at *offset* started playing (None if never)."""
        if self.begun is None or offset >= self.heard_upto():
            return None
        reached = [t for t, at in self.marks if at <= offset]
        return max(reached) if reached else self.begun


_SECONDS: dict[str, float] = {}


def _stamp(line: str) -> float | None:
    match = _STAMP.match(line)
    if not match:
        return None
    second = match.group(1)
    if second not in _SECONDS:
        _SECONDS[second] = time.mktime(
            time.strptime(second.replace("  ", " "), "%b %d %H:%M:%S %Y")
        )
    return _SECONDS[second] + int(match.group(2)) / 1e6


def ssml_text(ssml: str) -> str:
    return html.unescape(_TAG.sub("", ssml))


def _apply(utterance: Utterance, code: str, at: float, mark: int | None = None) -> None:
    if code == "701":
        utterance.begun = at
    elif code == "702":
        utterance.ended = at
    elif code == "703":
        utterance.cancelled = at
    elif code == "700" and mark is not None:
        utterance.marks.append((at, mark))


class SpeechLog:
    """Reads the log as it grows (:meth:`feed` takes only the new lines), so a listener can
    ask every fraction of a second without reading the whole log again.

    A message that starts at once may be reported begun (701) before its id is logged (225):
    such early events wait for their message.
    """

    def __init__(self) -> None:
        self.by_id: dict[int, Utterance] = {}
        self._early: dict[int, list[tuple[str, float, int | None]]] = {}
        self._now = 0.0
        self._pending: list[str] | None = None  # a queued text spanning lines
        self._waiting: tuple[str, float] | None = None  # queued, waiting for its id
        self._mark_for: int | None = None
        self._mark_lines = 0

    def utterances(self) -> list[Utterance]:
        """Every message so far, in the order they were queued."""
        return sorted(self.by_id.values(), key=lambda u: (u.queued, u.msg_id))

    def _event(self, msg_id: int, code: str, mark: int | None = None) -> None:
        if msg_id in self.by_id:
            _apply(self.by_id[msg_id], code, self._now, mark)
        else:
            self._early.setdefault(msg_id, []).append((code, self._now, mark))

    def feed(self, lines: Iterable[str]) -> None:
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        stamp = _stamp(line)
        if stamp is not None:
            self._now = stamp
        body = line.split("speechd:", 1)[1] if stamp is not None and "speechd:" in line else line
        if self._pending is not None:
            self._pending.append(line)
            end = _QUEUE_END.match("\n".join(self._pending))
            if end:
                self._waiting, self._pending = (ssml_text(end.group(1)), self._now), None
            return
        if self._mark_for is not None and stamp is None:
            self._mark_lines += 1
            mark = re.match(r"700-(\d+):(\d+)\s*$", line)
            if mark:
                self._event(self._mark_for, "700", int(mark.group(1)))
                self._mark_for = None
            elif self._mark_lines > 3:
                self._mark_for = None
            return
        if "Queueing message |" in body:
            queued = _QUEUE.search(body)
            assert queued is not None
            end = _QUEUE_END.match(queued.group(1))
            if end:
                self._waiting = (ssml_text(end.group(1)), self._now)
            else:
                self._pending = [queued.group(1)]
            return
        if "REPLY:|7" not in body and "REPLY:|225" not in body:
            return
        reply = _REPLY.search(body)
        if not reply:
            return
        code, msg_id = reply.group(1), int(reply.group(2))
        if code == "225":
            if self._waiting is not None:
                text, at = self._waiting
                utterance = self.by_id[msg_id] = Utterance(msg_id, text, at)
                self._waiting = None
                for args in self._early.pop(msg_id, []):
                    _apply(utterance, *args)
        elif code == "700":
            self._mark_for, self._mark_lines = msg_id, 0
        elif code in ("701", "702", "703"):
            self._event(msg_id, code)


def parse(lines: Iterable[str]) -> list[Utterance]:
    """Every message of a whole log, in the order they were queued."""
    log = SpeechLog()
    log.feed(lines)
    return log.utterances()


def idle_since(utterances: Sequence[Utterance]) -> float | None:
    """When speech last went quiet (None while something is playing or queued)."""
    if any(u.finished is None for u in utterances):
        return None
    return max((u.finished or 0.0 for u in utterances), default=0.0)


def _find(haystack: list[str], needle: list[str]) -> int:
    if not needle:
        return -1
    for start in range(len(haystack) - len(needle) + 1):
        if haystack[start : start + len(needle)] == needle:
            return start
    return -1


@dataclass
class Hearing:
    """What became of one written announcement."""

    written: float
    text: str
    politeness: str
    utterance: Utterance | None
    start: float | None  # its first word started playing
    end: float | None  # its last word started playing
    fate: str  # heard / cut / dropped / never spoken / still queued

    @property
    def latency(self) -> float | None:
        return None if self.start is None else self.start - self.written

    @property
    def lag(self) -> float | None:
        return None if self.end is None else self.end - self.written


def hearing(
    written: float,
    text: str,
    politeness: str,
    utterances: Sequence[Utterance],
    window: float = 120.0,
) -> Hearing:
    """Match a written string to the first utterance queued after it that contains its words."""
    wanted = words(text)
    for utterance in utterances:
        if utterance.queued < written - 0.05 or utterance.queued > written + window:
            continue
        spans = utterance.word_spans()
        start = _find([w for w, _ in spans], wanted)
        if start < 0:
            continue
        first_at = spans[start][1]
        last_at = spans[start + len(wanted) - 1][1]
        begin, end = utterance.time_at(first_at), utterance.time_at(last_at)
        if end is not None:
            fate = "heard"
        elif utterance.status == "dropped":
            fate = "dropped (cancelled before it began)"
        elif utterance.status == "cut":
            fate = "cut" if begin is None else "cut in the middle"
        else:
            fate = "still " + utterance.status
        return Hearing(written, text, politeness, utterance, begin, end, fate)
    return Hearing(
        written, text, politeness, None, None, None, "never spoken (Orca did not pass it on)"
    )


def first_heard(
    utterances: Sequence[Utterance], phrase: str, after: float
) -> tuple[Utterance, float] | None:
    """The first utterance queued after *after* in which *phrase* was heard, and when."""
    wanted = words(phrase)
    for utterance in utterances:
        if utterance.queued < after:
            continue
        spans = utterance.word_spans()
        start = _find([w for w, _ in spans], wanted)
        if start >= 0:
            at = utterance.time_at(spans[start][1])
            if at is not None:
                return utterance, at
    return None
