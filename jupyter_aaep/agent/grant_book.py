"""The standing permissions in force on this server: kept, offered, checked, revoked.

One book per server, shared by the agent's own sessions and outside agents' (they run through
the same dispatcher, so the same grants let their steps through). Chat and notebook grants are
stored in the chat store (:mod:`jupyter_aaep.chats.stored_grants`), ``always`` grants in the user's config folder
(:mod:`.grant_file`); the book keeps all of them in memory, loaded once.

Who may add one is the server's business (only the person, :mod:`jupyter_aaep.server.
permissions`); the book checks what is granted, not who grants it. An administrator's lock
(``forbidden``) refuses new grants and stops old ones from applying; a deny always applies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..aaep.clock import ms_to_timestamp, utc_now_ms
from ..errors import SettingLocked
from .grant_file import GrantFile
from .grants import (
    Effect,
    Grant,
    GrantError,
    Offer,
    Scope,
    Verdict,
    check_rule,
    check_scope,
    decide,
    new_grant_id,
    offers_for,
)

log = logging.getLogger(__name__)

Forbidden = Callable[[str, Scope], "str | None"]
"""The administrator's refusal of a rule in a scope, as a sentence; ``None``: allowed."""

MAX_OFFERS = 256
"""Open approval cards whose offer is remembered (the oldest is forgotten past this)."""


class GrantStorage(Protocol):
    """Where chat and notebook grants are kept (the chat store, through the chats layer)."""

    def load(self) -> list[Grant]: ...

    def save(self, grant: Grant) -> None: ...

    def delete(self, grant_id: str) -> None: ...


@dataclass(frozen=True)
class OpenOffer:
    """What one open approval card offers (narrowest first), and where its grants would apply."""

    offers: tuple[Offer, ...]
    chat_id: str | None
    notebook_path: str | None


@dataclass(frozen=True)
class TakenOffer:
    """The grant a person chose on a card, and where it applies."""

    offer: Offer
    chat_id: str | None
    notebook_path: str | None


class GrantBook:
    def __init__(
        self,
        stored: GrantStorage | None = None,
        file: GrantFile | None = None,
        *,
        forbidden: Forbidden | None = None,
    ) -> None:
        self._stored = stored
        self._file = file
        self._forbidden = forbidden or (lambda _rule, _scope: None)
        self._grants: list[Grant] = []
        if stored is not None:
            self._grants += [g for g in stored.load() if g.scope != "always"]
        if file is not None:
            self._grants += [g for g in file.load() if g.scope == "always"]
        self._offers: dict[str, OpenOffer] = {}

    # -- listing and changing -------------------------------------------------------------------
    def listing(self) -> list[Grant]:
        return list(self._grants)

    def applies(self, grant: Grant) -> bool:
        """Whether *grant* is in force (an allow the administrator has since forbidden is not)."""
        return grant.effect == "deny" or self._forbidden(grant.rule, grant.scope) is None

    def get(self, grant_id: str) -> Grant | None:
        return next((g for g in self._grants if g.id == grant_id), None)

    def add(
        self,
        rule: object,
        scope: object,
        *,
        effect: Effect = "allow",
        chat_id: str | None = None,
        notebook_path: str | None = None,
        granted_in: str | None = None,
        label: str | None = None,
    ) -> Grant:
        """Add (or find the same) grant; :class:`GrantError` for a bad one, :class:`SettingLocked`
        when the administrator forbids it, ``OSError`` when an ``always`` one cannot be written."""
        rule, scope = check_rule(rule), check_scope(scope)
        if scope == "chat" and not chat_id:
            raise GrantError("A permission for one chat needs the chat: send chat_id.")
        if scope == "notebook" and not notebook_path:
            raise GrantError(
                "A permission for one notebook needs the notebook: send notebook_path."
            )
        if effect == "allow":
            refused = self._forbidden(rule, scope)
            if refused is not None:
                raise SettingLocked(refused)
        grant = Grant(
            id=new_grant_id(),
            rule=rule,
            scope=scope,
            effect=effect,
            chat_id=chat_id if scope == "chat" else None,
            notebook_path=notebook_path if scope == "notebook" else None,
            granted_at=ms_to_timestamp(utc_now_ms()),
            granted_in=granted_in,
            label=label,
        )
        same = next((g for g in self._grants if _same(g, grant)), None)
        if same is not None:
            return same
        if scope == "always":
            self._save_always([*self._always(), grant])
        elif self._stored is not None:
            self._stored.save(grant)
        self._grants.append(grant)
        return grant

    def revoke(self, grant_id: str) -> Grant | None:
        """Take a grant back; ``None`` if no grant has that id."""
        grant = self.get(grant_id)
        if grant is None:
            return None
        if grant.scope == "always":
            self._save_always([g for g in self._always() if g.id != grant_id])
        elif self._stored is not None:
            self._stored.delete(grant_id)
        self._grants = [g for g in self._grants if g.id != grant_id]
        return grant

    def _always(self) -> list[Grant]:
        return [g for g in self._grants if g.scope == "always"]

    def _save_always(self, grants: list[Grant]) -> None:
        if self._file is None:
            return
        self._file.save(grants)

    # -- at the gate ----------------------------------------------------------------------------
    def verdict(
        self,
        tool: str,
        tool_input: Mapping[str, Any],
        *,
        code: str | None,
        flagged: bool,
        chat_id: str | None,
        notebook_path: str | None,
    ) -> Verdict | None:
        """The grant that decides this step, or ``None``; an allow the administrator has since
        forbidden no longer applies."""
        return decide(
            [g for g in self._grants if self.applies(g)],
            tool=tool,
            tool_input=tool_input,
            code=code,
            flagged=flagged,
            chat_id=chat_id,
            notebook_path=notebook_path,
        )

    def offer(
        self,
        token: str,
        tool: str,
        tool_input: Mapping[str, Any],
        *,
        flagged: bool,
        chat_id: str | None,
        notebook_path: str | None,
        label: str | None = None,
    ) -> tuple[Offer, ...]:
        """The grants the card with *token* offers (remembered until one is taken or the card is
        forgotten): none the administrator forbids, no chat grant without a chat."""
        offers = tuple(
            offer
            for offer in offers_for(
                tool, tool_input, flagged=flagged, notebook_path=notebook_path, label=label
            )
            if self._forbidden(offer.rule, offer.scope) is None
            and (offer.scope != "chat" or chat_id)
        )
        if not offers:
            return ()
        while len(self._offers) >= MAX_OFFERS:
            self._offers.pop(next(iter(self._offers)))
        self._offers[token] = OpenOffer(offers, chat_id, notebook_path)
        return offers

    def take_offer(self, token: object, wish: object) -> TakenOffer | None:
        """The grant of the card with *token* that *wish* (``{"rule", "scope"}``) names exactly,
        if the card offered it; the card's offers are taken once. A reply can grant only what
        its card offered."""
        if not isinstance(token, str) or not isinstance(wish, Mapping):
            return None
        open_offer = self._offers.get(token)
        if open_offer is None:
            return None
        for offer in open_offer.offers:
            if (wish.get("rule"), wish.get("scope")) == (offer.rule, offer.scope):
                del self._offers[token]
                return TakenOffer(offer, open_offer.chat_id, open_offer.notebook_path)
        return None

    def forget_offer(self, token: str) -> None:
        self._offers.pop(token, None)


def _same(a: Grant, b: Grant) -> bool:
    return (a.rule, a.scope, a.effect, a.chat_id, a.notebook_path) == (
        b.rule,
        b.scope,
        b.effect,
        b.chat_id,
        b.notebook_path,
    )


__all__ = ["Forbidden", "GrantBook", "OpenOffer", "TakenOffer"]
