"""Standing permissions without a server: rules, words, deny beats allow, and where they are kept
(the chat store for chat and notebook grants, a private file for 'always' ones)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_aaep.agent.grant_book import GrantBook
from jupyter_aaep.agent.grant_file import GrantFile
from jupyter_aaep.agent.grants import (
    Grant,
    GrantError,
    check_rule,
    decide,
    offers_for,
    source_hash,
)
from jupyter_aaep.chats.stored_grants import StoredGrants
from jupyter_aaep.errors import SettingLocked
from jupyter_aaep.store.chat_store import SCHEMA_VERSION, ChatStore

HERE = {"chat_id": "chat_a", "notebook_path": "a.ipynb"}


def _decide(grants: list[Grant], tool: str = "run_cell", **kwargs: object) -> object:
    args = {"tool_input": {}, "code": "x = 1", "flagged": False, **HERE, **kwargs}
    return decide(grants, tool=tool, **args)  # type: ignore[arg-type]


def test_the_rules_the_issue_names_are_known_and_others_say_what_to_send() -> None:
    for rule in (
        "run_cell:unflagged",
        f"run_cell:{source_hash('x = 1')}",
        "create_cell",
        "edit_cell",
        "read_file:data/*.csv",
        "mcp__github__create_issue",
    ):
        assert check_rule(rule) == rule
    for bad in ("", "run_cell", "run_cell:abc", "read_file:", "delete_cell", "mcp__x", 7, None):
        with pytest.raises(GrantError) as error:
            check_rule(bad)
        assert "run_cell:unflagged" in str(error.value), "the message lists what to send"


def test_the_exact_code_rule_ignores_trailing_spaces_but_not_a_changed_line() -> None:
    grant = Grant(
        "grt_0000000000000001",
        f"run_cell:{source_hash('x = 1')}",
        "notebook",
        notebook_path="a.ipynb",
    )
    assert _decide([grant], code="\nx = 1   \n\n") is not None
    assert _decide([grant], code="x = 2") is None
    assert _decide([grant], tool="run_all_cells", code=None) is None


def test_deny_beats_allow_and_flagged_code_is_never_allowed() -> None:
    allow = Grant("grt_0000000000000001", "run_cell:unflagged", "always")
    deny = Grant(
        "grt_0000000000000002", "run_cell:unflagged", "notebook", "deny", notebook_path="a.ipynb"
    )
    assert _decide([allow]).grant is allow  # type: ignore[attr-defined]
    verdict = _decide([allow, deny])
    assert verdict is not None and verdict.denied and verdict.grant is deny  # type: ignore[attr-defined]
    assert _decide([allow], flagged=True) is None, "flagged code always asks"
    assert _decide([allow, deny], notebook_path="b.ipynb").grant is allow  # type: ignore[attr-defined]


def test_a_grant_holds_only_in_its_scope() -> None:
    chat = Grant("grt_0000000000000001", "create_cell", "chat", chat_id="chat_a")
    notebook = Grant("grt_0000000000000002", "edit_cell", "notebook", notebook_path="a.ipynb")
    assert _decide([chat], tool="create_cell") is not None
    assert _decide([chat], tool="create_cell", chat_id="chat_b") is None
    assert _decide([notebook], tool="edit_cell") is not None
    assert _decide([notebook], tool="edit_cell", notebook_path="b.ipynb") is None
    files = Grant("grt_0000000000000003", "read_file:data/*.csv", "always")
    assert _decide([files], tool="read_file", tool_input={"path": "data/t.csv"}) is not None
    assert _decide([files], tool="read_file", tool_input={"path": "secrets/t.csv"}) is None


def test_the_words_say_exactly_what_is_allowed() -> None:
    offers = offers_for("run_cell", {}, flagged=False, notebook_path="a.ipynb")
    assert [offer.choice("a.ipynb") for offer in offers] == [
        "Approve, and don't ask again for unflagged code in this chat",
        "Approve, and don't ask again for unflagged code in this notebook",
    ], "the narrower grant first"
    assert offers_for("run_cell", {}, flagged=True, notebook_path="a.ipynb") == ()
    alone = offers_for("edit_cell", {}, flagged=False, notebook_path=None)
    assert [(o.rule, o.scope) for o in alone] == [("edit_cell", "chat")], "no notebook: a chat"
    assert offers_for("delete_cell", {}, flagged=False, notebook_path="a.ipynb") == ()
    grant = Grant(
        "grt_0000000000000001",
        "run_cell:unflagged",
        "notebook",
        notebook_path="a.ipynb",
        granted_at="2026-11-28T18:00:00.000Z",
        granted_in="a.ipynb",
    )
    assert grant.words() == "your permission for unflagged code in this notebook"
    assert grant.sentence() == (
        "Without asking: unflagged code in a.ipynb, given 2026-11-28 18:00 UTC."
    )
    chat = Grant(
        "grt_0000000000000003",
        "run_cell:unflagged",
        "chat",
        chat_id="chat_a",
        granted_at="2026-11-28T18:00:00.000Z",
        granted_in="a.ipynb",
    )
    assert chat.words() == "your permission for unflagged code in this chat"
    assert chat.sentence("Plot the readings") == (
        "Without asking: unflagged code in the chat “Plot the readings”, given "
        "2026-11-28 18:00 UTC in a.ipynb."
    ), "the list names the chat by its first request"
    assert chat.sentence() == (
        "Without asking: unflagged code in one chat, given 2026-11-28 18:00 UTC in a.ipynb."
    ), "a chat whose title is not known"
    tool = Grant("grt_0000000000000002", "mcp__github__create_issue", "always", "deny")
    assert tool.words() == (
        "your rule never to allow the tool create_issue of the github tool server in every notebook"
    )


def test_always_grants_survive_a_restart_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "config" / "aaep" / "permissions.json"
    book = GrantBook(file=GrantFile(path))
    grant = book.add("run_cell:unflagged", "always")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert book.add("run_cell:unflagged", "always") == grant, "the same grant is not added twice"
    again = GrantBook(file=GrantFile(path))  # a new server reads it back
    assert [g.id for g in again.listing()] == [grant.id]
    assert again.revoke(grant.id) == grant
    assert GrantBook(file=GrantFile(path)).listing() == []
    path.write_text("{not json")
    path.chmod(0o644)
    assert GrantBook(file=GrantFile(path)).listing() == [], "a broken file grants nothing"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, "made private again"


def test_notebook_grants_are_kept_in_the_chat_store(tmp_path: Path) -> None:
    db = tmp_path / "aaep" / "chats.sqlite3"
    store = ChatStore(str(db))
    book = GrantBook(StoredGrants(store))
    kept = book.add("run_cell:unflagged", "notebook", notebook_path="a.ipynb")
    gone = book.add("edit_cell", "chat", chat_id="chat_a")
    book.revoke(gone.id)
    assert store.flush()
    store.close()
    store = ChatStore(str(db))
    try:
        assert [g.id for g in GrantBook(StoredGrants(store)).listing()] == [kept.id]
        version = store.read.rows("SELECT value FROM meta WHERE key='schema_version'")
        assert version == [(str(SCHEMA_VERSION),)] and SCHEMA_VERSION == 5
    finally:
        store.close()


def test_scope_needs_its_place_and_the_administrator_may_forbid(tmp_path: Path) -> None:
    book = GrantBook(forbidden=lambda rule, scope: "no" if scope == "always" else None)
    with pytest.raises(GrantError, match="send notebook_path"):
        book.add("run_cell:unflagged", "notebook")
    with pytest.raises(GrantError, match="send chat_id"):
        book.add("run_cell:unflagged", "chat")
    with pytest.raises(SettingLocked):
        book.add("run_cell:unflagged", "always")
    denied = book.add("run_cell:unflagged", "always", effect="deny")  # a deny is never locked
    assert denied.effect == "deny"


def test_a_grant_the_administrator_forbids_later_stops_applying() -> None:
    locked: set[str] = set()
    book = GrantBook(forbidden=lambda rule, scope: "locked" if scope in locked else None)
    allow = book.add("run_cell:unflagged", "always")
    deny = book.add("edit_cell", "always", effect="deny")
    args = {"code": "x = 1", "flagged": False, **HERE}
    assert book.verdict("run_cell", {}, **args) is not None  # type: ignore[arg-type]
    locked.add("always")
    assert book.verdict("run_cell", {}, **args) is None, "forbidden since: it asks again"  # type: ignore[arg-type]
    assert not book.applies(allow) and book.applies(deny), "the person's own 'never' still holds"
    assert book.verdict("edit_cell", {}, **args).denied  # type: ignore[arg-type, union-attr]


def test_a_card_grants_only_what_it_offered() -> None:
    book = GrantBook()
    offers = book.offer("rpl_1", "run_cell", {}, flagged=False, **HERE)
    assert [(o.rule, o.scope) for o in offers] == [
        ("run_cell:unflagged", "chat"),
        ("run_cell:unflagged", "notebook"),
    ]
    assert book.take_offer("rpl_1", {"rule": "run_cell:unflagged", "scope": "always"}) is None
    assert book.take_offer("rpl_1", {"rule": "edit_cell", "scope": "chat"}) is None
    assert book.take_offer("rpl_2", {"rule": "run_cell:unflagged", "scope": "notebook"}) is None
    taken = book.take_offer("rpl_1", {"rule": "run_cell:unflagged", "scope": "notebook"})
    assert taken is not None and taken.notebook_path == "a.ipynb"
    assert taken.offer.scope == "notebook"
    assert book.take_offer("rpl_1", {"rule": "run_cell:unflagged", "scope": "chat"}) is None, (
        "a card's offers are taken once, whichever was chosen"
    )
    book.offer("rpl_3", "run_cell", {}, flagged=False, **HERE)
    taken = book.take_offer("rpl_3", {"rule": "run_cell:unflagged", "scope": "chat"})
    assert taken is not None and (taken.offer.scope, taken.chat_id) == ("chat", HERE["chat_id"])


_PARTS = st.sampled_from(["run_cell:unflagged", "edit_cell", "chat", "notebook", "always"])
_WISHES = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=10),
    st.lists(_PARTS, max_size=2),
    st.fixed_dictionaries({"rule": _PARTS, "scope": _PARTS}),
    st.dictionaries(
        st.sampled_from(["rule", "scope", "x"]), _PARTS | st.integers() | st.none(), max_size=3
    ),
)
"""A reply's ``grant``: the card's own offers among many that are not."""


@settings(max_examples=200, deadline=None)
@given(wish=_WISHES)
def test_a_malformed_wish_grants_nothing_and_leaves_the_cards_offers(wish: Any) -> None:
    """Whatever a reply's ``grant`` holds, it is one of the card's offers or nothing; nothing
    else is taken from the card."""
    book = GrantBook()
    book.offer("rpl_1", "run_cell", {}, flagged=False, **HERE)
    offered = [{"rule": "run_cell:unflagged", "scope": s} for s in ("chat", "notebook")]
    taken = book.take_offer("rpl_1", wish)
    if wish in offered:
        assert taken is not None and taken.offer.scope == wish["scope"]
        return
    assert taken is None
    assert book.take_offer("rpl_1", offered[0]) is not None, "the card's offers are still open"


def test_a_stored_grant_that_is_not_one_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "permissions.json"
    path.write_text(json.dumps({"permissions": [{"id": "x", "rule": "run_cell:unflagged"}, 3]}))
    path.chmod(0o600)
    assert GrantBook(file=GrantFile(path)).listing() == []
