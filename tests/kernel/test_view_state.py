"""The live view's pure part (events → what the user sees), fed with real AAEP events.

The events come from the real agent loop, the real SDK and the scripted fake model (every one
validated by the autouse audit in ``tests/conftest.py``); a tool with a run-cell-like preview
asks for confirmation the way ``run_cell`` does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from view_helpers import FINAL, Chat

from jupyter_aaep.kernel._markdown import markdown_to_html
from jupyter_aaep.kernel._view_html import (
    answer_html,
    approve_name,
    countdown_text,
    notice_html,
    reject_name,
    request_html,
    request_outcome_html,
    step_html,
)
from jupyter_aaep.kernel._view_items import (
    AnswerItem,
    NoticeItem,
    RequestItem,
    StepItem,
    action_phrase,
    clarification_reply,
    confirmation_reply,
)
from jupyter_aaep.kernel._view_state import ViewState
from jupyter_aaep.testing.fake_anthropic import ErrorReply, FakeAnthropic, ToolUse, Turn


@pytest.fixture
async def chat() -> AsyncIterator[Chat]:
    async with FakeAnthropic() as fake:
        client = anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key=fake.api_key, max_retries=0
        )
        async with client:
            yield Chat(fake, client)
        assert fake.problems == [], fake.problems


def feed(state: ViewState, events: list[dict[str, Any]]) -> list[bool]:
    return [state.apply(event) for event in events]


def only(state: ViewState, kind: type) -> list[Any]:
    return [item for item in state.items.values() if isinstance(item, kind)]


async def run_confirmed(chat: Chat, text: str) -> dict[str, Any]:
    """Script: stream a sentence, ask to run cell 3, then answer; returns the confirmation."""
    chat.fake.add(
        Turn(text="I will run cell 3.", tool_uses=[ToolUse("run_code", {"cell": 3})]),
        Turn(text=FINAL),
    )
    chat.task = chat.start(text)  # type: ignore[attr-defined]
    return await chat.wait_for("awaiting.confirmation")


async def test_a_confirmation_answered_elsewhere_shows_the_outcome_and_closes(chat: Chat) -> None:
    request = await run_confirmed(chat, "Run cell 3 please")
    state = ViewState("Run cell 3 please")
    assert all(feed(state, list(chat.events.events)))
    assert state.session_id == request["session_id"]  # recognised by its request text
    assert state.status.startswith("The agent is waiting for your answer")

    [card] = only(state, RequestItem)
    assert card.open and card.kind == "confirmation" and card.token == request["reply_token"]
    assert approve_name(card) == "Approve running cell 3"
    assert reject_name(card) == "Reject running cell 3"
    facts = request_html(card)
    assert "Approval needed:</strong> Run code cell 3" in facts
    assert "Risk: Medium" in facts and "Code of cell 3:" in facts
    # The exact code, escaped: its HTML-looking text is shown, never interpreted.
    assert "&lt;b&gt;total&lt;/b&gt;" in facts and "<b>" not in facts
    assert "it will be" in request_outcome_html(card, now=0.0)
    [answer] = only(state, AnswerItem)
    assert answer.text == "I will run cell 3."

    seen = len(chat.events.events)
    assert chat.answer(request, "accept")  # the side panel answers first
    await chat.task  # type: ignore[attr-defined]
    assert all(feed(state, list(chat.events.events)[seen:]))

    assert not card.open and card.state == "resolved"
    assert card.outcome == "Answered elsewhere (for example in the side panel): Approved."
    assert state.mark_sending(card.token, "reject") is None  # too late: the buttons are off
    [step] = only(state, StepItem)
    assert step.status == "success" and step.summary == "Running cell 3."
    assert "Cell 3 ran and printed 45." in step_html(step) and step_html(step).startswith(
        '<p class="jp-AAEPView-step jp-mod-success"><strong>Done:</strong>'
    )
    final = next(a for a in only(state, AnswerItem) if "45" in a.text)
    assert final.complete
    html = answer_html(final)
    assert "<strong>45</strong>" in html and "<code>total</code>" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    [end] = only(state, NoticeItem)
    assert state.ended == "completed" and end.variant == "completed" and state.status == "Done."


async def test_an_answer_given_here_is_not_credited_elsewhere(chat: Chat) -> None:
    request = await run_confirmed(chat, "Run cell 3 here")
    state = ViewState("Run cell 3 here")
    feed(state, list(chat.events.events))
    item = state.mark_sending(request["reply_token"], "accept")
    assert item is not None and item.state == "sending" and not item.open
    assert state.mark_sending(request["reply_token"], "accept") is None  # one answer per request
    assert "Sending your answer (Approve)" in request_outcome_html(item, now=0.0)
    message = confirmation_reply(
        item, "accept", subscription_id="sub_abc", timestamp="2026-01-01T00:00:00.000Z"
    )
    assert message == {
        "type": "confirmation.reply",
        "reply_token": request["reply_token"],
        "decision": "accept",
        "subscription_id": "sub_abc",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "decided_by": "user:notebook-widget",
    }
    seen = len(chat.events.events)
    assert chat.answer(request, "accept")
    await chat.task  # type: ignore[attr-defined]
    feed(state, list(chat.events.events)[seen:])
    assert item.outcome == "Approved."


async def test_a_failed_send_lets_the_user_answer_again(chat: Chat) -> None:
    request = await run_confirmed(chat, "Run cell 3 again")
    state = ViewState("Run cell 3 again")
    feed(state, list(chat.events.events))
    state.mark_sending(request["reply_token"], "accept")
    state.reply_failed(request["reply_token"], "The jupyter-aaep server does not answer.")
    item = state.request(request["reply_token"])
    assert item is not None and item.open
    assert (
        "Your answer was not sent: The jupyter-aaep server does not answer. Try again"
        in request_outcome_html(item, 0.0)
    )
    chat.answer(request, "reject")
    await chat.task  # type: ignore[attr-defined]
    feed(state, list(chat.events.events))
    assert item.outcome.startswith(
        "Answered elsewhere (for example in the side panel): You rejected it"
    )


async def test_only_its_own_session_is_followed(chat: Chat) -> None:
    chat.fake.add(Turn(text="Panel answer."), Turn(text="Widget answer."))
    await chat.start("asked in the panel")
    await chat.start("asked in the cell")
    events = list(chat.events.events)
    sessions = list(dict.fromkeys(e["session_id"] for e in events))
    state = ViewState("asked in the cell")
    applied = feed(state, events)
    assert state.session_id == sessions[1]
    assert applied == [e["session_id"] == sessions[1] for e in events]
    assert [a.text for a in only(state, AnswerItem)] == ["Widget answer."]
    assert feed(state, events) == [False] * len(events)  # delivered again: nothing twice

    # Told the session by the server's answer, after its events arrived: they are applied then.
    late = ViewState("a text that matches nothing")
    assert not any(feed(late, events))
    assert late.follow(sessions[0]) and late.ended == "completed"
    assert [a.text for a in only(late, AnswerItem)] == ["Panel answer."]


async def test_a_question_with_choices(chat: Chat) -> None:
    chat.fake.add(
        Turn(
            tool_uses=[
                ToolUse(
                    "ask_user",
                    {"question": "Which unit <b>now</b>?", "choices": ["Celsius", "Fahrenheit"]},
                )
            ]
        ),
        Turn(text="Celsius it is."),
    )
    task = chat.start("pick a unit")
    question = await chat.wait_for("awaiting.clarification")
    state = ViewState("pick a unit")
    feed(state, list(chat.events.events))
    [item] = only(state, RequestItem)
    assert item.kind == "clarification" and item.open
    assert "Question for you:</strong> Which unit &lt;b&gt;now&lt;/b&gt;?" in request_html(item)
    assert "the agent goes on without an answer in" in countdown_text(
        item, now=item.deadline() - 65
    )  # type: ignore[operator]
    assert countdown_text(item, now=item.deadline() - 65).endswith("in 1 min 5 s.")  # type: ignore[operator]
    reply = clarification_reply(
        item, " Celsius ", subscription_id="sub_x", timestamp="2026-01-01T00:00:00.000Z"
    )
    assert reply["response"] == "Celsius" and reply["type"] == "clarification.reply"
    state.mark_sending(item.token, "Celsius")
    chat.answer(question, "Celsius")
    await task
    feed(state, list(chat.events.events))
    assert item.outcome == "Thanks, got your answer." and state.ended == "completed"


async def test_a_failed_session_says_what_to_do(chat: Chat) -> None:
    chat.fake.add(ErrorReply(401, "authentication_error", "invalid x-api-key"))
    await chat.start("anything")
    state = ViewState("anything")
    feed(state, list(chat.events.events))
    [end] = only(state, NoticeItem)
    assert state.ended == "errored" and end.variant == "errored" and end.hint
    html = notice_html(end)
    assert (
        html.count(end.hint) == 1 and "What to do:" in html and "<strong>Failed:</strong>" in html
    )


def test_reply_values_follow_the_accepted_kinds() -> None:
    def item(kinds: list[str]) -> RequestItem:
        return RequestItem(
            "request:rpl_a",
            {"reply_token": "rpl_a", "accepted_response_kinds": kinds},
            kind="clarification",
        )

    def reply(kinds: list[str], text: str) -> Any:
        return clarification_reply(item(kinds), text, subscription_id="sub_a", timestamp="t")[
            "response"
        ]

    assert reply(["yes_no"], "Yes") is True and reply(["yes_no"], "no") is False
    assert reply(["numeric"], "42") == 42 and reply(["numeric"], "2.5") == 2.5
    assert reply(["numeric"], "many") == "many"  # the producer refuses it and keeps waiting
    assert reply(["freetext", "yes_no"], "yes") == "yes"


def test_button_names_say_what_they_do() -> None:
    def phrase(extra: dict[str, Any]) -> str:
        return action_phrase({"extra_context": extra})

    assert phrase({"cell_number": 7, "tool": "run_cell"}) == "running cell 7"
    assert phrase({"cells": [{"code": "a"}, {"code": "b"}]}) == "running 2 cells"
    assert phrase({"tool": "restart_kernel"}) == "restarting the kernel"
    assert phrase({"tool": "load_sales"}) == "calling load sales"
    assert action_phrase({}) == "this action"
    # A change reviewed in "ask before every change" is named by what it does, not by its tool.
    assert (
        phrase({"tool": "edit_cell", "change": {"kind": "edit", "cell_number": 3}})
        == "editing cell 3"
    )
    assert phrase({"change": {"kind": "delete", "cell_number": 4}}) == "deleting cell 4"
    assert phrase(
        {"change": {"kind": "create", "cell_number": 2, "where": "after cell 1 ('Load')"}}
    ) == ("adding a cell after cell 1 ('Load')")
    assert phrase({"change": {"kind": "move"}}) == "moving a cell"


def test_markdown_is_a_safe_subset() -> None:
    html = markdown_to_html(
        "# Title <i>\n\nSome *words* and __strong__ [link](javascript:alert(1)).\n"
        "- one\n- two `<x>`\n\n1. first\n2. second\n\n```\n<img src=x onerror=alert(1)>\n```\nafter"
    )
    assert html.startswith("<p><strong>Title &lt;i&gt;</strong></p>")
    assert "<em>words</em>" in html and "<strong>strong</strong>" in html
    assert "link (javascript:alert(1))" in html and "<a " not in html
    assert "<ul><li>one</li><li>two <code>&lt;x&gt;</code></li></ul>" in html
    assert "<ol><li>first</li><li>second</li></ol>" in html
    assert "<pre><code>&lt;img src=x onerror=alert(1)&gt;</code></pre>" in html
    assert "<img" not in html and html.endswith("<p>after</p>")
    assert (
        markdown_to_html("```python\nstill streaming") == "<pre><code>still streaming</code></pre>"
    )
    assert (
        markdown_to_html("2 * 3 * 4 and snake_case_name") == "<p>2 * 3 * 4 and snake_case_name</p>"
    )
    table = markdown_to_html(
        "Totals:\n\n| Item | 2024 |\n|---|---:|\n| Q1 | <b>4</b> |\n| Q2 | 5 |\nafter"
    )
    assert table == (
        '<p>Totals:</p><table><thead><tr><th scope="col">Item</th><th scope="col">2024</th></tr></thead>'
        "<tbody><tr><td>Q1</td><td>&lt;b&gt;4&lt;/b&gt;</td></tr><tr><td>Q2</td><td>5</td></tr></tbody>"
        "</table><p>after</p>"
    )


def test_code_keeps_its_lines_and_their_indentation() -> None:
    """The card's code in the view: one box per line with its indentation (for the hanging
    indent of a wrapped rest), the text unchanged and escaped, no number in the text."""
    from html import unescape

    from jupyter_aaep.kernel._view_html import _code_block

    html = _code_block("Code of cell 3:", "if ok:\n\tx = 1\n        plt.title('<b>')\n")
    lines = re.findall(
        r'<span class="jp-AAEPView-codeLine" style="--jp-private-aaep-indent:(\d+)">(.*?)</span>',
        html,
    )
    assert [(int(n), unescape(text)) for n, text in lines] == [
        (0, "if ok:"),
        (4, "\tx = 1"),
        (8, "        plt.<wbr>title(<wbr>'<b>')"),  # may wrap between tokens, not in a name
    ]
    code = html[html.index("<pre") :]
    assert unescape(re.sub(r"<[^>]+>", "", code)) == "if ok:\n\tx = 1\n        plt.title('<b>')"
    assert "<b>" not in html and 'style="--jp-private-aaep-gutter:2ch"' in html


def test_a_citation_in_the_answer_is_a_link_to_its_cell_and_a_gone_cell_is_words() -> None:
    """The server's own rewriter makes the chunks (two pieces, the second citation split across
    them); the view links each cited cell that exists, by its id in data attributes, never in
    the words; a cell that no longer exists stays words; the model's text cannot forge a link."""
    from jupyter_aaep.agent.citations import CitationRewriter

    rewrite = CitationRewriter({"abc-1": 4, "def_2": 2})
    pieces = [
        "Loaded in [[cell:abc-1]]; the mean is in [[cell:de",
        'f_2:3-5]] and <a href="x">[[cell:gone]]</a> \ue0000\ue001.',
    ]
    state = ViewState("Where?")
    state.session_id = "sess_1"
    for i, piece in enumerate(pieces):
        text, extensions = rewrite(piece, i == len(pieces) - 1)
        event: dict[str, Any] = {
            "type": "aaep:agent.output.streaming",
            "event_id": f"evt_{i}",
            "session_id": "sess_1",
            "output_id": "out_1",
            "chunk": text,
            "complete": i == len(pieces) - 1,
            "extensions": {e.prefix: dict(e.data) for e in extensions},
        }
        state.apply(event)
    [answer] = only(state, AnswerItem)
    assert answer.text.startswith("Loaded in cell 4; the mean is in cell 2, lines 3 to 5 and")
    html = answer_html(answer)
    links = re.findall(r"<a [^>]*>[^<]*</a>", html)
    first = (
        '<a href="#aaep-cell-citation" class="jp-AAEPView-citation" data-aaep-cell-id="abc-1">'
        "cell 4</a>"
    )
    second = (
        '<a href="#aaep-cell-citation" class="jp-AAEPView-citation" data-aaep-cell-id="def_2" '
        'data-aaep-first-line="3" data-aaep-last-line="5">cell 2, lines 3 to 5</a>'
    )
    assert links == [first, second]
    assert "&lt;a href=&quot;x&quot;&gt;a cell that no longer exists&lt;/a&gt;" in html
    assert "abc-1" not in re.sub(r"<[^>]*>", "", html)  # the id is in no visible text
    assert "\ue000" not in html and "[[cell" not in html


def test_a_plan_shows_its_numbered_steps_its_first_choice_and_where_the_others_are() -> None:
    plan = {
        "type": "aaep:agent.awaiting.confirmation",
        "action": "Follow this plan, 2 steps: Clean and plot. 1. Clean. 2. Plot.",
        "consequence": "Nothing has changed yet.",
        "risk_level": "medium",
        "reply_token": "rpl_1",
        "extra_context": {
            "plan": {"summary": "Clean <and> plot", "steps": ["Run cell 2 (the cleaning)", "Plot"]}
        },
    }
    card = RequestItem("evt_1", plan)
    facts = request_html(card)
    assert "Plan for your approval, 2 steps:</strong> Clean &lt;and&gt; plot" in facts
    assert "<ol><li>Run cell 2 (the cleaning)</li><li>Plot</li></ol>" in facts
    assert "other choices (run it asking before each step, keep planning" in facts
    assert "Approval needed" not in facts
    assert approve_name(card) == "Run it, asking only for code the risk scan flags"
    assert reject_name(card) == "Reject the plan"
