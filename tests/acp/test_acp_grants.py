"""An ACP agent's permission requests through the person's standing permissions (issues 27, 29).

Fed the Bash permission request recorded from claude-agent-acp: the card offers "don't ask
again for commands Claude Code runs in this chat" as a chat grant; once the person has given
it, the next such request is answered on the grant (the card says which, never a question)
and the agent still hears "allow", never its own "allow always"; taken back, it asks again; a
deny refuses without asking; another chat is not covered.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import recorded

from jupyter_aaep.aaep.broker import ReplyBroker
from jupyter_aaep.aaep.emitter import Emitter
from jupyter_aaep.aaep.events import SessionCompleted, SessionStarted, Summary
from jupyter_aaep.aaep.session import Producer, Session
from jupyter_aaep.acp.narration import Narrator
from jupyter_aaep.acp.permissions import Gate
from jupyter_aaep.agent.chat_context import ChatContext
from jupyter_aaep.agent.grant_book import GrantBook
from jupyter_aaep.agent.grants import GrantError, acp_rule, check_rule, offers_for, rule_words

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow"}}
REJECT = {"outcome": {"outcome": "selected", "optionId": "reject"}}
RULE = "acp__claude-code__execute"


def _bash(gate: Gate, n: int) -> dict[str, Any]:
    """The recorded Bash call and its permission request, as the agent's *n*-th command."""
    call_id = f"toolu_{n}"
    gate.narrator.update({**recorded.BASH_INPUT, "toolCallId": call_id})
    asked = recorded.BASH_PERMISSION
    return {**asked, "toolCall": {**asked["toolCall"], "toolCallId": call_id}}


def _done(gate: Gate, n: int) -> None:
    gate.narrator.update({**recorded.BASH_DONE, "toolCallId": f"toolu_{n}"})


def _session() -> Session:
    session = Session(
        Emitter(history_limit=1000),
        Producer(agent_name="Claude Code", model="outside-agent"),
        actor="Claude Code",
    )
    session.emit(SessionStarted(summary=Summary(normal="Claude Code is working on your request.")))
    return session


def _gate(book: GrantBook, chat_id: str = "chat-1") -> tuple[Gate, Session, ReplyBroker]:
    session, broker = _session(), ReplyBroker()
    narrator = Narrator(session, "Claude Code")
    narrator.update(recorded.BASH_INPUT)
    chat = ChatContext(chat_id=chat_id, notebook_path="work.ipynb", grants=book)
    return Gate(session, broker, narrator, timeout_for=lambda _r: 60, chat=chat), session, broker


def _cards(session: Session) -> list[dict[str, Any]]:
    return [e for e in session.emitter.history if e["type"].endswith("awaiting.confirmation")]


def _end(session: Session) -> None:
    if not session.closed:
        session.emit(SessionCompleted(summary=Summary(normal="Claude Code finished.")))


def test_the_rule_names_the_agent_and_the_kind_of_step_in_words() -> None:
    assert acp_rule("Claude Code", "execute") == RULE
    assert acp_rule("Gemini CLI", "made-up kind") == "acp__gemini-cli__other"
    assert acp_rule("!!!", "execute") is None
    assert check_rule(RULE) == RULE
    for bad in ("acp__Claude Code__execute", "acp__claude-code__launch", "acp____execute"):
        with pytest.raises(GrantError) as error:
            check_rule(bad)
        assert "acp__<agent>__<kind>" in str(error.value)
    assert rule_words(RULE, "Claude Code") == "commands Claude Code runs"
    assert rule_words("acp__claude-code__edit") == "file edits by the agent claude code"
    (offer,) = offers_for(RULE, {}, flagged=False, notebook_path="work.ipynb", label="Claude Code")
    assert offer.scope == "chat", "an ACP agent's grant is for this chat only"
    assert offer.choice("work.ipynb") == (
        "Approve, and don't ask again for commands Claude Code runs in this chat"
    )


async def test_allowed_for_the_chat_answers_unasked_until_taken_back() -> None:
    book = GrantBook()
    gate, session, broker = _gate(book)
    asking = asyncio.ensure_future(gate.request(_bash(gate, 1)))
    await asyncio.sleep(0.05)
    (card,) = _cards(session)
    (offer,) = card["extra_context"]["permission_offers"]
    assert offer == {
        "rule": RULE,
        "scope": "chat",
        "label": "Approve, and don't ask again for commands Claude Code runs in this chat",
    }
    assert [c["label"] for c in card["extra_context"]["choices"]] == [
        "Allow once",
        "Reject",
        offer["label"],
    ]
    # What the server does with the panel's reply that carries the grant (server/permissions.py).
    taken = book.take_offer(card["reply_token"], {"rule": RULE, "scope": "chat"})
    assert taken is not None
    grant = book.add(
        taken.offer.rule, taken.offer.scope, chat_id=taken.chat_id, label=taken.offer.label
    )
    (request,) = broker.pending()
    broker.resolve(request, "accept", decided_by="user:panel")
    assert await asking == ALLOW, "the agent's own allow_always is never sent"
    _done(gate, 1)
    assert grant.sentence().startswith("Without asking: commands Claude Code runs in one chat")

    # The next command: answered on the grant, said with its words, no question.
    assert await gate.request(_bash(gate, 2)) == ALLOW
    _done(gate, 2)
    assert gate.questions == 1
    granted = _cards(session)[-1]
    assert granted["extra_context"]["auto_approved"] is True
    assert granted["extra_context"]["granted_by"]["id"] == grant.id
    assert "permission_offers" not in granted["extra_context"]
    said = [e.get("summary_normal", "") for e in session.emitter.history]
    assert (
        "Claude Code is running a command: touch made.txt: allowed by your permission for "
        "commands Claude Code runs in this chat." in said
    ), said
    record = next(
        x
        for e in session.emitter.history
        for x in e.get("extensions", {}).values()
        if isinstance(x, dict) and "confirmation_reply" in x
    )
    assert record["confirmation_reply"]["decided_by"] == f"grant:{grant.id}"
    assert not broker.pending()

    # Taken back: it asks again.
    book.revoke(grant.id)
    asking = asyncio.ensure_future(gate.request(_bash(gate, 3)))
    await asyncio.sleep(0.05)
    assert gate.questions == 2 and "granted_by" not in _cards(session)[-1]["extra_context"]
    (request,) = broker.pending()
    broker.resolve(request, "reject", decided_by="user:panel")
    assert await asking == REJECT
    _end(session)


async def test_a_chat_grant_does_not_reach_another_chat_and_a_deny_refuses_unasked() -> None:
    book = GrantBook()
    book.add(RULE, "chat", chat_id="chat-1", label="Claude Code")
    gate, session, broker = _gate(book, chat_id="chat-2")
    asking = asyncio.ensure_future(gate.request(recorded.BASH_PERMISSION))
    await asyncio.sleep(0.05)
    (request,) = broker.pending()
    broker.resolve(request, "reject", decided_by="user:panel")
    assert await asking == REJECT
    _end(session)

    book.add(RULE, "chat", effect="deny", chat_id="chat-1", label="Claude Code")
    gate, session, broker = _gate(book, chat_id="chat-1")
    assert await gate.request(recorded.BASH_PERMISSION) == REJECT, "deny beats allow"
    assert _cards(session) == [] and gate.questions == 0
    said = [e.get("summary_normal", "") for e in session.emitter.history]
    assert any(
        s.startswith(
            "Not done: Claude Code wanted to run a command: touch made.txt. Stopped by "
            "your rule never to allow commands Claude Code runs in this chat"
        )
        for s in said
    ), said
    _end(session)


async def test_without_a_grant_book_the_card_offers_once_or_reject_only() -> None:
    session, broker = _session(), ReplyBroker()
    narrator = Narrator(session, "Claude Code")
    narrator.update(recorded.BASH_INPUT)
    gate = Gate(session, broker, narrator, timeout_for=lambda _r: 60)
    asking = asyncio.ensure_future(gate.request(recorded.BASH_PERMISSION))
    await asyncio.sleep(0.05)
    (card,) = _cards(session)
    assert "permission_offers" not in card["extra_context"]
    (request,) = broker.pending()
    broker.resolve(request, "accept", decided_by="user:panel")
    assert await asking == ALLOW
    narrator.update(recorded.BASH_DONE)
    _end(session)


async def test_an_acp_grant_the_administrator_forbids_is_not_offered() -> None:
    book = GrantBook(forbidden=lambda rule, _scope: "locked" if rule.startswith("acp__") else None)
    gate, session, broker = _gate(book)
    asking = asyncio.ensure_future(gate.request(_bash(gate, 1)))
    await asyncio.sleep(0.05)
    (card,) = _cards(session)
    assert "permission_offers" not in card["extra_context"]
    assert len(card["extra_context"]["choices"]) == 2
    (request,) = broker.pending()
    broker.resolve(request, "reject", decided_by="user:panel")
    assert await asking == REJECT
    _end(session)
