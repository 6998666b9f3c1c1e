"""The figures and the transcript of a session under Orca (benchmarks/orca_session.py).

Figures (issue 17's acceptance in brackets):

- approval alert heard: from the assertive write until its first word played [≤ 10 s];
- card until answerable: from the *Go to the pending request* key until what focusing the card
  set off was said (the listener can answer then) [≤ 40 s];
- "Approved" heard: from the approving key until the word "approved" played [≤ 10 s];
- card read twice: the card's reading (the first long utterance after the jump) started again
  later [never];
- never heard: written announcements whose words never played (dropped, cut, never spoken)
  [none];
- speech lag: for each heard announcement, from its write until its last word played; the
  largest, and the one at the end of the turn.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _orca_speech import Hearing, Utterance, first_heard, hearing, words


def _clock(at: float | None, origin: float) -> str:
    return "   —   " if at is None else f"{at - origin:7.2f}"


def _secs(value: float | None) -> str:
    return "not heard" if value is None else f"{value:.1f} s"


def _grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    ws = words(text)
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def _card_reads(
    utterances: Sequence[Utterance], jump: float
) -> tuple[Utterance | None, list[Utterance]]:
    """The card's reading (the longest utterance Orca queued within 3 s of the jump: the
    focused card's content) and every utterance that reads it again (half or more of a later
    utterance's five-word runs come from it)."""
    after = [u for u in utterances if u.queued >= jump - 0.05]
    first = [u for u in after if u.queued <= jump + 3.0]
    reading = max(first, key=lambda u: len(words(u.text)), default=None)
    if reading is None or len(words(reading.text)) < 8:
        return None, []
    body = _grams(reading.text)
    again = [
        u
        for u in after
        if u.msg_id != reading.msg_id
        and u.queued > reading.queued
        and len(words(u.text)) >= 15
        and len(_grams(u.text) & body) >= 0.5 * max(1, len(_grams(u.text)))
    ]
    return reading, [reading, *again]


def _why_unspoken(text: str, orca_log: Sequence[str]) -> str | None:
    """Orca's own reason for not speaking *text*, from its debug log: the handling of the
    events of the panel's live regions that carried it (an event of the same text elsewhere,
    the transcript showing the same sentence, is no answer)."""
    head = text[:30]
    reasons = []
    for index, line in enumerate(orca_log):
        if head not in line:
            continue
        if "[DEAD]" in line or "defunct" in "".join(orca_log[index + 1 : index + 3]):
            return "never spoken: its node was gone (defunct) when Orca got its event"
        if "OBJECT EVENT" not in line:
            continue
        details = "".join(orca_log[index + 1 : index + 12])
        if not re.search(r"container-live:(polite|assertive)", details):
            continue
        handling = []
        for later in orca_log[index + 1 : index + 80]:
            if "^^^^^ PROCESS OBJECT EVENT" in later:
                break
            handling.append(later)
        after = "\n".join(handling)
        if "due to flood" in after:
            reasons.append("never spoken: Orca skipped its event (event flood)")
        elif "Zombie" in after:
            reasons.append("never spoken: its node was already replaced when Orca got to it")
        elif "duplicate message" in after:
            reasons.append(
                "never spoken: Orca took it for a duplicate (the same text had just been inserted"
                " in a container Orca counts as live, even one with aria-live=off)"
            )
        else:
            reasons.append("never spoken: Orca handled its event but said nothing")
    if reasons:
        return "; ".join(dict.fromkeys(reasons))
    if any(head in line and "Queueing object:" in line for line in orca_log):
        return "never spoken: Orca queued its event and dropped it unhandled"
    if orca_log:
        return "never spoken: no event for it reached Orca"
    return None


BARE_PERCENT = re.compile(r"^\s*\d+ percent\.?\s*$")


def _percent_sources(orca_log: Sequence[str]) -> list[str]:
    """Whose value a bare "N percent" Orca said was (progress-bar updates): the name and class
    of each progress bar Orca spoke a value of, from its debug log."""
    found = []
    block = ""
    for line in orca_log:
        if "OBJECT EVENT:" in line:
            block = line
        elif block and line.startswith(" " * 16) and "=" in line:
            block += " " + line.strip()
        if "progressBarValue=[" in line and "percent" in line and "role='progress bar'" in block:
            name = re.search(r"(?<![.\w])name='([^']*)'", block)
            cls = re.search(r"class:([^,]*)", block)
            value = re.search(r"progressBarValue=\[([^\]]*)\]", line)
            found.append(
                f"{value.group(1) if value else '?'} from the progress bar "
                f"{name.group(1) if name else '?'!r} ({cls.group(1) if cls else 'no class'})"
            )
    return found


def _reread(
    utterances: Sequence[Utterance], card_after: str, approve: float | None
) -> list[Utterance]:
    """Utterances after the answer that read the card again (most of their words are the
    card's words, as it reads when the focus is back on it)."""
    if not card_after or approve is None:
        return []
    card = set(words(card_after))
    found = []
    for u in utterances:
        ws = words(u.text)
        # Orca adds a role word or two ("clickable", "panel"): most words, not all.
        if u.queued >= approve and len(ws) >= 3 and sum(w in card for w in ws) >= 0.7 * len(ws):
            found.append(u)
    return found


def _transcript(utterances: Sequence[Utterance], origin: float) -> str:
    """What was heard, with runs of echoed keys ("P", "l", "space"…) folded into one note."""
    parts: list[str] = []
    keys = 0
    for u in utterances:
        heard = u.heard_text()
        if u.queued < origin or not heard:
            continue
        if (
            len(words(u.text)) <= 2
            and len(u.text.strip()) <= 14
            and not u.text.strip().endswith(".")
        ):
            keys += 1
            if keys <= 3:
                parts.append(heard)
            continue
        if keys > 3:
            parts.append(f"[… {keys - 3} more echoed keys]")
        keys = 0
        parts.append(heard)
    if keys > 3:
        parts.append(f"[… {keys - 3} more echoed keys]")
    return " ".join(parts)


def report(
    session: Any,
    utterances: Sequence[Utterance],
    origin: float,
    out: Path,
    orca_log: Sequence[str] = (),
) -> str:
    marks = session.marks
    hearings = [hearing(e["time"], e["text"], e["politeness"], utterances) for e in session.live]
    for h in hearings:
        if h.utterance is None:
            h.fate = _why_unspoken(h.text, orca_log) or h.fate
    alert = next(
        (h for h in hearings if abs(h.written - marks.get("alert written", -1)) < 1e-3), None
    )
    jump, approve = marks.get("jump"), marks.get("approve")
    reading, reads = _card_reads(utterances, jump) if jump else (None, [])
    reread = _reread(utterances, session.card_after, approve)
    approved = first_heard(utterances, "approved", approve) if approve else None
    never = [h for h in hearings if h.fate != "heard"]
    heard = [h for h in hearings if h.lag is not None]
    worst = max(heard, key=lambda h: h.lag or 0.0, default=None)
    last = hearings[-1] if hearings else None
    answerable = (marks["card quiet"] - jump) if jump and "card quiet" in marks else None

    figures: dict[str, Any] = {
        "approval_alert_heard_s": alert.latency if alert else None,
        "approval_alert_fate": alert.fate if alert else "no assertive write",
        "card_until_answerable_s": answerable,
        "card_reading_s": (reading.finished - reading.begun)
        if reading and reading.begun and reading.finished
        else None,
        "card_reading_fate": reading.status if reading else None,
        "approved_heard_after_key_s": (approved[1] - approve) if approved and approve else None,
        "card_read_times": len(reads),
        "focus_back_on_card_after_answer": bool(session.card_after),
        "card_read_again_after_answer": [u.heard_text() for u in reread],
        "approved_heard_in": approved[0].text if approved else None,
        "written": len(hearings),
        "never_heard": [
            {"text": h.text, "fate": h.fate, "written_s": round(h.written - origin, 2)}
            for h in never
        ],
        "max_speech_lag_s": worst.lag if worst else None,
        "max_speech_lag_at": worst.text if worst else None,
        "end_of_turn_lag_s": last.lag if last else None,
        "session_s": marks.get("quiet at the end", time.time()) - origin,
    }
    lines = ["", "=" * 78, "A keyboard-only session under Orca: figures", "=" * 78]
    lines += [
        (
            f"Approval alert heard after it was written: {_secs(figures['approval_alert_heard_s'])} "
            f"({figures['approval_alert_fate']}; target ≤ 10 s)"
        ),
        (
            f"From reaching the card until it can be answered: {_secs(answerable)} "
            f"(the card's first reading: {_secs(figures['card_reading_s'])}, {figures['card_reading_fate']}; target ≤ 40 s)"
        ),
        f'"Approved" heard after the key press: {_secs(figures["approved_heard_after_key_s"])} (target ≤ 10 s)',
        f"  (heard in: {approved[0].text[:90]!r})"
        if approved
        else '  (the word "approved" was never heard)',
        f"Card's content read {len(reads)} time(s){' — READ TWICE' if len(reads) > 1 else ''} (target: once); "
        f"focus back on the card after the answer: {'yes' if session.card_after else 'no'}"
        + (
            f", and Orca read it again: {' / '.join(repr(u.heard_text()[:80]) for u in reread)}"
            if reread
            else ""
        ),
        f"Written announcements: {len(hearings)}; never heard: {len(never)} (target 0)",
    ]
    for h in never:
        lines.append(f"    - [{h.politeness}] {h.text!r}: {h.fate}")
    if worst:
        lines.append(
            f"Speech lag behind the agent: largest {_secs(worst.lag)} (at {worst.text[:60]!r})"
        )
    if last:
        lines.append(
            f"At the end of the turn: {last.text[:60]!r} heard {_secs(last.lag)} after it was written"
        )
    floods = sum("due to flood" in line for line in orca_log)
    zombies = sum("Event source is Zombie" in line for line in orca_log)
    figures["orca_events_skipped_in_floods"] = floods
    figures["orca_events_from_replaced_nodes"] = zombies
    figures["load_average"] = list(getattr(session, "load", []))
    lines.append(
        f"Orca skipped {floods} events in floods and met {zombies} events of replaced nodes "
        f"(Orca's debug log); machine load average {figures['load_average']} (start, end)"
    )
    bare = [u for u in utterances if BARE_PERCENT.match(u.text)]
    sources = _percent_sources(orca_log)
    figures["bare_percent_heard"] = [u.text for u in bare]
    figures["bare_percent_sources"] = sources
    lines.append(
        f"Bare percentages Orca said: {len(bare)} (target 0)"
        + (f"; whose: {'; '.join(dict.fromkeys(sources))}" if sources else "")
    )
    lines.append(f"Whole session: {figures['session_s']:.0f} s")

    lines += ["", "Moments (seconds from the start):"]
    lines += [
        f"  {_clock(at, origin)}  {name}"
        for name, at in sorted(marks.items(), key=lambda kv: kv[1])
    ]
    lines += ["", "Keys (seconds from the start):"]
    lines += [f"  {_clock(at, origin)}  {label}" for at, label in session.keys]
    if session.tab_stops:
        lines.append(f"  Tab stops on the way to Approve: {session.tab_stops}")
    lines += [
        "",
        "Written to live regions → what speech made of it (written / first word / last word):",
    ]
    for h in hearings:
        lines.append(
            f"  {_clock(h.written, origin)} {_clock(h.start, origin)} {_clock(h.end, origin)}  "
            f"[{h.politeness[:6]}] {h.fate:<10.10} {h.text[:110]}"
        )
    lines += ["", "What Orca said (queued / began / ended; status):"]
    for u in utterances:
        if u.queued < origin:
            continue
        shown = (
            u.text
            if u.status == "played"
            else f"{u.heard_text()} [{u.status}: {u.text[len(u.heard_text()) :].strip()[:80]!r} not heard]"
        )
        if u.status == "dropped":
            shown = f"[dropped, never heard: {u.text[:100]!r}]"
        lines.append(
            f"  {_clock(u.queued, origin)} {_clock(u.begun, origin)} {_clock(u.finished, origin)}  {shown}"
        )
    heard_text = _transcript(utterances, origin)
    lines += ["", "The transcript of what Orca said, as one text:", "", heard_text, ""]
    if session.problems:
        lines += ["Notes: " + "; ".join(session.problems)]
    lines.append(f"Logs and data: {out}")

    (out / "figures.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False))
    (out / "live-writes.json").write_text(json.dumps(session.live, indent=1, ensure_ascii=False))
    (out / "utterances.json").write_text(
        json.dumps([_utterance(u) for u in utterances], indent=1, ensure_ascii=False)
    )
    (out / "transcript.txt").write_text(heard_text + "\n")
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    (out / "card.txt").write_text(session.card_text + "\n")
    return "\n".join(lines)


def _utterance(u: Utterance) -> dict[str, Any]:
    return {
        "id": u.msg_id,
        "text": u.text,
        "status": u.status,
        "queued": u.queued,
        "begun": u.begun,
        "finished": u.finished,
        "heard": u.heard_text(),
        "marks": len(u.marks),
    }


__all__ = ["Hearing", "report"]
